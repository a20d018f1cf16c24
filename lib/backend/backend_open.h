/* SPDX-License-Identifier: MIT */
/*
 * backend_open.h — choosing, opening and closing a backend.
 *
 * Kept out of backend.h so that the interface every implementation
 * includes does not name the implementations: backend_sim.c and
 * backend_cuda.c depend on backend.c's helpers, the chooser depends on
 * them, and nothing depends back (a loop the layer check refuses).
 */
#ifndef TMM_BACKEND_OPEN_H
#define TMM_BACKEND_OPEN_H

#include <stddef.h>

#include "backend.h"

struct tmm_config;

/*
 * Opens the backend that cfg asks for ("auto" picks cuda when it is built
 * and a device answers, else sim).  Returns 0, -ENODEV, or the backend's
 * error; `err` receives a message.
 */
int tmm_backend_open(struct tmm_backend *be, const struct tmm_config *cfg,
		     char *err, size_t errlen);
void tmm_backend_close(struct tmm_backend *be);

#endif /* TMM_BACKEND_OPEN_H */
