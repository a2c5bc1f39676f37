// SPDX-License-Identifier: MIT
/* report.c - REPORT.md, data files, gnuplot scripts and checks, see report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

void report_check(struct report *report, bool ok, const char *format, ...)
{
	char text[512];
	va_list args;

	va_start(args, format);
	vsnprintf(text, sizeof(text), format, args);
	va_end(args);
	if (ok)
		report->checks_passed++;
	else
		report->checks_failed++;
	fprintf(stderr, "  check %s: %s\n", ok ? "passed" : "FAILED", text);
	report_md(report, "- %s %s\n", ok ? "✅" : "❌ **failed:**", text);
}

void report_section(struct report *report, const char *number, const char *title)
{
	report->section = number;
	report_md(report, "## %s. %s\n\n", number, title);
}

void report_md(struct report *report, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vfprintf(report->md, format, args);
	va_end(args);
}

FILE *report_file(struct report *report, const char *name)
{
	char path[4096];
	FILE *file;

	snprintf(path, sizeof(path), "%s/%s", report->dir, name);
	file = fopen(path, "w");
	if (!file) {
		fprintf(stderr, "vgpu-report: cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return file;
}

const char *const report_colours[8] = {
	"#0072b2", "#d55e00", "#009e73", "#7f3c8d", "#000000", "#56b4e9", "#a0522d", "#cc79a7",
};

void report_plot(struct report *report, const char *name, const char *title,
                 const char *xlabel, const char *ylabel, const char *body)
{
	char script[256];
	FILE *gp;

	snprintf(script, sizeof(script), "%s.gp", name);
	gp = report_file(report, script);
	fprintf(gp,
	        "# %s.svg for REPORT.md: run 'gnuplot %s.gp' in this directory\n"
	        "set terminal svg size 760,480 dynamic enhanced font 'sans,11' background '#ffffff'\n"
	        "set output '%s.svg'\n"
	        "set title \"%s\"\n"
	        "set xlabel \"%s\"\n"
	        "set ylabel \"%s\"\n"
	        "set datafile missing '-'\n"
	        "set key outside below center horizontal\n"
	        "set grid\n",
	        name, name, name, title, xlabel, ylabel);
	for (unsigned i = 0; i < 8; i++)
		fprintf(gp, "set linetype %u linecolor rgb '%s' linewidth 2 pointtype %u\n", i + 1,
		        report_colours[i], (i % 4) * 2 + 5);
	fprintf(gp, "%s\n", body);
	fclose(gp);
	report_md(report, "\n![%s](%s.svg)\n\n", title, name);
}

void report_progress(struct report *report, const char *format, ...)
{
	va_list args;

	(void)report;
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fputc('\n', stderr);
}
