// SPDX-License-Identifier: MIT
/* verdict.c - verdicts computed from the figures by stated rules, see verdict.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "seed_figures.h"
#include "verdict.h"

/* The predicates: id and general rule, for REPORT.md's closing list. */
static const struct {
	const char *id, *rule;
} predicates[] = {
	{ "a-le-b", "A <= B x (1 + slack) at every point where both are numbers; one unit per point" },
	{ "a-gt-b", "A > B x (1 + margin) in the case; one unit per case" },
	{ "monotone", "along the stated order y never falls by more than the tolerance from one "
	  "point to the next; one unit per step" },
	{ "linear", "least-squares line through the points, R² >= the minimum; one unit per series" },
	{ "stepped", "the largest rise between neighbouring points is at least the stated share of "
	  "the series' whole rise; one unit per series" },
	{ "flat", "max / min of the series <= the factor; one unit per series" },
	{ "optimum", "the series' minimum lies at the stated x, or y there is within the slack of "
	  "the minimum; one unit per series" },
	{ "within", "|value - the seed's value| <= the tolerance; one unit per value" },
	{ "in-range", "lo <= value <= hi (the seed's range); one unit per value" },
	{ "largest", "the stated part is the largest of the parts; one unit per breakdown" },
	{ "holds", "a yes/no property computed from the figures (named in the rule); one unit per "
	  "case" },
	{ "none", "no predicate ran because there were no figures; the outcome is Not evaluated" },
};

static void append(char *buf, size_t len, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t len, const char *format, ...)
{
	size_t used = strlen(buf);
	va_list args;

	if (used + 1 >= len)
		return;
	va_start(args, format);
	vsnprintf(buf + used, len - used, format, args);
	va_end(args);
}

/* Add the predicate id to the tags and its concrete rule once. */
static void use(struct verdict *v, const char *id, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

static void use(struct verdict *v, const char *id, const char *format, ...)
{
	char rule[384], word[48], padded[sizeof(v->tags) + 2];
	va_list args;

	snprintf(word, sizeof(word), " %s ", id);
	snprintf(padded, sizeof(padded), " %s ", v->tags);
	if (!strstr(padded, word))
		append(v->tags, sizeof(v->tags), "%s%s", v->tags[0] ? " " : "", id);
	va_start(args, format);
	vsnprintf(rule, sizeof(rule), format, args);
	va_end(args);
	if (!strstr(v->rules, rule))
		append(v->rules, sizeof(v->rules), "%s%s", v->rules[0] ? "; " : "", rule);
}

static void unit(struct verdict *v, bool ok, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

static void unit(struct verdict *v, bool ok, const char *format, ...)
{
	char text[384];
	va_list args;

	v->units++;
	if (ok)
		return;
	v->failed++;
	va_start(args, format);
	vsnprintf(text, sizeof(text), format, args);
	va_end(args);
	append(v->failures, sizeof(v->failures), "%s%s", v->failures[0] ? "; " : "", text);
}

void verdict_begin(struct verdict *v, const char *figures, const char *format, ...)
{
	va_list args;

	memset(v, 0, sizeof(*v));
	v->figures = figures;
	va_start(args, format);
	vsnprintf(v->claim, sizeof(v->claim), format, args);
	va_end(args);
}

void pred_a_le_b(struct verdict *v, const char *label, const char *a_name, const char *b_name,
                 const double *x, const char *x_unit, const double *a, const double *b,
                 unsigned n, double slack)
{
	use(v, "a-le-b", "%s <= %s x %.2f at every point", a_name, b_name, 1 + slack);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(a[i]) || isnan(b[i]))
			continue;
		unit(v, a[i] <= b[i] * (1 + slack), "%s at %g %s: %.4g > %.4g", label, x[i], x_unit,
		     a[i], b[i]);
	}
}

void pred_a_le_b_case(struct verdict *v, const char *label, const char *a_name,
                      const char *b_name, double a, double b, double slack)
{
	use(v, "a-le-b", "%s <= %s x %.2f in each case", a_name, b_name, 1 + slack);
	if (isnan(a) || isnan(b))
		return;
	unit(v, a <= b * (1 + slack), "%s: %s %.4g > %s %.4g", label, a_name, a, b_name, b);
}

void pred_a_gt_b(struct verdict *v, const char *label, const char *a_name, const char *b_name,
                 double a, double b, double margin)
{
	if (margin > 0)
		use(v, "a-gt-b", "%s > %s x %.2f in each case", a_name, b_name, 1 + margin);
	else
		use(v, "a-gt-b", "%s > %s in each case", a_name, b_name);
	unit(v, a > b * (1 + margin), "%s: %s %.4g <= %s %.4g", label, a_name, a, b_name, b);
}

void pred_monotone(struct verdict *v, const char *label, const char *order, const double *x,
                   const char *x_unit, const double *y, unsigned n, double tol)
{
	unsigned prev = n;

	use(v, "monotone", "y never falls by more than %.0f %% from one point to the next (%s)",
	    tol * 100, order);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		if (prev < n)
			unit(v, y[i] >= y[prev] * (1 - tol), "%s: %.4g at %g %s, then %.4g at %g %s",
			     label, y[prev], x[prev], x_unit, y[i], x[i], x_unit);
		prev = i;
	}
}

void pred_linear(struct verdict *v, const char *label, const double *x, const double *y,
                 unsigned n, double r2_min)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0, r2;
	unsigned m = 0;

	use(v, "linear", "least-squares R² >= %.2f", r2_min);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
		syy += y[i] * y[i];
		m++;
	}
	if (m < 3)
		return;
	{
		double vx = sxx - sx * sx / m, vy = syy - sy * sy / m, cxy = sxy - sx * sy / m;

		r2 = vx > 0 && vy > 0 ? cxy * cxy / (vx * vy) : 1;
	}
	unit(v, r2 >= r2_min, "%s: R² %.3f", label, r2);
}

void pred_stepped(struct verdict *v, const char *label, const double *x, const char *x_unit,
                  const double *y, unsigned n, double share)
{
	double lo = INFINITY, hi = -INFINITY, jump = 0, at = 0;
	unsigned prev = n;

	use(v, "stepped", "largest rise between neighbouring points >= %.0f %% of the whole rise",
	    share * 100);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		lo = fmin(lo, y[i]);
		hi = fmax(hi, y[i]);
		if (prev < n && y[i] - y[prev] > jump) {
			jump = y[i] - y[prev];
			at = x[i];
		}
		prev = i;
	}
	if (!(hi > lo))
		return;
	unit(v, jump >= share * (hi - lo), "%s: largest step %.4g of %.4g (%.0f %%, at %g %s)",
	     label, jump, hi - lo, 100 * jump / (hi - lo), at, x_unit);
}

void pred_flat(struct verdict *v, const char *label, const double *y, unsigned n, double factor)
{
	double lo = INFINITY, hi = -INFINITY;

	use(v, "flat", "max / min <= %.2f", factor);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		lo = fmin(lo, y[i]);
		hi = fmax(hi, y[i]);
	}
	if (!(lo > 0))
		return;
	unit(v, hi / lo <= factor, "%s: max / min = %.2f", label, hi / lo);
}

void pred_optimum(struct verdict *v, const char *label, const double *x, const char *x_unit,
                  const double *y, unsigned n, double want_x, double slack)
{
	unsigned best = n, want = n;

	use(v, "optimum", "minimum at %g %s (or within %.0f %% of it there)", want_x, x_unit,
	    slack * 100);
	for (unsigned i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		if (best == n || y[i] < y[best])
			best = i;
		if (x[i] == want_x)
			want = i;
	}
	if (best == n || want == n)
		return;
	unit(v, y[want] <= y[best] * (1 + slack), "%s: minimum %.4g at %g %s, %.4g (%.1fx) at %g %s",
	     label, y[best], x[best], x_unit, y[want], y[want] / y[best], want_x, x_unit);
}

void pred_within(struct verdict *v, const char *label, double value, double target, double tol,
                 const char *unit_name)
{
	use(v, "within", "|value - the seed's value| <= %g (%s)", tol, unit_name);
	if (isnan(value))
		return;
	unit(v, fabs(value - target) <= tol, "%s: %.4g %s against the seed's %.4g", label, value,
	     unit_name, target);
}

void pred_in_range(struct verdict *v, const char *label, double value, double lo, double hi,
                   const char *unit_name)
{
	use(v, "in-range", "in [%g, %g] %s", lo, hi, unit_name);
	if (isnan(value))
		return;
	unit(v, value >= lo && value <= hi, "%s: %.4g %s", label, value, unit_name);
}

void pred_largest(struct verdict *v, const char *label, const char *const *names,
                  const double *parts, unsigned n, unsigned want)
{
	unsigned best = 0;

	use(v, "largest", "%s is the largest part", names[want]);
	for (unsigned i = 1; i < n; i++)
		if (parts[i] > parts[best])
			best = i;
	unit(v, best == want, "%s: largest is %s (%.1f) against %s (%.1f)", label, names[best],
	     parts[best], names[want], parts[want]);
}

void pred_holds(struct verdict *v, const char *label, const char *rule, bool ok,
                const char *detail)
{
	use(v, "holds", "%s", rule);
	unit(v, ok, "%s%s%s", label, detail && detail[0] ? ": " : "", detail ? detail : "");
}

static const char *const outcome_words[] = {
	[OUTCOME_REPRODUCED] = "Reproduced",
	[OUTCOME_PARTLY] = "Partly",
	[OUTCOME_NOT_REPRODUCED] = "Not reproduced",
	[OUTCOME_NOT_EVALUATED] = "Not evaluated",
};

enum outcome verdict_end(struct report *report, struct verdict *v, const char *why)
{
	enum outcome outcome;
	char figures[256] = "";

	if (!v->units)
		outcome = OUTCOME_NOT_EVALUATED;
	else if (!v->failed)
		outcome = OUTCOME_REPRODUCED;
	else if (v->failed < v->units)
		outcome = OUTCOME_PARTLY;
	else
		outcome = OUTCOME_NOT_REPRODUCED;
	seed_figures_record(v->figures, outcome, report->section, figures, sizeof(figures));
	report_md(report, "- **Verdict** `[%s]` (%s) %s — rule: %s. **%s**", v->tags[0] ? v->tags : "none",
	          figures[0] ? figures : "a claim of the seed's text", v->claim, v->rules[0] ? v->rules : "none", outcome_words[outcome]);
	switch (outcome) {
	case OUTCOME_REPRODUCED:
		report_md(report, ": %u of %u units hold.", v->units, v->units);
		break;
	case OUTCOME_PARTLY:
	case OUTCOME_NOT_REPRODUCED:
		report_md(report, ": %u of %u units fail: %s.", v->failed, v->units, v->failures);
		if (why)
			report_md(report, " Why: %s.", why);
		break;
	case OUTCOME_NOT_EVALUATED:
		report_md(report, ": no figures to evaluate%s%s.", why ? ": " : "", why ? why : "");
		break;
	}
	report_md(report, "\n");
	fprintf(stderr, "  verdict %s: %s\n", outcome_words[outcome], v->claim);
	return outcome;
}

void verdict_legend(struct report *report)
{
	report_md(report, "## How the verdicts are computed\n\n"
	          "Every verdict line names its predicates by id in brackets and prints them with "
	          "their parameters. A predicate checks units (points, steps, series, cases, values); "
	          "the outcome is **Reproduced** when no unit fails, **Partly** when some fail (they "
	          "are listed), **Not reproduced** when all fail, **Not evaluated** when there were no "
	          "figures. A seed figure decided by several verdicts is reproduced when all are, not "
	          "reproduced when none holds a unit, partly otherwise.\n\n");
	for (size_t i = 0; i < sizeof(predicates) / sizeof(*predicates); i++)
		report_md(report, "- predicate `%s`: %s\n", predicates[i].id, predicates[i].rule);
}
