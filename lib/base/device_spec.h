/* SPDX-License-Identifier: MIT */
/*
 * device_spec.h — the `device` tunable's value: which device a context
 * runs on (TENSORMM_DEVICE).
 *
 * Three spellings: "current" (the calling thread's current CUDA device
 * when the context is made; device 0 on the simulator), a device index
 * ("0", "1", ...: CUDA's ordinal, after CUDA_VISIBLE_DEVICES, or the
 * simulator's virtual device), or a CUDA device UUID as nvidia-smi -L
 * prints it ("GPU-" and 8-4-4-4-12 hex digits).  Parsing is syntax only;
 * whether the device exists is the backend's to say when it opens
 * (backend_cuda.c, backend_sim.c), since only it knows how many there
 * are.
 */
#ifndef TMM_DEVICE_SPEC_H
#define TMM_DEVICE_SPEC_H

#include <stdbool.h>
#include <stddef.h>

/* The largest index the syntax takes: beyond any machine's GPUs, and
 * beyond the simulator's virtual devices (TMM_SIM_DEVICES). */
#define TMM_DEVICE_INDEX_MAX 4095

/* How many virtual devices the simulator has: indexes 0 to 63. */
#define TMM_SIM_DEVICES 64

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" and its NUL. */
#define TMM_DEVICE_UUID_LEN 41

enum tmm_device_kind {
	TMM_DEVICE_CURRENT,
	TMM_DEVICE_INDEX,
	TMM_DEVICE_UUID,
};

struct tmm_device_spec {
	enum tmm_device_kind kind;
	int index;			 /* TMM_DEVICE_INDEX */
	char uuid[TMM_DEVICE_UUID_LEN];	 /* TMM_DEVICE_UUID, lower case */
};

/*
 * Parses `text` into *spec.  Returns true, or false with the reason in
 * why (which names TENSORMM_DEVICE and what it takes).
 */
bool tmm_device_spec_parse(const char *text, struct tmm_device_spec *spec,
			   char *why, size_t whylen);

/* tmm_device_spec_parse as a tunable's validator (tunables_table.c). */
bool tmm_device_spec_valid(const char *text, char *why, size_t whylen);

#endif /* TMM_DEVICE_SPEC_H */
