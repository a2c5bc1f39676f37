/* SPDX-License-Identifier: MIT */
/*
 * verdict.h - verdicts computed from an experiment's figures.
 *
 * A verdict states one of a seed's claims and decides it with predicates
 * evaluated on the experiment's table: monotone, linear, stepped, flat,
 * optimum at X, A <= B at every point, A > B in every case, within a
 * tolerance of the seed's value, in the seed's range, the largest part.
 * Each predicate call checks one or more units (points, series, cases) and
 * records the ones that fail. The outcome follows from the counts alone:
 *
 *   no unit failed          reproduced
 *   some units failed       partly (the failing units are listed)
 *   every unit failed       not reproduced (the failing units, and why if
 *                           the caller knows)
 *   no unit evaluated       not evaluated (no data; the reason is given)
 *
 * The verdict line in REPORT.md names the predicates it used by id
 * ("[a-le-b linear]"), prints the rules with their parameters and the
 * outcome; REPORT.md ends with the list of predicate ids and their rules,
 * and the `report-shapes` test asserts that every verdict line is tagged
 * with ids from that list. No verdict text is written by hand: a caller's
 * "why" is printed only next to failing units.
 *
 * A verdict names the seed figures it decides (ids of seed_figures.h); the
 * figures' statuses in REPORT.md's top table combine their verdicts.
 */
#ifndef VGPU_REPORT_VERDICT_H
#define VGPU_REPORT_VERDICT_H

#include <stdbool.h>

#include "report.h"

enum outcome {
	OUTCOME_REPRODUCED,
	OUTCOME_PARTLY,
	OUTCOME_NOT_REPRODUCED,
	OUTCOME_NOT_EVALUATED,
};

struct verdict {
	const char *figures;  /* seed figure ids it decides, space-separated */
	char claim[320];
	char rules[1024];     /* each predicate's rule with its parameters, once */
	char tags[160];       /* predicate ids used, space-separated */
	char failures[2048];  /* the failing units */
	unsigned units, failed;
};

/* Start a verdict on the seed figures `figures` about `claim`. */
void verdict_begin(struct verdict *v, const char *figures, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

/* A <= B * (1 + slack) at every point where both are numbers (NAN: the
 * point is skipped); x names the points (x_unit after the value). */
void pred_a_le_b(struct verdict *v, const char *label, const char *a_name, const char *b_name,
                 const double *x, const char *x_unit, const double *a, const double *b,
                 unsigned n, double slack);

/* A > B * (1 + margin) in one case (a mix, a pair, a workload). */
void pred_a_gt_b(struct verdict *v, const char *label, const char *a_name, const char *b_name,
                 double a, double b, double margin);

/* A <= B * (1 + slack) in one case. */
void pred_a_le_b_case(struct verdict *v, const char *label, const char *a_name,
                      const char *b_name, double a, double b, double slack);

/* Along the points in the order given, y never falls by more than tol
 * (relative) from one point to the next: one unit per step. */
void pred_monotone(struct verdict *v, const char *label, const char *order, const double *x,
                   const char *x_unit, const double *y, unsigned n, double tol);

/* The series is linear in x: least-squares R^2 >= r2_min (one unit). */
void pred_linear(struct verdict *v, const char *label, const double *x, const double *y,
                 unsigned n, double r2_min);

/* The series rises in steps: its largest rise between neighbouring points
 * is at least `share` of its whole rise (one unit). */
void pred_stepped(struct verdict *v, const char *label, const double *x, const char *x_unit,
                  const double *y, unsigned n, double share);

/* The series is flat: max / min <= factor (one unit). */
void pred_flat(struct verdict *v, const char *label, const double *y, unsigned n,
               double factor);

/* The series' minimum lies at want_x, or y(want_x) is within slack of the
 * minimum (one unit). */
void pred_optimum(struct verdict *v, const char *label, const double *x, const char *x_unit,
                  const double *y, unsigned n, double want_x, double slack);

/* |value - target| <= tol, in the unit given (one unit). */
void pred_within(struct verdict *v, const char *label, double value, double target, double tol,
                 const char *unit);

/* lo <= value <= hi (one unit). */
void pred_in_range(struct verdict *v, const char *label, double value, double lo, double hi,
                   const char *unit);

/* The largest of the parts is parts[want] (one unit). */
void pred_largest(struct verdict *v, const char *label, const char *const *names,
                  const double *parts, unsigned n, unsigned want);

/* A yes/no property of one case, computed by the caller from its figures
 * and named in `rule` (completes, equal checksums, exact values). */
void pred_holds(struct verdict *v, const char *label, const char *rule, bool ok,
                const char *detail);

/* Print the verdict line and record its outcome for its seed figures; why
 * (or NULL) is printed after failing units only. Returns the outcome. */
enum outcome verdict_end(struct report *report, struct verdict *v, const char *why);

/* REPORT.md's closing list: every predicate id and its rule. */
void verdict_legend(struct report *report);

#endif /* VGPU_REPORT_VERDICT_H */
