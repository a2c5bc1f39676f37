// SPDX-License-Identifier: MIT
/*
 * vgpuctl - look at and steer a running vgpud through its control socket.
 *
 * Exit status: 0 success; 1 vgpud refused the request (the message says
 * why); 2 vgpud is not running or not answering (one line naming the
 * socket); 64 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "control_client.h"
#include "table.h"
#include "xml_command.h"

#define EXIT_REFUSED 1
#define EXIT_UNREACHABLE 2
#define EXIT_USAGE 64
#define REQUEST_TIMEOUT_MS 30000

static const char *socket_option;

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpuctl [--socket PATH] COMMAND [ARGS]\n"
	        "Show and steer the vGPUs of a running vgpud.\n"
	        "\n"
	        "Commands:\n"
	        "  status [--json]          one row per vGPU: VM, profile, weight, allocated,\n"
	        "                           resident, evicted, share of VRAM, fair share,\n"
	        "                           evictions, returns, accounted GPU time, its share\n"
	        "                           of the last accounting period ('-' until\n"
	        "                           measured), scheduler and state (running or\n"
	        "                           throttled). --json: the same as a JSON document\n"
	        "  watch [--interval SECS] [--count N]\n"
	        "                           the status table, refreshed every SECS (default 1)\n"
	        "                           N times (default: until interrupted)\n"
	        "  types [--json]           vGPU profiles and how many instances are available\n"
	        "  set-weight VM N          give VM weight N (1..1000000): its share of VRAM\n"
	        "                           under pressure, from the next eviction on\n"
	        "  set-scheduler VM MODE    GPU-time scheduling of VM: best-effort (never\n"
	        "                           throttled), equal-share, weighted (by its weight)\n"
	        "                           or fixed-share (never more than its share)\n"
	        "  set-profile NAME [--weight N] [--cap SIZE] [--max-instances N]\n"
	        "                           change a profile (cap and max-instances apply to\n"
	        "                           new VMs, the weight to running ones too)\n"
	        "  stats VM                 every statistic of one VM, as JSON\n"
	        "  health [--json]          is vgpud well; with --check also its invariants\n"
	        "  config                   vgpud's effective configuration, as JSON\n"
	        "  metrics                  the Prometheus metrics of vgpud's /metrics endpoint\n"
	        "                           (text format 0.0.4), e.g. for node_exporter's\n"
	        "                           textfile collector\n"
	        "  reload                   re-read the profiles from vgpud's configuration file\n"
	        "%s"
	        "\n"
	        "Options:\n"
	        "  -s, --socket PATH        vgpud's control socket (default $VGPUD_CONTROL_SOCKET\n"
	        "                           or %s)\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "Exit status: 0 ok, 1 vgpud refused the request, 2 vgpud not reachable,\n"
	        "64 usage error.\n",
	        vgpuctl_xml_usage, VGPUCTL_DEFAULT_SOCKET);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "vgpuctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see 'vgpuctl --help'\n");
	return EXIT_USAGE;
}

/* ------------------------------------------------------------ requests */

static int unreachable(const char *path, int err)
{
	if (err == -ENOENT || err == -ECONNREFUSED)
		fprintf(stderr, "vgpuctl: vgpud is not running: cannot connect to %s (%s)\n", path,
		        strerror(-err));
	else
		fprintf(stderr, "vgpuctl: cannot talk to vgpud at %s: %s\n", path,
		        err == -EPIPE ? "it closed the connection" : strerror(-err));
	return EXIT_UNREACHABLE;
}

/* One request on a new connection. Returns the response, or NULL after
 * printing why (and setting *exit_status). */
static struct json_object *call(struct json_object *request, int *exit_status)
{
	const char *path = control_socket_path(socket_option);
	struct control_client client;
	struct json_object *response, *ok;
	int err = control_connect(&client, path);

	if (err) {
		json_object_put(request);
		*exit_status = unreachable(path, err);
		return NULL;
	}
	response = control_request(&client, request, REQUEST_TIMEOUT_MS, &err);
	control_close(&client);
	if (!response) {
		*exit_status = unreachable(path, err);
		return NULL;
	}
	if (!json_object_object_get_ex(response, "ok", &ok) || !json_object_get_boolean(ok)) {
		struct json_object *error;

		fprintf(stderr, "vgpuctl: vgpud: %s\n",
		        json_object_object_get_ex(response, "error", &error)
		                ? json_object_get_string(error)
		                : "request failed without a reason");
		json_object_put(response);
		*exit_status = EXIT_REFUSED;
		return NULL;
	}
	return response;
}

static struct json_object *command(const char *name)
{
	struct json_object *request = json_object_new_object();

	json_object_object_add(request, "command", json_object_new_string(name));
	return request;
}

static uint64_t get_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	               ? json_object_get_string(v)
	               : "?";
}

static void print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* -------------------------------------------------------------- status */

/* The response of "list" reshaped for --json: {"gpu", "vms"}. */
static struct json_object *status_document(struct json_object *response)
{
	struct json_object *doc = json_object_new_object(), *v;

	if (json_object_object_get_ex(response, "gpu", &v))
		json_object_object_add(doc, "gpu", json_object_get(v));
	if (json_object_object_get_ex(response, "vms", &v))
		json_object_object_add(doc, "vms", json_object_get(v));
	return doc;
}

static void print_status_table(struct json_object *response, FILE *out)
{
	static const char *const header[] = { "VM", "PROFILE", "WEIGHT", "ALLOCATED", "RESIDENT",
		                              "EVICTED", "VRAM%", "FAIR SHARE", "EVICTIONS",
		                              "RETURNS", "GPU TIME", "GPU%", "SCHEDULER",
		                              "STATE" };
	struct json_object *gpu = NULL, *vms = NULL;
	char a[TABLE_CELL], b[TABLE_CELL], c[TABLE_CELL], d[TABLE_CELL];
	struct table table;
	uint64_t vram;
	size_t i, n;

	json_object_object_get_ex(response, "gpu", &gpu);
	json_object_object_get_ex(response, "vms", &vms);
	vram = get_u64(gpu, "vram");
	n = vms ? json_object_array_length(vms) : 0;
	format_size(a, vram);
	format_size(b, get_u64(gpu, "free"));
	format_size(c, get_u64(gpu, "chunk"));
	format_size(d, get_u64(gpu, "evicted"));
	fprintf(out, "GPU %s: %s VRAM, %s free, %s chunks, policy %s; %zu vGPU%s, %s evicted\n",
	        get_str(gpu, "hal"), a, b, c, get_str(gpu, "policy"), n, n == 1 ? "" : "s", d);
	if (table_init(&table, 14, header, 0x3))
		return;
	for (i = 0; i < n; i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i), *share;
		uint64_t resident = get_u64(vm, "resident");

		if (table_row(&table))
			break;
		table_cell(&table, 0, "%s", get_str(vm, "name"));
		table_cell(&table, 1, "%s", get_str(vm, "profile"));
		table_cell(&table, 2, "%llu", (unsigned long long)get_u64(vm, "weight"));
		format_size(a, get_u64(vm, "allocated"));
		table_cell(&table, 3, "%s", a);
		format_size(a, resident);
		table_cell(&table, 4, "%s", a);
		format_size(a, get_u64(vm, "evicted"));
		table_cell(&table, 5, "%s", a);
		table_cell(&table, 6, "%.1f", vram ? 100.0 * (double)resident / (double)vram : 0.0);
		format_size(a, get_u64(vm, "fair_share"));
		table_cell(&table, 7, "%s", a);
		table_cell(&table, 8, "%llu", (unsigned long long)get_u64(vm, "evictions"));
		table_cell(&table, 9, "%llu", (unsigned long long)get_u64(vm, "returns"));
		table_cell(&table, 10, "%.3f s", get_u64(vm, "gpu_time_ns") / 1e9);
		if (json_object_object_get_ex(vm, "gpu_time_share", &share) && share)
			table_cell(&table, 11, "%.1f%%", 100.0 * json_object_get_double(share));
		else
			table_cell(&table, 11, "-");
		table_cell(&table, 12, "%s", get_str(vm, "scheduler"));
		table_cell(&table, 13, "%s", get_str(vm, "scheduling"));
	}
	table_print(&table, out);
	table_fini(&table);
}

static int cmd_status(bool json)
{
	int status = 0;
	struct json_object *response = call(command("list"), &status);

	if (!response)
		return status;
	if (json) {
		struct json_object *doc = status_document(response);

		print_json(doc);
		json_object_put(doc);
	} else {
		print_status_table(response, stdout);
	}
	json_object_put(response);
	return 0;
}

static int cmd_watch(double interval, long count)
{
	bool tty = isatty(STDOUT_FILENO);
	long i;

	for (i = 0; count < 0 || i < count; i++) {
		struct json_object *response;
		int status = 0;
		time_t now = time(NULL);
		char stamp[32];

		if (i) {
			struct timespec pause = { (time_t)interval,
				                  (long)((interval - (double)(time_t)interval) * 1e9) };

			nanosleep(&pause, NULL);
		}
		response = call(command("list"), &status);
		if (!response)
			return status;
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
		if (tty)
			printf("\033[H\033[2J");
		printf("vgpuctl watch — %s (every %gs)\n", stamp, interval);
		print_status_table(response, stdout);
		if (!tty)
			printf("\n");
		fflush(stdout);
		json_object_put(response);
	}
	return 0;
}

static int cmd_types(bool json)
{
	static const char *const header[] = { "PROFILE", "WEIGHT", "CAP", "MAX", "ATTACHED",
		                              "AVAILABLE" };
	struct json_object *response, *profiles;
	struct table table;
	int status = 0;
	size_t i, n;

	response = call(command("types"), &status);
	if (!response)
		return status;
	if (json) {
		print_json(response);
		json_object_put(response);
		return 0;
	}
	json_object_object_get_ex(response, "profiles", &profiles);
	n = profiles ? json_object_array_length(profiles) : 0;
	if (table_init(&table, 6, header, 0x1)) {
		json_object_put(response);
		return EXIT_REFUSED;
	}
	for (i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(profiles, i), *available;
		char cap[TABLE_CELL];
		uint64_t max = get_u64(p, "max_instances");

		table_row(&table);
		table_cell(&table, 0, "%s%s", get_str(p, "name"),
		           !strcmp(get_str(p, "name"), get_str(response, "default")) ? " (default)"
		                                                                      : "");
		table_cell(&table, 1, "%llu", (unsigned long long)get_u64(p, "weight"));
		if (get_u64(p, "cap"))
			format_size(cap, get_u64(p, "cap"));
		else
			strcpy(cap, "none");
		table_cell(&table, 2, "%s", cap);
		if (max)
			table_cell(&table, 3, "%llu", (unsigned long long)max);
		else
			table_cell(&table, 3, "any");
		table_cell(&table, 4, "%llu", (unsigned long long)get_u64(p, "instances"));
		if (json_object_object_get_ex(p, "available", &available) && available)
			table_cell(&table, 5, "%llu",
			           (unsigned long long)json_object_get_uint64(available));
		else
			table_cell(&table, 5, "unlimited");
	}
	table_print(&table, stdout);
	table_fini(&table);
	json_object_put(response);
	return 0;
}

static bool parse_count(const char *text, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!text || !*text || *text == '-')
		return false;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static int cmd_set_weight(int argc, char **argv)
{
	struct json_object *request, *response;
	uint64_t weight;
	int status = 0;

	if (argc != 3)
		return usage_error("set-weight needs a VM name and a weight%s", "");
	if (!parse_count(argv[2], 1000000, &weight) || !weight)
		return usage_error("weight '%s' is not a whole number from 1 to 1000000", argv[2]);
	request = command("set-weight");
	json_object_object_add(request, "vm", json_object_new_string(argv[1]));
	json_object_object_add(request, "weight", json_object_new_uint64(weight));
	response = call(request, &status);
	if (!response)
		return status;
	printf("%s: weight %llu\n", argv[1], (unsigned long long)weight);
	json_object_put(response);
	return 0;
}

static int cmd_set_scheduler(int argc, char **argv)
{
	struct json_object *request, *response;
	int status = 0;

	if (argc != 3)
		return usage_error("set-scheduler needs a VM name and a mode (best-effort, "
		                   "equal-share, weighted or fixed-share)%s", "");
	request = command("set-scheduler");
	json_object_object_add(request, "vm", json_object_new_string(argv[1]));
	json_object_object_add(request, "mode", json_object_new_string(argv[2]));
	response = call(request, &status);
	if (!response)
		return status;
	printf("%s: scheduler %s\n", argv[1], argv[2]);
	json_object_put(response);
	return 0;
}

static int cmd_set_profile(int argc, char **argv)
{
	static const struct option options[] = {
		{ "weight", required_argument, NULL, 'w' },
		{ "cap", required_argument, NULL, 'c' },
		{ "max-instances", required_argument, NULL, 'm' },
		{ 0 },
	};
	struct json_object *request, *response, *profile;
	uint64_t v;
	int opt, status = 0;

	request = command("set-profile");
	/* 0, not 1: glibc re-reads the optstring, so options may follow the
	 * profile name (the global options were parsed with "+") */
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'w':
			if (!parse_count(optarg, 1000000, &v) || !v) {
				json_object_put(request);
				return usage_error("--weight '%s' is not 1..1000000", optarg);
			}
			json_object_object_add(request, "weight", json_object_new_uint64(v));
			break;
		case 'c':
			json_object_object_add(request, "cap", json_object_new_string(optarg));
			break;
		case 'm':
			if (!parse_count(optarg, UINT32_MAX, &v)) {
				json_object_put(request);
				return usage_error("--max-instances '%s' is not a whole number", optarg);
			}
			json_object_object_add(request, "max_instances", json_object_new_uint64(v));
			break;
		default:
			json_object_put(request);
			return usage_error("%s", "set-profile takes --weight, --cap, --max-instances");
		}
	}
	if (optind != argc - 1) {
		json_object_put(request);
		return usage_error("set-profile needs one profile name%s", "");
	}
	json_object_object_add(request, "profile", json_object_new_string(argv[optind]));
	response = call(request, &status);
	if (!response)
		return status;
	if (json_object_object_get_ex(response, "profile", &profile))
		print_json(profile);
	json_object_put(response);
	return 0;
}

/* save VM FILE / restore FILE: the VM's vGPU state to a file and back
 * (CONTROL_API.md); FILE is opened by vgpud, so give an absolute path. */
static int cmd_save_restore(const char *name, int argc, char **argv)
{
	bool save = !strcmp(name, "save");
	struct json_object *request, *response;
	int status = 0;

	if (argc != (save ? 3 : 2))
		return usage_error("usage: vgpuctl %s", save ? "save VM FILE" : "restore FILE");
	request = command(name);
	if (save)
		json_object_object_add(request, "vm", json_object_new_string(argv[1]));
	json_object_object_add(request, "file", json_object_new_string(argv[save ? 2 : 1]));
	response = call(request, &status);
	if (!response)
		return status;
	print_json(response);
	json_object_put(response);
	return status;
}

static int cmd_simple(const char *name, const char *vm, bool json, bool check)
{
	struct json_object *request = command(name), *response;
	int status = 0;

	if (vm)
		json_object_object_add(request, "vm", json_object_new_string(vm));
	if (check)
		json_object_object_add(request, "invariants", json_object_new_boolean(1));
	response = call(request, &status);
	if (!response)
		return status;
	if (!strcmp(name, "health") && !json) {
		struct json_object *inv;

		printf("vgpud %s: %s; up %llus, %llu vGPU%s attached",
		       get_str(response, "version"), get_str(response, "status"),
		       (unsigned long long)get_u64(response, "uptime_s"),
		       (unsigned long long)get_u64(response, "vms"),
		       get_u64(response, "vms") == 1 ? "" : "s");
		if (json_object_object_get_ex(response, "invariants", &inv))
			printf("; invariants %s", json_object_get_string(inv));
		printf("\n");
		status = strcmp(get_str(response, "status"), "ok") ? EXIT_REFUSED : 0;
	} else if (!strcmp(name, "config")) {
		struct json_object *config;

		if (json_object_object_get_ex(response, "config", &config))
			print_json(config);
	} else if (!strcmp(name, "stats")) {
		struct json_object *o;

		if (json_object_object_get_ex(response, "vm", &o))
			print_json(o);
	} else {
		print_json(response);
	}
	json_object_put(response);
	return status;
}

/* The Prometheus text, as vgpud's HTTP endpoint serves it. */
static int cmd_metrics(void)
{
	struct json_object *response, *text;
	int status = 0;

	response = call(command("metrics"), &status);
	if (!response)
		return status;
	if (!json_object_object_get_ex(response, "text", &text) ||
	    !json_object_is_type(text, json_type_string)) {
		fprintf(stderr, "vgpuctl: vgpud's answer to 'metrics' has no text; is vgpud "
		        "older than this vgpuctl?\n");
		json_object_put(response);
		return EXIT_REFUSED;
	}
	fwrite(json_object_get_string(text), 1, (size_t)json_object_get_string_len(text), stdout);
	json_object_put(response);
	return 0;
}

/* Options after a command: --json, --interval S, --count N, --check. */
struct sub_options {
	bool json, check;
	double interval;
	long count;
};

static int parse_sub_options(int argc, char **argv, struct sub_options *o, int *rest)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "check", no_argument, NULL, 'c' },
		{ 0 },
	};
	char *end;
	int opt;

	o->json = o->check = false;
	o->interval = 1.0;
	o->count = -1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+ji:n:", options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			o->json = true;
			break;
		case 'c':
			o->check = true;
			break;
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval > 0.0) || o->interval > 86400.0)
				return usage_error("--interval '%s' is not a number of seconds > 0",
				                   optarg);
			break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count < 1)
				return usage_error("--count '%s' is not a whole number >= 1", optarg);
			break;
		default:
			return usage_error("%s", "unknown option");
		}
	}
	*rest = optind;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sub_options sub;
	const char *name;
	int opt, rest = 0, err;

	while ((opt = getopt_long(argc, argv, "+s:h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_option = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "vgpuctl: see 'vgpuctl --help'\n");
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[optind];
	argc -= optind;
	argv += optind;
	if (!strcmp(name, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "save") || !strcmp(name, "restore"))
		return cmd_save_restore(name, argc, argv);
	if (!strcmp(name, "set-weight"))
		return cmd_set_weight(argc, argv);
	if (!strcmp(name, "set-scheduler"))
		return cmd_set_scheduler(argc, argv);
	if (!strcmp(name, "set-profile"))
		return cmd_set_profile(argc, argv);
	if (!strcmp(name, "xml"))
		return vgpuctl_xml_command(argc, argv);
	err = parse_sub_options(argc, argv, &sub, &rest);
	if (err)
		return err;
	if (!strcmp(name, "stats")) {
		if (rest != argc - 1)
			return usage_error("stats needs one VM name%s", "");
		return cmd_simple("stats", argv[rest], true, false);
	}
	if (rest != argc)
		return usage_error("unexpected argument '%s'", argv[rest]);
	if (!strcmp(name, "status"))
		return cmd_status(sub.json);
	if (!strcmp(name, "watch"))
		return cmd_watch(sub.interval, sub.count);
	if (!strcmp(name, "types"))
		return cmd_types(sub.json);
	if (!strcmp(name, "health"))
		return cmd_simple("health", NULL, sub.json, sub.check);
	if (!strcmp(name, "config"))
		return cmd_simple("config", NULL, true, false);
	if (!strcmp(name, "reload"))
		return cmd_simple("reload", NULL, true, false);
	if (!strcmp(name, "metrics"))
		return cmd_metrics();
	return usage_error("unknown command '%s'", name);
}
