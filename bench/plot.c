/* SPDX-License-Identifier: MIT */
/*
 * plot.c — tensormm-bench's charts as plain SVG (plot.h).
 *
 * No plotting library: a chart is a frame, tick labels at round values,
 * and polylines or rectangles, which any browser or rsvg-convert draws.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "plot.h"

#define W 1000.0
#define H 480.0
#define LEFT 80.0
#define RIGHT 290.0 /* room for the legend */
#define TOP 40.0
#define BOTTOM 90.0

/* Distinct colours for up to ten series (then they repeat). */
static const char *const colours[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

static const char *colour(size_t i)
{
	return colours[i % (sizeof(colours) / sizeof(colours[0]))];
}

/* A round tick step giving about five ticks up to `top`. */
static double tick_step(double top)
{
	double raw = top / 5, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* Writes text with the XML specials escaped. */
static void text(FILE *f, double x, double y, const char *anchor,
		 const char *extra, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x,
		y, anchor, extra);
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
	fputs("</text>\n", f);
}

static FILE *open_chart(const char *path, const char *title)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return NULL;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H);
	text(f, W / 2, 22, "middle", "font-size=\"15\"", title);
	return f;
}

/* The frame, and the y axis from 0 to top in units of `unit`. */
static void frame(FILE *f, double top, double unit, const char *unit_name,
		  const char *y_label)
{
	double step = tick_step(top / unit) * unit;
	char label[64];

	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"none\" stroke=\"black\"/>\n", LEFT, TOP,
		W - LEFT - RIGHT, H - TOP - BOTTOM);
	for (double v = 0; v <= top * 1.0001; v += step) {
		double y = H - BOTTOM - v / top * (H - TOP - BOTTOM);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			"y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, y,
			W - RIGHT, y);
		snprintf(label, sizeof(label), "%g%s", v / unit, unit_name);
		text(f, LEFT - 6, y + 4, "end", "", label);
	}
	fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" "
		"text-anchor=\"middle\">%s</text>\n",
		TOP + (H - TOP - BOTTOM) / 2, y_label);
}

static void legend(FILE *f, const char *const *names, size_t n, bool lines)
{
	for (size_t i = 0; i < n; i++) {
		double y = TOP + 10 + 18.0 * (double)i;

		if (lines)
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
				"\n", W - RIGHT + 12, y, W - RIGHT + 36, y,
				colour(i));
		else
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"20\" "
				"height=\"10\" fill=\"%s\"/>\n",
				W - RIGHT + 14, y - 5, colour(i));
		text(f, W - RIGHT + 42, y + 4, "start", "", names[i]);
	}
}

static int close_chart(FILE *f)
{
	fputs("</svg>\n", f);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* A dotted vertical line at x with a label at the top. */
static void phase(FILE *f, double x, const char *label)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n", x, TOP, x,
		H - BOTTOM);
	text(f, x + 4, TOP + 14, "start", "fill=\"#555\"", label);
}

int plot_memory(const char *path, const char *title,
		const struct plot_series *s, size_t n, uint64_t limit,
		size_t backward_at, size_t optimizer_at)
{
	const char *names[16];
	double top = (double)limit, xmax = 1, plot_w = W - LEFT - RIGHT;
	double plot_h = H - TOP - BOTTOM;
	FILE *f;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < s[i].n; k++)
			if ((double)s[i].y[k] > top)
				top = (double)s[i].y[k];
		if ((double)s[i].n > xmax)
			xmax = (double)s[i].n;
	}
	if (top <= 0)
		top = 1;
	top *= 1.05;
	f = open_chart(path, title);
	if (!f)
		return -errno;
	frame(f, top, 1073741824.0, " GiB", "device memory in use");
	text(f, LEFT + plot_w / 2, H - BOTTOM + 36, "middle", "",
	     "op index in the iteration (forward, backward, optimizer)");
	for (double v = 0, st = tick_step(xmax); v <= xmax; v += st) {
		char label[32];

		snprintf(label, sizeof(label), "%.0f", v);
		text(f, LEFT + v / xmax * plot_w, H - BOTTOM + 16, "middle",
		     "", label);
	}
	if (backward_at)
		phase(f, LEFT + (double)backward_at / xmax * plot_w,
		      "backward");
	if (optimizer_at && (double)optimizer_at < xmax)
		phase(f, LEFT + (double)optimizer_at / xmax * plot_w,
		      "optimizer");
	if (limit) {
		double y = H - BOTTOM - (double)limit / top * plot_h;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			"y2=\"%.1f\" stroke=\"black\" stroke-dasharray=\"6,4\""
			"/>\n", LEFT, y, W - RIGHT, y);
		text(f, W - RIGHT - 4, y - 4, "end", "", "budget");
	}
	for (size_t i = 0; i < n && i < 16; i++) {
		names[i] = s[i].name;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"1.5\" points=\"", colour(i));
		for (size_t k = 0; k < s[i].n; k++)
			fprintf(f, "%.1f,%.1f ",
				LEFT + (double)k / xmax * plot_w,
				H - BOTTOM - (double)s[i].y[k] / top * plot_h);
		fputs("\"/>\n", f);
	}
	legend(f, names, n < 16 ? n : 16, true);
	return close_chart(f);
}

int plot_bars(const char *path, const char *title, const char *y_label,
	      const char *const *groups, size_t n_groups,
	      const char *const *series, size_t n_series,
	      const double *values)
{
	double top = 1, plot_w = W - LEFT - RIGHT, plot_h = H - TOP - BOTTOM;
	double gw = plot_w / (double)(n_groups ? n_groups : 1);
	double bw = gw * 0.8 / (double)(n_series ? n_series : 1);
	FILE *f;

	for (size_t i = 0; i < n_groups * n_series; i++)
		if (values[i] > top)
			top = values[i];
	top *= 1.1;
	f = open_chart(path, title);
	if (!f)
		return -errno;
	frame(f, top, 1, "", y_label);
	for (size_t g = 0; g < n_groups; g++) {
		double x0 = LEFT + gw * (double)g + gw * 0.1;
		char attr[96];

		snprintf(attr, sizeof(attr), "transform=\"rotate(-30 %.1f "
			 "%.1f)\"", x0 + gw * 0.4, H - BOTTOM + 16);
		text(f, x0 + gw * 0.4, H - BOTTOM + 16, "end", attr,
		     groups[g]);
		for (size_t k = 0; k < n_series; k++) {
			double v = values[g * n_series + k];
			double h = v > 0 ? v / top * plot_h : 0;
			char label[32];

			if (v < 0)
				continue;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%.1f\" fill=\"%s\"/>\n",
				x0 + bw * (double)k, H - BOTTOM - h, bw * 0.9,
				h, colour(k));
			snprintf(label, sizeof(label), "%g", v);
			if ((double)strlen(label) * 6 <= bw) {
				text(f, x0 + bw * ((double)k + 0.45),
				     H - BOTTOM - h - 3, "middle",
				     "font-size=\"10\"", label);
			} else {
				/* Too narrow: upright, so neighbours' labels
				 * do not overlap. */
				double x = x0 + bw * ((double)k + 0.45) + 3;
				double y = H - BOTTOM - h - 3;

				snprintf(attr, sizeof(attr),
					 "font-size=\"9\" transform=\"rotate"
					 "(-90 %.1f %.1f)\"", x, y);
				text(f, x, y, "start", attr, label);
			}
		}
	}
	legend(f, series, n_series, false);
	return close_chart(f);
}
