/* SPDX-License-Identifier: MIT */
/*
 * tunables_table.h — the descriptor table of the tunables: one row per
 * tunable, and the words its choices are spelt with.
 *
 * The rows live in tunables_table.c; the configuration they parse, and
 * the parser, in tunables.h.
 */
#ifndef TMM_TUNABLES_TABLE_H
#define TMM_TUNABLES_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The enums of the CHOICE tunables: a choice word's index is its enum. */
enum tmm_backend_choice { TMM_BACKEND_AUTO, TMM_BACKEND_SIM, TMM_BACKEND_CUDA };
enum tmm_mode_choice { TMM_MODE_AUTO, TMM_MODE_SWAP, TMM_MODE_UVM };
enum tmm_sim_memory { TMM_SIM_BACKED, TMM_SIM_PHANTOM };
/* What policy `auto` optimises (hints/plan_auto.c). */
enum tmm_auto_goal { TMM_AUTO_GOAL_FIT, TMM_AUTO_GOAL_SPEED };
/* Whether planners swap out state idle across the step boundary
 * (hints/idle_state.h): auto = policy auto tries it as a variant. */
enum tmm_offload_idle { TMM_OFFLOAD_IDLE_AUTO, TMM_OFFLOAD_IDLE_ON,
			TMM_OFFLOAD_IDLE_OFF };
/* How mode=uvm moves a tensor out and back (lib/move/mover_uvm.c). */
enum tmm_uvm_swap_path {
	TMM_UVM_PATH_AUTO,
	TMM_UVM_PATH_PREFETCH,
	TMM_UVM_PATH_COPY,
	TMM_UVM_PATH_MIX /* copy, and by migration the swaps that fit
			  * (hints/uvm_mix.h) */
};
/* What makes mode=uvm's copies of managed memory on the copy streams
 * (lib/backend/cuda_copier.h): the runtime's cudaMemcpyAsync, which
 * holds the host until it has run, or the library's own copy kernel,
 * which does not. */
enum tmm_uvm_copier { TMM_UVM_COPIER_RUNTIME, TMM_UVM_COPIER_KERNEL };
/* How mode=uvm makes the pages of a fresh output (mover_uvm.c). */
enum tmm_uvm_fresh { TMM_UVM_FRESH_AUTO, TMM_UVM_FRESH_PREFETCH,
		     TMM_UVM_FRESH_FAULT };
/* Who holds mode=uvm's pages within the budget: the driver, where the
 * backend can limit it (the simulator), the library, by evicting
 * (lib/move/mover.c), or both, the library first. */
enum tmm_uvm_cap {
	TMM_UVM_CAP_DRIVER,
	TMM_UVM_CAP_LIBRARY,
	TMM_UVM_CAP_BOTH
};
/* What swap mode's device pool is made of (lib/mem/pool_map.c). */
enum tmm_pool_choice { TMM_POOL_ARENA, TMM_POOL_CHUNKS };
enum tmm_log_level { TMM_LOG_ERROR, TMM_LOG_WARN, TMM_LOG_INFO, TMM_LOG_DEBUG };

/* The tunables, in table order. */
enum tmm_tunable_id {
	TMM_T_BACKEND,
	TMM_T_DEVICE,
	TMM_T_MODE,
	TMM_T_BUDGET,
	TMM_T_POLICY,
	TMM_T_AUTO_GOAL,
	TMM_T_AUTO_RUNGS,
	TMM_T_AUTO_TWIN,
	TMM_T_OFFLOAD_IDLE,
	TMM_T_TSPLIT_RETRY,
	TMM_T_REPLAN_DRIFT,
	TMM_T_SIM_PROFILE,
	TMM_T_SIM_CAPACITY,
	TMM_T_SIM_MEMORY,
	TMM_T_SIM_JITTER,
	TMM_T_SIM_SEED,
	TMM_T_SIM_HOST,
	TMM_T_SIM_MANAGED_COPY,
	TMM_T_SIM_COPY_KERNEL_GBPS,
	TMM_T_SIM_COPY_KERNEL_SM,
	TMM_T_HOST_NUMA_NODE,
	TMM_T_PINNED_POOL,
	TMM_T_TRACE,
	TMM_T_TRACE_MAX,
	TMM_T_HINTS,
	TMM_T_HINTS_MAX,
	TMM_T_STATS_SHM,
	TMM_T_SHARE,
	TMM_T_MAX_SWAP_RATE,
	TMM_T_CUPTI,
	TMM_T_UVM_COUNTERS,
	TMM_T_DL_PATH,
	TMM_T_UVM_SWAP_PATH,
	TMM_T_UVM_COPIER,
	TMM_T_UVM_COPIER_BLOCKS,
	TMM_T_UVM_FRESH,
	TMM_T_UVM_CAP,
	TMM_T_UVM_KEEP,
	TMM_T_UVM_COMPACT,
	TMM_T_UVM_READ_MOSTLY,
	TMM_T_CHECK,
	TMM_T_LIVENESS,
	TMM_T_POOL,
	TMM_T_LOG,
	TMM_T_FAULT,
	TMM_TUNABLE_COUNT
};

enum tmm_tunable_type {
	TMM_TYPE_CHOICE,  /* one of a fixed list of words */
	TMM_TYPE_SIZE,	  /* bytes: 123, 4K, 4KiB, 2M, 2MiB, 1G, 1GiB */
	TMM_TYPE_SIZE_OR_PERCENT, /* a size, or a percentage in (0, 100] */
	TMM_TYPE_INT,
	TMM_TYPE_UINT64,
	TMM_TYPE_DOUBLE,
	TMM_TYPE_STRING,
};

/* A size that may be given as a percentage of device capacity: the
 * value of a SIZE_OR_PERCENT row. */
struct tmm_size_spec {
	uint64_t bytes;	 /* when !is_percent */
	double percent;	 /* 0 < percent <= 100, when is_percent */
	bool is_percent;
	bool of_peak;	 /* a percentage of the first iteration's peak
			  * ("40%peak"), not of the device */
};

/* One row of the descriptor table. */
struct tmm_tunable {
	const char *name;     /* config key: "budget"; env TENSORMM_BUDGET */
	const char *env;      /* "TENSORMM_BUDGET" */
	enum tmm_tunable_type type;
	const char *def;      /* default, as text */
	const char *accepted; /* what is accepted, for messages and docs */
	const char *help;     /* one line */
	const char *since;    /* version that introduced it */
	double min, max;      /* numeric range (INT, UINT64, DOUBLE, SIZE) */
	const char *const *choices; /* NULL-terminated, for CHOICE */
	/* Extra check for STRING values (NULL: any); writes a reason. */
	bool (*validate)(const char *value, char *why, size_t whylen);
	/* Where the library loads code from: its environment variable is
	 * not read in a set-user-ID or set-group-ID program (secure_getenv),
	 * as the dynamic linker does not read LD_LIBRARY_PATH there. */
	bool secure_env;
};

/* 2^64: the upper bound of a row whose only limit is 64 bits. */
#define TMM_TUNABLE_NO_LIMIT 0x1p64

/* The descriptor table: *n receives TMM_TUNABLE_COUNT. */
const struct tmm_tunable *tmm_tunables(size_t *n);

#endif /* TMM_TUNABLES_TABLE_H */
