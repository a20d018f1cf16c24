/* SPDX-License-Identifier: MIT */
/*
 * stat_live.c — tensormm-stat's view of running processes: the list of
 * contexts and the scrolling table, read from the segments that
 * lib/exec/stats_shm.c publishes.
 *
 * Gauges (bytes in use, budget, plan state) are printed as they are;
 * counters are printed as the change since the previous line, as vmstat
 * does, so a line says what happened in its interval.  The first line of
 * a context counts from the context's creation.  --json and --csv print
 * the raw counters instead, one record per context and sample, so that
 * machines can do their own arithmetic.
 *
 * Both text tables print from one table of columns (-o picks them): a
 * column names the segment fields it shows by name, looked up in the
 * segment's own field table, so a column whose field this library does
 * not publish prints "-" rather than a made-up zero, and starts to show
 * figures as soon as the segment publishes a field of that name.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/exec/guide.h"
#include "stat.h"
#include "lib/exec/stats_shm.h"
#include "tensormm.h"

/* Repeat the header after this many lines, as vmstat does. */
#define HEADER_EVERY 20

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* A CSV field: our strings hold no commas or quotes unless a device
 * name does, so quote every string. */
static void csv_string(const char *s, size_t max)
{
	putchar('"');
	for (size_t i = 0; i < max && s[i]; i++) {
		if (s[i] == '"')
			putchar('"');
		putchar(s[i] >= 0x20 ? s[i] : ' ');
	}
	putchar('"');
}

/* How a live column prints (struct stat_column.how). */
enum live_how {
	H_PID, H_CTX, H_UID, H_BACKEND, H_DEVICE, H_MODE, H_POLICY, H_PLAN,
	H_MIB,	     /* a gauge of bytes, in MiB */
	H_N,	     /* a gauge, a count */
	H_MS,	     /* a gauge of ns, in ms */
	H_D_MIB,     /* a counter of bytes: its change, in MiB */
	H_D_N,	     /* a counter: its change */
	H_D_MS,	     /* a counter of ns: its change, in ms */
	H_RESIDENT,  /* device_in_use in mode uvm, "-" in swap mode */
};

#define COL(name, unit, width, how, src0, src1, group, help) \
	{ name, unit, width, help, group, how, { src0, src1 } }

/* Every column of the list and of the scrolling table.  The uvm ones
 * are the driver's work on managed memory: zeros in swap mode, and on
 * cuda, whose driver keeps its own books. */
static const struct stat_column live_cols[] = {
	COL("pid", "", 7, H_PID, NULL, NULL, NULL, "process id"),
	COL("ctx", "", 3, H_CTX, NULL, NULL, NULL,
	    "context number in its process"),
	COL("uid", "", 6, H_UID, NULL, NULL, NULL, "user id of the process"),
	COL("backend", "", -7, H_BACKEND, NULL, NULL, NULL, "sim or cuda"),
	COL("device", "", -24, H_DEVICE, NULL, NULL, NULL,
	    "simulator profile or GPU name"),
	COL("mode", "", -5, H_MODE, NULL, NULL, NULL, "swap or uvm"),
	COL("policy", "", -12, H_POLICY, NULL, NULL, NULL,
	    "the policy that plans"),
	COL("dev_used", "MiB", 9, H_MIB, "device_in_use", NULL, NULL,
	    "device bytes held by tensors (uvm: managed pages on the "
	    "device)"),
	COL("dev_peak", "MiB", 9, H_MIB, "device_peak", NULL, NULL,
	    "high-water mark of dev_used"),
	COL("budget", "MiB", 9, H_MIB, "budget", NULL, NULL,
	    "bytes the runtime may use on the device"),
	COL("host", "MiB", 9, H_MIB, "host_in_use", NULL, NULL,
	    "host copies of tensors, in pinned buffers (uvm: those "
	    "evicted by copy; see tensormm-stat(1))"),
	COL("pinned", "MiB", 9, H_MIB, "host_pinned", NULL, NULL,
	    "pinned host bytes held, in use and cached"),
	COL("swap_out", "MiB/int", 8, H_D_MIB, "swap_out_bytes", NULL, NULL,
	    "bytes the runtime moved to the host"),
	COL("swap_in", "MiB/int", 8, H_D_MIB, "swap_in_bytes", NULL, NULL,
	    "bytes the runtime brought back"),
	COL("clean", "MiB/int", 8, H_D_MIB, "clean_eviction_bytes", NULL,
	    NULL, "bytes evicted with no copy: the host held them already"),
	COL("pf", "n/int", 5, H_D_N, "prefetches", NULL, NULL,
	    "prefetches issued"),
	COL("on_time", "n/int", 7, H_D_N, "prefetch_on_time", NULL, NULL,
	    "prefetches that arrived before their use"),
	COL("late", "n/int", 5, H_D_N, "prefetch_late", NULL, NULL,
	    "prefetches still arriving at their use"),
	COL("stall", "ms/int", 8, H_D_MS, "stall_ns", NULL, NULL,
	    "compute time lost waiting for copies"),
	COL("evict", "n/int", 5, H_D_N, "passive_evictions", NULL, NULL,
	    "evictions forced by a full device"),
	COL("recmp", "n/int", 5, H_D_N, "recomputations", NULL, NULL,
	    "ops re-run to regenerate dropped tensors"),
	COL("rcmp_t", "ms/int", 8, H_D_MS, "recompute_ns", NULL, NULL,
	    "time spent re-running them"),
	COL("ops", "n/int", 7, H_D_N, "ops", NULL, NULL, "tmm_run calls"),
	COL("plan", "", -9, H_PLAN, NULL, NULL, NULL,
	    "measuring, guided or diverged"),
	COL("iter", "n", 5, H_N, "iterations", NULL, NULL,
	    "completed iterations"),
	COL("last_it", "ms", 9, H_MS, "last_iteration_ns", NULL, NULL,
	    "duration of the last iteration"),
	COL("faults", "n/int", 7, H_D_N, "uvm_faults", NULL, "uvm",
	    "device page faults serviced"),
	COL("fbatch", "n/int", 6, H_D_N, "uvm_fault_batches", NULL, "uvm",
	    "fault batches those faults came in"),
	COL("mig_in", "MiB/int", 8, H_D_MIB, "uvm_fault_bytes",
	    "uvm_prefetch_bytes", "uvm",
	    "migrated to the device, by faults and prefetches"),
	COL("mig_out", "MiB/int", 8, H_D_MIB, "uvm_eviction_bytes", NULL,
	    "uvm", "written back to the host by the driver's evictions"),
	COL("prefetched", "MiB/int", 10, H_D_MIB, "uvm_prefetch_bytes", NULL,
	    "uvm", "of mig_in, migrated by prefetches"),
	COL("discarded", "MiB/int", 9, H_D_MIB, "uvm_discard_bytes", NULL,
	    "uvm", "dropped from the device with no write-back"),
	COL("uvm_evict", "n/int", 9, H_D_N, "uvm_evictions", NULL, "uvm",
	    "blocks the driver evicted for room"),
	COL("remote", "MiB/int", 8, H_D_MIB, "uvm_remote_bytes", NULL, "uvm",
	    "read or written over the bus in place"),
	COL("resident", "MiB", 9, H_RESIDENT, "device_in_use", NULL, "uvm",
	    "managed bytes on the device (uvm mode only)"),
};
#define N_LIVE_COLS (sizeof(live_cols) / sizeof(live_cols[0]))

static const char list_defaults[] =
	"pid,ctx,uid,backend,device,mode,policy,iter,dev_used,budget,plan";
static const char scroll_defaults[] =
	"pid,ctx,dev_used,dev_peak,budget,host,swap_out,swap_in,pf,late,"
	"stall,evict,recmp,rcmp_t,plan,iter,last_it";

int stat_live_check_columns(const char *list, bool scroll)
{
	struct stat_selection sel;

	return stat_columns_select(live_cols, N_LIVE_COLS,
				   scroll ? scroll_defaults : list_defaults,
				   list, "-o", &sel);
}

void stat_live_columns_help(FILE *f)
{
	fprintf(f, "Columns of the list and of the scrolling table (-o "
		"NAME,...; +NAME,... adds to the defaults).\n"
		"Counters (/int) show the change since the previous line, "
		"in the list their total.\n"
		"A column whose figure this libtensormm does not publish "
		"prints '-'.\n");
	stat_columns_help(f, live_cols, N_LIVE_COLS);
	fprintf(f, "List defaults:   %s\nScroll defaults: %s\n",
		list_defaults, scroll_defaults);
}

/* The index of the segment field `name`, or -1 when this library does
 * not publish it. */
static int field_index(const char *name)
{
	size_t nf;
	const struct tmm_shm_field_info *f = tmm_shm_fields(&nf);

	for (size_t i = 0; name && i < nf; i++)
		if (!strcmp(f[i].name, name))
			return (int)i;
	return -1;
}

/*
 * The sum of column c's fields in v, less their sum in prev when prev is
 * not NULL.  False when a field is not published.
 */
static bool col_value(const struct stat_column *c, const uint64_t *v,
		      const uint64_t *prev, uint64_t *out)
{
	*out = 0;
	for (int k = 0; k < 2 && c->src[k]; k++) {
		int i = field_index(c->src[k]);

		if (i < 0)
			return false;
		*out += v[i] - (prev ? prev[i] : 0);
	}
	return true;
}

/* Formats column c of one context's row; prev holds the counters of the
 * previous line (zeros for the first, and in the list). */
static void cell_text(const struct stat_column *c,
		      const struct tmm_shm_entry *e,
		      const struct tmm_shm_segment *seg, const uint64_t *v,
		      const uint64_t *prev, char *buf, size_t len)
{
	uint64_t x;
	bool delta = c->how == H_D_MIB || c->how == H_D_N || c->how == H_D_MS;
	int w = abs(c->width);

	switch (c->how) {
	case H_PID:
		snprintf(buf, len, "%d", (int)e->pid);
		return;
	case H_CTX:
		snprintf(buf, len, "%u", e->n);
		return;
	case H_UID:
		snprintf(buf, len, "%u", (unsigned)e->uid);
		return;
	case H_BACKEND:
		snprintf(buf, len, "%.*s", w, seg->backend);
		return;
	case H_DEVICE:
		snprintf(buf, len, "%.*s", w, seg->device);
		return;
	case H_MODE:
		snprintf(buf, len, "%.*s", w, seg->mode);
		return;
	case H_POLICY:
		snprintf(buf, len, "%.*s", w, seg->policy);
		return;
	case H_PLAN:
		snprintf(buf, len, "%s",
			 tmm_plan_state_name((uint32_t)v[TMM_SHM_PLAN_STATE]));
		return;
	default:
		break;
	}
	if ((c->how == H_RESIDENT && strncmp(seg->mode, "uvm", 4)) ||
	    !col_value(c, v, delta ? prev : NULL, &x)) {
		snprintf(buf, len, "-");
		return;
	}
	if (c->how == H_MIB || c->how == H_D_MIB || c->how == H_RESIDENT)
		snprintf(buf, len, "%.1f", mib(x));
	else if (c->how == H_MS || c->how == H_D_MS)
		snprintf(buf, len, "%.3f", ms(x));
	else
		snprintf(buf, len, "%" PRIu64, x);
}

/* Prints a text row: the timestamp `ts` when there is one, then the
 * selected columns. */
static void text_row(const struct stat_selection *sel, const char *ts,
		     enum stat_ts ts_kind, const struct tmm_shm_entry *e,
		     const struct tmm_shm_segment *seg, const uint64_t *v,
		     const uint64_t *prev)
{
	char buf[64];

	putchar(' ');
	if (ts_kind != STAT_TS_NONE)
		printf(" %*s", stat_timestamp_width(ts_kind), ts);
	for (size_t i = 0; i < sel->n; i++) {
		const struct stat_column *c = &live_cols[sel->col[i]];

		cell_text(c, e, seg, v, prev, buf, sizeof(buf));
		stat_columns_cell(c, buf);
	}
	putchar('\n');
}

/* The list shows counters as totals: its units lose their "/int". */
static void totals_table(struct stat_column *cols)
{
	for (size_t i = 0; i < N_LIVE_COLS; i++) {
		cols[i] = live_cols[i];
		if (!strcmp(cols[i].unit, "MiB/int"))
			cols[i].unit = "MiB";
		else if (!strcmp(cols[i].unit, "ms/int"))
			cols[i].unit = "ms";
		else if (!strcmp(cols[i].unit, "n/int"))
			cols[i].unit = "n";
	}
}

/*
 * Opens an entry's segment.  Returns it, or NULL with the error in *rc,
 * explained on stderr unless it is another user's segment, or one of
 * another release's layout, and `quiet`: a machine shared with other
 * users and programs is normal, not an error, until the user asks for
 * one of their processes by pid.  Nor, when `quiet`, is a
 * segment gone since the listing (-ENOENT): its process ended, or another
 * reader removed it after a crash.
 */
static const struct tmm_shm_segment *open_entry(const struct tmm_shm_entry *e,
						bool quiet, int *rc)
{
	const struct tmm_shm_segment *seg;
	char err[512];

	*rc = tmm_shm_open(e->name, &seg, err, sizeof(err));
	if (*rc < 0) {
		if (!(quiet && (*rc == -EACCES || *rc == -ENOENT ||
				*rc == -EPROTONOSUPPORT)))
			stat_error("pid %d: %s", (int)e->pid, err);
		return NULL;
	}
	return seg;
}

static int list_or_fail(struct tmm_shm_entry **list)
{
	char err[512];
	int n = tmm_shm_list(list, NULL, err, sizeof(err));

	if (n < 0)
		stat_error("%s", err);
	return n;
}

static void csv_header(bool with_header_fields, enum stat_ts ts)
{
	size_t nf;
	const struct tmm_shm_field_info *f = tmm_shm_fields(&nf);

	printf("%spid,context,uid", ts != STAT_TS_NONE ? "time," : "");
	if (with_header_fields)
		printf(",backend,device,mode,policy,simulated");
	for (size_t i = 0; i < nf; i++)
		printf(",%s", f[i].name);
	putchar('\n');
}

/* A record of --json or --csv; `ts` is its timestamp when asked (an ISO
 * time is a JSON string, seconds a JSON number). */
static void print_record(const struct tmm_shm_entry *e,
			 const struct tmm_shm_segment *seg,
			 const uint64_t *v, enum stat_format fmt,
			 enum stat_ts ts_kind, const char *ts)
{
	size_t nf;
	const struct tmm_shm_field_info *f = tmm_shm_fields(&nf);

	if (fmt == STAT_JSON) {
		putchar('{');
		if (ts_kind == STAT_TS_ISO)
			printf("\"time\":\"%s\",", ts);
		else if (ts_kind != STAT_TS_NONE)
			printf("\"time\":%s,", ts);
		printf("\"pid\":%d,\"context\":%u,\"uid\":%u,\"backend\":",
		       (int)e->pid, e->n, (unsigned)e->uid);
		stat_json_string(stdout, seg->backend, sizeof(seg->backend));
		printf(",\"device\":");
		stat_json_string(stdout, seg->device, sizeof(seg->device));
		printf(",\"mode\":");
		stat_json_string(stdout, seg->mode, sizeof(seg->mode));
		printf(",\"policy\":");
		stat_json_string(stdout, seg->policy, sizeof(seg->policy));
		printf(",\"simulated\":%s,\"plan\":\"%s\"",
		       seg->simulated ? "true" : "false",
		       tmm_plan_state_name((uint32_t)v[TMM_SHM_PLAN_STATE]));
		for (size_t i = 0; i < nf; i++)
			printf(",\"%s\":%" PRIu64, f[i].name, v[i]);
		putchar('}');
		return;
	}
	/* CSV */
	if (ts_kind != STAT_TS_NONE)
		printf("%s,", ts);
	printf("%d,%u,%u,", (int)e->pid, e->n, (unsigned)e->uid);
	csv_string(seg->backend, sizeof(seg->backend));
	putchar(',');
	csv_string(seg->device, sizeof(seg->device));
	putchar(',');
	csv_string(seg->mode, sizeof(seg->mode));
	putchar(',');
	csv_string(seg->policy, sizeof(seg->policy));
	printf(",%u", seg->simulated ? 1u : 0u);
	for (size_t i = 0; i < nf; i++)
		printf(",%" PRIu64, v[i]);
	putchar('\n');
}

int stat_list(const struct stat_live_opts *o)
{
	struct stat_column cols[N_LIVE_COLS];
	struct stat_selection sel;
	struct tmm_shm_entry *list;
	enum stat_format fmt = o->fmt;
	uint64_t zero[TMM_SHM_FIELD_COUNT] = { 0 };
	char ts[40];
	int n, shown = 0, status;

	status = stat_columns_select(live_cols, N_LIVE_COLS, list_defaults,
				     o->columns, "-o", &sel);
	if (status)
		return status;
	totals_table(cols);
	n = list_or_fail(&list);
	if (n < 0)
		return STAT_FAILED;
	stat_timestamp(o->ts, ts, sizeof(ts));
	if (fmt == STAT_JSON)
		printf("[");
	else if (fmt == STAT_CSV)
		csv_header(true, o->ts);
	else if (n > 0)
		stat_columns_header(cols, &sel, o->ts);
	for (int i = 0; i < n; i++) {
		uint64_t v[TMM_SHM_FIELD_COUNT];
		int rc;
		const struct tmm_shm_segment *seg =
			open_entry(&list[i], true, &rc);

		if (!seg && rc == -ENOENT)
			continue; /* gone since the listing */
		/* Another user's context, or one of another release of
		 * libtensormm: a row that says so, not a failure of the
		 * listing. */
		if (!seg && (rc == -EACCES || rc == -EPROTONOSUPPORT)) {
			if (fmt == STAT_TEXT) {
				putchar(' ');
				if (o->ts != STAT_TS_NONE)
					printf(" %*s",
					       stat_timestamp_width(o->ts), ts);
				printf(" %7d %3u %6u (%s)\n",
				       (int)list[i].pid, list[i].n,
				       (unsigned)list[i].uid,
				       rc == -EACCES
					       ? "another user's context: run "
						 "as that user or root to see "
						 "it"
					       : "another release of "
						 "libtensormm: use the "
						 "tensormm-stat that came "
						 "with it");
			}
			continue;
		}
		if (!seg) {
			status = STAT_FAILED;
			continue;
		}
		if (tmm_shm_read(seg, v) < 0) {
			stat_error("pid %d: segment %s stays mid-update; its "
				   "process may have died while writing",
				   (int)list[i].pid, list[i].name);
			tmm_shm_close(seg);
			status = STAT_FAILED;
			continue;
		}
		if (fmt == STAT_TEXT) {
			text_row(&sel, ts, o->ts, &list[i], seg, v, zero);
		} else {
			if (fmt == STAT_JSON && shown)
				printf(",");
			print_record(&list[i], seg, v, fmt, o->ts, ts);
		}
		shown++;
		tmm_shm_close(seg);
	}
	if (fmt == STAT_JSON)
		printf("]\n");
	else if (fmt == STAT_TEXT && n == 0)
		printf("no process is using libtensormm (no /dev/shm/"
		       TMM_SHM_PREFIX "* segment; contexts with "
		       "TENSORMM_STATS_SHM=off are not listed)\n");
	free(list);
	return status;
}

/* ------------------------------------------------------------------------
 * Scrolling
 * ---------------------------------------------------------------------- */

/* One context being watched. */
struct watch {
	struct tmm_shm_entry e;
	const struct tmm_shm_segment *seg;
	uint64_t prev[TMM_SHM_FIELD_COUNT];
	bool seen;
};

static bool segment_exists(const char *name)
{
	char path[TMM_SHM_NAME_MAX + 16];

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return access(path, F_OK) == 0;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s,
			       (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Adds the contexts that appeared since the last sample (of `pid`, or of
 * everyone).  Returns how many are watched; *denied counts the segments
 * of `pid` that belong to another user. */
static size_t refresh(struct watch **ws, size_t *n, pid_t pid,
		      unsigned *denied)
{
	struct tmm_shm_entry *list;
	char err[512];
	int found = tmm_shm_list(&list, NULL, err, sizeof(err));

	for (int i = 0; i < found; i++) {
		bool known = false;
		const struct tmm_shm_segment *seg;
		void *p;
		int rc;

		if (pid > 0 && list[i].pid != pid)
			continue;
		for (size_t j = 0; j < *n; j++)
			known |= !strcmp((*ws)[j].e.name, list[i].name);
		if (known)
			continue;
		seg = open_entry(&list[i], true, &rc);
		if (!seg) {
			*denied += rc == -EACCES;
			continue;
		}
		p = realloc(*ws, (*n + 1) * sizeof(**ws));
		if (!p) {
			tmm_shm_close(seg);
			break;
		}
		*ws = p;
		memset(&(*ws)[*n], 0, sizeof(**ws));
		(*ws)[*n].e = list[i];
		(*ws)[*n].seg = seg;
		(*n)++;
	}
	free(found > 0 ? list : NULL);
	return *n;
}

int stat_scroll(const struct stat_live_opts *o)
{
	struct watch *ws = NULL;
	struct stat_selection sel;
	size_t n = 0, lines = 0, live;
	unsigned long sample, count = o->count;
	enum stat_format fmt = o->fmt;
	pid_t pid = o->pid;
	int status;
	unsigned denied = 0;
	char ts[40];

	status = stat_columns_select(live_cols, N_LIVE_COLS, scroll_defaults,
				     o->columns, "-o", &sel);
	if (status)
		return status;

	if (!refresh(&ws, &n, pid, &denied)) {
		if (pid > 0 && denied) {
			stat_error("process %d's libtensormm context belongs "
				   "to another user (its segment is mode "
				   "0600): run tensormm-stat as that user or "
				   "as root", (int)pid);
			free(ws);
			return STAT_FAILED;
		}
		if (pid > 0)
			stat_error("process %d has no libtensormm context: it "
				   "is not running, or runs with "
				   "TENSORMM_STATS_SHM=off, or its segments "
				   "belong to another user (run "
				   "tensormm-stat with no argument to list "
				   "them)", (int)pid);
		else
			stat_error("no process is using libtensormm; start "
				   "one, or check TENSORMM_STATS_SHM");
		free(ws);
		return pid > 0 ? STAT_NO_PID : STAT_FAILED;
	}
	if (fmt == STAT_CSV)
		csv_header(true, o->ts);
	for (sample = 0; !count || sample < count; sample++) {
		if (sample) {
			sleep_s(o->delay_s);
			refresh(&ws, &n, pid, &denied);
		}
		/* One time for the sample: its lines were read together. */
		stat_timestamp(o->ts, ts, sizeof(ts));
		live = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t v[TMM_SHM_FIELD_COUNT];
			struct watch *w = &ws[i];

			if (!w->seg)
				continue;
			/* Ended: its context unlinked the name, or its
			 * process died. */
			if (!segment_exists(w->e.name) ||
			    (kill(w->e.pid, 0) < 0 && errno == ESRCH)) {
				tmm_shm_close(w->seg);
				w->seg = NULL;
				continue;
			}
			if (tmm_shm_read(w->seg, v) < 0) {
				stat_error("pid %d: segment %s stays "
					   "mid-update", (int)w->e.pid,
					   w->e.name);
				status = STAT_FAILED;
				continue;
			}
			live++;
			if (fmt == STAT_TEXT) {
				if (lines % HEADER_EVERY == 0)
					stat_columns_header(live_cols, &sel,
							    o->ts);
				text_row(&sel, ts, o->ts, &w->e, w->seg, v,
					 w->prev);
				lines++;
			} else {
				print_record(&w->e, w->seg, v, fmt, o->ts,
					     ts);
				if (fmt == STAT_JSON)
					putchar('\n');
			}
			memcpy(w->prev, v, sizeof(v));
			w->seen = true;
		}
		fflush(stdout);
		if (!live) {
			if (pid > 0)
				stat_error("process %d has ended", (int)pid);
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		tmm_shm_close(ws[i].seg);
	free(ws);
	return status;
}
