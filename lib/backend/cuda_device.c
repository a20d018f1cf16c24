/* SPDX-License-Identifier: MIT */
/*
 * cuda_device.c — which CUDA device a context runs on, and what it is
 * (see cuda_device.h): the ordinal a `device=` names, the device's UUID
 * and PCI address as nvidia-smi and sysfs write them, and the roofline
 * behind first op estimates.  Apart from backend_cuda.c, which opens the
 * device with them, so that each file holds one concept.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda_device.h"
#include "backend_cuda_mem.h"
#include "lib/base/device_spec.h"
#include "lib/base/tunables.h"

/* A device UUID as nvidia-smi prints it: GPU-8-4-4-4-12 hex digits.  A
 * MIG instance has one of its own, where the PCI bus id is its GPU's. */
void tmm_cuda_uuid_format(char *dst, size_t len, const char bytes[16])
{
	const unsigned char *b = (const unsigned char *)bytes;

	snprintf(dst, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

/*
 * CUDA writes PCI addresses as "00000000:3B:00.0"; info.pci_bus_id and
 * sysfs use "0000:3b:00.0".  Left as CUDA wrote it (lower-cased) when it
 * does not parse.
 */
void tmm_cuda_pci_id_copy(char *dst, size_t len, const char *cuda_id)
{
	unsigned dom, bus, dev, fn;
	char tail;

	dst[0] = '\0';
	if (sscanf(cuda_id, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn,
		   &tail) == 4 &&
	    snprintf(dst, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn) > 0)
		return;
	for (size_t i = 0; i + 1 < len && cuda_id[i]; i++) {
		char c = cuda_id[i];

		dst[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		dst[i + 1] = '\0';
	}
}

/*
 * FP32 lanes per SM by compute capability: 64 on Volta, Turing and A100
 * (8.0), 128 from 8.6 on (Ampere consumer, Ada, Hopper, Blackwell).  The
 * runtime does not report it, hence the table.
 */
static int fp32_lanes_per_sm(int major, int minor)
{
	if (major < 8 || (major == 8 && minor == 0))
		return 64;
	return 128;
}

/*
 * The figures behind op_estimate_ns.  Peaks, not what a kernel reaches:
 * an estimate for a first plan, which re-planning on drift corrects with
 * measured times.  Where an attribute is missing the estimate is 0 and
 * op_estimate_ns falls back to the launch cost alone.
 */
void tmm_cuda_roofline(struct cuda_state *s, struct tmm_device_info *info,
		       int major, int minor, int sms)
{
	int clock_khz = 0, mem_khz = 0, bus_bits = 0;

	if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate,
				   s->device) != cudaSuccess)
		clock_khz = 0;
	if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate,
				   s->device) != cudaSuccess ||
	    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth,
				   s->device) != cudaSuccess)
		mem_khz = bus_bits = 0;
	(void)cudaGetLastError();
	/* One fused multiply-add per lane per clock: two flops. */
	s->peak_flops = 2.0 * fp32_lanes_per_sm(major, minor) * sms *
			clock_khz * 1e3;
	/* Double data rate: two transfers per memory clock. */
	s->mem_bytes_per_s = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;
	snprintf(info->op_estimate, sizeof(info->op_estimate),
		 "an estimate: the roofline of %.1f TFLOP/s fp32 and %.0f "
		 "GB/s, peaks from the device attributes",
		 s->peak_flops / 1e12, s->mem_bytes_per_s / 1e9);
}

/* A kernel launch as the host sees it: an estimate. */
#define CUDA_LAUNCH_NS 5000u

uint64_t tmm_cuda_op_estimate_ns(struct tmm_backend *be,
				const struct tmm_cost *cost)
{
	struct cuda_state *s = st_of(be);
	double compute_s = 0, memory_s = 0;

	if (cost && s->peak_flops > 0 && cost->flops > 0)
		compute_s = cost->flops / s->peak_flops;
	if (cost && s->mem_bytes_per_s > 0 && cost->bytes > 0)
		memory_s = cost->bytes / s->mem_bytes_per_s;
	return CUDA_LAUNCH_NS +
	       (uint64_t)(1e9 * (compute_s > memory_s ? compute_s : memory_s));
}

/*
 * The ordinal `device=` names among the n devices there are, into *out;
 * -EINVAL or -ENODEV with a message naming TENSORMM_DEVICE otherwise.
 */
int tmm_cuda_resolve_device(struct tmm_backend *be,
			    const struct tmm_config *cfg, int n, int *out)
{
	struct tmm_device_spec d = { .kind = TMM_DEVICE_CURRENT };
	char why[256], uuid[48];
	cudaError_t e;

	/* A configuration not loaded from the table (zeroed, as a test
	 * may make) has no device: current, the default. */
	if (cfg && cfg->device[0] &&
	    !tmm_device_spec_parse(cfg->device, &d, why, sizeof(why)))
		return tmm_backend_fail(be, -EINVAL, "device=%s: %s",
					cfg->device, why);
	switch (d.kind) {
	case TMM_DEVICE_CURRENT:
		e = cudaGetDevice(out);
		if (e != cudaSuccess)
			return tmm_cuda_fail(be, e, "cudaGetDevice (device="
					     "current)");
		return 0;
	case TMM_DEVICE_INDEX:
		if (d.index >= n)
			return tmm_backend_fail(be, -ENODEV,
						"device=%d: this process sees "
						"%d CUDA device%s (0 to %d; "
						"CUDA_VISIBLE_DEVICES chooses "
						"which); set TENSORMM_DEVICE "
						"to one of them", d.index, n,
						n == 1 ? "" : "s", n - 1);
		*out = d.index;
		return 0;
	case TMM_DEVICE_UUID:
		for (int i = 0; i < n; i++) {
			struct cudaDeviceProp prop;

			e = cudaGetDeviceProperties(&prop, i);
			if (e != cudaSuccess)
				return tmm_cuda_fail(be, e,
						     "cudaGetDeviceProperties"
						     "(%d) (device=%s)", i,
						     d.uuid);
			tmm_cuda_uuid_format(uuid, sizeof(uuid), prop.uuid.bytes);
			if (strcmp(uuid, d.uuid) == 0) {
				*out = i;
				return 0;
			}
		}
		return tmm_backend_fail(be, -ENODEV,
					"device=%s: none of the %d CUDA "
					"device%s this process sees has that "
					"UUID (nvidia-smi -L lists them; "
					"CUDA_VISIBLE_DEVICES may hide it); "
					"set TENSORMM_DEVICE to one of them",
					d.uuid, n, n == 1 ? "" : "s");
	}
	return tmm_backend_fail(be, -EINVAL, "device=%s", cfg->device);
}
