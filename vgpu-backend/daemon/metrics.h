/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - vgpud's statistics as Prometheus metrics: the text
 * exposition format, version 0.0.4 (VGPUD_METRICS_CONTENT_TYPE).
 *
 * The one place that text is made: the HTTP endpoint (metrics_http.h,
 * GET /metrics) and the control API's "metrics" command (`vgpuctl
 * metrics`, for node_exporter's textfile collector) both serve what
 * vgpud_metrics_text returns. It promises:
 *
 *  - the same figures as the control API's "list" (vgpuctl status), from
 *    the same snapshot (stats_snapshot.h): a VM's vgpu_vm_allocated_bytes
 *    is its "allocated", and so on;
 *  - every metric family has one "# HELP" and one "# TYPE" line, followed
 *    by all of its samples; names start with vgpu_ and carry their unit
 *    (_bytes, _seconds, _ratio; counters end in _total);
 *  - per-VM samples carry the labels uuid (mdev UUID, "" for the local
 *    transport), name (the name vgpuctl status shows: libvirt domain, QEMU
 *    -name, UUID, or the tenant's attach name), profile and transport, in
 *    that order; label values are escaped (backslash, double quote,
 *    newline), so any VM name is safe;
 *  - times the snapshot has in nanoseconds are printed as exact decimal
 *    seconds; a VM's vgpu_vm_gpu_time_share_ratio is absent until any GPU
 *    time was measured (status: null);
 *  - the text ends with a newline.
 * The list of metrics is in README.md ("Metrics").
 */
#ifndef VGPUD_METRICS_H
#define VGPUD_METRICS_H

#include <stddef.h>

struct vgpud;
struct vgpud_stats_snapshot;

#define VGPUD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition text of snapshot (malloc'd, NUL-terminated; its length
 * in *len if len), or NULL when out of memory. Pure: no lock, no I/O. */
char *vgpud_metrics_format(const struct vgpud_stats_snapshot *snapshot, size_t *len);

/* Take a snapshot of d (any thread; may wait for an eviction in progress)
 * and format it. NULL when out of memory. */
char *vgpud_metrics_text(struct vgpud *d, size_t *len);

/* value escaped as a label value of the exposition format (backslash as
 * \\, double quote as \", newline as \n) into out, truncated to out_len
 * (never splitting an escape) and NUL-terminated. Returns the length the
 * whole escaped value needs, without the NUL (like snprintf). */
size_t vgpud_metrics_escape_label(const char *value, char *out, size_t out_len);

#endif /* VGPUD_METRICS_H */
