/* SPDX-License-Identifier: MIT */
/*
 * cuda_device.h — which CUDA device a context runs on, and what it is.
 *
 * backend_cuda.c opens the device with these: the ordinal a `device=`
 * names, its UUID and PCI address in the forms tools print, and the
 * roofline its first op estimates come from.  Built with CUDA only.
 */
#ifndef TMM_CUDA_DEVICE_H
#define TMM_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "backend_cuda_mem.h"

/*
 * The ordinal that cfg's `device=` names among the n devices this
 * process sees, into *out (current: the calling thread's device).
 * -EINVAL for a device= that does not parse, -ENODEV for one that names
 * no device here, each with a message naming TENSORMM_DEVICE in be->error.
 */
int tmm_cuda_resolve_device(struct tmm_backend *be,
			    const struct tmm_config *cfg, int n, int *out);

/* A device UUID's 16 bytes as nvidia-smi prints them, GPU-8-4-4-4-12. */
void tmm_cuda_uuid_format(char *dst, size_t len, const char bytes[16]);

/* CUDA's PCI address ("00000000:3B:00.0") as sysfs writes it
 * ("0000:3b:00.0"), or lower-cased as it came where it does not parse. */
void tmm_cuda_pci_id_copy(char *dst, size_t len, const char *cuda_id);

/*
 * Reads the clock, memory clock and bus width of s->device into s's
 * peaks (fp32 flops, memory bytes a second) and says where they came
 * from in info->op_estimate.  A missing attribute leaves its peak 0.
 */
void tmm_cuda_roofline(struct cuda_state *s, struct tmm_device_info *info,
		       int major, int minor, int sms);

/* The backend's op_estimate_ns: launch cost plus the roofline's time for
 * the op's flops or bytes, whichever is longer. */
uint64_t tmm_cuda_op_estimate_ns(struct tmm_backend *be,
				 const struct tmm_cost *cost);

#endif /* TMM_CUDA_DEVICE_H */
