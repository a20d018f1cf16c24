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
 */
#ifndef TMM_FAULT_H
#define TMM_FAULT_H

#include <stdbool.h>
#include <stddef.h>

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

#endif /* TMM_FAULT_H */
