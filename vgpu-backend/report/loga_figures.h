/* SPDX-License-Identifier: MIT */
/*
 * loga_figures.h - where experiment 9's figures (LoGA against NEON, seed
 * 002) come from: loga-bench's JSON, from `./vgpu-dev bench`'s bench.json
 * when that has them and is not older than the build's loga-bench, or
 * else from a run of loga-bench by the report itself.
 *
 * What it promises
 *
 *  - loga_figures_get() gives the figures of one loga-bench run (its
 *    --json object, keys as loga-bench.c lists them) or none, and always
 *    a sentence saying where they came from (or why there are none) for
 *    REPORT.md; it also keeps that sentence in report->loga_source.
 *  - bench.json (report->bench_json) is used when it holds loga_overhead
 *    and either no loga-bench is given or bench.json's modification time
 *    is not older than loga-bench's (report->loga_bench): a build newer
 *    than the bench run makes its figures stale.
 *  - Otherwise, with report->loga_bench set, it runs that program (no
 *    option in the full report, --brief in the quick one: every figure in
 *    about 10 s) with --json DIR/loga-bench.json, its output in
 *    DIR/loga-bench.log, and waits for it; the report does nothing else
 *    meanwhile (the figures are wall-clock). A run that fails or writes
 *    no figures gives none; the sentence names the log.
 *  - Errors are never fatal to the report. One thread.
 */
#ifndef VGPU_REPORT_LOGA_FIGURES_H
#define VGPU_REPORT_LOGA_FIGURES_H

#include <json-c/json.h>

#include "report.h"

/* The figures (release with json_object_put), or NULL when there are
 * none; report->loga_source says where they came from or why not. */
struct json_object *loga_figures_get(struct report *report);

#endif /* VGPU_REPORT_LOGA_FIGURES_H */
