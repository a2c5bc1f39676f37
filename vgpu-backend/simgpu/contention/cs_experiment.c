// SPDX-License-Identifier: MIT
/* cs_experiment.c - tenant specs, alone and mixed runs, multi-tenant
 * metrics (see cs_experiment.h). */
#include "cs_experiment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernel_stream.h"
#include "vgpu/abi/commands.h"

#define MIB (UINT64_C(1) << 20)
#define BASE_VA (UINT64_C(1) << 32)

struct kernel_keys {
	const char *names[4];
	uint64_t defaults[4];
	uint32_t nargs;
};

static const struct kernel_keys keys[] = {
	[VGPU_KERNEL_FILL] = { { "dst", "bytes", "seed" }, { BASE_VA, 32 * MIB, 1 }, 3 },
	[VGPU_KERNEL_COPY] = { { "dst", "src", "bytes" },
		                 { 2 * BASE_VA, BASE_VA, 32 * MIB }, 3 },
	[VGPU_KERNEL_STREAM] = { { "buffer", "bytes", "passes" }, { BASE_VA, 32 * MIB, 1 }, 3 },
	[VGPU_KERNEL_STENCIL] = { { "in", "out", "width", "height" },
		                    { BASE_VA, 2 * BASE_VA, 4096, 2048 }, 4 },
	[VGPU_KERNEL_RANDOM_ACCESS] = { { "table", "bytes", "updates", "seed" },
		                          { BASE_VA, 512 * MIB, UINT64_C(1) << 24, 0 }, 4 },
	[VGPU_KERNEL_CHECKSUM] = { { "src", "bytes", "result" },
		                     { BASE_VA, 32 * MIB, 2 * BASE_VA }, 3 },
};

static int parse_size(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || end == text)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int cs_tenant_spec_parse(const char *text, struct cs_tenant_spec *spec)
{
	char buf[256], *colon, *item, *save = NULL;
	const struct kernel_keys *k;
	uint32_t kernel, i;

	if (!text || strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	kernel = cs_kernel_from_name(buf);
	if (!kernel)
		return -EINVAL;
	k = &keys[kernel];
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->name, sizeof(spec->name), "%s", cs_kernel_name(kernel));
	spec->kernel = kernel;
	spec->nargs = k->nargs;
	memcpy(spec->args, k->defaults, sizeof(spec->args));
	if (kernel == VGPU_KERNEL_STENCIL)
		spec->args[1] = spec->args[0] + spec->args[2] * 4 * spec->args[3];
	for (item = colon ? strtok_r(colon + 1, ",", &save) : NULL; item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		for (i = 0; i < k->nargs; i++)
			if (strcmp(item, k->names[i]) == 0)
				break;
		if (i == k->nargs || parse_size(eq + 1, &spec->args[i]))
			return -EINVAL;
	}
	{
		struct cs_kernel_stream probe;

		return cs_kernel_stream_init(&probe, spec->kernel, spec->args, spec->nargs);
	}
}

uint32_t cs_mix_parse(const char *mix, struct cs_tenant_spec *specs, uint32_t max)
{
	char text[128], *save = NULL, *word;
	uint32_t n = 0;

	snprintf(text, sizeof(text), "%s", mix);
	for (word = strtok_r(text, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
		if (n == max || cs_tenant_spec_parse(word, &specs[n]))
			return 0;
		n++;
	}
	return n;
}

uint32_t cs_mix_sms(const struct cs_model_config *cfg, uint32_t n, uint32_t i)
{
	return cfg->sms / n + (i < cfg->sms % n);
}

int cs_run_alone(const struct cs_model_config *cfg, const struct cs_tenant_spec *spec,
                 uint32_t sms, uint64_t cycles, struct cs_tenant_figures *out)
{
	struct cs_model_config baseline = *cfg;
	struct cs_model *m;
	int ret;

	baseline.walkers.policy = CS_WALKERS_SHARED;
	baseline.sched.policy = CS_SCHED_FRFCFS;
	m = cs_model_create(&baseline, 1, &sms);
	if (!m)
		return -EINVAL;
	ret = cs_model_attach_kernel(m, 0, spec->kernel, spec->args, spec->nargs);
	if (ret == 0)
		ret = cs_model_run_until(m, cycles);
	if (ret == 0)
		cs_model_figures(m, 0, out);
	cs_model_destroy(m);
	return ret;
}

/* The counts a trace window takes the difference of. */
static void snapshot(const struct cs_model *m, uint32_t n, uint32_t line_bytes,
                     struct cs_trace_window *w)
{
	for (uint32_t i = 0; i < n; i++) {
		struct cs_tenant_counters c;

		cs_model_counters(m, i, &c);
		w->instructions[i] = c.instructions;
		w->l2_misses[i] = c.l2_misses;
		w->dram_bytes[i] = (c.dram.reads + c.dram.writes) * line_bytes;
	}
	w->end = cs_model_now(m);
}

/* Runs m to cycles, in windows when trace is set. */
static int run_windows(struct cs_model *m, uint32_t n, uint32_t line_bytes, uint64_t cycles,
                       uint64_t window, struct cs_trace_window *trace, uint32_t *windows)
{
	struct cs_trace_window last = { 0 };
	uint32_t k = 0;
	int ret = 0;

	if (!trace)
		return cs_model_run_until(m, cycles);
	snapshot(m, n, line_bytes, &last);
	for (uint64_t until = window; ret == 0; until += window) {
		struct cs_trace_window now = { 0 };

		if (until > cycles)
			until = cycles;
		ret = cs_model_run_until(m, until);
		if (ret)
			break;
		snapshot(m, n, line_bytes, &now);
		trace[k].start = k ? trace[k - 1].end : 0;
		trace[k].end = until;
		for (uint32_t i = 0; i < n; i++) {
			trace[k].instructions[i] = now.instructions[i] - last.instructions[i];
			trace[k].l2_misses[i] = now.l2_misses[i] - last.l2_misses[i];
			trace[k].dram_bytes[i] = now.dram_bytes[i] - last.dram_bytes[i];
		}
		last = now;
		k++;
		if (until == cycles)
			break;
	}
	*windows = k;
	return ret;
}

int cs_run_mix(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs, uint32_t n,
               uint64_t cycles, const struct cs_tenant_figures *alone,
               struct cs_mix_result *out)
{
	return cs_run_mix_traced(cfg, specs, n, cycles, alone, 0, NULL, 0, NULL, out);
}

int cs_run_mix_traced(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs,
                      uint32_t n, uint64_t cycles, const struct cs_tenant_figures *alone,
                      uint64_t window, struct cs_trace_window *trace, uint32_t max,
                      uint32_t *windows, struct cs_mix_result *out)
{
	struct cs_model *m;
	double min_sd = 0, max_sd = 0, inverse = 0;
	uint32_t i;
	int ret = 0;

	if (n == 0 || n > CS_MAX_TENANTS)
		return -EINVAL;
	if (trace && (window == 0 || !windows))
		return -EINVAL;
	if (trace && (cycles + window - 1) / window > max)
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->tenants = n;
	for (i = 0; i < n; i++) {
		if (alone)
			out->alone[i] = alone[i];
		else if ((ret = cs_run_alone(cfg, &specs[i], cs_mix_sms(cfg, n, i), cycles,
		                             &out->alone[i])))
			return ret;
	}
	m = cs_model_create(cfg, n, NULL);
	if (!m)
		return -EINVAL;
	for (i = 0; i < n && ret == 0; i++)
		ret = cs_model_attach_kernel(m, i, specs[i].kernel, specs[i].args, specs[i].nargs);
	if (ret == 0)
		ret = run_windows(m, n, cfg->dram.line_bytes, cycles, window, trace, windows);
	if (ret == 0) {
		for (i = 0; i < n; i++) {
			double sd;

			cs_model_figures(m, i, &out->figures[i]);
			sd = out->alone[i].ipc > 0 ? out->figures[i].ipc / out->alone[i].ipc : 0;
			out->slowdown[i] = sd;
			out->throughput += out->figures[i].ipc;
			out->weighted_speedup += sd;
			inverse += sd > 0 ? 1.0 / sd : 0;
			if (i == 0 || sd < min_sd)
				min_sd = sd;
			if (i == 0 || sd > max_sd)
				max_sd = sd;
		}
		out->fairness = max_sd > 0 ? min_sd / max_sd : 0;
		out->harmonic_speedup = inverse > 0 ? n / inverse : 0;
	}
	cs_model_destroy(m);
	return ret;
}
