/* SPDX-License-Identifier: MIT */
/*
 * backend_sim_copy.c — the simulated GPU's copies (backend_sim_copy.h):
 * the copy engines' queues, a copy of managed memory held as CUDA's
 * runtime holds it, and the library's copy kernel (uvm_copier=kernel) at
 * a rate of its own, taking a share of compute while it runs.
 *
 * A third file of the simulator beside backend_sim.c (engines, events,
 * kernels, the ops table) and backend_sim_mem.c (memory): struct sim is
 * backend_sim_mem.h's.  backend_sim.c puts these copies in its ops table
 * and asks tmm_sim_kernel_sm_cost at each kernel's end; this file calls
 * neither back.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "backend_sim_copy.h"
#include "backend_sim_mem.h"
#include "lib/base/fault.h"
#include "lib/base/sim_profile.h"
#include "sim_network.h"
#include "sim_uvm.h"

/*
 * Queues `bytes` that take `ns` alone on copy engine e: it starts when
 * both the engine is free and the host has issued it (sim_host_now), and
 * holds the engine until it ends, later where it shares PCIe with a
 * collective (sim_network.c).  Returns when it starts.
 */
static uint64_t sim_queue_copy_ns(struct sim *s, enum tmm_engine e,
				  uint64_t bytes, bool to_device, uint64_t ns)
{
	uint64_t start = max_u64(s->t[e], sim_host_now(s));
	uint64_t end = tmm_sim_net_copy_end(&s->net, s->prof, start, ns);
	uint64_t d = end - start;

	s->t[e] = end;
	s->c.busy_ns[e] += d;
	if (to_device) {
		s->c.bytes_h2d += bytes;
		s->c.copies_h2d++;
	} else {
		s->c.bytes_d2h += bytes;
		s->c.copies_d2h++;
	}
	return start;
}

/* ... taking the profile's pinned-copy time. */
static void sim_queue_copy(struct sim *s, enum tmm_engine e, uint64_t bytes,
			   bool to_device)
{
	(void)sim_queue_copy_ns(s, e, bytes, to_device,
				tmm_sim_copy_ns(s->prof, bytes, to_device));
}

/* How long [lo, hi) and [a, b) share. */
static uint64_t overlap_ns(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b)
{
	uint64_t from = max_u64(lo, a), to = hi < b ? hi : b;

	return to > from ? to - from : 0;
}

/*
 * A copy by the copy kernel (uvm_copier=kernel), at its own rate.  Its
 * blocks run on the multiprocessors the compute engine's kernels would
 * take, so while it runs compute goes at 1 - kernel_sm of its rate: the
 * compute work queued already ends kernel_sm of their overlap later, and
 * an op queued later pays its own overlap (tmm_sim_kernel_sm_cost).  First
 * order: the lengthened overlap is not charged again.
 */
static void sim_queue_kernel_copy(struct sim *s, enum tmm_engine e,
				  uint64_t bytes, bool to_device)
{
	double gbps = to_device ? s->kernel_h2d_gbps : s->kernel_d2h_gbps;
	uint64_t ns = s->prof->copy_latency_ns +
		      (uint64_t)llround((double)bytes / gbps);
	uint64_t start = sim_queue_copy_ns(s, e, bytes, to_device, ns);
	uint64_t c = s->t[TMM_ENGINE_COMPUTE], extra;

	s->kernel_copy_bytes += bytes;
	if (start > s->kernel_hi[e])
		s->kernel_lo[e] = start;
	s->kernel_hi[e] = s->t[e];
	if (!(s->kernel_sm > 0))
		return;
	extra = (uint64_t)llround(s->kernel_sm *
				  (double)overlap_ns(start, s->t[e], 0, c));
	s->t[TMM_ENGINE_COMPUTE] += extra;
	s->c.busy_ns[TMM_ENGINE_COMPUTE] += extra;
}

uint64_t tmm_sim_kernel_sm_cost(const struct sim *s, uint64_t d)
{
	uint64_t at = s->t[TMM_ENGINE_COMPUTE], o = 0;

	if (!s->copy_kernel || !(s->kernel_sm > 0))
		return 0;
	o += overlap_ns(at, at + d, s->kernel_lo[TMM_ENGINE_H2D],
			s->kernel_hi[TMM_ENGINE_H2D]);
	o += overlap_ns(at, at + d, s->kernel_lo[TMM_ENGINE_D2H],
			s->kernel_hi[TMM_ENGINE_D2H]);
	return (uint64_t)llround(s->kernel_sm * (double)(o < d ? o : d));
}

/* An injected failure of a copy (fault.h): nothing is copied or queued. */
static int sim_copy_fault(struct tmm_backend *be, const char *call,
			  size_t bytes)
{
	return tmm_backend_fail(be, -EIO, "sim %s: %zu bytes not copied (an "
				"injected fault, site %s)", call, bytes,
				TMM_SITE_COPY);
}

/*
 * A copy with a managed end, held: CUDA's runtime returns from it only
 * once it has run, its stream's earlier work included ("API
 * synchronization behavior": transfers involving Unified Memory are
 * synchronous with respect to the host), so no kernel is issued until
 * then.  On the H200 every step of mode=uvm by copy took the
 * unconstrained step plus its copies at the pinned rate, within -2.4%
 * to +3.7% over 30 runs (docs/gpu-h200-goals.md).  Ahead, the host's
 * clock waits; in lockstep the host is the compute engine, which then
 * runs nothing until the copy ends.  Either way it is the host's wait,
 * not a stall of compute for data.
 */
static void sim_hold_host(struct sim *s, uint64_t end)
{
	if (s->ahead) {
		sim_host_wait(s, end);
	} else if (end > s->t[TMM_ENGINE_COMPUTE]) {
		s->c.host_wait_ns += end - s->t[TMM_ENGINE_COMPUTE];
		s->t[TMM_ENGINE_COMPUTE] = end;
	}
}

int tmm_sim_copy_async(struct tmm_backend *be, enum tmm_engine engine,
		       void *dst, const void *src, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (!is_copy_engine(engine))
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_async: engine %d is not a "
					"copy engine (H2D %d, D2H %d)", engine,
					TMM_ENGINE_H2D, TMM_ENGINE_D2H);
	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_async: %zu bytes from %p to "
					"%p", bytes, src, dst);
	if (tmm_fault_now(TMM_SITE_COPY))
		return sim_copy_fault(be, "copy_async", bytes);
	/* The bytes land at once; only the clock says when. */
	if (!s->phantom)
		memcpy(dst, src, bytes);
	if (s->copy_kernel && (tmm_sim_uvm_contains(s->uvm, dst, bytes) ||
			       tmm_sim_uvm_contains(s->uvm, src, bytes))) {
		sim_queue_kernel_copy(s, engine, bytes,
				      engine == TMM_ENGINE_H2D);
		return 0;
	}
	sim_queue_copy(s, engine, bytes, engine == TMM_ENGINE_H2D);
	if (s->managed_copy_held && (tmm_sim_uvm_contains(s->uvm, dst, bytes) ||
				     tmm_sim_uvm_contains(s->uvm, src, bytes)))
		sim_hold_host(s, s->t[engine]);
	return 0;
}

/*
 * A synchronous copy waits for queued compute work and for earlier copies
 * in its direction, then holds the host until it ends.  That wait is the
 * caller's choice, so it is not counted as a stall.
 */
int tmm_sim_copy_sync(struct tmm_backend *be, void *dst, const void *src,
		      size_t bytes, bool to_device)
{
	struct sim *s = sim_of(be);
	enum tmm_engine e = to_device ? TMM_ENGINE_H2D : TMM_ENGINE_D2H;

	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_sync: %zu bytes from %p to "
					"%p", bytes, src, dst);
	if (tmm_fault_now(TMM_SITE_COPY))
		return sim_copy_fault(be, "copy_sync", bytes);
	if (!s->phantom)
		memcpy(dst, src, bytes);
	/* As CUDA's: queued on the compute stream, and waited for. */
	sim_compute_issue(s);
	s->t[e] = max_u64(s->t[e], s->t[TMM_ENGINE_COMPUTE]);
	sim_queue_copy(s, e, bytes, to_device);
	s->t[TMM_ENGINE_COMPUTE] = s->t[e];
	sim_host_until(s, s->t[e]);
	return 0;
}

/* A device-to-device copy is compute work: it reads and writes device
 * memory at the roofline's memory bandwidth. */
int tmm_sim_copy_on_device(struct tmm_backend *be, void *dst,
			   const void *src, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (bytes == 0)
		return 0;
	if (!dst || !src)
		return tmm_backend_fail(be, -EINVAL,
					"sim copy_on_device: %zu bytes from "
					"%p to %p", bytes, src, dst);
	if (tmm_fault_now(TMM_SITE_COPY))
		return sim_copy_fault(be, "copy_on_device", bytes);
	if (!s->phantom)
		memcpy(dst, src, bytes);
	/* Queued by an op's callback, the copy is that op's work, and
	 * kernel_end charges the op's cost hint; queued between ops (the
	 * pool's compaction), it is charged here. */
	if (!s->in_kernel) {
		sim_compute_issue(s);
		s->t[TMM_ENGINE_COMPUTE] +=
			tmm_sim_op_ns(s->prof, 0, 2.0 * (double)bytes);
	}
	return 0;
}

int tmm_sim_fill(struct tmm_backend *be, void *dst, int byte, size_t bytes)
{
	struct sim *s = sim_of(be);

	if (bytes == 0)
		return 0;
	if (!dst)
		return tmm_backend_fail(be, -EINVAL,
					"sim fill: %zu bytes at NULL", bytes);
	/* A write of device memory, as a copy on the device is. */
	if (tmm_fault_now(TMM_SITE_COPY))
		return sim_copy_fault(be, "fill", bytes);
	/* The bytes change at once; the op that asked pays the time. */
	if (!s->phantom)
		memset(dst, byte, bytes);
	return 0;
}
