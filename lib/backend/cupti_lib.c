/* SPDX-License-Identifier: MIT */
/*
 * cupti_lib.c — CUPTI loaded where first used (see cupti_lib.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cupti_lib.h"

/* The soname of the CUPTI configure found (its ABI: the activity
 * records' layout follows it), then the development link, which may name
 * a newer one; cuda_timing.c refuses an older CUPTI by its version. */
static const char *const files[] = { TMM_CUPTI_SONAME, "libcupti.so",
				     NULL };

#define ENTRY(f) TMM_DYNLIB_ENTRY(struct tmm_cupti, f)
static const struct tmm_dynlib_entry entries[] = { TMM_CUPTI_CALLS(ENTRY) };

static struct tmm_cupti table;

static struct tmm_dynlib lib = {
	.what = "CUPTI",
	.files = files,
	.entries = entries,
	.n_entries = sizeof(entries) / sizeof(entries[0]),
	.table = &table,
	.advice = "install CUPTI (it comes with the CUDA toolkit) or add "
		  "its directory to LD_LIBRARY_PATH or dl_path "
		  "(TENSORMM_DL_PATH); cupti=off times ops by cudaEvents "
		  "without it",
	TMM_DYNLIB_UNLOADED,
};

const struct tmm_cupti *tmm_cupti_load(const char *dl_path, char *why,
				       size_t whylen)
{
	return tmm_dynlib_load(&lib, dl_path, why, whylen) == 0 ? &table
								 : NULL;
}
