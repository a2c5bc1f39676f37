// SPDX-License-Identifier: MIT
/* rodinia_run.c - one run of the Rodinia programs through vgpud, see rodinia_run.h. */
#include "rodinia_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const struct rodinia_program rodinia_programs[] = {
	{ "backprop", "512K", 512 * KiB }, { "bfs", "512K", 512 * KiB },
	{ "heartwall", "256K", 256 * KiB }, { "hotspot", "256K", 256 * KiB },
	{ "lud", "256K", 256 * KiB }, { "nn", "1M", 1 * MiB },
	{ "srad-v1", "512K", 512 * KiB }, { "srad-v2", "512K", 512 * KiB },
};
const unsigned rodinia_program_count = sizeof(rodinia_programs) / sizeof(rodinia_programs[0]);

#define CACHED_MAX 256

/* Runs so far (the report is one thread). */
static struct cached {
	const struct rodinia_program *program;
	struct rodinia_run_args args;
	struct rodinia_run run;
} cached[CACHED_MAX];
static unsigned cached_count;

static bool same_args(const struct rodinia_run_args *a, const struct rodinia_run_args *b)
{
	return a->avail == b->avail && !strcmp(a->policy, b->policy) && a->seed == b->seed &&
	       a->swap == b->swap && a->instances == b->instances && a->dummy == b->dummy &&
	       (a->chunk ? a->chunk : 64 * KiB) == (b->chunk ? b->chunk : 64 * KiB);
}

static void parse_eviction(const char *line, struct rodinia_eviction *e)
{
	unsigned long long passes, policy, setup, copy, modeled, other, drain, pause, susp, bytes;

	if (sscanf(line, "eviction passes=%llu policy_ns=%llu setup_ns=%llu copy_ns=%llu "
	           "copy_modeled_ns=%llu other_ns=%llu drain_ns=%llu pause_ns=%llu "
	           "suspensions=%llu bytes=%llu", &passes, &policy, &setup, &copy, &modeled, &other,
	           &drain, &pause, &susp, &bytes) != 10)
		return;
	e->known = true;
	e->passes = passes;
	e->suspensions = susp;
	e->bytes = bytes;
	e->policy_ms = policy / 1e6;
	e->setup_ms = setup / 1e6;
	e->copy_ms = copy / 1e6;
	e->copy_modeled_ms = modeled / 1e6;
	e->other_ms = other / 1e6;
	e->drain_ms = drain / 1e6;
	e->pause_ms = pause / 1e6;
}

bool rodinia_run_one(struct report *report, const struct rodinia_program *p,
                     const struct rodinia_run_args *args, struct rodinia_run *out)
{
	char cmd[2048], line[512];
	FILE *pipe;
	unsigned instances = 0, ases = 0;
	int status;

	for (unsigned i = 0; i < cached_count; i++)
		if (cached[i].program == p && same_args(&cached[i].args, args)) {
			*out = cached[i].run;
			return true;
		}
	memset(out, 0, sizeof(*out));
	snprintf(cmd, sizeof(cmd),
	         "'%s/rodinia_run.sh' '%s' '%s/tests/rodinia/kernels' '%s/%s' %s %s 1 %" PRIu64
	         " %s %u %d %u %" PRIu64 " %" PRIu64,
	         REPORT_SOURCE_DIR, report->rodinia_build, REPORT_SOURCE_ROOT, report->dir,
	         args->prefix, p->name, p->size, args->avail, args->policy, args->seed,
	         args->swap ? 1 : 0, args->instances, args->dummy,
	         args->chunk ? args->chunk : 64 * KiB);
	pipe = popen(cmd, "r");
	if (!pipe)
		return false;
	out->ok = true;
	while (fgets(line, sizeof(line), pipe)) {
		unsigned long long ns, moved;
		int rc;
		double rt;

		if (sscanf(line, "as=%*u modeled_ns=%llu", &ns) == 1) {
			ases++;
			if (ns / 1e6 > out->modeled_ms)
				out->modeled_ms = ns / 1e6;
		} else if (sscanf(line, "instance=%*u status=%d runtime_ms=%lf", &rc, &rt) >= 1) {
			instances++;
			out->ok &= rc == 0;
			if (rc == 0 && rt > out->wall_ms)
				out->wall_ms = rt;
		} else if (sscanf(line, "moved_bytes=%llu", &moved) == 1) {
			out->moved_mib = moved / (double)MiB;
		} else if (!strncmp(line, "eviction ", 9)) {
			parse_eviction(line, &out->eviction);
		}
	}
	status = pclose(pipe);
	if (status != 0 || instances != args->instances)
		return false;
	out->ok &= ases == args->instances;
	report_progress(report, "  %s at %" PRIu64 " KiB, %s seed %u%s%s: %s, %.3f ms modeled",
	                p->name, args->avail / KiB, args->policy, args->seed,
	                args->swap ? " swapped" : "", args->dummy ? " with a dummy" : "",
	                out->ok ? "ok" : "FAILED", out->modeled_ms);
	if (cached_count < CACHED_MAX) {
		cached[cached_count].program = p;
		cached[cached_count].args = *args;
		cached[cached_count].args.prefix = NULL;
		cached[cached_count++].run = *out;
	}
	return true;
}
