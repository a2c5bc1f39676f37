// SPDX-License-Identifier: MIT
/*
 * relocation_delay.c - the delay of each relocation, from the allocating
 * application's side and from the victim's (thesis §6.3.2, Figures 6.5 to
 * 6.8; paper §6.4, Figure 6a and 6b).
 *
 * 100 MiB of VRAM; a victim VM allocates 80 MiB in 4 MiB buffers and fills
 * them; then each workload's buffers are allocated one by one in a second
 * VM (priority policy, 4 MiB chunks). Every allocation is one sample: the
 * bytes the core copied to host memory for it, the allocating side's delay
 * (the allocation call: the core's host work in wall-clock time, the copy at
 * its modeled duration), and the victim's delay (the core's pause, from
 * suspending a VM's channels to resuming them, per VM suspended, the copy
 * again at its modeled duration; the drain part wall-clock). Without contention the victim is idle (the thesis's dummy);
 * under contention it keeps a stream kernel queued on its channel while the
 * other VM allocates (the thesis's second instance), so the relocation must
 * drain it first. Repeated over seeds of the policy's random pick.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest.h"
#include "report.h"
#include "verdict.h"
#include "vgpu/abi/commands.h"
#include "vgpu/core.h"
#include "vgpu/simgpu.h"
#include "vgpu/util.h"
#include "workload.h"

#define VRAM (100 * MiB)
#define RESERVED (8 * MiB)
#define VICTIM_BUFFERS 20 /* x 4 MiB = 80 MiB */
#define TIMEOUT_MS 300000
#define SAMPLES_MAX 512

struct sample {
	unsigned workload;
	bool contention;
	double mib;       /* copied to host memory for this allocation */
	double alloc_ms;  /* allocating side: host work (wall-clock) + copy (modeled) */
	double victim_ms; /* victim: suspended time, the copy at its modeled duration */
	double drain_ms;  /* victim: waiting for its channel (wall-clock) */
	double policy_ms; /* wall-clock */
	bool victim_paused;
};

struct samples {
	struct sample s[SAMPLES_MAX];
	unsigned n;
};

struct setup {
	struct vgpu_hal *hal;
	struct vgpu_core *core;
	struct vgpu_vm *victim, *vm;
	struct sim_guest *victim_guest, *guest;
	uint64_t victim_va[VICTIM_BUFFERS];
};

static void teardown(struct setup *s)
{
	if (s->guest)
		sim_guest_destroy(s->guest, false);
	if (s->victim_guest)
		sim_guest_destroy(s->victim_guest, false);
	if (s->core)
		vgpu_core_destroy(s->core);
	if (s->hal)
		vgpu_hal_destroy(s->hal);
}

static int create(struct setup *s, uint64_t seed)
{
	struct simgpu_config gpu;
	struct vgpu_core_config core;
	struct vgpu_vm_config vm;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err;

	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = VRAM + RESERVED;
	gpu.reserved_vram_bytes = RESERVED;
	gpu.pfifo_idle_sleep_max_us = 200;
	err = simgpu_create(&gpu, &s->hal);
	if (err)
		return err;
	vgpu_core_config_defaults(&core);
	core.policy = "priority";
	core.seed = seed;
	core.chunk_bytes = 4 * MiB;
	core.return_interval_ms = 0;
	core.on_fence = sim_guest_on_fence;
	core.on_channel_error = sim_guest_on_channel_error;
	err = vgpu_core_create(s->hal, &core, &s->core, NULL);
	if (err)
		return err;
	vgpu_vm_config_defaults(&vm);
	vm.name = "victim";
	err = vgpu_core_vm_create(s->core, &vm, &s->victim, NULL);
	if (!err)
		err = sim_guest_create(s->hal, s->victim, &s->victim_guest);
	for (unsigned i = 0; !err && i < VICTIM_BUFFERS; i++) {
		struct vgpu_buffer_info buffer;

		err = vgpu_core_alloc(s->victim, 4 * MiB, VGPU_PRIORITY_DEFAULT, 0, &buffer, NULL);
		if (!err) {
			s->victim_va[i] = buffer.gpu_va;
			err = sim_guest_run(s->victim_guest, words,
			                    vgpu_push_launch_fill(words, buffer.gpu_va, 4 * MiB, 7 + i),
			                    TIMEOUT_MS);
		}
	}
	vm.name = "allocating";
	if (!err)
		err = vgpu_core_vm_create(s->core, &vm, &s->vm, NULL);
	if (!err)
		err = sim_guest_create(s->hal, s->vm, &s->guest);
	return err;
}

/* One workload's allocations in the allocating VM; samples appended. */
static int run_one(const struct workload *workload, bool contention, uint64_t seed,
                   unsigned index, struct samples *out)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct setup s = { 0 };
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err = create(&s, seed);

	for (unsigned b = 0; !err && b < workload->buffer_count; b++) {
		const struct workload_buffer *buffer = &workload->buffers[b];
		struct vgpu_core_stats before, after;
		struct vgpu_vm_stats vb, va;
		struct vgpu_buffer_info info;
		struct sample *sample;
		int64_t queued = -1;
		uint64_t start, wall, model_before, model, copy_wall, copied;

		if (contention) {
			/* The victim's kernel: queued, running while the other allocates. */
			unsigned v = (b * 3) % VICTIM_BUFFERS;

			queued = sim_guest_submit(s.victim_guest, words,
			                          vgpu_push_launch_stream(words, s.victim_va[v],
			                                                  4 * MiB, 8));
			if (queued < 0) {
				err = (int)queued;
				break;
			}
		}
		vgpu_core_stats(s.core, &before);
		vgpu_core_vm_stats(s.victim, &vb);
		model_before = vgpu_hal_engine_modeled_ns(s.hal, VGPU_ENGINE_COPY);
		start = vgpu_monotonic_ns();
		err = vgpu_core_alloc(s.vm, buffer->bytes, buffer->priority, 0, &info, &error);
		wall = vgpu_monotonic_ns() - start;
		model = vgpu_hal_engine_modeled_ns(s.hal, VGPU_ENGINE_COPY) - model_before;
		vgpu_core_stats(s.core, &after);
		vgpu_core_vm_stats(s.victim, &va);
		if (err)
			break;
		copy_wall = after.eviction.copy_ns - before.eviction.copy_ns;
		copied = after.eviction.bytes_copied - before.eviction.bytes_copied;
		if (out->n < SAMPLES_MAX) {
			uint64_t pause = after.eviction.pause_ns - before.eviction.pause_ns;
			uint64_t paused = after.eviction.vm_suspensions - before.eviction.vm_suspensions;

			sample = &out->s[out->n++];
			sample->workload = index;
			sample->contention = contention;
			sample->mib = copied / (double)MiB;
			sample->alloc_ms = ((double)wall - (double)copy_wall + (double)model) / 1e6;
			/* Each suspended VM's pause holds the copy of its own chunks:
			 * the sum holds every copy once. Per suspended VM. */
			sample->victim_paused = paused > 0 && va.suspensions > vb.suspensions;
			sample->victim_ms = paused ? fmax(0, (double)pause - (double)copy_wall +
			                                             (double)model) / 1e6 / (double)paused
			                           : 0;
			sample->drain_ms = (double)(va.drain_ns - vb.drain_ns) / 1e6;
			sample->policy_ms =
			        (double)(after.eviction.policy_ns - before.eviction.policy_ns) / 1e6;
		}
		err = sim_guest_run(s.guest, words,
		                    vgpu_push_launch_fill(words, info.gpu_va, buffer->bytes, 3 + b),
		                    TIMEOUT_MS);
		if (!err && queued >= 0)
			err = sim_guest_wait(s.victim_guest, (uint64_t)queued, TIMEOUT_MS);
	}
	if (err)
		fprintf(stderr, "vgpu-report: relocation delay, %s: %s (%s)\n", workload->name,
		        strerror(err < 0 ? -err : err), vgpu_error_msg(&error));
	teardown(&s);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary {
	unsigned n, paused;
	double alloc_mean, alloc_sd, alloc_max, victim_mean, victim_max, drain_mean, mib;
	double alloc_paused_mean; /* over the allocations that suspended the victim */
	double policy_share; /* of the allocating side's delay, % */
};

static void summarize(const struct samples *all, int workload, bool contention,
                      struct summary *sum)
{
	double a = 0, aa = 0, alloc_sum = 0, policy = 0;

	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < all->n; i++) {
		const struct sample *s = &all->s[i];

		if (s->contention != contention || (workload >= 0 && s->workload != (unsigned)workload))
			continue;
		sum->n++;
		a += s->alloc_ms;
		aa += s->alloc_ms * s->alloc_ms;
		alloc_sum += s->alloc_ms;
		policy += s->policy_ms;
		sum->alloc_max = fmax(sum->alloc_max, s->alloc_ms);
		sum->mib += s->mib;
		if (s->victim_paused) {
			sum->paused++;
			sum->alloc_paused_mean += s->alloc_ms;
			sum->victim_mean += s->victim_ms;
			sum->drain_mean += s->drain_ms;
			sum->victim_max = fmax(sum->victim_max, s->victim_ms);
		}
	}
	if (sum->n) {
		sum->alloc_mean = a / sum->n;
		sum->alloc_sd = sqrt(fmax(0, aa / sum->n - sum->alloc_mean * sum->alloc_mean));
		sum->mib /= sum->n;
	}
	if (sum->paused) {
		sum->victim_mean /= sum->paused;
		sum->alloc_paused_mean /= sum->paused;
		sum->drain_mean /= sum->paused;
	}
	sum->policy_share = alloc_sum > 0 ? 100 * policy / alloc_sum : 0;
}

static void plot(struct report *report, const struct samples *all)
{
	FILE *dat = report_file(report, "relocation-delay.dat");
	char body[1024];

	/* Four blocks (gnuplot index 0..3): allocating / victim x idle / contention. */
	for (unsigned block = 0; block < 4; block++) {
		bool contention = block & 1, victim = block >= 2;

		fprintf(dat, "# %s side, %s: MiB copied, delay (ms)\n",
		        victim ? "victim" : "allocating", contention ? "contention" : "idle victim");
		for (unsigned i = 0; i < all->n; i++) {
			const struct sample *s = &all->s[i];

			if (s->contention != contention || (victim && !s->victim_paused))
				continue;
			fprintf(dat, "%.3f %.4f\n", s->mib, victim ? s->victim_ms : s->alloc_ms);
		}
		fprintf(dat, "\n\n");
	}
	fclose(dat);
	snprintf(body, sizeof(body),
	         "set yrange [0:*]\nset xrange [0:*]\n"
	         "plot 'relocation-delay.dat' index 0 with points title 'allocating, idle victim', "
	         "\\\n"
	         "     '' index 1 with points title 'allocating, victim running', \\\n"
	         "     '' index 2 with points title 'victim (idle)', \\\n"
	         "     '' index 3 with points title 'victim (running)'");
	report_plot(report, "relocation-delay",
	            "Delay per allocation against the data it relocates (paper Fig. 6a, 6b)",
	            "relocated to host memory per allocation (MiB)",
	            "delay (ms): host work wall-clock + copy modeled", body);
}

void experiment_relocation_delay(struct report *report)
{
	static struct samples all;
	unsigned workloads = workload_count(), seeds = report->quick ? 1 : 5;
	struct summary idle, busy;
	bool ok = true;

	all.n = 0;
	report_section(report, "10", "Relocation delay, allocating and victim side (thesis §6.3.2, "
	               "paper §6.4)");
	report_md(report,
	          "**Seed.** Thesis §6.3.2 (Figures 6.5 to 6.8; 100 MiB available, a dummy "
	          "holding 80 MiB, 10 runs): *\"the delay induced by GPUswap was typically below "
	          "60 ms for both allocating and victim applications\"*; the dummy never submits "
	          "commands, so *\"no draining of command submission channels takes place\"* "
	          "(Fig. 6.6). With a second instance running kernels instead (Figs. 6.7, 6.8): "
	          "*\"the latency experienced by most of the applications when allocating memory "
	          "is "
	          "increased under contention, but generally remains below 100 ms\"*, *\"the "
	          "runtime of both policys was negligible\"*, and *\"the latency seen by victim "
	          "applications was lower than that experienced by allocating applications: For "
	          "most applications, the latency was below 60 ms\"*. Paper §6.4 (Figure 6a, 6b; "
	          "100 MB, 2 MB chunks): *\"The allocation requests we observed were generally "
	          "delayed by less than 100 ms\"*; the victims' delays *\"were even shorter on "
	          "average\"* and dominated by the DMA transfer, *\"the mostly linear relationship "
	          "between the amount of relocated memory and the delay\"*.\n\n"
	          "**Here.** 100 MiB of VRAM; a victim VM allocates and fills 80 MiB in 4 MiB "
	          "buffers, then each workload allocates its buffers one by one in a second VM "
	          "(priority policy, 4 MiB chunks; the paper's 2 MB is not used), %u seed%s of the "
	          "policy's pick. Each allocation is one sample: the MiB the core copied to host "
	          "memory for it; the allocating side's delay (the allocation call's host work, "
	          "**wall-clock on this host**, plus the copy at its **modeled** duration); the "
	          "victim's delay (the core's pause from suspending a VM's channels to resuming "
	          "them, per VM suspended, the copy at its modeled duration, the rest wall-clock) "
	          "and, of that, its drain (**wall-clock**: "
	          "simgpu runs the queued kernel on a host thread). *Idle*: the victim submits "
	          "nothing (the thesis's dummy). *Running*: the victim keeps a stream kernel (4 "
	          "MiB, "
	          "8 passes) queued on its channel while the other VM allocates (the thesis's "
	          "second "
	          "instance; the workload itself runs no kernels during its allocations, as in the "
	          "thesis).\n\n",
	          seeds, seeds == 1 ? " (quick version; the full report runs 5)" : "s");
	for (unsigned c = 0; c < 2; c++)
		for (unsigned w = 0; w < workloads; w++) {
			for (unsigned seed = 1; seed <= seeds; seed++)
				if (run_one(workload_get(w, report->quick), c, seed, w, &all))
					ok = false;
			report_progress(report, "  relocation delay: %s, %s",
			                workload_get(w, report->quick)->name, c ? "running" : "idle");
		}
	report_md(report, "| workload | victim | allocations | MiB copied per allocation | "
	          "allocating side, ms: mean ± sd (max) | victim suspended | allocating side of "
	          "those, ms: mean | victim side, ms: mean (max) | of which drain, ms (wall-clock) "
	          "| policy, %% of the allocating side (wall-clock) |\n"
	          "|---|---|---|---|---|---|---|---|---|---|\n");
	for (unsigned c = 0; c < 2; c++)
		for (int w = 0; w <= (int)workloads; w++) {
			struct summary s;

			summarize(&all, w == (int)workloads ? -1 : w, c, &s);
			report_md(report, "| %s | %s | %u | %.1f | %.2f ± %.2f (%.2f) | %u | %.2f | "
			          "%.2f (%.2f) | %.3f | %.1f |\n",
			          w == (int)workloads ? "**all**" : workload_get((unsigned)w, report->quick)->name,
			          c ? "running" : "idle", s.n, s.mib, s.alloc_mean, s.alloc_sd, s.alloc_max,
			          s.paused, s.alloc_paused_mean, s.victim_mean, s.victim_max,
			          s.drain_mean, s.policy_share);
		}
	plot(report, &all);
	summarize(&all, -1, false, &idle);
	summarize(&all, -1, true, &busy);
	report_check(report, ok && idle.paused > 0 && busy.paused > 0,
	             "relocation delay: every allocation succeeds and some suspend the victim "
	             "(%u idle, %u running)", idle.paused, busy.paused);
	report_md(report, "\n**Verdicts** (wall-clock host work with the copy at its modeled "
	          "duration, so they depend on this host's load):\n\n");
	{
		struct verdict v;
		double x[SAMPLES_MAX], y[SAMPLES_MAX];
		unsigned n = 0;

		verdict_begin(&v, "T6.5 T6.6", "without contention the delay is below 60 ms for "
		              "allocating and victim applications (mean per workload)");
		for (unsigned w = 0; w < workloads; w++) {
			struct summary s;
			char label[64];

			summarize(&all, (int)w, false, &s);
			snprintf(label, sizeof(label), "%s, allocating", workload_get(w, report->quick)->name);
			pred_in_range(&v, label, s.alloc_mean, 0, 60, "ms");
			if (s.paused) {
				snprintf(label, sizeof(label), "%s, victim", workload_get(w, report->quick)->name);
				pred_in_range(&v, label, s.victim_mean, 0, 60, "ms");
			}
		}
		verdict_end(report, &v, "host work on a loaded 2-core host");
		verdict_begin(&v, "T6.6", "an idle victim needs no draining: its mean drain is at most "
		              "a tenth of a running victim's (both wall-clock)");
		pred_a_le_b_case(&v, "drain per suspension", "idle victim's", "running victim's",
		                 idle.drain_mean, busy.drain_mean, -0.9);
		verdict_end(report, &v, "an idle channel's drain is still a suspend handshake with "
		            "simgpu's channel thread (which sleeps up to 200 µs when idle), "
		            "wall-clock "
		            "and stretched on a loaded host");
		verdict_begin(&v, "T6.7", "under contention the allocating side's delay is larger than "
		              "without, and stays below 100 ms (mean per workload)");
		pred_a_gt_b(&v, "all workloads", "mean with the victim running",
		            "mean with it idle", busy.alloc_mean, idle.alloc_mean, 0);
		for (unsigned w = 0; w < workloads; w++) {
			struct summary s;

			summarize(&all, (int)w, true, &s);
			pred_in_range(&v, workload_get(w, report->quick)->name, s.alloc_mean, 0, 100, "ms");
		}
		verdict_end(report, &v, "the allocating side waits for the victim's drain only "
		            "through the relocation; in simgpu that drain is the host thread "
		            "finishing "
		            "the queued kernel, and on a loaded host the wall-clock parts vary "
		            "more "
		            "than the drain adds");
		verdict_begin(&v, "T6.7", "under contention the policy's runtime is negligible (<= 5 %% "
		              "of the allocating side's delay)");
		pred_in_range(&v, "all workloads, victim running", busy.policy_share, 0, 5, "%");
		verdict_end(report, &v, NULL);
		verdict_begin(&v, "T6.8", "under contention the victim's delay is below the "
		              "allocating side's and below 60 ms (means over all workloads and the "
		              "allocations that suspended the victim)");
		pred_a_le_b_case(&v, "victim running", "victim's mean", "allocating side's mean",
		                 busy.victim_mean, busy.alloc_paused_mean, 0);
		pred_in_range(&v, "victim running, victim's mean", busy.victim_mean, 0, 60, "ms");
		verdict_end(report, &v, "the victim's delay includes draining its queued kernel, "
		            "wall-clock on simgpu's host thread");
		verdict_begin(&v, "P6a", "allocation requests are generally delayed by less than 100 ms "
		              "(90th percentile of the samples per victim state)");
		for (unsigned c = 0; c < 2; c++) {
			n = 0;
			for (unsigned i = 0; i < all.n; i++)
				if (all.s[i].contention == (bool)c)
					y[n++] = all.s[i].alloc_ms;
			if (n) {
				qsort(y, n, sizeof(*y), cmp_double);
				pred_in_range(&v, c ? "victim running" : "idle victim",
				              y[(unsigned)(0.9 * (n - 1))], 0, 100, "ms");
			}
		}
		verdict_end(report, &v, NULL);
		verdict_begin(&v, "P6b", "a victim's delay is shorter on average than the allocating "
		              "side's (over the allocations that suspended it)");
		pred_a_le_b_case(&v, "idle victim", "victim's mean", "allocating side's mean",
		                 idle.victim_mean, idle.alloc_paused_mean, 0);
		pred_a_le_b_case(&v, "victim running", "victim's mean", "allocating side's mean",
		                 busy.victim_mean, busy.alloc_paused_mean, 0);
		verdict_end(report, &v, "with the victim running, its pause includes the drain, which "
		            "the allocating side waits through too, so the two come close");
		verdict_begin(&v, "P6b", "a victim's delay grows linearly with the data relocated "
		              "(samples that suspended it)");
		for (unsigned c = 0; c < 2; c++) {
			n = 0;
			for (unsigned i = 0; i < all.n; i++)
				if (all.s[i].contention == (bool)c && all.s[i].victim_paused) {
					x[n] = all.s[i].mib;
					y[n++] = all.s[i].victim_ms;
				}
			pred_linear(&v, c ? "victim running" : "idle victim", x, y, n, 0.9);
		}
		verdict_end(report, &v, "the victim's delay here is mostly host work (wall-clock: "
		            "suspending, draining, page tables, freeing VRAM) around a short "
		            "modeled "
		            "copy, and that work does not grow with the bytes as a DMA does");
	}
}
