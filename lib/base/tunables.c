/* SPDX-License-Identifier: MIT */
/*
 * tunables.c — a configuration loaded from the tunables' sources, and
 * read back as text.
 *
 * The rows of the table (tunables_table.c) parse the defaults, the
 * environment and the configuration string, all or nothing: each value
 * is read by its row (tunables_value.c), then stored in its field here.
 * Adding a tunable is one row there plus one case in store_value() and
 * in tmm_config_format() here.
 *
 * Errors name the key, the value, where the value came from and what is
 * accepted: a run that silently ignores a misspelt budget can take a
 * shared GPU down with it, so an unknown key, in the config string or as
 * a TENSORMM_* variable, is an error too.
 *
 * Numbers are read and written by number_text.c, by hand, so that "0.5"
 * means the same whatever locale the application set.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "number_text.h"
#include "text.h"
#include "tunables.h"
#include "tunables_value.h"

/* Values longer than this are refused; the trace path is the longest. */
#define VALUE_MAX (sizeof(((struct tmm_config *)0)->trace) - 1)

/* Names longer than this get no "did you mean". */
#define SUGGEST_MAX 64

int tmm_parse_size(const char *text, uint64_t *bytes)
{
	uint64_t value;

	if (!text || !bytes || tmm_size_from_text(text, &value) != TMM_SIZE_OK)
		return -EINVAL;
	*bytes = value;
	return 0;
}

/* ------------------------------------------------------------------------
 * Storing values
 * ---------------------------------------------------------------------- */

static bool copy_string(char *dst, size_t room, const char *s, char *why,
			size_t whylen)
{
	size_t len = strlen(s);

	if (len >= room) {
		snprintf(why, whylen, "too long: at most %zu characters",
			 room - 1);
		return false;
	}
	memcpy(dst, s, len + 1);
	return true;
}

/* Puts a parsed value into its field.  Fails only for a string that
 * does not fit its field. */
static bool store_value(struct tmm_config *cfg, enum tmm_tunable_id id,
			const union tmm_tunable_value *v, char *why,
			size_t whylen)
{
	switch (id) {
	case TMM_T_BACKEND:
		cfg->backend = (enum tmm_backend_choice)v->choice;
		return true;
	case TMM_T_MODE:
		cfg->mode = (enum tmm_mode_choice)v->choice;
		return true;
	case TMM_T_BUDGET:
		cfg->budget = v->size;
		return true;
	case TMM_T_POLICY:
		return copy_string(cfg->policy, sizeof(cfg->policy),
				   tmm_tunables(NULL)[id].choices[v->choice],
				   why, whylen);
	case TMM_T_AUTO_GOAL:
		cfg->auto_goal = (enum tmm_auto_goal)v->choice;
		return true;
	case TMM_T_AUTO_RUNGS:
		cfg->auto_rungs = (unsigned)v->i;
		return true;
	case TMM_T_AUTO_TWIN:
		cfg->auto_twin = v->choice == 1;
		return true;
	case TMM_T_OFFLOAD_IDLE:
		cfg->offload_idle = (enum tmm_offload_idle)v->choice;
		return true;
	case TMM_T_TSPLIT_RETRY:
		cfg->tsplit_retry = v->choice == 1;
		return true;
	case TMM_T_REPLAN_DRIFT:
		cfg->replan_drift = v->d;
		return true;
	case TMM_T_SIM_PROFILE:
		return copy_string(cfg->sim_profile, sizeof(cfg->sim_profile),
				   v->str, why, whylen);
	case TMM_T_SIM_CAPACITY:
		cfg->sim_capacity = v->size.bytes;
		return true;
	case TMM_T_SIM_MEMORY:
		cfg->sim_memory = (enum tmm_sim_memory)v->choice;
		return true;
	case TMM_T_SIM_JITTER:
		cfg->sim_jitter = v->d;
		return true;
	case TMM_T_SIM_SEED:
		cfg->sim_seed = v->u64;
		return true;
	case TMM_T_SIM_HOST:
		cfg->sim_host_ahead = v->choice == 1;
		return true;
	case TMM_T_SIM_MANAGED_COPY:
		cfg->sim_managed_copy_held = v->choice == 0;
		return true;
	case TMM_T_SIM_COPY_KERNEL_GBPS:
		cfg->sim_copy_kernel_gbps = v->d;
		return true;
	case TMM_T_SIM_COPY_KERNEL_SM:
		cfg->sim_copy_kernel_sm = v->d;
		return true;
	case TMM_T_HOST_NUMA_NODE:
		cfg->host_numa_node = (int)v->i;
		return true;
	case TMM_T_PINNED_POOL:
		cfg->pinned_pool = v->size.bytes;
		return true;
	case TMM_T_TRACE:
		return copy_string(cfg->trace, sizeof(cfg->trace), v->str, why,
				   whylen);
	case TMM_T_TRACE_MAX:
		cfg->trace_max = v->size.bytes;
		return true;
	case TMM_T_HINTS:
		return copy_string(cfg->hints, sizeof(cfg->hints), v->str, why,
				   whylen);
	case TMM_T_HINTS_MAX:
		cfg->hints_max = v->size.bytes;
		return true;
	case TMM_T_STATS_SHM:
		cfg->stats_shm = v->choice == 1;
		return true;
	case TMM_T_DEVICE:
		return copy_string(cfg->device, sizeof(cfg->device), v->str,
				   why, whylen);
	case TMM_T_SHARE:
		return copy_string(cfg->share, sizeof(cfg->share), v->str, why,
				   whylen);
	case TMM_T_MAX_SWAP_RATE:
		cfg->max_swap_rate = v->d;
		return true;
	case TMM_T_CUPTI:
		cfg->cupti = v->choice == 1;
		return true;
	case TMM_T_UVM_COUNTERS:
		cfg->uvm_counters = v->choice == 1;
		return true;
	case TMM_T_DL_PATH:
		return copy_string(cfg->dl_path, sizeof(cfg->dl_path), v->str,
				   why, whylen);
	case TMM_T_UVM_SWAP_PATH:
		cfg->uvm_swap_path = (enum tmm_uvm_swap_path)v->choice;
		return true;
	case TMM_T_UVM_COPIER:
		cfg->uvm_copier = (enum tmm_uvm_copier)v->choice;
		return true;
	case TMM_T_UVM_COPIER_BLOCKS:
		cfg->uvm_copier_blocks = (unsigned)v->i;
		return true;
	case TMM_T_UVM_FRESH:
		cfg->uvm_fresh = (enum tmm_uvm_fresh)v->choice;
		return true;
	case TMM_T_UVM_CAP:
		cfg->uvm_cap = (enum tmm_uvm_cap)v->choice;
		return true;
	case TMM_T_UVM_KEEP:
		cfg->uvm_keep = v->choice == 1;
		return true;
	case TMM_T_UVM_COMPACT:
		cfg->uvm_compact = v->choice == 1;
		return true;
	case TMM_T_UVM_READ_MOSTLY:
		cfg->uvm_read_mostly = v->choice == 1;
		return true;
	case TMM_T_CHECK:
		cfg->check = v->choice == 1;
		return true;
	case TMM_T_LIVENESS:
		cfg->liveness_discard = v->choice == 1;
		return true;
	case TMM_T_POOL:
		cfg->pool = (enum tmm_pool_choice)v->choice;
		return true;
	case TMM_T_FAULT:
		return copy_string(cfg->fault, sizeof(cfg->fault), v->str, why,
				   whylen);
	case TMM_T_LOG:
		cfg->log = (enum tmm_log_level)v->choice;
		return true;
	case TMM_TUNABLE_COUNT:
		break;
	}
	snprintf(why, whylen, "no field for this tunable");
	return false;
}

/*
 * Parses `value` (trimmed) for tunable `id` and stores it in cfg, noting
 * its source.  On failure writes "key=value (origin): why; accepted: ..."
 * to msg and returns -EINVAL.
 */
static int set_value(struct tmm_config *cfg, enum tmm_tunable_id id,
		     const char *value, enum tmm_source source,
		     const char *origin, struct tmm_text *msg)
{
	const struct tmm_tunable *row = &tmm_tunables(NULL)[id];
	union tmm_tunable_value v;
	char why[1024];

	if (!tmm_tunable_parse(row, value, &v, why, sizeof(why)) ||
	    !store_value(cfg, id, &v, why, sizeof(why))) {
		tmm_text_add(msg, "%s=", row->name);
		tmm_text_add_echo(msg, value, strlen(value));
		tmm_text_add(msg, " (%s): %s; accepted: %s", origin, why,
			     row->accepted);
		return -EINVAL;
	}
	cfg->source[id] = source;
	return 0;
}

/* ------------------------------------------------------------------------
 * Sources
 * ---------------------------------------------------------------------- */

/* Levenshtein distance, ignoring case, for "did you mean". */
static size_t edit_distance(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);
	size_t row[SUGGEST_MAX + 1];
	size_t i, j;

	if (na > SUGGEST_MAX || nb > SUGGEST_MAX)
		return SIZE_MAX;
	for (j = 0; j <= nb; j++)
		row[j] = j;
	for (i = 1; i <= na; i++) {
		size_t diagonal = row[0];

		row[0] = i;
		for (j = 1; j <= nb; j++) {
			size_t above = row[j];
			size_t best = diagonal +
				      (tmm_ascii_lower(a[i - 1]) !=
				       tmm_ascii_lower(b[j - 1]));

			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[nb];
}

/*
 * Says which tunables exist, and which one was probably meant: a typo
 * should cost one glance, not a trip to the manual.
 */
static void add_known(struct tmm_text *msg, const char *bad, size_t len,
		      bool env)
{
	const struct tmm_tunable *table = tmm_tunables(NULL);
	size_t best = SIZE_MAX;
	const char *guess = NULL;
	size_t i;

	tmm_text_add(msg, "; known tunables: ");
	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		const char *name = env ? table[i].env : table[i].name;
		size_t dist = edit_distance(bad, len, name);

		tmm_text_add(msg, "%s%s", i ? ", " : "", name);
		if (dist < best) {
			best = dist;
			guess = name;
		}
	}
	if (guess && best <= 2 && best < len)
		tmm_text_add(msg, "; did you mean '%s'?", guess);
}

static int find_tunable(const char *name, size_t len, bool env)
{
	const struct tmm_tunable *table = tmm_tunables(NULL);
	int i;

	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		const char *known = env ? table[i].env : table[i].name;

		if (strlen(known) == len && !memcmp(known, name, len))
			return i;
	}
	return -1;
}

/* Copies the trimmed slice into value[VALUE_MAX + 1], or explains. */
static int take_value(const char *s, size_t len, char *value,
		      const struct tmm_tunable *row, const char *origin,
		      struct tmm_text *msg)
{
	tmm_ascii_trim(&s, &len);
	if (len > VALUE_MAX) {
		tmm_text_add(msg, "%s=", row->name);
		tmm_text_add_echo(msg, s, len);
		tmm_text_add(msg, " (%s): too long: at most %zu characters; "
			     "accepted: %s", origin, VALUE_MAX, row->accepted);
		return -EINVAL;
	}
	memcpy(value, s, len);
	value[len] = '\0';
	return 0;
}

static int load_defaults(struct tmm_config *cfg, struct tmm_text *msg)
{
	const struct tmm_tunable *table = tmm_tunables(NULL);
	int i;

	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		int rc = set_value(cfg, (enum tmm_tunable_id)i, table[i].def,
				   TMM_SRC_DEFAULT, "built-in default", msg);

		if (rc)
			return rc;
	}
	return 0;
}

static int load_environment(struct tmm_config *cfg, struct tmm_text *msg)
{
	const struct tmm_tunable *table = tmm_tunables(NULL);
	char value[VALUE_MAX + 1];
	char origin[96];
	char **e;
	int i, rc;

	/* Unknown names first: a misspelt name is the likelier mistake. */
	for (e = environ; e && *e; e++) {
		size_t len = strcspn(*e, "=");

		if (strncmp(*e, "TENSORMM_", 9) ||
		    find_tunable(*e, len, true) >= 0)
			continue;
		tmm_text_add(msg, "unknown tunable '");
		tmm_text_add_echo(msg, *e, len);
		tmm_text_add(msg, "' in the environment");
		add_known(msg, *e, len, true);
		return -EINVAL;
	}
	for (i = 0; i < TMM_TUNABLE_COUNT; i++) {
		const char *raw = table[i].secure_env
					  ? secure_getenv(table[i].env)
					  : getenv(table[i].env);

		if (!raw)
			continue;
		snprintf(origin, sizeof(origin), "environment variable %s",
			 table[i].env);
		rc = take_value(raw, strlen(raw), value, &table[i], origin,
				msg);
		if (!rc)
			rc = set_value(cfg, (enum tmm_tunable_id)i, value,
				       TMM_SRC_ENV, origin, msg);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Applies "key=value,key=value".  Blanks around keys and values are
 * trimmed, empty items are skipped (so a trailing comma is harmless), and
 * a key given twice takes its last value, so a caller can append to a
 * string it was handed.  A value cannot contain a comma; a path with one
 * goes through the environment.
 */
static int load_config_string(struct tmm_config *cfg, const char *config,
			      struct tmm_text *msg)
{
	const struct tmm_tunable *table = tmm_tunables(NULL);
	const char *origin = "config string";
	char value[VALUE_MAX + 1];
	const char *item = config;

	for (;;) {
		size_t len = strcspn(item, ",");
		const char *next = item + len;
		const char *start = item, *key, *eq;
		size_t key_len;
		int id, rc;

		tmm_ascii_trim(&start, &len);
		if (!len)
			goto next_item;
		eq = memchr(start, '=', len);
		if (!eq) {
			tmm_text_add(msg, "config string item '");
			tmm_text_add_echo(msg, start, len);
			tmm_text_add(msg, "' is not key=value (for example "
				     "budget=6GiB)");
			return -EINVAL;
		}
		key = start;
		key_len = (size_t)(eq - start);
		tmm_ascii_trim(&key, &key_len);
		if (!key_len) {
			tmm_text_add(msg, "config string item '");
			tmm_text_add_echo(msg, start, len);
			tmm_text_add(msg, "' has no key before '=' (for "
				     "example budget=6GiB)");
			return -EINVAL;
		}
		id = find_tunable(key, key_len, false);
		if (id < 0) {
			tmm_text_add(msg, "unknown tunable '");
			tmm_text_add_echo(msg, key, key_len);
			tmm_text_add(msg, "' in the config string");
			add_known(msg, key, key_len, false);
			return -EINVAL;
		}
		rc = take_value(eq + 1, (size_t)(start + len - eq - 1), value,
				&table[id], origin, msg);
		if (!rc)
			rc = set_value(cfg, (enum tmm_tunable_id)id, value,
				       TMM_SRC_CONFIG, origin, msg);
		if (rc)
			return rc;
next_item:
		if (!*next)
			return 0;
		item = next + 1;
	}
}

/*
 * Returns 0 with *cfg filled, or -EINVAL with the reason in err.  The
 * result is built aside and copied out only on success, so a failed load
 * never leaves a half-configured *cfg behind.
 */
int tmm_config_load(struct tmm_config *cfg, const char *config, char *err,
		    size_t errlen)
{
	return tmm_config_load_from(cfg, config, true, err, errlen);
}

/*
 * The environment is read last, so that it wins: whoever runs a program
 * can change what its author wrote without rebuilding it, as MALLOC_CONF
 * does for jemalloc, and an error that says "raise TENSORMM_BUDGET" is
 * then true.  Both sources are read whole either way, so a bad value in
 * either is reported even where the other would have set the key.
 */
int tmm_config_load_from(struct tmm_config *cfg, const char *config,
			 bool environment, char *err, size_t errlen)
{
	struct tmm_config c;
	struct tmm_text msg;
	int rc;

	tmm_text_init(&msg, err, errlen);
	if (!cfg) {
		tmm_text_add(&msg, "no configuration to fill (cfg is NULL)");
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	rc = load_defaults(&c, &msg);
	if (!rc && config)
		rc = load_config_string(&c, config, &msg);
	if (!rc && environment)
		rc = load_environment(&c, &msg);
	if (rc)
		return rc;
	*cfg = c;
	return 0;
}

/* ------------------------------------------------------------------------
 * Reading a configuration back
 * ---------------------------------------------------------------------- */

static void text_add_choice(struct tmm_text *t, enum tmm_tunable_id id,
			    unsigned value)
{
	const char *const *choices = tmm_tunables(NULL)[id].choices;
	unsigned i;

	for (i = 0; choices[i]; i++) {
		if (i == value) {
			tmm_text_add(t, "%s", choices[i]);
			return;
		}
	}
	/* Not a word we know: print the number rather than lie. */
	tmm_text_add(t, "%u", value);
}

void tmm_config_format(const struct tmm_config *cfg, enum tmm_tunable_id id,
		       char *buf, size_t len)
{
	struct tmm_text t;

	tmm_text_init(&t, buf, len);
	if (!cfg)
		return;
	switch (id) {
	case TMM_T_BACKEND:
		text_add_choice(&t, id, cfg->backend);
		break;
	case TMM_T_MODE:
		text_add_choice(&t, id, cfg->mode);
		break;
	case TMM_T_BUDGET:
		if (cfg->budget.is_percent) {
			tmm_text_add_double(&t, cfg->budget.percent);
			tmm_text_add(&t, cfg->budget.of_peak ? "%%peak" : "%%");
		} else {
			/* A budget's bare number is refused: write
			 * plain bytes with their unit. */
			tmm_text_add_size(&t, cfg->budget.bytes);
			if (cfg->budget.bytes & 1023)
				tmm_text_add(&t, "B");
		}
		break;
	case TMM_T_POLICY:
		tmm_text_add(&t, "%s", cfg->policy);
		break;
	case TMM_T_AUTO_GOAL:
		text_add_choice(&t, id, cfg->auto_goal);
		break;
	case TMM_T_AUTO_RUNGS:
		tmm_text_add(&t, "%u", cfg->auto_rungs);
		break;
	case TMM_T_AUTO_TWIN:
		text_add_choice(&t, id, cfg->auto_twin ? 1 : 0);
		break;
	case TMM_T_OFFLOAD_IDLE:
		text_add_choice(&t, id, cfg->offload_idle);
		break;
	case TMM_T_TSPLIT_RETRY:
		text_add_choice(&t, id, cfg->tsplit_retry ? 1 : 0);
		break;
	case TMM_T_REPLAN_DRIFT:
		tmm_text_add_double(&t, cfg->replan_drift);
		break;
	case TMM_T_SIM_PROFILE:
		tmm_text_add(&t, "%s", cfg->sim_profile);
		break;
	case TMM_T_SIM_CAPACITY:
		tmm_text_add_size(&t, cfg->sim_capacity);
		break;
	case TMM_T_SIM_MEMORY:
		text_add_choice(&t, id, cfg->sim_memory);
		break;
	case TMM_T_SIM_JITTER:
		tmm_text_add_double(&t, cfg->sim_jitter);
		break;
	case TMM_T_SIM_SEED:
		tmm_text_add(&t, "%" PRIu64, cfg->sim_seed);
		break;
	case TMM_T_SIM_HOST:
		text_add_choice(&t, id, cfg->sim_host_ahead ? 1 : 0);
		break;
	case TMM_T_SIM_MANAGED_COPY:
		text_add_choice(&t, id, cfg->sim_managed_copy_held ? 0 : 1);
		break;
	case TMM_T_SIM_COPY_KERNEL_GBPS:
		tmm_text_add_double(&t, cfg->sim_copy_kernel_gbps);
		break;
	case TMM_T_SIM_COPY_KERNEL_SM:
		tmm_text_add_double(&t, cfg->sim_copy_kernel_sm);
		break;
	case TMM_T_HOST_NUMA_NODE:
		tmm_text_add(&t, "%d", cfg->host_numa_node);
		break;
	case TMM_T_PINNED_POOL:
		tmm_text_add_size(&t, cfg->pinned_pool);
		break;
	case TMM_T_TRACE:
		tmm_text_add(&t, "%s", cfg->trace);
		break;
	case TMM_T_TRACE_MAX:
		tmm_text_add_size(&t, cfg->trace_max);
		break;
	case TMM_T_HINTS:
		tmm_text_add(&t, "%s", cfg->hints);
		break;
	case TMM_T_HINTS_MAX:
		tmm_text_add_size(&t, cfg->hints_max);
		break;
	case TMM_T_STATS_SHM:
		text_add_choice(&t, id, cfg->stats_shm ? 1 : 0);
		break;
	case TMM_T_DEVICE:
		tmm_text_add(&t, "%s", cfg->device);
		break;
	case TMM_T_SHARE:
		tmm_text_add(&t, "%s", cfg->share);
		break;
	case TMM_T_MAX_SWAP_RATE:
		tmm_text_add_double(&t, cfg->max_swap_rate);
		break;
	case TMM_T_CUPTI:
		text_add_choice(&t, id, cfg->cupti ? 1 : 0);
		break;
	case TMM_T_UVM_COUNTERS:
		text_add_choice(&t, id, cfg->uvm_counters ? 1 : 0);
		break;
	case TMM_T_DL_PATH:
		tmm_text_add(&t, "%s", cfg->dl_path);
		break;
	case TMM_T_UVM_SWAP_PATH:
		text_add_choice(&t, id, cfg->uvm_swap_path);
		break;
	case TMM_T_UVM_COPIER:
		text_add_choice(&t, id, cfg->uvm_copier);
		break;
	case TMM_T_UVM_COPIER_BLOCKS:
		tmm_text_add(&t, "%u", cfg->uvm_copier_blocks);
		break;
	case TMM_T_UVM_FRESH:
		text_add_choice(&t, id, cfg->uvm_fresh);
		break;
	case TMM_T_UVM_CAP:
		text_add_choice(&t, id, cfg->uvm_cap);
		break;
	case TMM_T_UVM_KEEP:
		text_add_choice(&t, id, cfg->uvm_keep ? 1 : 0);
		break;
	case TMM_T_UVM_COMPACT:
		text_add_choice(&t, id, cfg->uvm_compact ? 1 : 0);
		break;
	case TMM_T_UVM_READ_MOSTLY:
		text_add_choice(&t, id, cfg->uvm_read_mostly ? 1 : 0);
		break;
	case TMM_T_CHECK:
		text_add_choice(&t, id, cfg->check ? 1 : 0);
		break;
	case TMM_T_LIVENESS:
		text_add_choice(&t, id, cfg->liveness_discard ? 1 : 0);
		break;
	case TMM_T_POOL:
		text_add_choice(&t, id, cfg->pool);
		break;
	case TMM_T_FAULT:
		tmm_text_add(&t, "%s", cfg->fault);
		break;
	case TMM_T_LOG:
		text_add_choice(&t, id, cfg->log);
		break;
	case TMM_TUNABLE_COUNT:
		break;
	}
}

/*
 * Returns the budget in bytes: a size is capped at the capacity; a
 * percentage is of the capacity, rounded down.
 */
uint64_t tmm_config_budget(const struct tmm_config *cfg, uint64_t capacity)
{
	long double bytes;
	uint64_t whole;

	if (!cfg->budget.is_percent)
		return cfg->budget.bytes < capacity ? cfg->budget.bytes :
						      capacity;
	/* Of the peak: the whole device until a first iteration has
	 * measured it (lib/exec/peak_budget.c). */
	if (cfg->budget.of_peak)
		return capacity;
	if (cfg->budget.percent >= 100)
		return capacity;
	if (!(cfg->budget.percent > 0))
		return 0;
	bytes = (long double)capacity * cfg->budget.percent / 100;
	/*
	 * "33.3%" is stored a hair below 33.3, and 33.3% of 1000 must still
	 * be 333: forgive the double's rounding (a few ulp) before rounding
	 * down.
	 */
	bytes += bytes * 4 * DBL_EPSILON;
	if (bytes >= (long double)capacity)
		return capacity;
	whole = (uint64_t)bytes;
	return whole < capacity ? whole : capacity;
}
