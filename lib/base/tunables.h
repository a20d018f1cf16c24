/* SPDX-License-Identifier: MIT */
/*
 * tunables.h — the configuration of a context.
 *
 * One descriptor table (tunables_table.c) lists every tunable: its name,
 * type, default, allowed values and a one-line help.  The same table
 * parses the configuration string given to tmm_ctx_create() and the
 * TENSORMM_<NAME> environment variables, with the precedence
 * environment > config string > default (the person who runs a program
 * overrides its author, as MALLOC_CONF does for jemalloc), and it is what
 * tensormm(7) documents.
 */
#ifndef TMM_TUNABLES_H
#define TMM_TUNABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tunables_table.h"

/* Where a tunable's value came from. */
enum tmm_source { TMM_SRC_DEFAULT, TMM_SRC_ENV, TMM_SRC_CONFIG };

/* A parsed configuration. */
struct tmm_config {
	enum tmm_backend_choice backend;
	char device[48];       /* "current", an index or a UUID
				* (device_spec.h) */
	enum tmm_mode_choice mode;
	struct tmm_size_spec budget;
	char policy[32];
	enum tmm_auto_goal auto_goal; /* what policy auto optimises */
	unsigned auto_rungs;   /* smaller budgets policy auto plans for too */
	bool auto_twin;	       /* policy auto tries plans on a twin (sim) */
	enum tmm_offload_idle offload_idle; /* hints/idle_state.h */
	bool tsplit_retry;     /* tsplit plans again with swaps and splits
				* where Algorithm 2 leaves a bottleneck */
	double replan_drift;   /* relative change of summed op latency that
				* makes a new plan; 0: never */
	char sim_profile[48];
	uint64_t sim_capacity; /* 0: the profile's capacity */
	enum tmm_sim_memory sim_memory;
	double sim_jitter;     /* relative standard deviation, 0..1 */
	uint64_t sim_seed;
	bool sim_host_ahead;    /* the simulated host issues ahead of the
				* device, as a real GPU's does (backend_sim.c) */
	bool sim_managed_copy_held; /* a simulated copy with a managed end
				     * holds the host until done, as CUDA's
				     * (backend_sim.c) */
	double sim_copy_kernel_gbps; /* uvm_copier=kernel on the simulator:
				      * its copies' rate; 0: the pinned */
	double sim_copy_kernel_sm;   /* ... and the share of the compute
				      * rate it takes while it runs */
	int host_numa_node;    /* -1: the GPU's node, else local */
	uint64_t pinned_pool;  /* bytes of free pinned host memory cached */
	char trace[4096];      /* "" when off */
	uint64_t trace_max;    /* bytes a trace file may hold; 0: no cap */
	char hints[4096];      /* plan file; "" when off */
	uint64_t hints_max;    /* bytes: the largest plan file read or
				* written */
	bool stats_shm;	       /* publish live counters in shared memory */
	char share[33];	       /* "off", "auto" or a group name (gpu_share.c) */
	double max_swap_rate;  /* TENSILE's MSR: share of a deficit taken */
	bool cupti;	       /* cuda: op times from CUPTI, else events */
	bool uvm_counters;     /* cuda, mode=uvm: CUPTI's unified-memory
				* counters on (costly: tunables_table.c) */
	char dl_path[4096];    /* where CUPTI and cuDNN are looked for; "":
				* the dynamic linker's search (dynlib.h) */
	enum tmm_uvm_swap_path uvm_swap_path; /* how mode=uvm evicts */
	enum tmm_uvm_copier uvm_copier; /* what makes its managed copies */
	unsigned uvm_copier_blocks; /* the copy kernel's blocks */
	enum tmm_uvm_fresh uvm_fresh; /* how it makes fresh outputs' pages */
	enum tmm_uvm_cap uvm_cap; /* who holds its pages within the budget */
	bool uvm_keep;	       /* freed managed blocks stay populated for
				* the next tensor of their size
				* (lib/mem/uvm_arena.h) */
	bool uvm_compact;      /* idle tensors move out of a large one's
				* way over kept pages
				* (lib/move/uvm_compact.h) */
	bool uvm_read_mostly;  /* mode=uvm by prefetch: frozen tensors are
				* advised read-mostly, so that they leave
				* with no copy (hints/read_mostly.h) */
	bool check;	       /* poison outputs before callbacks (fill.c) */
	bool liveness_discard; /* dead idle tensors are dropped, not copied
				* out (lib/move/dead.h) */
	enum tmm_pool_choice pool; /* swap mode's pool: arena or chunks */
	enum tmm_log_level log;
	char fault[256];       /* injected failures, for tests ("": none;
				* lib/base/fault.h) */
	enum tmm_source source[TMM_TUNABLE_COUNT];
};

/*
 * Fills *cfg from defaults, then the comma-separated key=value list
 * `config` (may be NULL), then TENSORMM_* environment variables, which
 * win.  Returns 0, or -EINVAL with a message in err naming the key, the
 * value, where it came from and what is accepted; *cfg is then left
 * unchanged.
 */
int tmm_config_load(struct tmm_config *cfg, const char *config, char *err,
		    size_t errlen);

/* tmm_config_load, with the environment read only when `environment`:
 * a context the library makes for itself (the twin that tries plans,
 * lib/twin/trial.c) must be what its config string says. */
int tmm_config_load_from(struct tmm_config *cfg, const char *config,
			 bool environment, char *err, size_t errlen);

/* Writes tunable `id`'s value in cfg as text (as it would be parsed). */
void tmm_config_format(const struct tmm_config *cfg, enum tmm_tunable_id id,
		       char *buf, size_t len);

/*
 * Parses a size ("4096", "64K", "64KiB", "1.5G") into *bytes.  K, M, G, T
 * and KiB, MiB, GiB, TiB are all powers of 1024; a trailing "B" is
 * allowed.  Returns 0 or -EINVAL.
 */
int tmm_parse_size(const char *text, uint64_t *bytes);

/* The budget in bytes for a device of `capacity` bytes. */
uint64_t tmm_config_budget(const struct tmm_config *cfg, uint64_t capacity);

#endif /* TMM_TUNABLES_H */
