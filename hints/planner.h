/* SPDX-License-Identifier: MIT */
/*
 * planner.h — the planners' interface: choosing one by name
 * (TENSORMM_POLICY), mode=uvm's way of moving tensors and mode=auto's
 * choice of mode (uvm_way.h); all that lib/ may know of hints/.
 *
 * Every planner is a pure function: one recorded iteration and the device
 * it will run on in, a plan out.  No CUDA, no globals, no I/O.  The one
 * service a planner may use, trying a plan on a twin of the device, comes
 * in with its input as a table of functions (struct tmm_twin_ops) that the
 * runtime fills (lib/twin/trial.c), so hints/ depends on no lib/ internal:
 * only on the trace and plan types (lib/io/) and the tunables (lib/base/).
 * This header is the only one of hints/ that lib/ includes
 * (scripts/check-layers holds it to that).
 */
#ifndef TMM_PLANNER_H
#define TMM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/io/plan.h"
#include "planner_input.h"
#include "uvm_way.h"

/*
 * Makes the plan of policy `policy` into *out (initialised here).  Returns
 * 0, -EINVAL for an unknown policy (message in err), or -ENOMEM.
 */
int tmm_planner_make(const char *policy, const struct tmm_planner_input *in,
		     struct tmm_plan *out, char *err, size_t errlen);

/*
 * The device bytes in->trace holds at its peak with nothing moved (the
 * unconstrained peak), into *peak.  Returns 0 or -ENOMEM.
 */
int tmm_planner_peak(const struct tmm_planner_input *in, uint64_t *peak);

/*
 * Whether mode=uvm moves evicted tensors by copy on a device with rates
 * r, `asked` being the uvm_swap_path tunable (tmm_uvm_way_copy,
 * uvm_way.h).
 */
bool tmm_planner_uvm_way_copy(const struct tmm_uvm_rates *r,
			      enum tmm_uvm_swap_path asked);

/* mode=auto's choice of mode, and why (tmm_auto_mode_choose,
 * uvm_way.h). */
struct tmm_auto_mode_choice
tmm_planner_auto_mode(const struct tmm_auto_mode_facts *f);

#endif /* TMM_PLANNER_H */
