/* SPDX-License-Identifier: MIT */
/*
 * cudnn_lib.c — cuDNN loaded where first used (see cudnn_lib.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>

#include "cudnn_lib.h"

/* The soname of the cuDNN built against, then the development link,
 * which may name another major version: usable() refuses that one. */
static const char *const files[] = { TMM_CUDNN_SONAME, "libcudnn.so",
				     NULL };

#define ENTRY(f) TMM_DYNLIB_ENTRY(struct tmm_cudnn, f)
static const struct tmm_dynlib_entry entries[] = { TMM_CUDNN_CALLS(ENTRY) };

static struct tmm_cudnn table;

/*
 * The pickers hand cuDNN arrays of its perf structs, whose layout is
 * the headers': only the major version built against may fill them.
 * cudnnGetVersion counts as CUDNN_VERSION does: major * 10000 from cuDNN
 * 9, major * 1000 before.
 */
static bool usable(const void *t, char *why, size_t whylen)
{
	size_t v = ((const struct tmm_cudnn *)t)->cudnnGetVersion();
	size_t major = v / (v >= 90000 ? 10000 : 1000);

	if (major == CUDNN_MAJOR)
		return true;
	snprintf(why, whylen, "it is cuDNN %zu (version %zu), and this "
		 "library was built for cuDNN %d", major, v, CUDNN_MAJOR);
	return false;
}

static struct tmm_dynlib lib = {
	.what = "cuDNN",
	.files = files,
	.entries = entries,
	.n_entries = sizeof(entries) / sizeof(entries[0]),
	.table = &table,
	.advice = "install cuDNN or add its directory to LD_LIBRARY_PATH "
		  "or dl_path (TENSORMM_DL_PATH)",
	.usable = usable,
	TMM_DYNLIB_UNLOADED,
};

const struct tmm_cudnn *tmm_cudnn_load(const char *dl_path, char *why,
				       size_t whylen)
{
	return tmm_dynlib_load(&lib, dl_path, why, whylen) == 0 ? &table
								 : NULL;
}
