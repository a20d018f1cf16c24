/* SPDX-License-Identifier: MIT */
/*
 * lifecycle.h — assembling a context from its layers, and taking it apart.
 *
 * tmm_ctx_create (lib/root/ctx_create.c) is this with the services that
 * the layers below cannot name: a twin (lib/twin/) is itself a context,
 * made here without one, so the twin is lent from above.
 */
#ifndef TMM_LIFECYCLE_H
#define TMM_LIFECYCLE_H

#include <stddef.h>

#include "tensormm.h"

struct tmm_twin_ops;

/*
 * tmm_ctx_create, with `twin_ops` lent to the context's planners to try
 * plans on a twin of the device (NULL: none; a twin itself).  Messages
 * and errors are tmm_ctx_create's.  Only a context with twin_ops sets the
 * process's faults (the `fault` tunable): a twin keeps its run's.
 */
int tmm_ctx_assemble(tmm_ctx **out, const char *config,
		     const struct tmm_twin_ops *twin_ops);

/* For tests: how many contexts the registry holds, the process's live
 * contexts (twins included).  A failed creation must leave it as it
 * was. */
size_t tmm_ctx_registered(void);

#endif /* TMM_LIFECYCLE_H */
