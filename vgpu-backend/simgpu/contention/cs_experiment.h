/* SPDX-License-Identifier: MIT */
/*
 * cs_experiment.h - runs of tenants' kernels through cs_model: a tenant's
 * kernel from a short text spec, a tenant alone, a mix, and the multi-tenant
 * metrics of seeds 003/004 over them.
 *
 * Alone runs use the baseline (shared walkers, FR-FCFS) with the same SM
 * share the tenant has in the mix, whatever the mix's policies (seed 003:
 * "the stand-alone IPC is measured by executing that tenant alone on the
 * baseline"; seed 004 keeps the core partition).
 * Metrics: slowdown SD_i = IPC_i / IPC_i^alone (seed 004's SD; 1 = no loss),
 * throughput IT = sum IPC_i, weighted speedup WS (= seed 003's weighted IPC)
 * = sum SD_i, fairness = min SD / max SD, harmonic speedup = n / sum 1/SD_i.
 */
#ifndef SIMGPU_CS_EXPERIMENT_H
#define SIMGPU_CS_EXPERIMENT_H

#include <stdint.h>

#include "cs_model.h"

struct cs_tenant_spec {
	char name[16];
	uint32_t kernel;
	uint64_t args[4];
	uint32_t nargs;
};

struct cs_mix_result {
	uint32_t tenants;
	struct cs_tenant_figures figures[CS_MAX_TENANTS];
	struct cs_tenant_figures alone[CS_MAX_TENANTS];
	double slowdown[CS_MAX_TENANTS];
	double throughput, weighted_speedup, fairness, harmonic_speedup;
};

/* "kernel[:key=value,...]": kernel fill, copy, stream, stencil, gups (or
 * random_access), checksum; keys are the LAUNCH argument names of
 * vgpu/abi/kernels.h (stream: buffer, bytes, passes; gups: table, bytes,
 * updates, seed; stencil: in, out, width, height; fill: dst, bytes, seed;
 * copy: dst, src, bytes; checksum: src, bytes, result); values take K, M, G
 * suffixes. Unset arguments take the defaults (a 32 MiB working set, 512 MiB
 * for gups). 0 or -EINVAL. */
int cs_tenant_spec_parse(const char *text, struct cs_tenant_spec *spec);
/* A mix, specs separated by spaces ("gups stream"), into specs[0..max)
 * (max <= CS_MAX_TENANTS); the count, 0 for a bad spec or more than max. */
uint32_t cs_mix_parse(const char *mix, struct cs_tenant_spec *specs, uint32_t max);

/* The tenant alone with sms SMs for cycles. 0 or a negative errno. */
int cs_run_alone(const struct cs_model_config *cfg, const struct cs_tenant_spec *spec,
                 uint32_t sms, uint64_t cycles, struct cs_tenant_figures *out);

/* SMs of tenant i of n under cfg (the model's equal split). */
uint32_t cs_mix_sms(const struct cs_model_config *cfg, uint32_t n, uint32_t i);

/* n tenants together for cycles. alone: their alone figures (from
 * cs_run_alone with cs_mix_sms) or NULL to run them here. */
int cs_run_mix(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs, uint32_t n,
               uint64_t cycles, const struct cs_tenant_figures *alone,
               struct cs_mix_result *out);

/* What each tenant did in one window [start, end) of a traced run. */
struct cs_trace_window {
	uint64_t start, end; /* modeled cycles */
	uint64_t instructions[CS_MAX_TENANTS];
	uint64_t l2_misses[CS_MAX_TENANTS];  /* MPKI's misses */
	uint64_t dram_bytes[CS_MAX_TENANTS]; /* reads and write-backs */
};

/* As cs_run_mix, and the run cut into windows of `window` cycles (the last
 * one shorter when window does not divide cycles): trace[0..*windows),
 * at most max of them (a run with more windows fails with -E2BIG before it
 * starts). The windows tile the run: their counts add up to the run's. */
int cs_run_mix_traced(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs,
                      uint32_t n, uint64_t cycles, const struct cs_tenant_figures *alone,
                      uint64_t window, struct cs_trace_window *trace, uint32_t max,
                      uint32_t *windows, struct cs_mix_result *out);

#endif /* SIMGPU_CS_EXPERIMENT_H */
