/* SPDX-License-Identifier: MIT */
/*
 * stat_plot.c — `tensormm-stat plot TRACE -o OUT.svg`: one iteration's
 * device memory over time, stacked by tensor kind, with the budget and
 * the runtime's swap-outs, swap-ins and recomputations marked.
 *
 * The SVG is written by hand: it is a few rectangles, paths and labels,
 * and a tool that watches memory should not pull in a graphics library.
 *
 * What is resident when is rebuilt from the trace: a tensor is on the
 * device from its first access (made in the iteration) or from the start
 * (made before it), leaves at a swap-out, passive eviction or drop event,
 * comes back at a swap-in or recomputation, and is gone after its last
 * access when the iteration destroyed it.  Events are placed by the
 * access count they carry, so they line up with the accesses' ideal
 * times.  The runtime's own figure of device bytes in use at each access
 * is drawn over the stack as a line, as a check on that reconstruction;
 * it is higher where a swap-out's copy is still in flight (the trace has
 * no event for a copy's end, and the device memory is held until then).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stat.h"
#include "tensormm.h"
#include "lib/io/trace.h"
#include "lib/io/trace_read.h"

#define W 1000
#define H 600
#define LEFT 90
#define RIGHT 200
#define TOP 130
#define BOTTOM 70
#define PW (W - LEFT - RIGHT)
#define PH (H - TOP - BOTTOM)
#define LANE 16 /* height of one event lane above the plot */

static const char *const kind_label[TMM_KIND_COUNT] = {
	"persistent", "activations", "gradients", "scratch"
};
static const char *const kind_color[TMM_KIND_COUNT] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"
};

/* The three kinds of marks, one lane each. */
static const struct {
	enum tmm_trace_event_kind kind;
	const char *label;
	const char *color;
} lanes[] = {
	{ TMM_EV_SWAP_OUT, "swap-out", "#e15759" },
	{ TMM_EV_SWAP_IN, "swap-in", "#2c7fb8" },
	{ TMM_EV_RECOMPUTE, "recompute", "#7b3294" },
};

/* Writes s with the five XML specials escaped. */
static void xml(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* A step of 1, 2 or 5 times a power of ten giving about `n` ticks. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* A unit for bytes that keeps the axis numbers short. */
static void byte_unit(double max, double *div, const char **name)
{
	if (max >= 1024.0 * 1024 * 1024) {
		*div = 1024.0 * 1024 * 1024;
		*name = "GiB";
	} else if (max >= 1024.0 * 1024) {
		*div = 1024.0 * 1024;
		*name = "MiB";
	} else {
		*div = 1024.0;
		*name = "KiB";
	}
}

/* The plot's geometry: data to pixels. */
struct frame {
	double t_max, b_max; /* ns, bytes */
};

static double px(const struct frame *fr, double ns)
{
	return LEFT + PW * ns / fr->t_max;
}

static double py(const struct frame *fr, double bytes)
{
	return TOP + PH - PH * bytes / fr->b_max;
}

/*
 * Rebuilds residency: fills stack[a * KINDS + k] with the bytes of kind k
 * on the device while access a runs.  Returns 0 or -ENOMEM.
 */
static int residency(const struct tmm_trace *t, uint64_t *stack)
{
	uint32_t *first = NULL, *last = NULL, *head = NULL, *next = NULL;
	bool *on = NULL;
	uint64_t now[TMM_KIND_COUNT] = { 0 };
	uint32_t e = 0;
	int rc = -ENOMEM;

	first = malloc((t->n_tensors + 1) * sizeof(*first));
	last = malloc((t->n_tensors + 1) * sizeof(*last));
	next = malloc((t->n_tensors + 1) * sizeof(*next));
	head = malloc((t->n_accesses + 1) * sizeof(*head));
	on = calloc(t->n_tensors + 1, sizeof(*on));
	if (!first || !last || !next || !head || !on)
		goto out;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		first[i] = last[i] = TMM_TRACE_NONE;
	for (uint32_t a = 0; a < t->n_accesses; a++) {
		uint32_t i = t->accesses[a].tensor;

		if (first[i] == TMM_TRACE_NONE)
			first[i] = a;
		last[i] = a;
	}
	/* Made before the iteration: resident at its start, unless the
	 * first thing that happens to it is being brought back. */
	for (uint32_t i = 0; i < t->n_tensors; i++)
		on[i] = !(t->tensors[i].flags & TMM_TT_MADE_INSIDE);
	for (uint32_t k = 0; k < t->n_events; k++) {
		const struct tmm_trace_event *ev = &t->events[k];
		uint32_t i = ev->tensor;

		if (i == TMM_TRACE_NONE || t->tensors[i].flags &
						   TMM_TT_MADE_INSIDE)
			continue;
		if (first[i] != TMM_TRACE_NONE && ev->access > first[i])
			continue;
		if (ev->kind == TMM_EV_SWAP_IN ||
		    ev->kind == TMM_EV_RECOMPUTE) {
			on[i] = false;
			first[i] = 0; /* decided */
		} else if (ev->kind == TMM_EV_SWAP_OUT ||
			   ev->kind == TMM_EV_DROP) {
			first[i] = 0;
		}
	}
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (on[i] && t->tensors[i].kind < TMM_KIND_COUNT)
			now[t->tensors[i].kind] += t->tensors[i].bytes;
	/*
	 * A tensor the iteration destroyed leaves at the first access that
	 * begins after its destruction (free_ns is on the accesses' ideal
	 * clock): head[a] chains those that leave just before access a.
	 */
	for (uint32_t a = 0; a <= t->n_accesses; a++)
		head[a] = TMM_TRACE_NONE;
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		uint32_t a = last[i] == TMM_TRACE_NONE ? 0 : last[i] + 1;

		if (!(t->tensors[i].flags & TMM_TT_FREED_INSIDE))
			continue;
		/* Access times only grow: search. */
		for (uint32_t hi = t->n_accesses; a < hi;) {
			uint32_t mid = a + (hi - a) / 2;

			if (t->accesses[mid].begin_ns < t->tensors[i].free_ns)
				a = mid + 1;
			else
				hi = mid;
		}
		next[i] = head[a];
		head[a] = i;
	}
	for (uint32_t a = 0; a < t->n_accesses; a++) {
		const struct tmm_trace_access *x = &t->accesses[a];
		const struct tmm_trace_tensor *tt;
		bool set;

		/* Tensors the iteration destroyed before this access. */
		for (uint32_t i = head[a]; i != TMM_TRACE_NONE;
		     i = next[i]) {
			tt = &t->tensors[i];
			if (on[i] && tt->kind < TMM_KIND_COUNT) {
				on[i] = false;
				now[tt->kind] -= tt->bytes;
			}
		}
		for (; e < t->n_events && t->events[e].access <= a; e++) {
			const struct tmm_trace_event *ev = &t->events[e];

			if (ev->tensor == TMM_TRACE_NONE)
				continue;
			set = ev->kind == TMM_EV_SWAP_IN ||
			      ev->kind == TMM_EV_RECOMPUTE;
			if (!set && ev->kind != TMM_EV_SWAP_OUT &&
			    ev->kind != TMM_EV_DROP)
				continue;
			tt = &t->tensors[ev->tensor];
			if (on[ev->tensor] != set &&
			    tt->kind < TMM_KIND_COUNT) {
				if (set)
					now[tt->kind] += tt->bytes;
				else
					now[tt->kind] -= tt->bytes;
			}
			on[ev->tensor] = set;
		}
		tt = &t->tensors[x->tensor];
		if (!on[x->tensor] && tt->kind < TMM_KIND_COUNT) {
			on[x->tensor] = true;
			now[tt->kind] += tt->bytes;
		}
		memcpy(stack + (size_t)a * TMM_KIND_COUNT, now, sizeof(now));
		/* A tensor the iteration destroyed leaves after its last
		 * access; the next sample no longer holds it. */
	}
	rc = 0;
out:
	free(first);
	free(last);
	free(next);
	free(head);
	free(on);
	return rc;
}

static void axes(FILE *f, const struct frame *fr, bool simulated)
{
	double tdiv = fr->t_max >= 1e6 ? 1e6 : 1e3, bdiv;
	const char *tunit = fr->t_max >= 1e6 ? "ms" : "\xc2\xb5s", *bunit;
	double step, v;

	fprintf(f, "<g font-family=\"sans-serif\" font-size=\"12\" "
		   "fill=\"#333\">\n");
	/* Time axis. */
	step = nice_step(fr->t_max / tdiv, 8);
	for (v = 0; v <= fr->t_max / tdiv + 1e-9; v += step) {
		double x = px(fr, v * tdiv);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			   "stroke=\"#ddd\"/>\n", x, TOP, x, TOP + PH);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
			   "%g</text>\n", x, TOP + PH + 18, v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time "
		   "since the iteration began (%s, %s)</text>\n",
		LEFT + PW / 2, TOP + PH + 42, tunit,
		simulated ? "simulated, stalls removed" : "stalls removed");
	/* Bytes axis. */
	byte_unit(fr->b_max, &bdiv, &bunit);
	step = nice_step(fr->b_max / bdiv, 6);
	for (v = 0; v <= fr->b_max / bdiv + 1e-9; v += step) {
		double y = py(fr, v * bdiv);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			   "stroke=\"#ddd\"/>\n", LEFT, y, LEFT + PW, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g"
			   "</text>\n", LEFT - 6, y + 4, v);
	}
	fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" "
		   "text-anchor=\"middle\">device memory (%s)</text>\n",
		LEFT - 55, TOP + PH / 2, bunit);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		   "fill=\"none\" stroke=\"#333\"/>\n</g>\n",
		LEFT, TOP, PW, PH);
}

static void stack_layers(FILE *f, const struct frame *fr,
			 const struct tmm_trace *t, const uint64_t *stack,
			 double t_end)
{
	uint32_t n = t->n_accesses;

	for (int k = TMM_KIND_COUNT - 1; k >= 0; k--) {
		fprintf(f, "<path fill=\"%s\" "
			   "stroke=\"none\" d=\"M%.1f,%.1f", kind_color[k],
			px(fr, (double)t->accesses[0].begin_ns), py(fr, 0));
		/* Top edge: layers 0..k; the layers under it are drawn
		 * later over it, so each band shows its own kind. */
		for (uint32_t a = 0; a < n; a++) {
			double x0 = px(fr, (double)t->accesses[a].begin_ns);
			double x1 = px(fr, a + 1 < n ?
					   (double)t->accesses[a + 1].begin_ns :
					   t_end);
			uint64_t sum = 0;

			for (int j = 0; j <= k; j++)
				sum += stack[(size_t)a * TMM_KIND_COUNT + j];
			fprintf(f, " L%.1f,%.1f L%.1f,%.1f", x0,
				py(fr, (double)sum), x1, py(fr, (double)sum));
		}
		fprintf(f, " L%.1f,%.1f Z\"/>\n", px(fr, t_end), py(fr, 0));
	}
	/* The runtime's own figure, for comparison. */
	fprintf(f, "<path fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\" "
		   "d=\"");
	for (uint32_t a = 0; a < n; a++) {
		double x0 = px(fr, (double)t->accesses[a].begin_ns);
		double x1 = px(fr, a + 1 < n ?
				   (double)t->accesses[a + 1].begin_ns : t_end);
		double y = py(fr, (double)t->accesses[a].device_in_use);

		fprintf(f, "%s%.1f,%.1f L%.1f,%.1f", a ? " L" : "M", x0, y, x1,
			y);
	}
	fprintf(f, "\"/>\n");
}

static void marks(FILE *f, const struct frame *fr, const struct tmm_trace *t,
		  double t_end)
{
	fprintf(f, "<g font-family=\"sans-serif\" font-size=\"11\">\n");
	for (size_t l = 0; l < sizeof(lanes) / sizeof(lanes[0]); l++) {
		double y = TOP - 10 - (double)(2 - l) * LANE;

		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
			   "fill=\"%s\">%s</text>\n", LEFT - 6, y + 4,
			lanes[l].color, lanes[l].label);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			   "stroke=\"#eee\"/>\n", LEFT, y, LEFT + PW, y);
		for (uint32_t e = 0; e < t->n_events; e++) {
			const struct tmm_trace_event *ev = &t->events[e];
			double x;

			if (ev->kind != (uint32_t)lanes[l].kind)
				continue;
			x = ev->access < t->n_accesses ?
				    (double)t->accesses[ev->access].begin_ns :
				    t_end;
			x = px(fr, x);
			if (l == 0) /* down: leaving the device */
				fprintf(f, "<path d=\"M%.1f,%.1f l-4,-6 h8 "
					   "Z\" fill=\"%s\"/>\n", x, y + 4,
					lanes[l].color);
			else if (l == 1) /* up: arriving */
				fprintf(f, "<path d=\"M%.1f,%.1f l-4,6 h8 Z\" "
					   "fill=\"%s\"/>\n", x, y - 4,
					lanes[l].color);
			else
				fprintf(f, "<path d=\"M%.1f,%.1f l4,4 l-4,4 "
					   "l-4,-4 Z\" fill=\"%s\"/>\n", x,
					y - 4, lanes[l].color);
		}
	}
	fprintf(f, "</g>\n");
}

/* The collectives' lane, above the three, only in a trace that has
 * some (TMM_OP_COLLECTIVE): each as a bar over its time on the network,
 * the link it holds. */
#define NET_COLOR "#f1a340"
#define NET_LABEL "network"

static bool has_collectives(const struct tmm_trace *t)
{
	for (uint32_t o = 0; o < t->n_ops; o++)
		if (t->ops[o].kind == TMM_OP_COLLECTIVE)
			return true;
	return false;
}

static void network_lane(FILE *f, const struct frame *fr,
			 const struct tmm_trace *t)
{
	double y = TOP - 10 - 3.0 * LANE;

	fprintf(f, "<g font-family=\"sans-serif\" font-size=\"11\">\n"
		   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
		   "fill=\"%s\">%s</text>\n", LEFT - 6, y + 4, NET_COLOR,
		NET_LABEL);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
		   "stroke=\"#eee\"/>\n", LEFT, y, LEFT + PW, y);
	for (uint32_t o = 0; o < t->n_ops; o++) {
		const struct tmm_trace_op *op = &t->ops[o];
		double x0, x1;

		if (op->kind != TMM_OP_COLLECTIVE)
			continue;
		x0 = px(fr, (double)op->begin_ns);
		x1 = px(fr, (double)op->end_ns);
		fprintf(f, "<rect class=\"collective\" x=\"%.1f\" "
			   "y=\"%.1f\" width=\"%.1f\" height=\"8\" "
			   "fill=\"%s\"/>\n", x0, y - 4,
			x1 - x0 > 1 ? x1 - x0 : 1, NET_COLOR);
	}
	fprintf(f, "</g>\n");
}

static void legend(FILE *f, uint64_t budget, bool network)
{
	double div;
	const char *unit;
	int x = W - RIGHT + 20, y = TOP + 10;

	byte_unit((double)budget, &div, &unit);
	fprintf(f, "<g font-family=\"sans-serif\" font-size=\"12\" "
		   "fill=\"#333\">\n<text x=\"%d\" y=\"%d\" "
		   "font-weight=\"bold\">legend</text>\n", x, y);
	y += 10;
	for (int k = 0; k < TMM_KIND_COUNT; k++, y += 20)
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
			   "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			x, y, kind_color[k], x + 20, y + 12, kind_label[k]);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		   "stroke=\"#222\" stroke-width=\"1.2\"/><text x=\"%d\" "
		   "y=\"%d\">in use (runtime)</text><text x=\"%d\" "
		   "y=\"%d\" font-size=\"10\">incl. swap-outs in flight"
		   "</text>\n",
		x, y + 7, x + 14, y + 7, x + 20, y + 12, x + 20, y + 25);
	y += 34;
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		   "stroke=\"#d62728\" stroke-width=\"2\" "
		   "stroke-dasharray=\"6,3\"/><text x=\"%d\" y=\"%d\">budget "
		   "%.4g %s</text>\n",
		x, y + 7, x + 14, y + 7, x + 20, y + 12, (double)budget / div,
		unit);
	y += 28;
	for (size_t l = 0; l < sizeof(lanes) / sizeof(lanes[0]); l++, y += 20)
		fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s %s</text>\n",
			x, y + 12, lanes[l].color,
			l == 0 ? "\xe2\x96\xbc" : l == 1 ? "\xe2\x96\xb2" :
							   "\xe2\x97\x86",
			lanes[l].label);
	if (network)
		fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">"
			   "\xe2\x96\xac %s (collectives)</text>\n", x, y + 12,
			NET_COLOR, NET_LABEL);
	fprintf(f, "</g>\n");
}

static int draw(FILE *f, const char *path,
		const struct tmm_trace_file_info *info,
		const struct tmm_trace *t)
{
	struct frame fr = { 0, 0 };
	uint64_t *stack;
	double t_end = 0;

	stack = calloc((size_t)t->n_accesses * TMM_KIND_COUNT + 1,
		       sizeof(*stack));
	if (!stack || residency(t, stack) < 0) {
		free(stack);
		return -ENOMEM;
	}
	for (uint32_t a = 0; a < t->n_accesses; a++) {
		uint64_t sum = 0;

		for (int k = 0; k < TMM_KIND_COUNT; k++)
			sum += stack[(size_t)a * TMM_KIND_COUNT + k];
		if ((double)sum > fr.b_max)
			fr.b_max = (double)sum;
		if ((double)t->accesses[a].device_in_use > fr.b_max)
			fr.b_max = (double)t->accesses[a].device_in_use;
		if ((double)t->accesses[a].end_ns > t_end)
			t_end = (double)t->accesses[a].end_ns;
	}
	for (uint32_t o = 0; o < t->n_ops; o++)
		if ((double)t->ops[o].end_ns > t_end)
			t_end = (double)t->ops[o].end_ns;
	if ((double)info->budget > fr.b_max)
		fr.b_max = (double)info->budget;
	fr.b_max = fr.b_max > 0 ? fr.b_max * 1.12 : 1;
	fr.t_max = t_end > 0 ? t_end : 1;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H, W, H);
	fprintf(f, "<text x=\"%d\" y=\"28\" font-family=\"sans-serif\" "
		   "font-size=\"17\" font-weight=\"bold\" "
		   "text-anchor=\"middle\">Device memory, iteration %" PRIu64
		   " of ", W / 2, t->iteration);
	xml(f, path);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"50\" "
		   "font-family=\"sans-serif\" font-size=\"13\" "
		   "text-anchor=\"middle\" fill=\"%s\">", W / 2,
		info->simulated ? "#b22222" : "#333");
	if (info->simulated)
		fputs("SIMULATED times: ", f);
	xml(f, info->backend);
	fputs(" backend, ", f);
	xml(f, info->device);
	fputs(", mode ", f);
	xml(f, info->mode);
	fputs(", policy ", f);
	xml(f, info->policy);
	fprintf(f, "; %u ops, %u accesses, %u runtime events</text>\n",
		t->n_ops, t->n_accesses, t->n_events);
	axes(f, &fr, info->simulated);
	if (t->n_accesses)
		stack_layers(f, &fr, t, stack, t_end);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
		   "stroke=\"#d62728\" stroke-width=\"2\" "
		   "stroke-dasharray=\"6,3\"/>\n",
		LEFT, py(&fr, (double)info->budget), LEFT + PW,
		py(&fr, (double)info->budget));
	marks(f, &fr, t, t_end);
	if (has_collectives(t))
		network_lane(f, &fr, t);
	legend(f, info->budget, has_collectives(t));
	fprintf(f, "</svg>\n");
	free(stack);
	return 0;
}

int stat_plot(const char *path, const char *out, unsigned long iteration)
{
	struct tmm_trace_file_info info;
	struct tmm_trace_reader *r;
	struct tmm_trace t, chosen = { 0 };
	bool have = false;
	char err[1024];
	int rc, status;
	FILE *f;

	status = stat_trace_open(path, &r, &info);
	if (status)
		return status;
	while ((rc = tmm_trace_reader_next(r, &t, err, sizeof(err))) == 1) {
		if (!iteration || t.iteration == iteration) {
			tmm_trace_free(&chosen);
			chosen = t;
			have = true;
			if (iteration)
				break;
		} else {
			tmm_trace_free(&t);
		}
	}
	tmm_trace_reader_close(r);
	if (rc < 0) {
		tmm_trace_free(&chosen);
		return stat_trace_fail(path, rc, err);
	}
	if (!have) {
		if (iteration)
			stat_error("%s has no iteration %lu; `tensormm-stat "
				   "report %s` lists the iterations it holds",
				   path, iteration, path);
		else
			stat_error("%s holds no iteration: the run recorded "
				   "none (it needs tmm_iteration_begin/end)",
				   path);
		return STAT_FAILED;
	}
	f = fopen(out, "w");
	if (!f) {
		stat_error("cannot write %s: %s", out, strerror(errno));
		tmm_trace_free(&chosen);
		return STAT_FAILED;
	}
	rc = draw(f, path, &info, &chosen);
	tmm_trace_free(&chosen);
	if (fclose(f) != 0 || rc < 0) {
		stat_error("cannot write %s: %s", out,
			   rc < 0 ? strerror(-rc) : strerror(errno));
		return STAT_FAILED;
	}
	return STAT_OK;
}
