/* SPDX-License-Identifier: MIT */
/*
 * test_tunables_table.c — the "precedence", "keys" and "table" cases of
 * the tunables suite (test_tunables.c): where each tunable's value comes
 * from, what is made of the keys and items around it, and the table of
 * tunables itself (lib/base/tunables.c).
 *
 * Every tunable is set in the config string and then in the environment
 * too, which wins, with the source recorded each time; a bad environment
 * value is refused even where the config string sets the key.  Unknown
 * keys, in the config string or the environment, are refused with the
 * known ones and a suggestion, and items are trimmed.  The table is
 * checked row by row for completeness and order, and every value is
 * formatted back to text that reads back as itself, whatever the locale.
 */
#include <check.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/tunables.h"
#include "test_tunables.h"

/* ------------------------------------------------------------------------
 * Sources and precedence
 * ---------------------------------------------------------------------- */

/* Two good values per tunable, in the form tmm_config_format() writes. */
static const struct {
	enum tmm_tunable_id id;
	const char *env_value;
	const char *config_value;
} two_values[] = {
	{ TMM_T_BACKEND, "sim", "cuda" },
	{ TMM_T_DEVICE, "3", "GPU-0123abcd-4567-89ef-0123-456789abcdef" },
	{ TMM_T_MODE, "swap", "uvm" },
	{ TMM_T_BUDGET, "4GiB", "50%" },
	{ TMM_T_POLICY, "tensile", "none" },
	{ TMM_T_AUTO_GOAL, "speed", "fit" },
	{ TMM_T_AUTO_RUNGS, "0", "6" },
	{ TMM_T_AUTO_TWIN, "off", "on" },
	{ TMM_T_OFFLOAD_IDLE, "on", "off" },
	{ TMM_T_TSPLIT_RETRY, "off", "on" },
	{ TMM_T_REPLAN_DRIFT, "0.25", "0.05" },
	{ TMM_T_SIM_PROFILE, "p100-pcie3-16g", "p100-pcie3-16g" },
	{ TMM_T_SIM_CAPACITY, "8GiB", "1TiB" },
	{ TMM_T_SIM_MEMORY, "phantom", "backed" },
	{ TMM_T_SIM_JITTER, "0.25", "0.05" },
	{ TMM_T_SIM_SEED, "7", "18446744073709551615" },
	{ TMM_T_SIM_HOST, "ahead", "lockstep" },
	{ TMM_T_SIM_MANAGED_COPY, "queued", "held" },
	{ TMM_T_SIM_COPY_KERNEL_GBPS, "27.5", "0" },
	{ TMM_T_SIM_COPY_KERNEL_SM, "0.12", "0.9" },
	{ TMM_T_HOST_NUMA_NODE, "0", "1023" },
	{ TMM_T_PINNED_POOL, "256MiB", "4097" },
	{ TMM_T_TRACE, "/tmp/env.trace", "/tmp/config.trace" },
	{ TMM_T_TRACE_MAX, "0", "3GiB" },
	{ TMM_T_HINTS, "/tmp/env.plan", "/tmp/config.plan" },
	{ TMM_T_HINTS_MAX, "1GiB", "4097" },
	{ TMM_T_STATS_SHM, "off", "on" },
	{ TMM_T_SHARE, "auto", "group-1.a_b" },
	{ TMM_T_MAX_SWAP_RATE, "0.25", "0" },
	{ TMM_T_CUPTI, "off", "on" },
	{ TMM_T_UVM_COUNTERS, "on", "off" },
	{ TMM_T_DL_PATH, "/opt/env/lib", "/opt/a:/opt/b" },
	{ TMM_T_UVM_SWAP_PATH, "copy", "prefetch" },
	{ TMM_T_UVM_COPIER, "kernel", "runtime" },
	{ TMM_T_UVM_COPIER_BLOCKS, "1", "1024" },
	{ TMM_T_UVM_FRESH, "fault", "prefetch" },
	{ TMM_T_UVM_CAP, "library", "driver" },
	{ TMM_T_UVM_KEEP, "off", "on" },
	{ TMM_T_UVM_COMPACT, "off", "on" },
	{ TMM_T_UVM_READ_MOSTLY, "off", "on" },
	{ TMM_T_CHECK, "on", "off" },
	{ TMM_T_LIVENESS, "discard", "keep" },
	{ TMM_T_POOL, "chunks", "arena" },
	{ TMM_T_LOG, "debug", "error" },
	{ TMM_T_FAULT, "cudaMalloc@2", "cudaHostRegister@1+;x.y" },
};

/* A new tunable must be added here too, to be tested for precedence. */
_Static_assert(ARRAY_SIZE(two_values) == TMM_TUNABLE_COUNT,
	       "two_values lacks a tunable");

/* For every tunable: default, then config string, then environment over
 * the config string, with the source recorded each time. */
START_TEST(test_precedence_every_tunable)
{
	enum tmm_tunable_id id = two_values[_i].id;
	const struct tmm_tunable *row = row_of(id);
	char config[256];
	int other;

	load_ok(NULL);
	ck_assert_int_eq(cfg.source[id], TMM_SRC_DEFAULT);
	check_format(id, row->def);

	ck_assert_int_eq(setenv(row->env, two_values[_i].env_value, 1), 0);
	load_ok(NULL);
	ck_assert_int_eq(cfg.source[id], TMM_SRC_ENV);
	check_format(id, two_values[_i].env_value);
	for (other = 0; other < TMM_TUNABLE_COUNT; other++)
		if (other != (int)id)
			ck_assert_int_eq(cfg.source[other], TMM_SRC_DEFAULT);

	snprintf(config, sizeof(config), "%s=%s", row->name,
		 two_values[_i].config_value);
	load_ok(config);
	ck_assert_int_eq(cfg.source[id], TMM_SRC_ENV);
	check_format(id, two_values[_i].env_value);

	ck_assert_int_eq(unsetenv(row->env), 0);
	load_ok(config);
	ck_assert_int_eq(cfg.source[id], TMM_SRC_CONFIG);
	check_format(id, two_values[_i].config_value);
	load_ok(NULL);
	ck_assert_int_eq(cfg.source[id], TMM_SRC_DEFAULT);
}
END_TEST

START_TEST(test_precedence_mixed)
{
	ck_assert_int_eq(setenv("TENSORMM_BUDGET", "4GiB", 1), 0);
	ck_assert_int_eq(setenv("TENSORMM_LOG", "  debug\t", 1), 0);
	load_ok("budget=2GiB,policy=none");
	/* The environment wins where it sets the key ... */
	ck_assert_uint_eq(cfg.budget.bytes, 4 * GiB);
	ck_assert_int_eq(cfg.source[TMM_T_BUDGET], TMM_SRC_ENV);
	/* ... and the string where it alone does. */
	ck_assert_str_eq(cfg.policy, "none");
	ck_assert_int_eq(cfg.source[TMM_T_POLICY], TMM_SRC_CONFIG);
	ck_assert_int_eq(cfg.log, TMM_LOG_DEBUG);
	ck_assert_int_eq(cfg.source[TMM_T_LOG], TMM_SRC_ENV);
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_AUTO);
	ck_assert_int_eq(cfg.source[TMM_T_BACKEND], TMM_SRC_DEFAULT);

	load_ok(NULL);
	ck_assert_uint_eq(cfg.budget.bytes, 4 * GiB);
	ck_assert_int_eq(cfg.source[TMM_T_BUDGET], TMM_SRC_ENV);
}
END_TEST

START_TEST(test_env_bad_value)
{
	ck_assert_int_eq(setenv("TENSORMM_SIM_JITTER", "2", 1), 0);
	load_fails(NULL);
	err_has("sim_jitter=2 (environment variable TENSORMM_SIM_JITTER): "
		"out of range [0, 1]; accepted: a number from 0 to 1");
	/* A bad environment value is a mistake even where the config
	 * string sets the key too: it is the value that wins. */
	load_fails("sim_jitter=0.5");
	err_has("TENSORMM_SIM_JITTER");

	ck_assert_int_eq(setenv("TENSORMM_SIM_JITTER", "0.5", 1), 0);
	ck_assert_int_eq(setenv("TENSORMM_BUDGET", "", 1), 0);
	load_fails(NULL);
	err_has("budget= (environment variable TENSORMM_BUDGET): empty "
		"value; accepted: ");
	ck_assert_int_eq(setenv("TENSORMM_BUDGET", "12Q", 1), 0);
	load_fails(NULL);
	err_has("budget=12Q (environment variable TENSORMM_BUDGET): not a "
		"size or percentage; accepted: a percentage of device capacity "
		"such as 50%, a percentage of the first iteration's peak such "
		"as 40%peak, or a size with its unit such as 512MiB, 6GiB or "
		"1048576B (a bare number is refused)");
	/* budget=100 once meant 100 bytes: the message names the variable
	 * and says what to write instead. */
	ck_assert_int_eq(setenv("TENSORMM_BUDGET", "100", 1), 0);
	load_fails(NULL);
	err_has("budget=100 (environment variable TENSORMM_BUDGET): a bare "
		"number has no unit; write 100% for a percentage of the "
		"device, or a size with its unit, such as 100MiB, or 100B for "
		"bytes");
}
END_TEST

/* ------------------------------------------------------------------------
 * Keys and items
 * ---------------------------------------------------------------------- */

START_TEST(test_unknown_key_in_config)
{
	load_fails("budgte=6GiB");
	err_has("unknown tunable 'budgte' in the config string; known "
		"tunables: backend, device, mode, budget, policy, auto_goal, "
		"auto_rungs, auto_twin, offload_idle, tsplit_retry, "
		"replan_drift, "
		"sim_profile, "
		"sim_capacity, sim_memory, sim_jitter, sim_seed, sim_host, "
		"sim_managed_copy, sim_copy_kernel_gbps, sim_copy_kernel_sm, "
		"host_numa_node, pinned_pool, trace, trace_max, hints, "
		"hints_max, stats_shm, share, max_swap_rate, cupti, uvm_counters, "
		"dl_path, uvm_swap_path, uvm_copier, uvm_copier_blocks, "
		"uvm_fresh, uvm_cap, uvm_keep, "
		"uvm_compact, uvm_read_mostly, check, "
		"liveness, "
		"pool, "
		"log");
	err_has("did you mean 'budget'?");

	load_fails("frobnicate=1");
	err_has("unknown tunable 'frobnicate' in the config string");
	err_lacks("did you mean");

	/* Keys are exact: the environment name is not a key. */
	load_fails("TENSORMM_BUDGET=6GiB");
	err_has("unknown tunable 'TENSORMM_BUDGET'");

	/* The error stops the load even after good items. */
	load_fails("log=debug, backend=sim, sim_seeed=3");
	err_has("'sim_seeed'");
	err_has("did you mean 'sim_seed'?");
}
END_TEST

START_TEST(test_unknown_key_in_env)
{
	ck_assert_int_eq(setenv("TENSORMM_BUDGTE", "6GiB", 1), 0);
	load_fails(NULL);
	err_has("unknown tunable 'TENSORMM_BUDGTE' in the environment; "
		"known tunables: TENSORMM_BACKEND, TENSORMM_DEVICE, "
		"TENSORMM_MODE, TENSORMM_BUDGET,");
	err_has("did you mean 'TENSORMM_BUDGET'?");
	/* A correct config string does not excuse a typo in the shell. */
	load_fails("budget=6GiB");
	ck_assert_int_eq(unsetenv("TENSORMM_BUDGTE"), 0);

	ck_assert_int_eq(setenv("TENSORMM_", "1", 1), 0);
	load_fails(NULL);
	err_has("unknown tunable 'TENSORMM_' in the environment");
	ck_assert_int_eq(unsetenv("TENSORMM_"), 0);

	/* Only the TENSORMM_ prefix is ours. */
	ck_assert_int_eq(setenv("TENSORMMX_BUDGET", "1", 1), 0);
	ck_assert_int_eq(setenv("XTENSORMM_BUDGET", "1", 1), 0);
	load_ok(NULL);
	ck_assert_int_eq(unsetenv("TENSORMMX_BUDGET"), 0);
	ck_assert_int_eq(unsetenv("XTENSORMM_BUDGET"), 0);
}
END_TEST

START_TEST(test_trimming_and_items)
{
	load_ok("  budget = 6GiB  ,, , mode= swap ,\t log =debug,");
	ck_assert_uint_eq(cfg.budget.bytes, 6 * GiB);
	ck_assert_int_eq(cfg.mode, TMM_MODE_SWAP);
	ck_assert_int_eq(cfg.log, TMM_LOG_DEBUG);
	ck_assert_int_eq(cfg.source[TMM_T_BACKEND], TMM_SRC_DEFAULT);
	ck_assert_int_eq(cfg.source[TMM_T_BUDGET], TMM_SRC_CONFIG);

	load_ok(",trace= /tmp/with space.trace ,");
	ck_assert_str_eq(cfg.trace, "/tmp/with space.trace");

	/* A repeated key: the last one wins. */
	load_ok("budget=1GiB,log=info,budget=2GiB");
	ck_assert_uint_eq(cfg.budget.bytes, 2 * GiB);
	load_ok("budget=1GiB,budget=25%");
	ck_assert(cfg.budget.is_percent);
	ck_assert(cfg.budget.percent == 25);

	load_fails("budget");
	err_has("config string item 'budget' is not key=value");
	load_fails("backend=sim, phantom ,log=info");
	err_has("config string item 'phantom' is not key=value");
	load_fails("=5");
	err_has("config string item '=5' has no key");
	load_fails("  = 5");
	err_has("config string item '= 5' has no key");
	load_fails("budget =");
	err_has("budget= (config string): empty value");
}
END_TEST

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */

static bool nonempty(const char *s)
{
	return s && *s;
}

START_TEST(test_table_complete)
{
	const struct tmm_tunable *rows;
	size_t n, i, j;

	rows = tmm_tunables(&n);
	ck_assert_ptr_nonnull(rows);
	ck_assert_uint_eq(n, TMM_TUNABLE_COUNT);
	ck_assert_ptr_eq(tmm_tunables(NULL), rows);
	for (i = 0; i < n; i++) {
		const struct tmm_tunable *r = &rows[i];
		char env[128], config[4200];
		const char *c;

		ck_assert_msg(nonempty(r->name), "row %zu has no name", i);
		for (c = r->name; *c; c++)
			ck_assert_msg((*c >= 'a' && *c <= 'z') ||
				      (*c >= '0' && *c <= '9') || *c == '_',
				      "name '%s' is not lower_snake", r->name);
		snprintf(env, sizeof(env), "TENSORMM_%s", r->name);
		for (c = env; *c; c++)
			env[c - env] = (char)(*c >= 'a' && *c <= 'z' ?
					      *c - 'a' + 'A' : *c);
		ck_assert_msg(r->env && !strcmp(r->env, env),
			      "%s: env %s, not %s", r->name, r->env, env);
		ck_assert_msg(r->def, "%s has no default", r->name);
		ck_assert_msg(nonempty(r->accepted), "%s: no accepted",
			      r->name);
		ck_assert_msg(nonempty(r->help), "%s: no help", r->name);
		ck_assert_msg(nonempty(r->since), "%s: no since", r->name);
		ck_assert_msg(r->min <= r->max, "%s: min > max", r->name);
		ck_assert_msg(r->type <= TMM_TYPE_STRING, "%s: bad type",
			      r->name);
		ck_assert_msg((r->type == TMM_TYPE_CHOICE) ==
			      (r->choices != NULL),
			      "%s: choices and type disagree", r->name);
		if (r->choices) {
			bool has_default = false;

			ck_assert_msg(r->choices[0], "%s: no choices",
				      r->name);
			for (j = 0; r->choices[j]; j++)
				has_default |= !strcmp(r->choices[j], r->def);
			ck_assert_msg(has_default, "%s: default '%s' is not "
				      "a choice", r->name, r->def);
		}
		ck_assert_msg(!r->validate || r->type == TMM_TYPE_STRING,
			      "%s: validate on a non-string", r->name);
		for (j = 0; j < i; j++) {
			ck_assert_msg(strcmp(rows[j].name, r->name),
				      "name %s twice", r->name);
			ck_assert_msg(strcmp(rows[j].env, r->env),
				      "env %s twice", r->env);
		}

		/* The default parses as a config value, and reads back as
		 * itself. */
		snprintf(config, sizeof(config), "%s=%s", r->name, r->def);
		load_ok(config);
		ck_assert_int_eq(cfg.source[i], TMM_SRC_CONFIG);
		check_format((enum tmm_tunable_id)i, r->def);
	}
}
END_TEST

/* The enum order and the table order are the same. */
START_TEST(test_table_order)
{
	ck_assert_str_eq(row_of(TMM_T_BACKEND)->name, "backend");
	ck_assert_str_eq(row_of(TMM_T_MODE)->name, "mode");
	ck_assert_str_eq(row_of(TMM_T_BUDGET)->name, "budget");
	ck_assert_str_eq(row_of(TMM_T_POLICY)->name, "policy");
	ck_assert_str_eq(row_of(TMM_T_SIM_PROFILE)->name, "sim_profile");
	ck_assert_str_eq(row_of(TMM_T_SIM_CAPACITY)->name, "sim_capacity");
	ck_assert_str_eq(row_of(TMM_T_SIM_MEMORY)->name, "sim_memory");
	ck_assert_str_eq(row_of(TMM_T_SIM_JITTER)->name, "sim_jitter");
	ck_assert_str_eq(row_of(TMM_T_SIM_SEED)->name, "sim_seed");
	ck_assert_str_eq(row_of(TMM_T_HOST_NUMA_NODE)->name,
			 "host_numa_node");
	ck_assert_str_eq(row_of(TMM_T_PINNED_POOL)->name, "pinned_pool");
	ck_assert_str_eq(row_of(TMM_T_TRACE)->name, "trace");
	ck_assert_str_eq(row_of(TMM_T_LOG)->name, "log");
	ck_assert_int_eq(row_of(TMM_T_BUDGET)->type,
			 TMM_TYPE_SIZE_OR_PERCENT);
	ck_assert_int_eq(row_of(TMM_T_SIM_JITTER)->type, TMM_TYPE_DOUBLE);
	ck_assert_int_eq(row_of(TMM_T_HOST_NUMA_NODE)->type, TMM_TYPE_INT);
	ck_assert_int_eq(row_of(TMM_T_SIM_SEED)->type, TMM_TYPE_UINT64);
}
END_TEST

/* ------------------------------------------------------------------------
 * Formatting
 * ---------------------------------------------------------------------- */

/* Formats every tunable, parses the text back, and expects the same
 * values and the same text. */
static void check_round_trip(const char *config)
{
	static char text[TMM_TUNABLE_COUNT][4200];
	static char joined[TMM_TUNABLE_COUNT * 4300];
	struct tmm_config first;
	char again[4200];
	size_t used = 0;
	int i;

	load_ok(config);
	first = cfg;
	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		tmm_config_format(&first, i, text[i], sizeof(text[i]));
		used += (size_t)snprintf(joined + used, sizeof(joined) - used,
					 "%s%s=%.4100s", i ? "," : "",
					 row_of(i)->name, text[i]);
	}
	load_ok(joined);
	check_sources(TMM_SRC_CONFIG);
	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		tmm_config_format(&cfg, i, again, sizeof(again));
		ck_assert_msg(!strcmp(again, text[i]), "%s: '%s' then '%s'",
			      row_of(i)->name, text[i], again);
	}
	ck_assert(first.backend == cfg.backend && first.mode == cfg.mode);
	ck_assert(first.budget.is_percent == cfg.budget.is_percent);
	ck_assert(first.budget.bytes == cfg.budget.bytes);
	ck_assert(first.budget.percent == cfg.budget.percent);
	ck_assert_str_eq(first.policy, cfg.policy);
	ck_assert_str_eq(first.sim_profile, cfg.sim_profile);
	ck_assert_uint_eq(first.sim_capacity, cfg.sim_capacity);
	ck_assert(first.sim_memory == cfg.sim_memory);
	ck_assert(first.sim_jitter == cfg.sim_jitter);
	ck_assert_uint_eq(first.sim_seed, cfg.sim_seed);
	ck_assert_int_eq(first.host_numa_node, cfg.host_numa_node);
	ck_assert_uint_eq(first.pinned_pool, cfg.pinned_pool);
	ck_assert_str_eq(first.trace, cfg.trace);
	ck_assert(first.log == cfg.log);
}

START_TEST(test_format)
{
	char buf[64];

	load_ok("budget=1.5GiB,sim_capacity=4097,pinned_pool=2048K,"
		"sim_jitter=0.1,host_numa_node=-1,sim_seed=0");
	check_format(TMM_T_BUDGET, "1536MiB");
	check_format(TMM_T_SIM_CAPACITY, "4097");
	check_format(TMM_T_PINNED_POOL, "2MiB");
	check_format(TMM_T_SIM_JITTER, "0.1");
	check_format(TMM_T_HOST_NUMA_NODE, "-1");
	check_format(TMM_T_SIM_SEED, "0");
	load_ok("budget=12.5%,sim_capacity=3TiB,sim_jitter=1e-3");
	check_format(TMM_T_BUDGET, "12.5%");
	check_format(TMM_T_SIM_CAPACITY, "3TiB");
	check_format(TMM_T_SIM_JITTER, "0.001");
	load_ok("budget=18446744073709551615B");
	check_format(TMM_T_BUDGET, "18446744073709551615B");
	/* A budget in bytes reads back with its unit: a bare number is
	 * refused there. */
	load_ok("budget=4097B");
	check_format(TMM_T_BUDGET, "4097B");
	check_round_trip("budget=4097B");
	load_ok("sim_capacity=16777215TiB");
	check_format(TMM_T_SIM_CAPACITY, "16777215TiB");

	check_round_trip(NULL);
	check_round_trip("backend=cuda,mode=uvm,budget=33.3%,"
			 "sim_memory=phantom,sim_jitter=0.333333333333333333,"
			 "sim_seed=18446744073709551615,host_numa_node=7,"
			 "pinned_pool=1.25GiB,trace=/tmp/t,log=info");
	check_round_trip("budget=0.001%,sim_jitter=0.123456789012345678");

	/* A short buffer is cut, not overrun; an unknown id writes "". */
	load_ok("sim_profile=p100-pcie3-16g");
	memset(buf, 'x', sizeof(buf));
	tmm_config_format(&cfg, TMM_T_SIM_PROFILE, buf, 5);
	ck_assert_str_eq(buf, "p100");
	ck_assert_int_eq(buf[5], 'x');
	tmm_config_format(&cfg, TMM_T_SIM_PROFILE, buf, 0);
	ck_assert_int_eq(buf[0], 'p');
	tmm_config_format(&cfg, TMM_TUNABLE_COUNT, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
}
END_TEST

/* Where a locale with a decimal comma is installed, numbers still read
 * and print with a point: the config must not depend on setlocale(). */
START_TEST(test_locale_independent)
{
	static const char *const commas[] = { "de_DE.UTF-8", "de_DE.utf8",
					      "fr_FR.UTF-8", "fr_FR.utf8" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commas); i++)
		if (setlocale(LC_NUMERIC, commas[i]))
			break;
	load_ok("sim_jitter=0.25,budget=12.5%");
	ck_assert(cfg.sim_jitter == 0.25);
	check_format(TMM_T_SIM_JITTER, "0.25");
	check_format(TMM_T_BUDGET, "12.5%");
	load_fails("sim_jitter=0,25");
	setlocale(LC_NUMERIC, "C");
}
END_TEST

void add_tunables_table_tests(Suite *s)
{
	TCase *tc;

	tc = new_case(s, "precedence");
	tcase_add_loop_test(tc, test_precedence_every_tunable, 0,
			    (int)ARRAY_SIZE(two_values));
	tcase_add_test(tc, test_precedence_mixed);
	tcase_add_test(tc, test_env_bad_value);

	tc = new_case(s, "keys");
	tcase_add_test(tc, test_unknown_key_in_config);
	tcase_add_test(tc, test_unknown_key_in_env);
	tcase_add_test(tc, test_trimming_and_items);

	tc = new_case(s, "table");
	tcase_add_test(tc, test_table_complete);
	tcase_add_test(tc, test_table_order);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_locale_independent);
}
