// SPDX-License-Identifier: MIT
/* loga_figures.c - experiment 9's figures: bench.json or a loga-bench run, see loga_figures.h. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loga_figures.h"

extern char **environ;

static bool has_figures(struct json_object *json)
{
	return json && json_object_object_get_ex(json, "loga_overhead", NULL);
}

/* a's modification time is before b's (false when either is unknown). */
static bool older(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_mtim.tv_sec < sb.st_mtim.tv_sec ||
	       (sa.st_mtim.tv_sec == sb.st_mtim.tv_sec && sa.st_mtim.tv_nsec < sb.st_mtim.tv_nsec);
}

/* Run report->loga_bench into DIR/loga-bench.json (why_run: why it runs). */
static struct json_object *run(struct report *report, const char *why_run)
{
	char json_path[4096], log_path[4096], when[64];
	const char *mode = report->quick ? "--brief" : NULL;
	char *argv[5];
	posix_spawn_file_actions_t actions;
	struct timespec t0, t1;
	struct json_object *json = NULL;
	time_t now = time(NULL);
	struct tm tm;
	pid_t pid;
	int status = 0, err, i = 0;
	double seconds;

	snprintf(json_path, sizeof(json_path), "%s/loga-bench.json", report->dir);
	snprintf(log_path, sizeof(log_path), "%s/loga-bench.log", report->dir);
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	argv[i++] = (char *)report->loga_bench;
	if (mode)
		argv[i++] = (char *)mode;
	argv[i++] = (char *)"--json";
	argv[i++] = json_path;
	argv[i] = NULL;
	unlink(json_path);
	report_progress(report, "  running %s%s%s (%s), output in %s", report->loga_bench,
	                mode ? " " : "", mode ? mode : "", why_run, log_path);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = posix_spawn_file_actions_init(&actions);
	if (!err)
		err = posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path,
		                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
	if (!err)
		err = posix_spawn(&pid, report->loga_bench, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (err) {
		snprintf(report->loga_source, sizeof(report->loga_source),
		         "no LoGA figures: %s, and %s could not be started (%s)", why_run,
		         report->loga_bench, strerror(err));
		return NULL;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		json = json_object_from_file(json_path);
	if (!has_figures(json)) {
		snprintf(report->loga_source, sizeof(report->loga_source),
		         "no LoGA figures: %s, and `loga-bench%s%s` run by this report at %s "
		         "failed (%s %d; its output is in loga-bench.log)",
		         why_run, mode ? " " : "", mode ? mode : "", when,
		         WIFEXITED(status) ? "exit status" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		if (json)
			json_object_put(json);
		return NULL;
	}
	snprintf(report->loga_source, sizeof(report->loga_source),
	         "from `loga-bench%s%s` run by this report at %s (%.0f s; %s; its output is in "
	         "loga-bench.log, its figures in loga-bench.json)",
	         mode ? " " : "", mode ? mode : "", when, seconds, why_run);
	return json;
}

struct json_object *loga_figures_get(struct report *report)
{
	struct json_object *bench = NULL, *date = NULL;
	char why[512];

	if (report->bench_json)
		bench = json_object_from_file(report->bench_json);
	if (has_figures(bench) &&
	    !(report->loga_bench && older(report->bench_json, report->loga_bench))) {
		json_object_object_get_ex(bench, "bench_date", &date);
		snprintf(report->loga_source, sizeof(report->loga_source),
		         "from `./vgpu-dev bench`'s %s of %s", report->bench_json,
		         date ? json_object_get_string(date) : "an earlier run (no bench_date)");
		return bench;
	}
	if (has_figures(bench))
		snprintf(why, sizeof(why), "%s's LoGA figures are older than %s", report->bench_json,
		         report->loga_bench);
	else if (report->bench_json)
		snprintf(why, sizeof(why), "%s has no LoGA figures", report->bench_json);
	else
		snprintf(why, sizeof(why), "no bench.json");
	if (bench)
		json_object_put(bench);
	if (!report->loga_bench) {
		snprintf(report->loga_source, sizeof(report->loga_source),
		         "no LoGA figures: %s, and no loga-bench to run (--loga-bench; "
		         "`./vgpu-dev report` passes the release build's)",
		         why);
		return NULL;
	}
	return run(report, why);
}
