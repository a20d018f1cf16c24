/* SPDX-License-Identifier: MIT */
/*
 * ctx_create.c — tmm_ctx_create: where the layers are wired together.
 *
 * A context is assembled from the layers below (lib/api/lifecycle.c), and
 * lent here the services that those layers cannot name without a cycle:
 * the twin that the `auto` planner tries plans on (lib/twin/trial.c) is
 * itself a context, so it sits above the context and reaches the planners
 * only through this pointer.
 */
#include "lib/api/lifecycle.h"
#include "lib/twin/trial.h"

int tmm_ctx_create(tmm_ctx **out, const char *config)
{
	return tmm_ctx_assemble(out, config, &tmm_twin_ops);
}
