/* SPDX-License-Identifier: MIT */
/*
 * test_tunables.c — Check tests of the tunables table and its parser.
 *
 * The tunables are the one place where users type text at the library, so
 * every row is exercised with good and bad values, every error message is
 * checked to name the key, the value, its source and what is accepted, and
 * the table itself is checked for completeness, because a row that is
 * missing or misspelt would silently drop a setting.
 *
 * Each test starts and ends with no TENSORMM_* variable in its environment,
 * so neither the caller's shell nor an earlier test can change a result.
 * The cases on precedence, keys and the table itself are in
 * test_tunables_table.c.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "lib/base/device_spec.h"
#include "lib/base/sim_profile.h"
#include "lib/base/tunables.h"
#include "test_tunables.h"

struct tmm_config cfg;
static char err[8192];

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* Unsets every TENSORMM_* variable.  Restarts the scan after each unset,
 * since unsetenv() may move the entries of environ. */
static void clean_environment(void)
{
	for (;;) {
		char *name = NULL;
		char **e;

		for (e = environ; e && *e; e++) {
			if (!strncmp(*e, "TENSORMM_", 9)) {
				name = strndup(*e, strcspn(*e, "="));
				break;
			}
		}
		if (!name)
			return;
		ck_assert_int_eq(unsetenv(name), 0);
		free(name);
	}
}

static void setup(void)
{
	clean_environment();
	memset(&cfg, 0, sizeof(cfg));
	err[0] = '\0';
}

static void teardown(void)
{
	clean_environment();
}

static int load(const char *config)
{
	err[0] = '\0';
	return tmm_config_load(&cfg, config, err, sizeof(err));
}

void load_ok(const char *config)
{
	int rc = load(config);

	ck_assert_msg(rc == 0, "config '%s' refused (%d): %s",
		      config ? config : "(null)", rc, err);
}

void load_fails(const char *config)
{
	int rc = load(config);

	ck_assert_msg(rc == -EINVAL, "config '%s' gave %d, not -EINVAL",
		      config ? config : "(null)", rc);
	ck_assert_msg(err[0], "config '%s' refused without a message",
		      config ? config : "(null)");
}

void err_has(const char *want)
{
	ck_assert_msg(strstr(err, want), "error \"%s\" lacks \"%s\"", err,
		      want);
}

void err_lacks(const char *unwanted)
{
	ck_assert_msg(!strstr(err, unwanted), "error \"%s\" has \"%s\"", err,
		      unwanted);
}

const struct tmm_tunable *row_of(enum tmm_tunable_id id)
{
	size_t n;

	return &tmm_tunables(&n)[id];
}

void check_format(enum tmm_tunable_id id, const char *want)
{
	char buf[4200];

	tmm_config_format(&cfg, id, buf, sizeof(buf));
	ck_assert_msg(!strcmp(buf, want), "%s formats as '%s', not '%s'",
		      row_of(id)->name, buf, want);
}

void check_sources(enum tmm_source want)
{
	int i;

	for (i = 0; i < TMM_TUNABLE_COUNT; i++)
		ck_assert_msg(cfg.source[i] == want, "%s: source %d, not %d",
			      row_of(i)->name, cfg.source[i], want);
}

/* ------------------------------------------------------------------------
 * Defaults
 * ---------------------------------------------------------------------- */

static void check_defaults(void)
{
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_AUTO);
	ck_assert_int_eq(cfg.mode, TMM_MODE_AUTO);
	ck_assert(cfg.budget.is_percent);
	ck_assert(cfg.budget.percent == 100);
	ck_assert_str_eq(cfg.policy, "auto");
	ck_assert_str_eq(cfg.sim_profile, "p100-pcie3-16g");
	ck_assert_uint_eq(cfg.sim_capacity, 0);
	ck_assert_int_eq(cfg.sim_memory, TMM_SIM_BACKED);
	ck_assert(cfg.sim_jitter == 0);
	ck_assert(cfg.auto_goal == TMM_AUTO_GOAL_FIT);
	ck_assert_uint_eq(cfg.auto_rungs, 3);
	ck_assert(cfg.auto_twin);
	ck_assert_int_eq(cfg.offload_idle, TMM_OFFLOAD_IDLE_AUTO);
	ck_assert(cfg.tsplit_retry);
	ck_assert(cfg.replan_drift == 0.1);
	ck_assert_uint_eq(cfg.sim_seed, 1);
	ck_assert_int_eq(cfg.host_numa_node, -1);
	ck_assert_uint_eq(cfg.pinned_pool, 0);
	ck_assert_str_eq(cfg.trace, "");
	ck_assert_int_eq(cfg.log, TMM_LOG_WARN);
	check_sources(TMM_SRC_DEFAULT);
}

START_TEST(test_defaults)
{
	load_ok(NULL);
	check_defaults();
	load_ok("");
	check_defaults();
	load_ok(" , ,, \t,");
	check_defaults();
}
END_TEST

/* ------------------------------------------------------------------------
 * Good values of every tunable
 * ---------------------------------------------------------------------- */

START_TEST(test_choices)
{
	load_ok("backend=sim");
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_SIM);
	ck_assert_int_eq(cfg.source[TMM_T_BACKEND], TMM_SRC_CONFIG);
	ck_assert_int_eq(cfg.source[TMM_T_MODE], TMM_SRC_DEFAULT);
	load_ok("backend=cuda");
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_CUDA);
	load_ok("backend=auto");
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_AUTO);
	/* Words are matched without regard to case. */
	load_ok("backend=SIM");
	ck_assert_int_eq(cfg.backend, TMM_BACKEND_SIM);

	load_ok("mode=swap");
	ck_assert_int_eq(cfg.mode, TMM_MODE_SWAP);
	load_ok("mode=uvm");
	ck_assert_int_eq(cfg.mode, TMM_MODE_UVM);
	load_ok("mode=auto");
	ck_assert_int_eq(cfg.mode, TMM_MODE_AUTO);

	load_ok("policy=none");
	ck_assert_str_eq(cfg.policy, "none");
	ck_assert_int_eq(cfg.source[TMM_T_POLICY], TMM_SRC_CONFIG);
	load_ok("policy=None");
	ck_assert_str_eq(cfg.policy, "none");
	load_ok("policy=tensile");
	ck_assert_str_eq(cfg.policy, "tensile");

	load_ok("sim_memory=phantom");
	ck_assert_int_eq(cfg.sim_memory, TMM_SIM_PHANTOM);
	load_ok("sim_memory=backed");
	ck_assert_int_eq(cfg.sim_memory, TMM_SIM_BACKED);

	load_ok("log=error");
	ck_assert_int_eq(cfg.log, TMM_LOG_ERROR);
	load_ok("log=warn");
	ck_assert_int_eq(cfg.log, TMM_LOG_WARN);
	load_ok("log=info");
	ck_assert_int_eq(cfg.log, TMM_LOG_INFO);
	load_ok("log=debug");
	ck_assert_int_eq(cfg.log, TMM_LOG_DEBUG);
}
END_TEST

START_TEST(test_budget_values)
{
	load_ok("budget=6GiB");
	ck_assert(!cfg.budget.is_percent);
	ck_assert_uint_eq(cfg.budget.bytes, 6 * GiB);
	ck_assert_int_eq(cfg.source[TMM_T_BUDGET], TMM_SRC_CONFIG);
	load_ok("budget=4096B");
	ck_assert(!cfg.budget.is_percent);
	ck_assert_uint_eq(cfg.budget.bytes, 4096);
	load_ok("budget=4096 b");
	ck_assert_uint_eq(cfg.budget.bytes, 4096);
	load_ok("budget=1B");
	ck_assert_uint_eq(cfg.budget.bytes, 1);
	load_ok("budget=50%");
	ck_assert(cfg.budget.is_percent);
	ck_assert(cfg.budget.percent == 50);
	load_ok("budget=12.5%");
	ck_assert(cfg.budget.percent == 12.5);
	load_ok("budget=100%");
	ck_assert(cfg.budget.percent == 100);
	load_ok("budget=0.001%");
	ck_assert(cfg.budget.percent == 0.001);
	load_ok("budget = 50 % ");
	ck_assert(cfg.budget.is_percent);
	ck_assert(cfg.budget.percent == 50);
	ck_assert(!cfg.budget.of_peak);
	/* Of the program's own peak, written back as it was given. */
	load_ok("budget=40%peak");
	ck_assert(cfg.budget.is_percent && cfg.budget.of_peak);
	ck_assert(cfg.budget.percent == 40);
	check_format(TMM_T_BUDGET, "40%peak");
	load_ok("budget = 12.5 % peak ");
	ck_assert(cfg.budget.of_peak && cfg.budget.percent == 12.5);
	/* Until a first iteration measures the peak: the whole device. */
	ck_assert_uint_eq(tmm_config_budget(&cfg, 8 * GiB), 8 * GiB);
	load_fails("budget=40%peaks");
	err_has("only \"peak\" may follow");
	load_fails("budget=40%device");
	err_has("40%peak");
	load_fails("budget=0%peak");
	err_has("more than 0");
}
END_TEST

START_TEST(test_sim_profile_values)
{
	const struct tmm_sim_profile *all;
	char config[128];
	size_t n, i;

	all = tmm_sim_profiles(&n);
	ck_assert_uint_gt(n, 0);
	for (i = 0; i < n; i++) {
		snprintf(config, sizeof(config), "sim_profile=%s",
			 all[i].name);
		load_ok(config);
		ck_assert_str_eq(cfg.sim_profile, all[i].name);
		ck_assert_int_eq(cfg.source[TMM_T_SIM_PROFILE],
				 TMM_SRC_CONFIG);
	}
}
END_TEST

START_TEST(test_numeric_values)
{
	load_ok("sim_capacity=0");
	ck_assert_uint_eq(cfg.sim_capacity, 0);
	ck_assert_int_eq(cfg.source[TMM_T_SIM_CAPACITY], TMM_SRC_CONFIG);
	load_ok("sim_capacity=8GiB");
	ck_assert_uint_eq(cfg.sim_capacity, 8 * GiB);
	load_ok("pinned_pool=256MiB");
	ck_assert_uint_eq(cfg.pinned_pool, 256 * MiB);
	load_ok("pinned_pool=0");
	ck_assert_uint_eq(cfg.pinned_pool, 0);

	load_ok("sim_jitter=0.05");
	ck_assert(cfg.sim_jitter == 0.05);
	load_ok("sim_jitter=1");
	ck_assert(cfg.sim_jitter == 1);
	load_ok("sim_jitter=0");
	ck_assert(cfg.sim_jitter == 0);
	load_ok("sim_jitter=0.0");
	ck_assert(cfg.sim_jitter == 0);
	load_ok("sim_jitter=1e-3");
	ck_assert(cfg.sim_jitter == 0.001);
	load_ok("sim_jitter=25E-2");
	ck_assert(cfg.sim_jitter == 0.25);
	load_ok("sim_jitter=0.1000000000000000000000001");
	ck_assert(cfg.sim_jitter == 0.1);

	load_ok("sim_seed=0");
	ck_assert_uint_eq(cfg.sim_seed, 0);
	load_ok("sim_seed=42");
	ck_assert_uint_eq(cfg.sim_seed, 42);
	load_ok("sim_seed=18446744073709551615");
	ck_assert_uint_eq(cfg.sim_seed, UINT64_MAX);

	load_ok("host_numa_node=-1");
	ck_assert_int_eq(cfg.host_numa_node, -1);
	load_ok("host_numa_node=0");
	ck_assert_int_eq(cfg.host_numa_node, 0);
	load_ok("host_numa_node=1023");
	ck_assert_int_eq(cfg.host_numa_node, 1023);
	ck_assert_int_eq(cfg.source[TMM_T_HOST_NUMA_NODE], TMM_SRC_CONFIG);
}
END_TEST

/* The three spellings of a device, and a UUID kept as nvidia-smi
 * writes it (lower case) whatever case it was given in. */
START_TEST(test_device_values)
{
	struct tmm_device_spec d;
	char why[256];

	load_ok("");
	ck_assert_str_eq(cfg.device, "current");
	ck_assert_int_eq(cfg.source[TMM_T_DEVICE], TMM_SRC_DEFAULT);
	load_ok("device=7");
	ck_assert_str_eq(cfg.device, "7");
	ck_assert_int_eq(cfg.source[TMM_T_DEVICE], TMM_SRC_CONFIG);

	ck_assert(tmm_device_spec_parse("current", &d, why, sizeof(why)));
	ck_assert_int_eq(d.kind, TMM_DEVICE_CURRENT);
	ck_assert(tmm_device_spec_parse("0", &d, why, sizeof(why)));
	ck_assert_int_eq(d.kind, TMM_DEVICE_INDEX);
	ck_assert_int_eq(d.index, 0);
	ck_assert(tmm_device_spec_parse("4095", &d, why, sizeof(why)));
	ck_assert_int_eq(d.index, 4095);
	ck_assert(tmm_device_spec_parse("007", &d, why, sizeof(why)));
	ck_assert_int_eq(d.index, 7);
	ck_assert(tmm_device_spec_parse(
		"GPU-0123ABCD-4567-89Ef-0123-456789abcdef", &d, why,
		sizeof(why)));
	ck_assert_int_eq(d.kind, TMM_DEVICE_UUID);
	ck_assert_str_eq(d.uuid, "GPU-0123abcd-4567-89ef-0123-456789abcdef");
	ck_assert(!tmm_device_spec_parse("4096", &d, why, sizeof(why)));
	ck_assert(!tmm_device_spec_parse("Current", &d, why, sizeof(why)));
}
END_TEST

START_TEST(test_trace_values)
{
	char config[4200];

	load_ok("trace=/tmp/run.trace");
	ck_assert_str_eq(cfg.trace, "/tmp/run.trace");
	ck_assert_int_eq(cfg.source[TMM_T_TRACE], TMM_SRC_CONFIG);
	/* Only the first '=' separates key and value. */
	load_ok("trace=/tmp/a=b");
	ck_assert_str_eq(cfg.trace, "/tmp/a=b");
	/* An empty value turns the trace off; in the environment, even
	 * over the config string's. */
	load_ok("trace=");
	ck_assert_str_eq(cfg.trace, "");
	ck_assert_int_eq(cfg.source[TMM_T_TRACE], TMM_SRC_CONFIG);
	ck_assert_int_eq(setenv("TENSORMM_TRACE", "", 1), 0);
	load_ok("trace=/tmp/run.trace");
	ck_assert_str_eq(cfg.trace, "");
	ck_assert_int_eq(cfg.source[TMM_T_TRACE], TMM_SRC_ENV);
	ck_assert_int_eq(unsetenv("TENSORMM_TRACE"), 0);

	/* The longest path that fits, and one byte more. */
	strcpy(config, "trace=/");
	memset(config + 7, 'x', 4094);
	config[7 + 4094] = '\0';
	load_ok(config);
	ck_assert_uint_eq(strlen(cfg.trace), 4095);
	strcat(config, "x");
	load_fails(config);
	err_has("too long");
	err_has("at most 4095 characters");
	err_has("(config string)");
	/* A long value is shortened in the message, not pasted whole. */
	ck_assert_uint_lt(strlen(err), 1000);
}
END_TEST

/* ------------------------------------------------------------------------
 * Bad values of every tunable
 * ---------------------------------------------------------------------- */

/* A bad item, and the reason its error must give. */
struct bad_value {
	const char *item;
	const char *why;
};

static const struct bad_value bad_values[] = {
	{ "backend=gpu", "not one of the choices" },
	{ "backend=auto sim", "not one of the choices" },
	{ "backend=", "empty value" },
	{ "mode=swapp", "not one of the choices" },
	{ "mode=", "empty value" },
	{ "budget=12Q", "not a size or percentage" },
	{ "budget=0", "a bare number has no unit; write a percentage of "
		      "the device such as 50%, or a size with its unit such "
		      "as 6GiB" },
	{ "budget=100", "a bare number has no unit; write 100% for a "
			"percentage of the device, or a size with its unit, "
			"such as 100MiB, or 100B for bytes" },
	{ "budget=4096", "a bare number has no unit; write 4096B for "
			 "bytes, a size in a larger unit such as 6GiB, or a "
			 "percentage of the device such as 50%" },
	{ "budget=1073741824", "a bare number has no unit; write "
			       "1073741824B for bytes" },
	{ "budget=0.5", "a bare number has no unit; write 0.5% for a "
			"percentage of the device, or a size with its unit, "
			"such as 0.5MiB; accepted: " },
	{ "budget=4096.5", "a bare number has no unit; write a size with "
			   "its unit such as 4096.5MiB" },
	{ "budget=-5", "a bare number has no unit; write a percentage" },
	{ "budget=0B", "too small" },
	{ "budget=0%", "a percentage must be more than 0" },
	{ "budget=100.5%", "a percentage must be more than 0 and at most 100" },
	{ "budget=-5%", "a percentage must be more than 0" },
	{ "budget=-1GiB", "a size cannot be negative" },
	{ "budget=16777216TiB", "too large" },
	{ "budget=99999999999999999999B", "too large" },
	{ "budget=99999999999999999999", "a bare number has no unit" },
	{ "budget=", "empty value" },
	{ "budget=%", "not a size or percentage" },
	{ "budget=50%%", "only \"peak\" may follow the % of a percentage" },
	{ "budget=1.5.5G", "not a size or percentage" },
	{ "budget=GiB", "not a size or percentage" },
	{ "budget=5 5", "not a size or percentage" },
	{ "budget=1e3", "not a size or percentage" },
	{ "policy=no-such-policy", "not one of the choices" },
	{ "policy=", "empty value" },
	{ "sim_profile=no-such-gpu", "no simulator profile" },
	{ "sim_profile=", "no simulator profile" },
	{ "share=a/b", "'/' may not be in a group name" },
	{ "share=", "a group name has 1 to 32 characters" },
	{ "share=abcdefghijabcdefghijabcdefghijabc", "a group name has 1 to 32 characters" },
	{ "max_swap_rate=1.5", "out of range" },
	{ "max_swap_rate=-0.1", "out of range" },
	{ "sim_capacity=-1", "a size cannot be negative" },
	{ "sim_capacity=12Q", "not a size" },
	{ "sim_capacity=50%", "not a size" },
	{ "sim_capacity=18446744073709551616", "too large" },
	{ "sim_capacity=", "empty value" },
	{ "sim_memory=real", "not one of the choices" },
	{ "sim_memory=", "empty value" },
	{ "sim_jitter=1.5", "out of range [0, 1]" },
	{ "sim_jitter=-0.1", "out of range [0, 1]" },
	{ "sim_jitter=1e999", "out of range [0, 1]" },
	{ "sim_jitter=nan", "not a number" },
	{ "sim_jitter=inf", "not a number" },
	{ "sim_jitter=0x1p-2", "not a number" },
	{ "sim_jitter=0.5x", "not a number" },
	{ "sim_jitter=.5", "not a number" },
	{ "sim_jitter=abc", "not a number" },
	{ "sim_jitter=", "empty value" },
	{ "sim_seed=-1", "not an unsigned integer" },
	{ "sim_seed=1.5", "not an unsigned integer" },
	{ "sim_seed=+1", "not an unsigned integer" },
	{ "sim_seed=18446744073709551616", "too large for 64 bits" },
	{ "sim_seed=abc", "not an unsigned integer" },
	{ "sim_seed=", "empty value" },
	{ "host_numa_node=1024", "out of range [-1, 1023]" },
	{ "host_numa_node=-2", "out of range [-1, 1023]" },
	{ "host_numa_node=99999999999999999999", "out of range" },
	{ "host_numa_node=1.5", "not an integer" },
	{ "host_numa_node=abc", "not an integer" },
	{ "host_numa_node=", "empty value" },
	{ "pinned_pool=lots", "not a size" },
	{ "pinned_pool=-4K", "a size cannot be negative" },
	{ "pinned_pool=", "empty value" },
	{ "auto_goal=fastest", "not one of the choices" },
	{ "log=verbose", "not one of the choices" },
	{ "device=", "not a device; TENSORMM_DEVICE (device=) takes" },
	{ "device=-1", "not a device; TENSORMM_DEVICE" },
	{ "device=+1", "not a device; TENSORMM_DEVICE" },
	{ "device=1.5", "not a device; TENSORMM_DEVICE" },
	{ "device=0x1", "not a device; TENSORMM_DEVICE" },
	{ "device=4096", "an index above 4095; TENSORMM_DEVICE" },
	{ "device=99999999999999999999", "an index above 4095" },
	{ "device=cuda:0", "not a device; TENSORMM_DEVICE" },
	{ "device=GPU-0123", "not a whole device UUID" },
	{ "device=GPU-0123abcd-4567-89ef-0123-456789abcdeg",
	  "not a whole device UUID" },
	{ "device=GPU-0123abcd-4567-89ef-0123-456789abcdef0",
	  "not a whole device UUID" },
	{ "device=GPU-0123abcd_4567-89ef-0123-456789abcdef",
	  "not a whole device UUID" },
	{ "log=", "empty value" },
};

/* Every bad value is refused, and the message says which key, which
 * value, where it came from, why, and what would have been accepted. */
START_TEST(test_bad_value)
{
	const struct bad_value *bad = &bad_values[_i];
	const struct tmm_tunable *rows;
	char want[512];
	size_t n, i, key_len = strcspn(bad->item, "=");

	load_fails(bad->item);
	snprintf(want, sizeof(want), "%s (config string): %s", bad->item,
		 bad->why);
	err_has(want);
	rows = tmm_tunables(&n);
	for (i = 0; i < n; i++)
		if (strlen(rows[i].name) == key_len &&
		    !strncmp(rows[i].name, bad->item, key_len))
			break;
	ck_assert_uint_lt(i, n);
	snprintf(want, sizeof(want), "; accepted: %s", rows[i].accepted);
	err_has(want);
}
END_TEST

START_TEST(test_bad_sim_profile_lists_known)
{
	const struct tmm_sim_profile *all;
	size_t n, i;

	load_fails("sim_profile=k80");
	err_has("sim_profile=k80 (config string)");
	err_has("known profiles: ");
	all = tmm_sim_profiles(&n);
	for (i = 0; i < n; i++)
		err_has(all[i].name);
}
END_TEST

/* A failed load leaves the caller's configuration as it was. */
START_TEST(test_failure_keeps_config)
{
	struct tmm_config before;

	load_ok("budget=3GiB,log=debug");
	before = cfg;
	load_fails("log=error,budget=nonsense");
	ck_assert(!memcmp(&before, &cfg, sizeof(cfg)));
}
END_TEST

START_TEST(test_no_error_buffer)
{
	char tiny[1] = { 'x' };

	ck_assert_int_eq(tmm_config_load(&cfg, "budget=x", NULL, 0), -EINVAL);
	ck_assert_int_eq(tmm_config_load(&cfg, "budget=x", tiny, 1), -EINVAL);
	ck_assert_int_eq(tiny[0], '\0');
	ck_assert_int_eq(tmm_config_load(NULL, NULL, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(tmm_config_load(&cfg, NULL, NULL, 0), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Sizes and percentages
 * ---------------------------------------------------------------------- */

START_TEST(test_size_suffixes)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "512B", 512 },
		{ "512b", 512 },
		{ "64K", 64 * KiB },
		{ "64KB", 64 * KiB },
		{ "64KiB", 64 * KiB },
		{ "64kib", 64 * KiB },
		{ "64kB", 64 * KiB },
		{ "1M", MiB },
		{ "2MiB", 2 * MiB },
		{ "3mb", 3 * MiB },
		{ "1G", GiB },
		{ "6GiB", 6 * GiB },
		{ "1T", TiB },
		{ "2TiB", 2 * TiB },
		{ "1.5GiB", 3 * GiB / 2 },
		{ "0.5K", 512 },
		{ "1.3K", 1331 }, /* 1331.2 bytes, rounded down */
		{ "0.75", 0 },
		{ "007", 7 },
		{ " 6 GiB ", 6 * GiB },
		{ "18446744073709551615", UINT64_MAX },
		{ "16777215TiB", 16777215ull * TiB },
		{ "16777215.5TiB", 16777215ull * TiB + TiB / 2 },
	};
	static const char *const bad[] = {
		"", " ", "-1", "-0", "1Q", "K", "B", "KiB", "1KiBB", "1Ki",
		"1iB", "1.5.5", ".5K", "5.K", "1e3", "+5", "0x10", "1 2",
		"1,5G", "1 G B", "18446744073709551616",
		"16777216TiB", "16777216T", "99999999999999999999999",
		"17179869184G",
	};
	uint64_t bytes;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		bytes = 12345;
		ck_assert_msg(!tmm_parse_size(good[i].text, &bytes),
			      "'%s' refused", good[i].text);
		ck_assert_msg(bytes == good[i].bytes,
			      "'%s' gave %llu, not %llu", good[i].text,
			      (unsigned long long)bytes,
			      (unsigned long long)good[i].bytes);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		bytes = 12345;
		ck_assert_msg(tmm_parse_size(bad[i], &bytes) == -EINVAL,
			      "'%s' accepted", bad[i]);
		ck_assert_msg(bytes == 12345, "'%s' wrote a result", bad[i]);
	}
	ck_assert_int_eq(tmm_parse_size(NULL, &bytes), -EINVAL);
	ck_assert_int_eq(tmm_parse_size("1", NULL), -EINVAL);
}
END_TEST

START_TEST(test_budget_bytes)
{
	load_ok("budget=50%");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 16 * GiB), 8 * GiB);
	ck_assert_uint_eq(tmm_config_budget(&cfg, 3), 1); /* 1.5, down */
	ck_assert_uint_eq(tmm_config_budget(&cfg, 0), 0);
	load_ok("budget=12.5%");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 1000), 125);
	/* 33.3 is stored a hair below itself; 333 is still what is meant. */
	load_ok("budget=33.3%");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 1000), 333);
	ck_assert_uint_eq(tmm_config_budget(&cfg, 10), 3);
	load_ok("budget=1%");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 99), 0);
	load_ok("budget=100%");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 16 * GiB), 16 * GiB);
	ck_assert_uint_eq(tmm_config_budget(&cfg, UINT64_MAX), UINT64_MAX);
	load_ok("budget=99.9999%");
	ck_assert_uint_le(tmm_config_budget(&cfg, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_gt(tmm_config_budget(&cfg, UINT64_MAX),
			  UINT64_MAX / 100 * 99);

	load_ok("budget=6GiB");
	ck_assert_uint_eq(tmm_config_budget(&cfg, 16 * GiB), 6 * GiB);
	ck_assert_uint_eq(tmm_config_budget(&cfg, 4 * GiB), 4 * GiB);
	ck_assert_uint_eq(tmm_config_budget(&cfg, 0), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Runner
 * ---------------------------------------------------------------------- */

TCase *new_case(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *tunables_suite(void)
{
	Suite *s = suite_create("tunables");
	TCase *tc;

	tc = new_case(s, "defaults");
	tcase_add_test(tc, test_defaults);

	tc = new_case(s, "good values");
	tcase_add_test(tc, test_choices);
	tcase_add_test(tc, test_budget_values);
	tcase_add_test(tc, test_sim_profile_values);
	tcase_add_test(tc, test_numeric_values);
	tcase_add_test(tc, test_device_values);
	tcase_add_test(tc, test_trace_values);

	tc = new_case(s, "bad values");
	tcase_add_loop_test(tc, test_bad_value, 0, (int)ARRAY_SIZE(bad_values));
	tcase_add_test(tc, test_bad_sim_profile_lists_known);
	tcase_add_test(tc, test_failure_keeps_config);
	tcase_add_test(tc, test_no_error_buffer);

	tc = new_case(s, "sizes");
	tcase_add_test(tc, test_size_suffixes);
	tcase_add_test(tc, test_budget_bytes);

	add_tunables_table_tests(s);
	return s;
}

int main(void)
{
	return check_main(tunables_suite);
}
