// SPDX-License-Identifier: MIT
/*
 * daemon-bench - vgpud's costs, as printed figures:
 *
 *   1. mailbox round trips through the local transport without memory
 *      pressure: ALLOC (and FREE, STATS) latency, p50/p99, from writing the
 *      request slot to seeing the response after the interrupt;
 *   2. `status` on the control socket while hostile control clients attack
 *      it (one pipelining thousands of requests and never reading, ten
 *      trickling a request line byte by byte), against the same probe of
 *      an idle control socket: p50/p99 in ms (status_ms_under_attack_p99;
 *      issue 24's goal is 100 ms);
 *   3. 64 tenants attached (each with a buffer and a channel window): vgpud's
 *      resident memory and CPU time per tenant, while attaching and while
 *      idle.
 *
 * vgpud runs as a child process (VGPUD_PATH, or --vgpud PATH / argv[1]) on
 * sockets in a temporary directory; the tenants are this process, through
 * the client library (vgpu/local_device.h). The round trips run in rounds
 * (ALLOC, FREE, STATS interleaved); each round's p50 and p99 are summarised
 * over rounds: median (min..max). --json FILE writes the figures as one
 * JSON object (bench-common.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "vgpu/abi/device_abi.h"
#include "vgpu/local_device.h"
#include "vgpu/util.h"

#define TENANTS 64
#define ROUND_TRIPS 20000
#define ROUNDS 5 /* ROUND_TRIPS / ROUNDS per round */

struct daemon_bench_tenant {
	struct vgpu_local_device *dev;
	uint8_t *bar2;
	uint32_t head, tail, seq;
};

static struct vgpu_mailbox_header *header(struct daemon_bench_tenant *t)
{
	return (struct vgpu_mailbox_header *)(t->bar2 + VGPU_MAILBOX_OFFSET);
}

/* One request, waiting for its response on the interrupt. */
static int call(struct daemon_bench_tenant *t, uint16_t opcode, const void *payload, uint16_t size,
		struct vgpu_response *response)
{
	struct vgpu_request *slot = (void *)(t->bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
	                                     (t->head % VGPU_MAILBOX_ENTRIES) *
	                                             VGPU_MAILBOX_SLOT_SIZE);

	memset(slot, 0, sizeof(*slot));
	slot->opcode = opcode;
	slot->payload_size = size;
	slot->seq = ++t->seq;
	if (size) /* requests without a payload pass NULL */
		memcpy(slot->payload, payload, size);
	__atomic_store_n(&header(t)->req_head, ++t->head, __ATOMIC_RELEASE);
	vgpu_local_device_reg_write(t->dev, VGPU_REG_MAILBOX_DOORBELL, 1);
	while (__atomic_load_n(&header(t)->resp_head, __ATOMIC_ACQUIRE) == t->tail)
		if (vgpu_local_device_wait_irq(t->dev, 5000) < 0)
			return -ENODEV;
	memcpy(response, t->bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
	                         (t->tail % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE,
	       sizeof(*response));
	__atomic_store_n(&header(t)->resp_tail, ++t->tail, __ATOMIC_RELEASE);
	return (int)response->status;
}

static int open_tenant(const char *socket, const char *name, struct daemon_bench_tenant *t)
{
	struct vgpu_local_device_config config = { .socket_path = socket, .vm_name = name };
	struct vgpu_hello_request hello = { VGPU_ABI_VERSION, 0 };
	struct vgpu_response response;
	struct vgpu_error error = VGPU_ERROR_INIT;
	int err;

	memset(t, 0, sizeof(*t));
	err = vgpu_local_device_open(&config, &t->dev, &error);
	if (err) {
		fprintf(stderr, "daemon-bench: %s\n", vgpu_error_msg(&error));
		return err;
	}
	t->bar2 = vgpu_local_device_bar2(t->dev);
	return call(t, VGPU_OP_HELLO, &hello, sizeof(hello), &response);
}

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* samples: ROUNDS rounds of n / ROUNDS; each round's p50 and p99 (us),
 * printed as median (min..max) over rounds, and as json KEY_p50_us and
 * KEY_p99_us. */
static void report(struct json_object *json, const char *what, const char *key,
                   uint64_t *samples, size_t n)
{
	double p50[ROUNDS], p99[ROUNDS], mean[ROUNDS], max = 0;
	size_t per_round = n / ROUNDS, i;
	char name[64];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t *round = samples + (size_t)r * per_round, sum = 0;

		qsort(round, per_round, sizeof(*round), compare);
		for (i = 0; i < per_round; i++)
			sum += round[i];
		p50[r] = round[per_round / 2] / 1e3;
		p99[r] = round[per_round * 99 / 100] / 1e3;
		mean[r] = (double)sum / (double)per_round / 1e3;
		if (round[per_round - 1] / 1e3 > max)
			max = round[per_round - 1] / 1e3;
	}
	printf("  %-6s p50 %s us   p99 %s us   mean %s us   max %.1f us\n", what,
	       SPREAD("%.1f", spread_of(p50, ROUNDS)), SPREAD("%.1f", spread_of(p99, ROUNDS)),
	       SPREAD("%.1f", spread_of(mean, ROUNDS)), max);
	snprintf(name, sizeof(name), "%s_p50_us", key);
	json_spread(json, name, spread_of(p50, ROUNDS));
	snprintf(name, sizeof(name), "%s_p99_us", key);
	json_spread(json, name, spread_of(p99, ROUNDS));
	snprintf(name, sizeof(name), "%s_mean_us", key);
	json_spread(json, name, spread_of(mean, ROUNDS));
	snprintf(name, sizeof(name), "%s_max_us", key);
	json_number(json, name, max);
}

/* vgpud's resident set (KiB) and CPU time (ns) from /proc. */
static void sample(pid_t pid, uint64_t *rss_kib, uint64_t *cpu_ns)
{
	char path[64], line[256];
	unsigned long utime = 0, stime = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	*rss_kib = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			*rss_kib = strtoull(line + 6, NULL, 10);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f && fgets(line, sizeof(line), f)) {
		char *p = strrchr(line, ')');

		/* fields after the command: state ppid ... utime(14) stime(15) */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
		                &stime) != 2)
			utime = stime = 0;
	}
	if (f)
		fclose(f);
	*cpu_ns = (uint64_t)(utime + stime) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static bool wait_for_socket(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int i;

	strcpy(addr.sun_path, path);
	for (i = 0; i < 500; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool ok = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;

		close(fd);
		if (ok)
			return true;
		usleep(10000);
	}
	return false;
}

#define STATUS_PROBES 100 /* per round */
#define TRICKLERS 10

static int connect_control(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (sock >= 0 && connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(sock);
		return -1;
	}
	return sock;
}

/* One status request on a fresh connection, as vgpuctl makes it: its
 * round trip in ns, or 0 when it failed. */
static uint64_t status_probe(const char *path)
{
	static const char req[] = "{\"command\":\"status\"}\n";
	uint64_t t0 = vgpu_monotonic_ns();
	char buf[65536];
	size_t len = 0;
	int sock = connect_control(path);
	bool ok = false;

	if (sock < 0)
		return 0;
	if (write(sock, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
		ssize_t n;

		while (len < sizeof(buf) && (n = read(sock, buf + len, sizeof(buf) - len)) > 0) {
			len += (size_t)n;
			if (memchr(buf, '\n', len)) {
				ok = true;
				break;
			}
		}
	}
	close(sock);
	return ok ? vgpu_monotonic_ns() - t0 : 0;
}

/* ROUNDS rounds of STATUS_PROBES probes 10 ms apart; in each, when attack,
 * a fresh flooder (requests pipelined until the socket takes no more,
 * never read) and TRICKLERS connections trickling a byte per probe. Each
 * round's p50 and p99 in ms. false: a probe failed. */
static bool status_rounds(const char *path, bool attack, double *p50, double *p99)
{
	static const char req[] = "{\"command\":\"status\"}\n";
	uint64_t ns[STATUS_PROBES];

	for (int r = 0; r < ROUNDS; r++) {
		int flood = -1, trickle[TRICKLERS];

		for (int k = 0; k < TRICKLERS; k++)
			trickle[k] = -1;
		if (attack) {
			char batch[4096];
			size_t n = 0;

			flood = connect_control(path);
			while (n + sizeof(req) - 1 <= sizeof(batch)) {
				memcpy(batch + n, req, sizeof(req) - 1);
				n += sizeof(req) - 1;
			}
			while (flood >= 0 && send(flood, batch, n, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
				;
			for (int k = 0; k < TRICKLERS; k++)
				trickle[k] = connect_control(path);
		}
		for (int i = 0; i < STATUS_PROBES; i++) {
			for (int k = 0; k < TRICKLERS; k++)
				if (trickle[k] >= 0 &&
				    send(trickle[k], "{", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
					close(trickle[k]);
					trickle[k] = connect_control(path);
				}
			ns[i] = status_probe(path);
			if (!ns[i])
				return false;
			usleep(10000);
		}
		if (flood >= 0)
			close(flood);
		for (int k = 0; k < TRICKLERS; k++)
			if (trickle[k] >= 0)
				close(trickle[k]);
		qsort(ns, STATUS_PROBES, sizeof(ns[0]), compare);
		p50[r] = ns[STATUS_PROBES / 2] / 1e6;
		p99[r] = ns[STATUS_PROBES * 99 / 100] / 1e6;
	}
	return true;
}

static struct spread single(double value)
{
	return (struct spread){ value, value, value };
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "vgpud", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *vgpud = VGPUD_PATH, *json_path = NULL;
	struct json_object *json = NULL;
	int opt;
	char dir[] = "/tmp/daemon-bench-XXXXXX", socket_path[108], control_path[108];
	static uint64_t alloc_ns[ROUND_TRIPS], free_ns[ROUND_TRIPS], stats_ns[ROUND_TRIPS];
	static struct daemon_bench_tenant tenants[TENANTS];
	uint64_t rss0, cpu0, rss1, cpu1, rss2, cpu2, rss3, cpu3, t0, t1, idle_cpu;
	struct vgpu_response response;
	struct daemon_bench_tenant t;
	pid_t pid;
	int i, status;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json_path = optarg;
			break;
		case 'v':
			vgpud = optarg;
			break;
		case 'h':
			printf("Usage: daemon-bench [--json FILE] [--vgpud PATH | PATH]\n");
			return 0;
		default:
			fprintf(stderr, "Usage: daemon-bench [--json FILE] [--vgpud PATH | PATH]\n");
			return 2;
		}
	}
	if (optind < argc)
		vgpud = argv[optind];
	if (json_path)
		json = json_object_new_object();
	json_number(json, "daemon_bench_load_average_before", load_average_1m());
	if (!mkdtemp(dir)) {
		perror("daemon-bench: mkdtemp");
		return 1;
	}
	snprintf(socket_path, sizeof(socket_path), "%s/vgpud.sock", dir);
	snprintf(control_path, sizeof(control_path), "%s/control.sock", dir);
	pid = fork();
	if (pid == 0) {
		execl(vgpud, vgpud, "--socket", socket_path, "--control-socket", control_path,
		      "--vram", "2G", "--chunk-size", "4M", "--max-address-spaces", "80",
		      "--max-channels", "128", "--log-level", "warn", "--profile",
		      "bench:weight=1,cap=0,max_instances=0", "--default-profile", "bench",
		      (char *)NULL);
		perror("daemon-bench: exec vgpud");
		_exit(127);
	}
	if (!wait_for_socket(control_path)) {
		fprintf(stderr, "daemon-bench: vgpud (%s) did not start\n", vgpud);
		kill(pid, SIGKILL);
		return 1;
	}
	printf("daemon-bench: vgpud pid %d, simgpu 2 GiB VRAM, 4 MiB chunks, local transport\n",
	       pid);

	/* 1. round trips without pressure */
	if (open_tenant(socket_path, "latency", &t) != VGPU_STATUS_OK)
		goto fail;
	for (i = 0; i < ROUND_TRIPS; i++) {
		struct vgpu_alloc_request alloc = { 64 << 10, 7, 0 };
		struct vgpu_free_request free_request = { 0, 0 };
		struct vgpu_alloc_response allocated;

		t0 = vgpu_monotonic_ns();
		if (call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), &response) != VGPU_STATUS_OK)
			goto fail;
		t1 = vgpu_monotonic_ns();
		alloc_ns[i] = t1 - t0;
		memcpy(&allocated, response.payload, sizeof(allocated));
		free_request.handle = allocated.handle;
		t0 = vgpu_monotonic_ns();
		if (call(&t, VGPU_OP_FREE, &free_request, sizeof(free_request), &response) !=
		    VGPU_STATUS_OK)
			goto fail;
		t1 = vgpu_monotonic_ns();
		free_ns[i] = t1 - t0;
		t0 = vgpu_monotonic_ns();
		call(&t, VGPU_OP_STATS, NULL, 0, &response);
		stats_ns[i] = vgpu_monotonic_ns() - t0;
	}
	printf("\nmailbox round trips, no memory pressure (64 KiB buffers; request slot ->\n"
	       "doorbell (eventfd) -> vgpud worker -> core -> response -> interrupt (eventfd));\n"
	       "%d rounds of %d, each round's figure as median (min..max) over rounds:\n",
	       ROUNDS, ROUND_TRIPS / ROUNDS);
	report(json, "ALLOC", "daemon_alloc", alloc_ns, ROUND_TRIPS);
	report(json, "FREE", "daemon_free", free_ns, ROUND_TRIPS);
	report(json, "STATS", "daemon_stats", stats_ns, ROUND_TRIPS);
	vgpu_local_device_close(t.dev);
	usleep(700000); /* the connection is reaped */

	/* 2. status under attack, against the idle control socket */
	{
		double idle50[ROUNDS], idle99[ROUNDS], att50[ROUNDS], att99[ROUNDS];

		if (!status_rounds(control_path, false, idle50, idle99) ||
		    !status_rounds(control_path, true, att50, att99))
			goto fail;
		printf("\nstatus on the control socket (connect, request, answer), %d rounds of %d "
		       "probes,\nmedian (min..max) over rounds:\n", ROUNDS, STATUS_PROBES);
		printf("  idle           p50 %s ms   p99 %s ms\n",
		       SPREAD("%.2f", spread_of(idle50, ROUNDS)), SPREAD("%.2f", spread_of(idle99, ROUNDS)));
		printf("  under attack   p50 %s ms   p99 %s ms   (a client pipelining requests it\n"
		       "                 never reads, %d trickling a request line)\n",
		       SPREAD("%.2f", spread_of(att50, ROUNDS)), SPREAD("%.2f", spread_of(att99, ROUNDS)),
		       TRICKLERS);
		json_spread(json, "status_ms_idle_p50", spread_of(idle50, ROUNDS));
		json_spread(json, "status_ms_idle_p99", spread_of(idle99, ROUNDS));
		json_spread(json, "status_ms_under_attack_p50", spread_of(att50, ROUNDS));
		json_spread(json, "status_ms_under_attack_p99", spread_of(att99, ROUNDS));
	}

	/* 3. 64 tenants */
	sample(pid, &rss0, &cpu0);
	t0 = vgpu_monotonic_ns();
	for (i = 0; i < TENANTS; i++) {
		struct vgpu_alloc_request alloc = { 4 << 20, 7, 0 };
		struct vgpu_channel_create_request create = { 0, 0 };
		char name[32];

		snprintf(name, sizeof(name), "tenant-%02d", i);
		if (open_tenant(socket_path, name, &tenants[i]) != VGPU_STATUS_OK ||
		    call(&tenants[i], VGPU_OP_ALLOC, &alloc, sizeof(alloc), &response) !=
		            VGPU_STATUS_OK ||
		    call(&tenants[i], VGPU_OP_CHANNEL_CREATE, &create, sizeof(create), &response) !=
		            VGPU_STATUS_OK)
			goto fail;
	}
	t1 = vgpu_monotonic_ns();
	sample(pid, &rss1, &cpu1);
	sleep(5);
	sample(pid, &rss2, &cpu2);
	idle_cpu = cpu2 - cpu1;
	printf("\n%d tenants attached, each with a 4 MiB buffer and a channel window:\n",
	       TENANTS);
	printf("  vgpud RSS       %llu KiB before, %llu KiB after: %.1f KiB per tenant\n",
	       (unsigned long long)rss0, (unsigned long long)rss1,
	       (double)(rss1 - rss0) / TENANTS);
	printf("  attach          %.2f ms per tenant (wall), vgpud CPU %.2f ms per tenant\n",
	       (double)(t1 - t0) / 1e6 / TENANTS, (double)(cpu1 - cpu0) / 1e6 / TENANTS);
	printf("  idle, 5 s       vgpud CPU %.2f ms total = %.3f%% of a core (%.4f%% per tenant)\n",
	       (double)(cpu2 - cpu1) / 1e6, (double)(cpu2 - cpu1) / 5e9 * 100.0,
	       (double)(cpu2 - cpu1) / 5e9 * 100.0 / TENANTS);
	/* the same without channel windows: what remains is vgpud's own */
	for (i = 0; i < TENANTS; i++) {
		struct vgpu_channel_destroy_request destroy = { 0, 0 };

		if (call(&tenants[i], VGPU_OP_CHANNEL_DESTROY, &destroy, sizeof(destroy),
		         &response) != VGPU_STATUS_OK)
			goto fail;
	}
	sample(pid, &rss2, &cpu2);
	sleep(5);
	sample(pid, &rss3, &cpu3);
	printf("  idle, 5 s, no channels: vgpud CPU %.2f ms total = %.3f%% of a core\n"
	       "                  (with channels, the GPU's PFIFO polls their control pages)\n",
	       (double)(cpu3 - cpu2) / 1e6, (double)(cpu3 - cpu2) / 5e9 * 100.0);
	printf("  vgpud threads   %d per tenant (connection, mailbox worker)\n", 2);
	/* One set of 64 tenants: one round (min = max = the figure). */
	json_spread(json, "tenants_64_rss_kib_per_tenant", single((double)(rss1 - rss0) / TENANTS));
	json_spread(json, "tenants_64_attach_ms_per_tenant",
	            single((double)(t1 - t0) / 1e6 / TENANTS));
	json_spread(json, "tenants_64_attach_cpu_ms_per_tenant",
	            single((double)(cpu1 - cpu0) / 1e6 / TENANTS));
	json_number(json, "tenants_64_rss_kib_before", (double)rss0);
	json_number(json, "tenants_64_rss_kib_after", (double)rss1);
	json_number(json, "tenants_64_idle_cpu_percent", (double)(idle_cpu) / 5e9 * 100.0);
	json_number(json, "tenants_64_idle_cpu_percent_no_channels",
	            (double)(cpu3 - cpu2) / 5e9 * 100.0);
	for (i = 0; i < TENANTS; i++)
		vgpu_local_device_close(tenants[i].dev);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	printf("\nvgpud exited %s\n", WIFEXITED(status) && !WEXITSTATUS(status) ? "cleanly" : "badly");
	rmdir(dir);
	json_number(json, "daemon_bench_load_average_after", load_average_1m());
	if (json_write(json, json_path, "daemon-bench"))
		return 1;
	json_object_put(json);
	return 0;

fail:
	fprintf(stderr, "daemon-bench: a request failed\n");
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	return 1;
}
