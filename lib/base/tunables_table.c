/* SPDX-License-Identifier: MIT */
/*
 * tunables_table.c — the descriptor table of every tunable.
 *
 * Each tunable is one row of `table` below: its name, its TENSORMM_*
 * environment variable, its type, its default (as text), what it accepts
 * and a line of help.  The same rows parse the defaults, the environment
 * and the configuration string (tunables.c), and tensormm(7) is written
 * from them, so the three sources and the manual cannot drift apart.
 * Adding a tunable is one row plus one case in store_value() and in
 * tmm_config_format(), both in tunables.c.
 */
#include <stdio.h>
#include <string.h>

#include "device_spec.h"
#include "fault.h"
#include "path_pattern.h"
#include "sim_profile.h"
#include "text.h"
#include "tunables_table.h"

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */

static bool sim_profile_known(const char *value, char *why, size_t whylen);
static bool share_group_valid(const char *value, char *why, size_t whylen);

/* Choice words sit at their enum's value, so a word's index is the enum. */
static const char *const backend_choices[] = {
	[TMM_BACKEND_AUTO] = "auto",
	[TMM_BACKEND_SIM] = "sim",
	[TMM_BACKEND_CUDA] = "cuda",
	NULL
};

static const char *const mode_choices[] = {
	[TMM_MODE_AUTO] = "auto",
	[TMM_MODE_SWAP] = "swap",
	[TMM_MODE_UVM] = "uvm",
	NULL
};

/* The planners of hints/planner.c. */
static const char *const policy_choices[] = {
	"none", "passive", "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile", "tsplit", "stream", "auto", NULL
};

static const char *const auto_goal_choices[] = {
	[TMM_AUTO_GOAL_FIT] = "fit",
	[TMM_AUTO_GOAL_SPEED] = "speed",
	NULL
};

static const char *const sim_memory_choices[] = {
	[TMM_SIM_BACKED] = "backed",
	[TMM_SIM_PHANTOM] = "phantom",
	NULL
};

static const char *const sim_host_choices[] = { "lockstep", "ahead",
						  NULL };

static const char *const sim_managed_copy_choices[] = { "held", "queued",
							 NULL };

static const char *const off_on_choices[] = { "off", "on", NULL };

static const char *const offload_idle_choices[] = { "auto", "on", "off",
						      NULL };
static const char *const liveness_choices[] = { "keep", "discard", NULL };

static const char *const uvm_fresh_choices[] = {
	[TMM_UVM_FRESH_AUTO] = "auto",
	[TMM_UVM_FRESH_PREFETCH] = "prefetch",
	[TMM_UVM_FRESH_FAULT] = "fault",
	NULL
};

static const char *const uvm_swap_path_choices[] = {
	[TMM_UVM_PATH_AUTO] = "auto",
	[TMM_UVM_PATH_PREFETCH] = "prefetch",
	[TMM_UVM_PATH_COPY] = "copy",
	[TMM_UVM_PATH_MIX] = "mix",
	NULL
};

static const char *const uvm_copier_choices[] = {
	[TMM_UVM_COPIER_RUNTIME] = "runtime",
	[TMM_UVM_COPIER_KERNEL] = "kernel",
	NULL
};

static const char *const uvm_cap_choices[] = {
	[TMM_UVM_CAP_DRIVER] = "driver",
	[TMM_UVM_CAP_LIBRARY] = "library",
	[TMM_UVM_CAP_BOTH] = "both",
	NULL
};

static const char *const pool_choices[] = {
	[TMM_POOL_ARENA] = "arena",
	[TMM_POOL_CHUNKS] = "chunks",
	NULL
};

static const char *const log_choices[] = {
	[TMM_LOG_ERROR] = "error",
	[TMM_LOG_WARN] = "warn",
	[TMM_LOG_INFO] = "info",
	[TMM_LOG_DEBUG] = "debug",
	NULL
};

static const struct tmm_tunable table[TMM_TUNABLE_COUNT] = {
	[TMM_T_BACKEND] = {
		.name = "backend",
		.env = "TENSORMM_BACKEND",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "auto, sim or cuda",
		.help = "which device backend runs the tensors; auto = cuda "
			"when built with CUDA and a GPU answers, else sim",
		.since = "0.1",
		.choices = backend_choices,
	},
	[TMM_T_DEVICE] = {
		.name = "device",
		.env = "TENSORMM_DEVICE",
		.type = TMM_TYPE_STRING,
		.def = "current",
		.accepted = "current, a device index such as 0 or 1, or a "
			    "CUDA UUID such as "
			    "GPU-8c2b1f4e-0a1d-4c3b-9e2f-5d6a7b8c9d0e",
		.help = "which device the context runs on: cuda = CUDA's "
			"device of that index (after CUDA_VISIBLE_DEVICES) "
			"or UUID, current = the calling thread's current "
			"device when the context is made; sim = virtual "
			"device 0 to 63 (current = 0), so that ranks can be "
			"put on several simulated devices; share is keyed by "
			"it",
		.since = "0.1",
		.validate = tmm_device_spec_valid,
	},
	[TMM_T_MODE] = {
		.name = "mode",
		.env = "TENSORMM_MODE",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "auto, swap or uvm",
		.help = "swap = device pool + pinned-copy swap engine; uvm = "
			"CUDA managed memory with prefetch/advise; auto = uvm "
			"where the device supports concurrent managed access, "
			"else swap",
		.since = "0.1",
		.choices = mode_choices,
	},
	[TMM_T_BUDGET] = {
		.name = "budget",
		.env = "TENSORMM_BUDGET",
		.type = TMM_TYPE_SIZE_OR_PERCENT,
		.def = "100%",
		.accepted = "a percentage of device capacity such as 50%, "
			    "a percentage of the first iteration's peak such "
			    "as 40%peak, or a size with its unit such as "
			    "512MiB, 6GiB or 1048576B (a bare number is "
			    "refused)",
		.help = "device bytes the runtime may hold: a percentage of "
			"device capacity, of the program's own peak (the "
			"first iteration runs with the whole device to "
			"measure it), or a size with its unit",
		.since = "0.1",
		/* A size of 0 would leave no room for any tensor. */
		.min = 1,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_POLICY] = {
		.name = "policy",
		.env = "TENSORMM_POLICY",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "none, passive, vdnn-conv, vdnn-all, checkpoint, "
			    "superneurons, capuchin, tensile, tsplit, stream or auto",
		.help = "the planner that turns the first iteration's trace "
			"into the plan of the next ones; none = liveness "
			"only, passive = no actions at all",
		.since = "0.1",
		.choices = policy_choices,
	},
	[TMM_T_AUTO_GOAL] = {
		.name = "auto_goal",
		.env = "TENSORMM_AUTO_GOAL",
		.type = TMM_TYPE_CHOICE,
		.def = "fit",
		.accepted = "fit or speed",
		.help = "what policy auto optimises where it can try plans (the "
			"sim backend): fit = a plan that needs no passive "
			"eviction wins, then the fastest; speed = the fastest "
			"iteration wins, passive evictions and all",
		.since = "0.1",
		.choices = auto_goal_choices,
	},
	[TMM_T_AUTO_RUNGS] = {
		.name = "auto_rungs",
		.env = "TENSORMM_AUTO_RUNGS",
		.type = TMM_TYPE_INT,
		.def = "3",
		.accepted = "an integer from 0 to 6",
		.help = "how many budgets below the given one, each a fifth "
			"smaller than the last, policy auto also plans for "
			"where it can try plans (the sim backend), so that its "
			"plan is no worse than its own for those; each costs "
			"about one search more; 0 = the budget alone",
		.since = "0.1",
		.min = 0,
		.max = 6,
	},
	[TMM_T_AUTO_TWIN] = {
		.name = "auto_twin",
		.env = "TENSORMM_AUTO_TWIN",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "on the sim backend, policy auto tries every plan on a "
			"twin of the device and picks by the trials; off = it "
			"picks by the forecast alone, with no trial, as on a "
			"real GPU (to see what auto does where there is no "
			"twin)",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_OFFLOAD_IDLE] = {
		.name = "offload_idle",
		.env = "TENSORMM_OFFLOAD_IDLE",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "auto, on or off",
		.help = "weights and optimizer state idle across the step "
			"boundary (touched late in one step and not again "
			"until well into the next) where memory is short: "
			"on = every planner but tensile, stream and passive "
			"swaps them out after their last access and back "
			"before their first; off = none does; auto = only "
			"policy auto tries its candidates both ways",
		.since = "0.1",
		.choices = offload_idle_choices,
	},
	[TMM_T_TSPLIT_RETRY] = {
		.name = "tsplit_retry",
		.env = "TENSORMM_TSPLIT_RETRY",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "where policy tsplit's walks (TSPLIT's Algorithm 2) "
			"leave an op over the budget, on = it plans again with "
			"swaps and splits only and keeps the plan that fits "
			"(ours, beyond the paper); off = the paper's: the "
			"walks' plan stands, and passive mode makes up the "
			"difference",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_REPLAN_DRIFT] = {
		.name = "replan_drift",
		.env = "TENSORMM_REPLAN_DRIFT",
		.type = TMM_TYPE_DOUBLE,
		.def = "0.1",
		.accepted = "a number from 0 to 10, such as 0.1",
		.help = "re-plan when the summed op latency (smoothed) has "
			"changed by this fraction since the plan was made; "
			"0 = never",
		.since = "0.1",
		.min = 0,
		.max = 10,
	},
	[TMM_T_SIM_PROFILE] = {
		.name = "sim_profile",
		.env = "TENSORMM_SIM_PROFILE",
		.type = TMM_TYPE_STRING,
		.def = "p100-pcie3-16g",
		.accepted = "the name of a simulated device profile, such as "
			    "p100-pcie3-16g",
		.help = "the hardware the sim backend imitates",
		.since = "0.1",
		.validate = sim_profile_known,
	},
	[TMM_T_SIM_CAPACITY] = {
		.name = "sim_capacity",
		.env = "TENSORMM_SIM_CAPACITY",
		.type = TMM_TYPE_SIZE,
		.def = "0",
		.accepted = "a size such as 8GiB, 512M or 4096; 0 = the "
			    "profile's capacity",
		.help = "device memory of the simulated GPU; 0 = the "
			"profile's capacity",
		.since = "0.1",
		.min = 0,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_SIM_MEMORY] = {
		.name = "sim_memory",
		.env = "TENSORMM_SIM_MEMORY",
		.type = TMM_TYPE_CHOICE,
		.def = "backed",
		.accepted = "backed or phantom",
		.help = "backed keeps real bytes, so data is checked end to "
			"end; phantom keeps sizes only, so large models "
			"simulate fast",
		.since = "0.1",
		.choices = sim_memory_choices,
	},
	[TMM_T_SIM_JITTER] = {
		.name = "sim_jitter",
		.env = "TENSORMM_SIM_JITTER",
		.type = TMM_TYPE_DOUBLE,
		.def = "0",
		.accepted = "a number from 0 to 1, such as 0.05",
		.help = "relative standard deviation of simulated op times; "
			"0 = deterministic",
		.since = "0.1",
		.min = 0,
		.max = 1,
	},
	[TMM_T_SIM_SEED] = {
		.name = "sim_seed",
		.env = "TENSORMM_SIM_SEED",
		.type = TMM_TYPE_UINT64,
		.def = "1",
		.accepted = "an unsigned 64-bit integer, such as 1 or 42",
		.help = "seed of the simulator's jitter",
		.since = "0.1",
		.min = 0,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_SIM_HOST] = {
		.name = "sim_host",
		.env = "TENSORMM_SIM_HOST",
		.type = TMM_TYPE_CHOICE,
		.def = "lockstep",
		.accepted = "lockstep or ahead",
		.help = "lockstep: the simulated host waits for each op; "
			"ahead: it issues ops and copies ahead of the device "
			"and waits only where it syncs, as with a real GPU",
		.since = "0.1",
		.choices = sim_host_choices,
	},
	[TMM_T_SIM_MANAGED_COPY] = {
		.name = "sim_managed_copy",
		.env = "TENSORMM_SIM_MANAGED_COPY",
		.type = TMM_TYPE_CHOICE,
		.def = "held",
		.accepted = "held or queued",
		.help = "held: a simulated copy to or from managed memory "
			"returns to the host only once done, as CUDA's does; "
			"queued: it is queued like any copy",
		.since = "0.1",
		.choices = sim_managed_copy_choices,
	},
	[TMM_T_SIM_COPY_KERNEL_GBPS] = {
		.name = "sim_copy_kernel_gbps",
		.env = "TENSORMM_SIM_COPY_KERNEL_GBPS",
		.type = TMM_TYPE_DOUBLE,
		.def = "0",
		.accepted = "a number from 0 to 10000, such as 30",
		.help = "uvm_copier=kernel on the simulator: its copies' "
			"rate each way, GB/s, which the forecast takes too; "
			"0 = the profile's pinned copies' rate",
		.since = "0.1",
		.min = 0,
		.max = 10000,
	},
	[TMM_T_SIM_COPY_KERNEL_SM] = {
		.name = "sim_copy_kernel_sm",
		.env = "TENSORMM_SIM_COPY_KERNEL_SM",
		.type = TMM_TYPE_DOUBLE,
		.def = "0",
		.accepted = "a number from 0 to 0.9, such as 0.12",
		.help = "uvm_copier=kernel on the simulator: the share of "
			"compute a copy kernel takes while it runs (16 "
			"blocks of 132 multiprocessors: about 0.12)",
		.since = "0.1",
		.min = 0,
		.max = 0.9,
	},
	[TMM_T_HOST_NUMA_NODE] = {
		.name = "host_numa_node",
		.env = "TENSORMM_HOST_NUMA_NODE",
		.type = TMM_TYPE_INT,
		.def = "-1",
		.accepted = "an integer from -1 to 1023",
		.help = "NUMA node of pinned host buffers; -1 = the GPU's "
			"node, else the local node",
		.since = "0.1",
		.min = -1,
		.max = 1023,
	},
	[TMM_T_PINNED_POOL] = {
		.name = "pinned_pool",
		.env = "TENSORMM_PINNED_POOL",
		.type = TMM_TYPE_SIZE,
		.def = "0",
		.accepted = "a size such as 256MiB, 1G or 4096; 0 = keep all",
		.help = "free pinned host memory kept cached for reuse; "
			"0 = keep all",
		.since = "0.1",
		.min = 0,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_TRACE] = {
		.name = "trace",
		.env = "TENSORMM_TRACE",
		.type = TMM_TYPE_STRING,
		.def = "",
		.accepted = "a file path, or nothing for off; in it %p is "
			    "the pid, %n the context's number in the process "
			    "(from 0), %% a '%'",
		.help = "file that receives each iteration's accesses, ops "
			"and runtime actions (docs/trace-format.md); empty = "
			"off",
		.since = "0.1",
		.validate = tmm_path_pattern_valid,
	},
	[TMM_T_TRACE_MAX] = {
		.name = "trace_max",
		.env = "TENSORMM_TRACE_MAX",
		.type = TMM_TYPE_SIZE,
		.def = "256MiB",
		.accepted = "a size such as 256MiB, 4GiB or 4096; 0 = no cap",
		.help = "the most bytes a trace file may hold: the record "
			"that would pass it is not written, tracing stops "
			"with one warning and the file stays a whole trace; "
			"0 = no cap",
		.since = "0.1",
		.min = 0,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_HINTS] = {
		.name = "hints",
		.env = "TENSORMM_HINTS",
		.type = TMM_TYPE_STRING,
		.def = "",
		.accepted = "a file path, or nothing for off",
		.help = "plan file: loaded at start so the run starts guided, "
			"written once the planner has made a plan "
			"(docs/plan-format.md); empty = off",
		.since = "0.1",
	},
	[TMM_T_HINTS_MAX] = {
		.name = "hints_max",
		.env = "TENSORMM_HINTS_MAX",
		.type = TMM_TYPE_SIZE,
		.def = "64MiB",
		.accepted = "a size such as 64MiB, 1GiB or 4096",
		.help = "the largest plan file read (it is read whole into "
			"memory; a larger one is refused and the run "
			"measures) or written",
		.since = "0.1",
		/* A plan file has a few lines at least; 0 would refuse
		 * them all and is surely a mistake. */
		.min = 1,
		.max = TMM_TUNABLE_NO_LIMIT,
	},
	[TMM_T_STATS_SHM] = {
		.name = "stats_shm",
		.env = "TENSORMM_STATS_SHM",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "publish the context's live counters in a shared-"
			"memory segment for tensormm-stat",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_SHARE] = {
		.name = "share",
		.env = "TENSORMM_SHARE",
		.type = TMM_TYPE_STRING,
		.def = "off",
		.accepted = "off, auto, or a group name of 1 to 32 letters, "
			    "digits, '_', '-' or '.'",
		.help = "split the device budget with the other processes "
			"of the same device (and group) through a shared-"
			"memory segment keyed by the device (cuda: its UUID; "
			"sim: the profile and the device tunable's index); "
			"auto = all processes of the device",
		.since = "0.1",
		.validate = share_group_valid,
	},
	[TMM_T_MAX_SWAP_RATE] = {
		.name = "max_swap_rate",
		.env = "TENSORMM_MAX_SWAP_RATE",
		.type = TMM_TYPE_DOUBLE,
		.def = "1",
		.accepted = "a number from 0 to 1, such as 0.5",
		.help = "with share: this process's weight in giving up "
			"memory when the processes' demands do not fit "
			"(TENSILE's max swapping rate); 0 = give up none",
		.since = "0.1",
		.min = 0,
		.max = 1,
	},
	[TMM_T_CUPTI] = {
		.name = "cupti",
		.env = "TENSORMM_CUPTI",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "cuda backend: time ops by their kernels' CUPTI "
			"activity records; off = cudaEvents around each op "
			"(and no uvm_counters)",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_UVM_COUNTERS] = {
		.name = "uvm_counters",
		.env = "TENSORMM_UVM_COUNTERS",
		.type = TMM_TYPE_CHOICE,
		.def = "off",
		.accepted = "on or off",
		.help = "cuda backend, mode=uvm, with cupti=on: count the "
			"driver's own migrations and page faults by CUPTI's "
			"unified-memory counters (tmm_stats "
			"uvm_driver_counted); off by default, as they made a "
			"step 1.35x as long on an H200 where nothing moved",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_DL_PATH] = {
		.name = "dl_path",
		.env = "TENSORMM_DL_PATH",
		.type = TMM_TYPE_STRING,
		.def = "",
		.accepted = "directories separated by ':', or nothing for "
			    "the dynamic linker's search",
		.help = "where the libraries loaded on first use (CUPTI, "
			"cuDNN) are looked for, and nowhere else; empty = "
			"the dynamic linker's search (LD_LIBRARY_PATH, the "
			"system's); read by the first context that needs "
			"each",
		.since = "0.1",
		.secure_env = true,
	},
	[TMM_T_UVM_SWAP_PATH] = {
		.name = "uvm_swap_path",
		.env = "TENSORMM_UVM_SWAP_PATH",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "auto, prefetch, copy or mix",
		.help = "mode=uvm: how an evicted tensor leaves the device and "
			"comes back; prefetch = cudaMemPrefetchAsync both "
			"ways, copy = a pinned copy out and a discard, then a "
			"prefetch and a copy back; mix = copy, but where a "
			"copy of managed memory holds the host (CUDA's), the "
			"plan's swaps whose prefetches fit between eviction "
			"and use go by prefetch on a stream of their own; "
			"auto = the cheaper round trip by the rates measured "
			"at open (the profile's on the sim): copy on the H100 "
			"and H200 measured",
		.since = "0.1",
		.choices = uvm_swap_path_choices,
	},
	[TMM_T_UVM_COPIER] = {
		.name = "uvm_copier",
		.env = "TENSORMM_UVM_COPIER",
		.type = TMM_TYPE_CHOICE,
		.def = "runtime",
		.accepted = "runtime or kernel",
		.help = "cuda backend, mode=uvm by copy: what makes a copy "
			"between managed memory and a pinned buffer on the "
			"copy streams; runtime = cudaMemcpyAsync, which holds "
			"the host until the copy has run (CUDA documents it "
			"for Unified Memory), so no kernel is queued "
			"meanwhile; kernel = the library's own copy kernel, "
			"launched on the copy stream like any kernel, which "
			"holds nothing but uvm_copier_blocks of the device's "
			"multiprocessors while it runs; where it cannot be "
			"loaded, runtime, and tmm_stats says why; the "
			"simulator's copies then hold no host "
			"(sim_managed_copy=queued)",
		.since = "0.1",
		.choices = uvm_copier_choices,
	},
	[TMM_T_UVM_COPIER_BLOCKS] = {
		.name = "uvm_copier_blocks",
		.env = "TENSORMM_UVM_COPIER_BLOCKS",
		.type = TMM_TYPE_INT,
		.def = "0",
		.accepted = "an integer from 0 to 1024",
		.help = "uvm_copier=kernel: the most blocks of 256 threads "
			"one copy kernel runs, so the most multiprocessors it "
			"takes from the kernels beside it; 0 = the fewest of "
			"4, 8, 16, 32, 64 whose rate, measured at open, "
			"reaches 90% of the pinned copies'",
		.since = "0.1",
		.min = 0,
		.max = 1024,
	},
	[TMM_T_UVM_FRESH] = {
		.name = "uvm_fresh",
		.env = "TENSORMM_UVM_FRESH",
		.type = TMM_TYPE_CHOICE,
		.def = "auto",
		.accepted = "auto, prefetch or fault",
		.help = "mode=uvm: how the pages of an output that held "
			"nothing are made; prefetch = by a prefetch to the "
			"device just before its kernel, fault = by the "
			"kernel's own page faults; auto = prefetch where the "
			"device measured that rate at open",
		.since = "0.1",
		.choices = uvm_fresh_choices,
	},
	[TMM_T_UVM_CAP] = {
		.name = "uvm_cap",
		.env = "TENSORMM_UVM_CAP",
		.type = TMM_TYPE_CHOICE,
		.def = "both",
		.accepted = "both, driver or library",
		.help = "mode=uvm: what holds the pages on the device within "
			"the budget; driver = the driver's limit, where the "
			"backend has one (the simulator; on CUDA the budget "
			"only shapes the plans); library = the library swaps "
			"out least recently used tensors before an op's "
			"tensors would take its count of pages past the "
			"budget, on every backend; both = the library swaps "
			"out so before its count passes the driver's room "
			"while it has tensors to swap out, and the driver "
			"takes the rest (an op's own pages, pinned ones)",
		.since = "0.1",
		.choices = uvm_cap_choices,
	},
	[TMM_T_UVM_KEEP] = {
		.name = "uvm_keep",
		.env = "TENSORMM_UVM_KEEP",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "mode=uvm: a tensor destroyed with its pages on the "
			"device, or swapped out by copy, leaves its managed "
			"block populated for the next tensor of its size, "
			"while the pages fit under the budget (uvm_cap=driver "
			"on CUDA: the device's free memory) beside those the "
			"library holds; off = its pages are discarded or left "
			"in place as before, and the next tensor in a "
			"discarded range makes its pages afresh",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_UVM_COMPACT] = {
		.name = "uvm_compact",
		.env = "TENSORMM_UVM_COMPACT",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "mode=uvm: a tensor, workspace or recomputation "
			"buffer of 8 MiB or more that no kept "
			"block holds is placed over kept pages, the idle "
			"tensors in their way moved out by a copy on the "
			"device, where that makes at most half of its pages "
			"afresh; off = its pages are made afresh, as before",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_UVM_READ_MOSTLY] = {
		.name = "uvm_read_mostly",
		.env = "TENSORMM_UVM_READ_MOSTLY",
		.type = TMM_TYPE_CHOICE,
		.def = "on",
		.accepted = "on or off",
		.help = "mode=uvm by prefetch: the plan advises read-mostly "
			"each persistent tensor the iteration reads and never "
			"writes (frozen weights), so that the host keeps a "
			"copy of its pages and an eviction moves none of its "
			"bytes; off = such tensors leave by prefetch like any "
			"other",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_CHECK] = {
		.name = "check",
		.env = "TENSORMM_CHECK",
		.type = TMM_TYPE_CHOICE,
		.def = "off",
		.accepted = "on or off",
		.help = "before each op's callback, fill every output it did "
			"not declare as read (an input too, or accumulate) "
			"with 0xFF bytes (NaN in floating point), so that a "
			"callback that reads one gives wrong results every "
			"run, not only under memory pressure",
		.since = "0.1",
		.choices = off_on_choices,
	},
	[TMM_T_LIVENESS] = {
		.name = "liveness",
		.env = "TENSORMM_LIVENESS",
		.type = TMM_TYPE_CHOICE,
		.def = "discard",
		.accepted = "keep or discard",
		.help = "a tensor made in an iteration and idle from its last "
			"access until the program destroys it: discard = a "
			"plan that evicts it drops its bytes without a copy, "
			"unless the measured iteration read it after its last "
			"access, and reading it before it is written again "
			"fails with -ENODATA; keep = the eviction copies its "
			"bytes to the host, so that the program may still read "
			"them at any step (for programs that read such a "
			"tensor only now and then)",
		.since = "0.1",
		.choices = liveness_choices,
	},
	[TMM_T_POOL] = {
		.name = "pool",
		.env = "TENSORMM_POOL",
		.type = TMM_TYPE_CHOICE,
		.def = "arena",
		.accepted = "arena or chunks",
		.help = "mode=swap: arena = the budget taken as one device "
			"allocation; chunks = a virtual range with 2 MiB "
			"physical chunks mapped where tensors lie, so that "
			"fragmentation costs no device memory (falls back to "
			"arena where the backend cannot map)",
		.since = "0.1",
		.choices = pool_choices,
	},
	[TMM_T_LOG] = {
		.name = "log",
		.env = "TENSORMM_LOG",
		.type = TMM_TYPE_CHOICE,
		.def = "warn",
		.accepted = "error, warn, info or debug",
		.help = "how much the library reports on stderr",
		.since = "0.1",
		.choices = log_choices,
	},
	[TMM_T_FAULT] = {
		.name = "fault",
		.env = "TENSORMM_FAULT",
		.type = TMM_TYPE_STRING,
		.def = "",
		.accepted = "empty, or sites separated by ';', each SITE, "
			    "SITE@N or SITE@N+ (N from 1)",
		.help = "for tests: the named calls fail (the N-th call of "
			"SITE, or it and every later one); process-wide, set "
			"by each context created",
		.since = "0.1",
		.validate = tmm_fault_valid,
	},
};

const struct tmm_tunable *tmm_tunables(size_t *n)
{
	if (n)
		*n = TMM_TUNABLE_COUNT;
	return table;
}

/* ------------------------------------------------------------------------
 * Validators of STRING rows
 * ---------------------------------------------------------------------- */

static bool sim_profile_known(const char *value, char *why, size_t whylen)
{
	const struct tmm_sim_profile *all;
	struct tmm_text t;
	size_t n, i;

	if (tmm_sim_profile_find(value))
		return true;
	all = tmm_sim_profiles(&n);
	tmm_text_init(&t, why, whylen);
	tmm_text_add(&t, "no simulator profile of that name; known profiles: ");
	for (i = 0; i < n; i++)
		tmm_text_add(&t, "%s%s", i ? ", " : "", all[i].name);
	return false;
}

/* A group name becomes part of a shared-memory object's name, so it may
 * hold no '/' and nothing a shell would need quoted. */
static bool share_group_valid(const char *value, char *why, size_t whylen)
{
	size_t len = strlen(value);

	if (len == 0 || len > 32) {
		snprintf(why, whylen, "a group name has 1 to 32 characters");
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		char c = value[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.')) {
			snprintf(why, whylen, "'%c' may not be in a group "
				 "name", c);
			return false;
		}
	}
	return true;
}
