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

/* Prints a string as a JSON string; segment strings come from another
 * process and may hold anything. */
static void json_string(const char *s, size_t max)
{
	putchar('"');
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
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

/*
 * Opens an entry's segment.  Returns it, or NULL with the error in *rc,
 * explained on stderr unless it is another user's segment and `quiet`:
 * a machine shared with other users is normal, not an error, until the
 * user asks for one of their processes by pid.  Nor, when `quiet`, is a
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
		if (!(quiet && (*rc == -EACCES || *rc == -ENOENT)))
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

static void csv_header(bool with_header_fields)
{
	size_t nf;
	const struct tmm_shm_field_info *f = tmm_shm_fields(&nf);

	printf("pid,context,uid");
	if (with_header_fields)
		printf(",backend,device,mode,policy,simulated");
	for (size_t i = 0; i < nf; i++)
		printf(",%s", f[i].name);
	putchar('\n');
}

static void print_record(const struct tmm_shm_entry *e,
			 const struct tmm_shm_segment *seg,
			 const uint64_t *v, enum stat_format fmt)
{
	size_t nf;
	const struct tmm_shm_field_info *f = tmm_shm_fields(&nf);

	if (fmt == STAT_JSON) {
		printf("{\"pid\":%d,\"context\":%u,\"uid\":%u,\"backend\":",
		       (int)e->pid, e->n, (unsigned)e->uid);
		json_string(seg->backend, sizeof(seg->backend));
		printf(",\"device\":");
		json_string(seg->device, sizeof(seg->device));
		printf(",\"mode\":");
		json_string(seg->mode, sizeof(seg->mode));
		printf(",\"policy\":");
		json_string(seg->policy, sizeof(seg->policy));
		printf(",\"simulated\":%s,\"plan\":\"%s\"",
		       seg->simulated ? "true" : "false",
		       tmm_plan_state_name((uint32_t)v[TMM_SHM_PLAN_STATE]));
		for (size_t i = 0; i < nf; i++)
			printf(",\"%s\":%" PRIu64, f[i].name, v[i]);
		putchar('}');
		return;
	}
	/* CSV */
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

int stat_list(enum stat_format fmt)
{
	struct tmm_shm_entry *list;
	int n = list_or_fail(&list), shown = 0, status = STAT_OK;

	if (n < 0)
		return STAT_FAILED;
	if (fmt == STAT_JSON)
		printf("[");
	else if (fmt == STAT_CSV)
		csv_header(true);
	else if (n > 0)
		printf("# %7s %3s %6s %-7s %-24s %-5s %-12s %6s %10s %10s "
		       "%-9s\n# %7s %3s %6s %-7s %-24s %-5s %-12s %6s %10s "
		       "%10s %-9s\n",
		       "pid", "ctx", "uid", "backend", "device", "mode",
		       "policy", "iter", "dev_used", "budget", "plan", "", "",
		       "", "", "", "", "", "n", "MiB", "MiB", "");
	for (int i = 0; i < n; i++) {
		uint64_t v[TMM_SHM_FIELD_COUNT];
		int rc;
		const struct tmm_shm_segment *seg =
			open_entry(&list[i], true, &rc);

		if (!seg && rc == -ENOENT)
			continue; /* gone since the listing */
		if (!seg && rc == -EACCES) {
			if (fmt == STAT_TEXT)
				printf("  %7d %3u %6u (another user's context: "
				       "run as that user or root to see it)\n",
				       (int)list[i].pid, list[i].n,
				       (unsigned)list[i].uid);
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
			printf("  %7d %3u %6u %-7.7s %-24.24s %-5.5s %-12.12s "
			       "%6" PRIu64 " %10.1f %10.1f %-9s\n",
			       (int)list[i].pid, list[i].n,
			       (unsigned)list[i].uid, seg->backend,
			       seg->device, seg->mode, seg->policy,
			       v[TMM_SHM_ITERATIONS],
			       mib(v[TMM_SHM_DEVICE_IN_USE]),
			       mib(v[TMM_SHM_BUDGET]),
			       tmm_plan_state_name((uint32_t)v[TMM_SHM_PLAN_STATE]));
		} else {
			if (fmt == STAT_JSON && shown)
				printf(",");
			print_record(&list[i], seg, v, fmt);
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

static void text_header(void)
{
	printf("# %7s %3s %9s %9s %9s %9s %8s %8s %5s %5s %8s %5s %5s %8s "
	       "%-9s %5s %9s\n",
	       "pid", "ctx", "dev_used", "dev_peak", "budget", "host",
	       "swap_out", "swap_in", "pf", "late", "stall", "evict", "recmp",
	       "rcmp_t", "plan", "iter", "last_it");
	printf("# %7s %3s %9s %9s %9s %9s %8s %8s %5s %5s %8s %5s %5s %8s "
	       "%-9s %5s %9s\n",
	       "", "", "MiB", "MiB", "MiB", "MiB", "MiB/int", "MiB/int",
	       "n/int", "n/int", "ms/int", "n/int", "n/int", "ms/int", "", "n",
	       "ms");
}

static void text_line(const struct watch *w, const uint64_t *v)
{
	const uint64_t *p = w->prev;

#define D(f) (v[f] - p[f])
	printf("  %7d %3u %9.1f %9.1f %9.1f %9.1f %8.1f %8.1f %5" PRIu64
	       " %5" PRIu64 " %8.3f %5" PRIu64 " %5" PRIu64 " %8.3f %-9s "
	       "%5" PRIu64 " %9.3f\n",
	       (int)w->e.pid, w->e.n, mib(v[TMM_SHM_DEVICE_IN_USE]),
	       mib(v[TMM_SHM_DEVICE_PEAK]), mib(v[TMM_SHM_BUDGET]),
	       mib(v[TMM_SHM_HOST_IN_USE]), mib(D(TMM_SHM_SWAP_OUT_BYTES)),
	       mib(D(TMM_SHM_SWAP_IN_BYTES)), D(TMM_SHM_PREFETCHES),
	       D(TMM_SHM_PREFETCH_LATE), ms(D(TMM_SHM_STALL_NS)),
	       D(TMM_SHM_PASSIVE_EVICTIONS), D(TMM_SHM_RECOMPUTATIONS),
	       ms(D(TMM_SHM_RECOMPUTE_NS)),
	       tmm_plan_state_name((uint32_t)v[TMM_SHM_PLAN_STATE]),
	       v[TMM_SHM_ITERATIONS], ms(v[TMM_SHM_LAST_ITERATION_NS]));
#undef D
}

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

int stat_scroll(pid_t pid, double delay_s, unsigned long count,
		enum stat_format fmt)
{
	struct watch *ws = NULL;
	size_t n = 0, lines = 0, live;
	unsigned long sample;
	int status = STAT_OK;
	unsigned denied = 0;

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
		csv_header(true);
	for (sample = 0; !count || sample < count; sample++) {
		if (sample) {
			sleep_s(delay_s);
			refresh(&ws, &n, pid, &denied);
		}
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
					text_header();
				text_line(w, v);
				lines++;
			} else {
				print_record(&w->e, w->seg, v, fmt);
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
