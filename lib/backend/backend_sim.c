/* SPDX-License-Identifier: MIT */
/*
 * backend_sim.c — the simulated GPU: its engines and their clocks.
 *
 * A device made of three in-order engines (compute, host-to-device copy,
 * device-to-host copy) whose clocks are virtual nanoseconds.  Events are
 * timestamps on an engine's timeline; waiting on one moves the waiter's
 * clock forward.  The host runs one of two ways (sim_host):
 *
 *  - lockstep (the default): the host's "now" is the compute engine's
 *    time, so a kernel advances it by the op's roofline duration while a
 *    copy queued on a copy engine does not, as an async copy overlaps host
 *    work.  Every query sees the device exactly where the op being issued
 *    will run.
 *  - ahead: the host has a clock of its own, as with a real GPU, whose
 *    host queues kernels and copies and goes on.  Issuing a kernel costs
 *    the host the profile's launch time; work starts when both its engine
 *    is free and the host has issued it; the host moves only where it
 *    waits (event_sync, copy_sync, a host touch of managed memory, and
 *    kernels_wait at the iteration's end, where CUDA's runtime reads the
 *    op times).  So a query of a copy queued a few ops back sees it still
 *    running, and the clock the runtime records its trace by is the
 *    host's, as on CUDA (issue #19: the H200 ran plans the lockstep
 *    simulator never showed losing).
 *
 * Durations come from the hardware profile (sim_profile.c); optional
 * jitter, drawn from a seeded generator, makes ops miss their predicted
 * time the way real kernels do, reproducibly.
 *
 * The device's memory, backed or phantom, plain or managed, is
 * backend_sim_mem.c's, and its copies backend_sim_copy.c's.  This file
 * opens and closes the device and holds the ops table, so it calls into
 * those two and never the other way; struct sim spans the three
 * (backend_sim_mem.h).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_sim.h"
#include "backend_sim_copy.h"
#include "backend_sim_mem.h"
#include "lib/base/device_spec.h"
#include "lib/base/sim_profile.h"
#include "sim_network.h"
#include "sim_uvm.h"
#include "lib/base/tunables.h"
#include "lib/base/fault.h"
#include "lib/base/xalloc.h"

/* Marks a live sim state, so the counters accessor can refuse others. */
#define SIM_MAGIC UINT64_C(0x73696d2d67707521)

/* A jittered op never takes less than this fraction of its roofline. */
#define SIM_JITTER_FLOOR 0.05

/* ------------------------------------------------------------------------
 * Seeded jitter
 * ---------------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, well mixed. */
static uint64_t rng_next(struct sim *s)
{
	uint64_t z;

	s->rng += UINT64_C(0x9e3779b97f4a7c15);
	z = s->rng;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A uniform double in (0, 1]: never 0, so log() below stays finite. */
static double rng_unit(struct sim *s)
{
	return (double)((rng_next(s) >> 11) + 1) * 0x1.0p-53;
}

/* A standard normal deviate (Box-Muller; the second of a pair is kept). */
static double rng_normal(struct sim *s)
{
	double r, theta;

	if (s->have_spare) {
		s->have_spare = false;
		return s->spare;
	}
	r = sqrt(-2.0 * log(rng_unit(s)));
	theta = 2.0 * M_PI * rng_unit(s);
	s->spare = r * sin(theta);
	s->have_spare = true;
	return r * cos(theta);
}

/* ------------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------- */

static int sim_unknown_profile(struct tmm_backend *be, const char *name)
{
	const struct tmm_sim_profile *p;
	char list[160] = "";
	size_t n, i, len = 0;

	p = tmm_sim_profiles(&n);
	for (i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i ? ", " : "", p[i].name);
	return tmm_backend_fail(be, -EINVAL,
				"sim open: unknown sim_profile \"%s\"; "
				"known profiles: %s", name, list);
}

/*
 * The virtual device `device=` names: an index from 0 to 63 (current is
 * 0).  Each context is a device of its own whatever the index; the index
 * only names it, for the share segment's key and the statistics, so that
 * ranks can be put on several simulated devices.
 */
static int sim_device_index(struct tmm_backend *be,
			    const struct tmm_config *cfg, int *index)
{
	struct tmm_device_spec d;
	char why[256];

	*index = 0;
	/* A configuration not loaded from the table (zeroed) has none:
	 * current, the default. */
	if (!cfg->device[0])
		return 0;
	if (!tmm_device_spec_parse(cfg->device, &d, why, sizeof(why)))
		return tmm_backend_fail(be, -EINVAL, "sim open: device=%s: %s",
					cfg->device, why);
	if (d.kind == TMM_DEVICE_UUID)
		return tmm_backend_fail(be, -ENODEV,
					"sim open: device=%s: the simulator "
					"has no device of that UUID: its %d "
					"virtual devices are named by index, "
					"0 to %d; set TENSORMM_DEVICE to one, "
					"or backend=cuda", d.uuid,
					TMM_SIM_DEVICES, TMM_SIM_DEVICES - 1);
	if (d.kind == TMM_DEVICE_INDEX && d.index >= TMM_SIM_DEVICES)
		return tmm_backend_fail(be, -ENODEV,
					"sim open: device=%d: the simulator "
					"has %d virtual devices, 0 to %d; set "
					"TENSORMM_DEVICE to one of them",
					d.index, TMM_SIM_DEVICES,
					TMM_SIM_DEVICES - 1);
	if (d.kind == TMM_DEVICE_INDEX)
		*index = d.index;
	return 0;
}

static int sim_open(struct tmm_backend *be, const struct tmm_config *cfg)
{
	const struct tmm_sim_profile *prof;
	struct sim *s;
	int index, rc;

	be->state = NULL;
	if (!cfg)
		return tmm_backend_fail(be, -EINVAL, "sim open: no config");
	prof = tmm_sim_profile_find(cfg->sim_profile);
	if (!prof)
		return sim_unknown_profile(be, cfg->sim_profile);
	if (cfg->sim_memory != TMM_SIM_BACKED &&
	    cfg->sim_memory != TMM_SIM_PHANTOM)
		return tmm_backend_fail(be, -EINVAL,
					"sim open: sim_memory %d is neither "
					"backed nor phantom", cfg->sim_memory);
	if (!(cfg->sim_jitter >= 0 && cfg->sim_jitter <= 1))
		return tmm_backend_fail(be, -EINVAL,
					"sim open: sim_jitter %g is outside "
					"0..1", cfg->sim_jitter);
	rc = sim_device_index(be, cfg, &index);
	if (rc < 0)
		return rc;
	s = tmm_calloc(1, sizeof(*s));
	if (!s)
		return tmm_backend_fail(be, -ENOMEM,
					"sim open: out of host memory for "
					"the simulator's state");
	s->magic = SIM_MAGIC;
	s->prof = prof;
	s->capacity = cfg->sim_capacity ? cfg->sim_capacity : prof->capacity;
	s->phantom = cfg->sim_memory == TMM_SIM_PHANTOM;
	s->jitter = cfg->sim_jitter;
	s->rng = cfg->sim_seed;
	s->ahead = cfg->sim_host_ahead;
	/* uvm_copier=kernel: the copies are kernels, which hold no host
	 * (cuda_copier.h), at a rate of their own and at a share of the
	 * compute rate while they run: the tunables', since no GPU has
	 * measured either yet. */
	s->copy_kernel = cfg->uvm_copier == TMM_UVM_COPIER_KERNEL;
	s->kernel_h2d_gbps = cfg->sim_copy_kernel_gbps > 0
				     ? cfg->sim_copy_kernel_gbps
				     : prof->h2d_gbps;
	s->kernel_d2h_gbps = cfg->sim_copy_kernel_gbps > 0
				     ? cfg->sim_copy_kernel_gbps
				     : prof->d2h_gbps;
	s->kernel_sm = cfg->sim_copy_kernel_sm;
	s->managed_copy_held = cfg->sim_managed_copy_held && !s->copy_kernel;
	/* Until the runtime sets a budget, managed pages may fill the
	 * whole device. */
	if (tmm_sim_uvm_create(&s->uvm, prof, s->capacity) < 0) {
		free(s);
		return tmm_backend_fail(be, -ENOMEM,
					"sim open: cannot set up the managed-"
					"memory model for %s", prof->name);
	}
	be->state = s;

	memset(&be->info, 0, sizeof(be->info));
	snprintf(be->info.name, sizeof(be->info.name), "%s", prof->name);
	be->info.index = index;
	be->info.capacity = s->capacity;
	be->info.free_at_open = s->capacity;
	be->info.simulated = true;
	be->info.host_accessible = !s->phantom;
	be->info.phantom = s->phantom;
	/* The UVM model prefetches and advises while kernels run, as a
	 * Pascal or later GPU on Linux does. */
	be->info.concurrent_managed = true;
	be->info.managed_copies_block_host = s->managed_copy_held;
	if (s->copy_kernel) {
		be->info.kernel_copy_h2d_gbps = s->kernel_h2d_gbps;
		be->info.kernel_copy_d2h_gbps = s->kernel_d2h_gbps;
		be->info.kernel_copy_share = s->kernel_sm;
	}
	be->info.managed_resident = true;
	be->info.managed_limit_binds = true;
	be->info.managed_counted = true;
	be->info.numa_node = -1;
	be->info.h2d_gbps = prof->h2d_gbps;
	be->info.d2h_gbps = prof->d2h_gbps;
	be->info.copy_latency_ns = prof->copy_latency_ns;
	/* sim_uvm.c charges these, so the runtime chooses by them. */
	be->info.uvm_prefetch_h2d_gbps = prof->uvm_prefetch_h2d_gbps > 0
						 ? prof->uvm_prefetch_h2d_gbps
						 : prof->h2d_gbps;
	be->info.uvm_prefetch_d2h_gbps = prof->uvm_prefetch_d2h_gbps > 0
						 ? prof->uvm_prefetch_d2h_gbps
						 : prof->d2h_gbps;
	be->info.uvm_fresh_gbps = prof->uvm_prefetch_fresh_gbps;
	snprintf(be->info.op_estimate, sizeof(be->info.op_estimate),
		 "the roofline of profile %s (simulated)", prof->name);
	be->info.launch_ns = prof->launch_ns;
	be->info.net_shares_link = prof->net_over_pcie;
	be->info.net_gbps = prof->net_gbps;
	be->info.net_latency_ns = prof->net_latency_ns;
	be->info.pci_bus_id[0] = '\0';
	return 0;
}

/* Virtual time needs no draining: returning the memory is all there is. */
static void sim_close(struct tmm_backend *be)
{
	struct sim *s = sim_of(be);
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nmaps; i++)
		tmm_sim_unmap(&s->maps[i]);
	free(s->maps);
	tmm_sim_uvm_destroy(s->uvm);
	tmm_sim_net_free(&s->net);
	s->magic = 0;
	free(s);
	be->state = NULL;
}

/* ------------------------------------------------------------------------
 * Events
 * ---------------------------------------------------------------------- */

static bool is_engine(enum tmm_engine e)
{
	return (unsigned)e < TMM_ENGINE_COUNT;
}

static int sim_event_record(struct tmm_backend *be, enum tmm_engine engine,
			    tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_record: event is NULL");
	if (!is_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim event_record: no engine %d",
					engine);
	ev->valid = true;
	ev->engine = engine;
	/* Ahead of an idle engine, the event is reached when issued. */
	ev->t_ns = max_u64(sim_of(be)->t[engine],
			   sim_of(be)->ahead ? sim_of(be)->host : 0);
	ev->native = NULL;
	return 0;
}

/* An event's time now: on a copy engine, collectives that shared the
 * link since it was recorded may have moved it (sim_network.h). */
static uint64_t event_time(const struct sim *s, const tmm_event *ev)
{
	if (is_copy_engine(ev->engine))
		return tmm_sim_net_revise(&s->net, ev->t_ns);
	return ev->t_ns;
}

/* An event is done once the host's now has passed it. */
static int sim_event_query(struct tmm_backend *be, const tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_query: event is NULL");
	if (!ev->valid)
		return 1;
	return event_time(sim_of(be), ev) <= sim_host_now(sim_of(be));
}

/* Moves `engine` forward to the event; compute waiting is a stall. */
static void sim_wait_until(struct sim *s, enum tmm_engine engine, uint64_t t)
{
	if (t <= s->t[engine])
		return;
	if (engine == TMM_ENGINE_COMPUTE)
		s->c.stall_ns += t - s->t[engine];
	s->t[engine] = t;
}

/* Compute waiting for a collective's event until t: the part of the
 * wait while a collective holds the link is exposed (net_wait_ns). */
static void count_net_wait(struct sim *s, enum tmm_engine engine,
			   const tmm_event *ev, uint64_t t)
{
	if (engine == TMM_ENGINE_COMPUTE && ev->engine == TMM_ENGINE_NET &&
	    t > s->t[TMM_ENGINE_COMPUTE])
		s->c.net_wait_ns += tmm_sim_net_held(
			&s->net, s->t[TMM_ENGINE_COMPUTE], t);
}

static int sim_event_sync(struct tmm_backend *be, const tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim event_sync: event is NULL");
	if (ev->valid && sim_of(be)->ahead) {
		/* The host, not the compute engine, waits (no collective's
		 * share of it is counted ahead). */
		sim_host_wait(sim_of(be), event_time(sim_of(be), ev));
	} else if (ev->valid) {
		count_net_wait(sim_of(be), TMM_ENGINE_COMPUTE, ev,
			       event_time(sim_of(be), ev));
		sim_wait_until(sim_of(be), TMM_ENGINE_COMPUTE,
			       event_time(sim_of(be), ev));
	}
	return 0;
}

static int sim_engine_wait(struct tmm_backend *be, enum tmm_engine engine,
			   const tmm_event *ev)
{
	if (!is_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim engine_wait: no engine %d",
					engine);
	if (!ev)
		return tmm_backend_fail(be, -EINVAL,
					"sim engine_wait: event is NULL");
	if (tmm_fault_now(TMM_SITE_WAIT))
		return tmm_backend_fail(be, -EIO, "sim engine_wait: engine %d "
					"not made to wait (an injected fault, "
					"site %s)", engine, TMM_SITE_WAIT);
	/* The wait is queued when issued: compute runs dry till then. */
	if (engine == TMM_ENGINE_COMPUTE)
		sim_compute_issue(sim_of(be));
	if (ev->valid) {
		count_net_wait(sim_of(be), engine, ev,
			       event_time(sim_of(be), ev));
		sim_wait_until(sim_of(be), engine,
			       event_time(sim_of(be), ev));
	}
	return 0;
}

/* The engine's time before and after the wait: what it stood still. */
static int sim_engine_wait_timed(struct tmm_backend *be,
				 enum tmm_engine engine, const tmm_event *ev,
				 tmm_timed_wait *w)
{
	int rc;

	*w = (tmm_timed_wait){ 0 };
	if (!is_engine(engine))
		return sim_engine_wait(be, engine, ev);
	w->before_ns = sim_of(be)->t[engine];
	rc = sim_engine_wait(be, engine, ev);
	if (rc < 0)
		return rc;
	w->after_ns = sim_of(be)->t[engine];
	w->valid = true;
	return 0;
}

static int sim_timed_wait_ns(struct tmm_backend *be, tmm_timed_wait *w,
			     uint64_t *ns)
{
	/* Reading the points waits for the device to reach them. */
	if (w->valid && sim_of(be)->ahead)
		sim_host_wait(sim_of(be), w->after_ns);
	*ns = w->valid ? w->after_ns - w->before_ns : 0;
	*w = (tmm_timed_wait){ 0 };
	return 0;
}

/*
 * A sim event is a plain timestamp: nothing to free.  It is still made
 * invalid, as CUDA's is, so that code reading an event after releasing it
 * behaves on the simulator as it would on a GPU.
 */
static void sim_event_release(struct tmm_backend *be, tmm_event *ev)
{
	(void)be;
	ev->valid = false;
	ev->t_ns = 0;
}

/* ------------------------------------------------------------------------
 * Kernels and the clock
 * ---------------------------------------------------------------------- */

/* The whole op is timed at kernel_end, from its cost hint. */
static int sim_kernel_begin(struct tmm_backend *be,
			    const struct tmm_cost *cost)
{
	(void)cost;
	sim_compute_issue(sim_of(be));
	sim_of(be)->in_kernel = true;
	return 0;
}

/*
 * A collective (cost.net_bytes > 0) runs on the network engine beside the
 * compute stream, as NCCL on a stream of its own: from the op's issue,
 * after an earlier collective, its arithmetic and then its network part,
 * which may share PCIe with copies in flight.  The compute stream pays
 * only the op's roofline (its kernels take the SMs they take); the end of
 * the network part is the op's collective_event, which the runtime makes
 * the collective's tensors' later users wait for.
 */
static int sim_collective(struct tmm_backend *be, struct sim *s,
			  uint64_t op_ns, double net_bytes)
{
	uint64_t at = s->t[TMM_ENGINE_COMPUTE], end;
	uint64_t copies[2] = { s->t[TMM_ENGINE_H2D], s->t[TMM_ENGINE_D2H] };
	int rc;

	tmm_sim_net_forget(&s->net, at);
	rc = tmm_sim_net_collective(&s->net, s->prof, at, op_ns, net_bytes,
				    copies, &end);
	if (rc < 0)
		return tmm_backend_fail(be, rc, "sim kernel_end: out of host "
					"memory for the network engine's "
					"bookings");
	/* Copies in flight on a shared link now end later. */
	s->c.busy_ns[TMM_ENGINE_H2D] += copies[0] - s->t[TMM_ENGINE_H2D];
	s->c.busy_ns[TMM_ENGINE_D2H] += copies[1] - s->t[TMM_ENGINE_D2H];
	s->t[TMM_ENGINE_H2D] = copies[0];
	s->t[TMM_ENGINE_D2H] = copies[1];
	s->last_end = end;
	return 0;
}

static int sim_kernel_end(struct tmm_backend *be, const struct tmm_cost *cost,
			  uint64_t *ns)
{
	struct sim *s = sim_of(be);
	double scale;
	uint64_t d;
	int rc;

	s->in_kernel = false;
	/* An op without a cost hint still pays its launch. */
	d = tmm_sim_op_ns(s->prof, cost ? cost->flops : 0,
			  cost ? cost->bytes : 0);
	if (s->jitter > 0) {
		scale = 1.0 + s->jitter * rng_normal(s);
		if (scale < SIM_JITTER_FLOOR)
			scale = SIM_JITTER_FLOOR;
		d = (uint64_t)llround((double)d * scale);
	}
	d += tmm_sim_kernel_sm_cost(s, d);
	s->last_end = s->t[TMM_ENGINE_COMPUTE] + d;
	if (cost && cost->net_bytes > 0) {
		rc = sim_collective(be, s, d, cost->net_bytes);
		if (rc < 0)
			return rc;
	}
	s->t[TMM_ENGINE_COMPUTE] += d;
	s->c.busy_ns[TMM_ENGINE_COMPUTE] += d;
	s->c.kernels++;
	/* Ahead, the host pays the launch and goes on. */
	if (s->ahead)
		s->host += s->prof->launch_ns;
	if (ns)
		*ns = d;
	return 0;
}

/* The profile's roofline without jitter: what the planner is told to
 * expect, while kernel_end draws what the device "really" took. */
/* What the compute stream pays for an op: a collective's network part
 * runs beside the ops after it (sim_network.h), so a rehearsal records
 * what a measured iteration does, and the planners book the network part
 * from info.net_gbps (hints/link_share.c). */
static uint64_t sim_op_estimate_ns(struct tmm_backend *be,
				   const struct tmm_cost *cost)
{
	const struct tmm_sim_profile *p = sim_of(be)->prof;

	return tmm_sim_op_ns(p, cost ? cost->flops : 0,
			     cost ? cost->bytes : 0);
}

static void *sim_compute_stream(struct tmm_backend *be)
{
	(void)be;
	return NULL;
}

/* The sim has no streams: a collective's callback gets NULL too. */
static void *sim_comm_stream(struct tmm_backend *be)
{
	(void)be;
	return NULL;
}

/* The end of the op bracketed last, its network part included: an
 * event of the network engine, which no engine's clock reads as passed
 * until it has. */
static int sim_collective_event(struct tmm_backend *be, tmm_event *ev)
{
	if (!ev)
		return tmm_backend_fail(be, -EINVAL, "sim collective_event: "
					"event is NULL");
	ev->valid = true;
	ev->engine = TMM_ENGINE_NET;
	ev->t_ns = sim_of(be)->last_end;
	ev->native = NULL;
	return 0;
}

static uint64_t sim_now_ns(struct tmm_backend *be)
{
	struct sim *s = sim_of(be);

	return s ? sim_host_now(s) : 0;
}

/* Ahead, the host waits for the compute engine's queue, as CUDA's
 * runtime does reading the op times at an iteration's end; in lockstep
 * there is nothing to wait for. */
static int sim_kernels_wait(struct tmm_backend *be)
{
	struct sim *s = sim_of(be);

	if (s->ahead)
		sim_host_wait(s, s->t[TMM_ENGINE_COMPUTE]);
	return 0;
}

/* ------------------------------------------------------------------------
 * The vtable and the counters
 * ---------------------------------------------------------------------- */

const struct tmm_backend_ops tmm_backend_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.dev_alloc = tmm_sim_dev_alloc,
	.dev_free = tmm_sim_dev_free,
	.va_reserve = tmm_sim_va_reserve,
	.va_map = tmm_sim_va_map,
	.va_unmap = tmm_sim_va_unmap,
	.va_release = tmm_sim_va_release,
	.managed_alloc = tmm_sim_managed_alloc,
	.managed_free = tmm_sim_managed_free,
	.host_alloc = tmm_sim_host_alloc,
	.host_free = tmm_sim_host_free,
	.copy_async = tmm_sim_copy_async,
	.copy_sync = tmm_sim_copy_sync,
	.copy_on_device = tmm_sim_copy_on_device,
	.fill = tmm_sim_fill,
	.prefetch = tmm_sim_prefetch,
	.advise = tmm_sim_advise,
	.discard = tmm_sim_discard,
	.managed_access = tmm_sim_managed_access,
	.managed_limit = tmm_sim_managed_limit,
	.managed_stats = tmm_sim_managed_stats,
	.event_record = sim_event_record,
	.event_query = sim_event_query,
	.event_sync = sim_event_sync,
	.engine_wait = sim_engine_wait,
	.event_release = sim_event_release,
	.engine_wait_timed = sim_engine_wait_timed,
	.timed_wait_ns = sim_timed_wait_ns,
	.kernel_begin = sim_kernel_begin,
	.kernel_end = sim_kernel_end,
	.op_estimate_ns = sim_op_estimate_ns,
	.compute_stream = sim_compute_stream,
	.comm_stream = sim_comm_stream,
	.collective_event = sim_collective_event,
	.now_ns = sim_now_ns,
	.kernels_wait = sim_kernels_wait,
};

int tmm_sim_get_counters(const struct tmm_backend *be,
			 struct tmm_sim_counters *c)
{
	const struct sim *s;

	if (!be || !c || be->ops != &tmm_backend_sim_ops || !be->state)
		return -EINVAL;
	s = be->state;
	if (s->magic != SIM_MAGIC)
		return -EINVAL;
	*c = s->c;
	memcpy(c->engine_ns, s->t, sizeof(c->engine_ns));
	c->collectives = s->net.collectives;
	c->net_busy_ns = s->net.busy_ns;
	c->net_bytes = s->net.bytes;
	return 0;
}
