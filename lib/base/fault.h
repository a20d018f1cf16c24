/* SPDX-License-Identifier: MIT */
/*
 * fault.h — injected failures, for tests: the calls that the `fault`
 * tunable (TENSORMM_FAULT) names fail.
 *
 * The one fault-injection mechanism of the project: the library's own
 * failure points and the CUDA test double's (tests/cudafake/) ask here.
 * The grammar is a list of SITE, SITE@N or SITE@N+ separated by ';' (a
 * config string separates its keys by commas): the N-th call of SITE
 * fails (the first when @N is left out), or with "+" that call and every
 * later one.  Calls are counted per site, for
 * the whole process, from the moment the list is set.  A site is a name
 * of letters, digits, '_' and '.', such as cudaHostRegister.
 *
 * The library's own sites (man/tensormm.7 lists them): host_alloc (every
 * host allocation of lib/ and hints/, xalloc.h), device_alloc,
 * pinned_alloc and copy (the backends' device or managed memory, pinned
 * host memory and copies), wait (an engine made to wait for an event, on
 * the simulator), discard (a discard of managed pages, on the simulator),
 * advise (advice on managed pages, on the simulator),
 * file_write (the plan file and the trace),
 * dlopen and dlsym (a library loaded on first use, dynlib.h).
 *
 * A failure point on a hot path asks tmm_fault_armed() first: one relaxed
 * load while no list is set, so the points cost nothing in a real run.
 */
#ifndef TMM_FAULT_H
#define TMM_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether a list is set (tmm_fault_armed); written only by tmm_fault_set. */
extern atomic_bool tmm_fault_on;

/* Whether any site may fail: false means tmm_fault_hit is false for all. */
static inline bool tmm_fault_armed(void)
{
	return atomic_load_explicit(&tmm_fault_on, memory_order_relaxed);
}

/*
 * Whether `spec` is a valid list; when not, why into why[0 .. whylen).
 * "" is valid: no fault.
 */
bool tmm_fault_valid(const char *spec, char *why, size_t whylen);

/*
 * Makes `spec` the process's faults, every count from zero; "" or NULL:
 * none.  Returns 0, or -EINVAL (the list is not valid: nothing changes).
 */
int tmm_fault_set(const char *spec);

/* Counts one call of `site`; true when that call must fail. */
bool tmm_fault_hit(const char *site);

/* tmm_fault_hit behind the armed flag: what a failure point asks. */
static inline bool tmm_fault_now(const char *site)
{
	return tmm_fault_armed() && tmm_fault_hit(site);
}

/* The library's own sites (man/tensormm.7, the `fault` tunable). */
#define TMM_SITE_HOST_ALLOC "host_alloc"     /* lib/base/xalloc.h */
#define TMM_SITE_DEVICE_ALLOC "device_alloc" /* device or managed memory */
#define TMM_SITE_PINNED_ALLOC "pinned_alloc" /* pinned host memory */
#define TMM_SITE_COPY "copy"		     /* a copy, a fill or a prefetch */
#define TMM_SITE_WAIT "wait"		     /* an engine made to wait (sim) */
#define TMM_SITE_DISCARD "discard"	     /* managed pages discarded (sim) */
#define TMM_SITE_ADVISE "advise"	     /* advice on managed pages (sim) */
#define TMM_SITE_FILE_WRITE "file_write"     /* the plan file, the trace */
#define TMM_SITE_DLOPEN "dlopen"	     /* CUPTI or cuDNN not found */
#define TMM_SITE_DLSYM "dlsym"		     /* an entry point missing */

/*
 * The calls of `site` counted since the list was set; 0 for a site the
 * list does not name (only named sites are counted).  A sweep names a
 * site with a call number past the run's end to learn how many calls the
 * run makes.
 */
unsigned long tmm_fault_calls(const char *site);

#endif /* TMM_FAULT_H */
