// SPDX-License-Identifier: MIT
/*
 * contention_sim.c - runs 1-4 tenants' kernels side by side through the
 * contention model (cs_model) with a chosen walker policy and memory
 * scheduler, and prints each tenant's figures, as text or --json.
 *
 *   contention-sim --tenant gups --tenant stream --walkers dws --sched its
 *
 * Each tenant also runs alone on the baseline (shared walkers, FR-FCFS)
 * with the same SMs, for its slowdown. See README.md beside this file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cs_experiment.h"
#include "cs_kernel_stream.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: contention-sim --tenant SPEC [--tenant SPEC ...] [options]\n"
	        "  --tenant SPEC     kernel[:key=value,...] (fill, copy, stream, stencil,\n"
	        "                    gups, checksum; keys: the LAUNCH argument names)\n"
	        "  --walkers P       shared (default), static, dws, dws++\n"
	        "  --sched P         frfcfs (default), rr, prio, its, weis\n"
	        "  --priority LIST   prio's order of tenant indexes, e.g. 1,0\n"
	        "  --cycles N        modeled core cycles (default 400000)\n"
	        "  --page 4k|64k|2m  page size (default 4k)\n"
	        "  --sms N --warps N --walker-count N --walk-queue N --pwc N\n"
	        "  --l2-tlb N --dram-channels N\n"
	        "  --separate-tlbs   each tenant its own L2 TLB of --l2-tlb entries\n"
	        "  --json            JSON instead of text\n");
}

static int parse_u32(const char *text, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 0);
	if (errno || end == text || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static json_object *figures_json(const struct cs_tenant_figures *f)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "instructions", json_object_new_int64((int64_t)f->instructions));
	json_object_object_add(o, "ipc", json_object_new_double(f->ipc));
	json_object_object_add(o, "walks", json_object_new_int64((int64_t)f->walks));
	json_object_object_add(o, "stolen_walks", json_object_new_int64((int64_t)f->stolen_walks));
	json_object_object_add(o, "avg_walk_latency", json_object_new_double(f->avg_walk_latency));
	json_object_object_add(o, "avg_walk_queueing", json_object_new_double(f->avg_walk_queueing));
	json_object_object_add(o, "interleaving", json_object_new_double(f->interleaving));
	json_object_object_add(o, "interleaving_max", json_object_new_int(f->interleaving_max));
	json_object_object_add(o, "l2_tlb_hit_rate", json_object_new_double(f->l2_tlb_hit_rate));
	json_object_object_add(o, "mpki", json_object_new_double(f->mpki));
	json_object_object_add(o, "bandwidth_bytes_per_cycle", json_object_new_double(f->bandwidth));
	json_object_object_add(o, "bandwidth_share", json_object_new_double(f->bandwidth_share));
	json_object_object_add(o, "row_hit_rate", json_object_new_double(f->row_hit_rate));
	json_object_object_add(o, "walker_share", json_object_new_double(f->walker_share));
	json_object_object_add(o, "l2_tlb_share", json_object_new_double(f->l2_tlb_share));
	json_object_object_add(o, "sched_top_share", json_object_new_double(f->sched_top_share));
	return o;
}

static void print_json(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs,
                       const struct cs_mix_result *r, uint64_t cycles)
{
	json_object *root = json_object_new_object(), *tenants = json_object_new_array();
	uint32_t i;

	json_object_object_add(root, "walkers",
	                       json_object_new_string(cs_walker_policy_name(cfg->walkers.policy)));
	json_object_object_add(root, "sched",
	                       json_object_new_string(cs_mem_policy_name(cfg->sched.policy)));
	json_object_object_add(root, "cycles", json_object_new_int64((int64_t)cycles));
	json_object_object_add(root, "page_bytes",
	                       json_object_new_int64((int64_t)1 << cfg->page_shift));
	for (i = 0; i < r->tenants; i++) {
		json_object *t = figures_json(&r->figures[i]);

		json_object_object_add(t, "kernel", json_object_new_string(specs[i].name));
		json_object_object_add(t, "sms", json_object_new_int((int)cs_mix_sms(cfg, r->tenants, i)));
		json_object_object_add(t, "alone_ipc", json_object_new_double(r->alone[i].ipc));
		json_object_object_add(t, "slowdown", json_object_new_double(r->slowdown[i]));
		json_object_object_add(t, "alone", figures_json(&r->alone[i]));
		json_object_array_add(tenants, t);
	}
	json_object_object_add(root, "tenants", tenants);
	json_object_object_add(root, "throughput", json_object_new_double(r->throughput));
	json_object_object_add(root, "weighted_speedup", json_object_new_double(r->weighted_speedup));
	json_object_object_add(root, "fairness", json_object_new_double(r->fairness));
	json_object_object_add(root, "harmonic_speedup", json_object_new_double(r->harmonic_speedup));
	puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
}

static void print_text(const struct cs_model_config *cfg, const struct cs_tenant_spec *specs,
                       const struct cs_mix_result *r, uint64_t cycles)
{
	uint32_t i;

	printf("walkers %s, sched %s, %llu cycles, %u KiB pages\n",
	       cs_walker_policy_name(cfg->walkers.policy), cs_mem_policy_name(cfg->sched.policy),
	       (unsigned long long)cycles, (1u << cfg->page_shift) / 1024);
	printf("%-2s %-9s %7s %7s %8s %9s %8s %7s %7s %8s %7s %7s %9s\n", "#", "kernel", "IPC",
	       "aloneIPC", "slowdown", "walks", "walk_lat", "interlv", "int_max", "l2tlb_hit",
	       "MPKI", "B/cyc", "stolen");
	for (i = 0; i < r->tenants; i++) {
		const struct cs_tenant_figures *f = &r->figures[i];

		printf("%-2u %-9s %7.3f %7.3f %8.3f %9llu %8.1f %7.3f %7u %8.3f %7.1f %7.1f %9llu\n", i,
		       specs[i].name, f->ipc, r->alone[i].ipc, r->slowdown[i],
		       (unsigned long long)f->walks, f->avg_walk_latency, f->interleaving,
		       f->interleaving_max, f->l2_tlb_hit_rate, f->mpki, f->bandwidth,
		       (unsigned long long)f->stolen_walks);
	}
	printf("throughput (IT) %.3f  weighted speedup (WS) %.3f  fairness %.3f  harmonic %.3f\n",
	       r->throughput, r->weighted_speedup, r->fairness, r->harmonic_speedup);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "tenant", required_argument, NULL, 't' },
		{ "walkers", required_argument, NULL, 'w' },
		{ "sched", required_argument, NULL, 's' },
		{ "priority", required_argument, NULL, 'p' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "page", required_argument, NULL, 'g' },
		{ "sms", required_argument, NULL, 'S' },
		{ "warps", required_argument, NULL, 'W' },
		{ "walker-count", required_argument, NULL, 'k' },
		{ "walk-queue", required_argument, NULL, 'q' },
		{ "pwc", required_argument, NULL, 'P' },
		{ "l2-tlb", required_argument, NULL, 'L' },
		{ "dram-channels", required_argument, NULL, 'D' },
		{ "separate-tlbs", no_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cs_tenant_spec specs[CS_MAX_TENANTS];
	struct cs_model_config cfg;
	struct cs_mix_result result;
	uint64_t cycles = 400000;
	uint32_t n = 0;
	bool json = false;
	int opt, ret;

	cs_model_config_defaults(&cfg);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 't':
			if (n == CS_MAX_TENANTS || cs_tenant_spec_parse(optarg, &specs[n])) {
				fprintf(stderr, "contention-sim: bad or too many --tenant '%s'\n", optarg);
				return 2;
			}
			n++;
			break;
		case 'w': bad = cs_walker_policy_parse(optarg, &cfg.walkers.policy); break;
		case 's': bad = cs_mem_policy_parse(optarg, &cfg.sched.policy); break;
		case 'p': {
			char *save = NULL, *item, buf[64];
			uint32_t i = 0;

			snprintf(buf, sizeof(buf), "%s", optarg);
			for (item = strtok_r(buf, ",", &save); item && !bad;
			     item = strtok_r(NULL, ",", &save))
				bad = i == CS_MAX_TENANTS || parse_u32(item, &cfg.sched.priority[i++]);
			break;
		}
		case 'c': {
			char *end;

			cycles = strtoull(optarg, &end, 0);
			bad = *end || cycles == 0;
			break;
		}
		case 'g':
			if (strcmp(optarg, "4k") == 0)
				cfg.page_shift = 12;
			else if (strcmp(optarg, "64k") == 0)
				cfg.page_shift = 16;
			else if (strcmp(optarg, "2m") == 0)
				cfg.page_shift = 21;
			else
				bad = 1;
			break;
		case 'T': cfg.l2_tlb_per_tenant = true; break;
		case 'S': bad = parse_u32(optarg, &cfg.sms); break;
		case 'W': bad = parse_u32(optarg, &cfg.warps_per_sm); break;
		case 'k': bad = parse_u32(optarg, &cfg.walkers.walkers); break;
		case 'q': bad = parse_u32(optarg, &cfg.walkers.queue_entries); break;
		case 'P': bad = parse_u32(optarg, &cfg.pwc_entries); break;
		case 'L': bad = parse_u32(optarg, &cfg.l2_tlb_entries); break;
		case 'D': bad = parse_u32(optarg, &cfg.dram.channels); break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "contention-sim: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (n == 0 || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (cfg.sched.policy == CS_SCHED_PRIORITY) {
		uint32_t seen = 0, i;

		for (i = 0; i < n; i++)
			if (cfg.sched.priority[i] < n)
				seen |= 1u << cfg.sched.priority[i];
		if (seen != (1u << n) - 1) {
			fprintf(stderr, "contention-sim: --priority must order all %u tenants\n", n);
			return 2;
		}
	}
	ret = cs_run_mix(&cfg, specs, n, cycles, NULL, &result);
	if (ret) {
		fprintf(stderr, "contention-sim: %s (configuration rejected)\n", strerror(-ret));
		return 1;
	}
	if (json)
		print_json(&cfg, specs, &result, cycles);
	else
		print_text(&cfg, specs, &result, cycles);
	return 0;
}
