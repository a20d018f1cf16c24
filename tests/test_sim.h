/* SPDX-License-Identifier: MIT */
/*
 * test_sim.h — what the two files of the simulator suite share
 * (test_sim.c, test_sim_engines.c): the size units, and opening a
 * simulated backend and reading its counters and clock.
 */
#ifndef TEST_SIM_H
#define TEST_SIM_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/backend/backend.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/tunables.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static inline void cfg_init(struct tmm_config *cfg, const char *profile,
			    enum tmm_sim_memory mem)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = TMM_BACKEND_SIM;
	snprintf(cfg->sim_profile, sizeof(cfg->sim_profile), "%s", profile);
	cfg->sim_memory = mem;
	cfg->host_numa_node = -1;
}

static inline void open_cfg(struct tmm_backend *be,
			    const struct tmm_config *cfg)
{
	memset(be, 0, sizeof(*be));
	be->ops = &tmm_backend_sim_ops;
	ck_assert_msg(be->ops->open(be, cfg) == 0, "open: %s", be->error);
}

static inline void open_sim(struct tmm_backend *be, const char *profile,
			    enum tmm_sim_memory mem)
{
	struct tmm_config cfg;

	cfg_init(&cfg, profile, mem);
	open_cfg(be, &cfg);
}

static inline struct tmm_sim_counters counters(const struct tmm_backend *be)
{
	struct tmm_sim_counters c;

	ck_assert_int_eq(tmm_sim_get_counters(be, &c), 0);
	return c;
}

/* The host writes a managed range: its pages get contents, on the host. */
static inline void populate(struct tmm_backend *be, void *ptr, size_t bytes)
{
	struct tmm_managed_range r = { ptr, bytes, true, true };

	ck_assert_int_eq(be->ops->managed_access(be, &r, 1), 0);
}

static inline uint64_t event_at(struct tmm_backend *be, enum tmm_engine e)
{
	tmm_event ev;

	ck_assert_int_eq(be->ops->event_record(be, e, &ev), 0);
	ck_assert(ev.valid);
	return ev.t_ns;
}

/* Adds the "engines" and "jitter" cases (test_sim_engines.c). */
void add_sim_engine_tests(Suite *s);

#endif /* TEST_SIM_H */
