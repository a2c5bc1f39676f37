// SPDX-License-Identifier: MIT
/* harness.c - in-process vgpud and mailbox tenants for the tests. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "log.h"
#include "registry.h"

void harness_config(struct harness *h)
{
	struct vgpud_config *c = &h->config;

	memset(h, 0, sizeof(*h));
	strcpy(h->dir, "/tmp/vgpud-test-XXXXXX");
	assert_non_null(mkdtemp(h->dir));
	vgpud_config_defaults(c);
	c->gpu.vram_bytes = 64ull << 20;
	c->gpu.reserved_vram_bytes = 4ull << 20;
	c->chunk_bytes = 1ull << 20;
	c->return_interval_ms = 10;
	c->host_cache_bytes = 0; /* every host buffer (a memfd) is freed at once */
	c->log_level = getenv("VGPUD_TEST_LOG") ? VGPUD_LOG_DEBUG : VGPUD_LOG_ERROR;
	snprintf(c->socket_path, sizeof(c->socket_path), "%s/vgpud.sock", h->dir);
	snprintf(c->control_path, sizeof(c->control_path), "%s/control.sock", h->dir);
	c->profile_count = 3;
	c->profiles[0] = (struct vgpud_profile_spec){ "small", 1, 32ull << 20, 4, "" };
	c->profiles[1] = (struct vgpud_profile_spec){ "big", 2, 0, 0, "" };
	c->profiles[2] = (struct vgpud_profile_spec){ "one", 1, 0, 1, "" };
	strcpy(c->default_profile, "small");
	c->swap_timeout_ms = 2000;
	strcpy(c->allowed_profiles, "*"); /* tenants of every profile */
}

void harness_start(struct harness *h)
{
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (vgpud_create(&h->config, false, &h->d, &why))
		fail_msg("vgpud did not start: %s", vgpu_error_msg(&why));
	assert_int_equal(vgpud_start(h->d), 0);
}

void harness_stop(struct harness *h)
{
	char path[160];

	if (h->d) {
		vgpud_stop(h->d);
		vgpud_destroy(h->d);
		h->d = NULL;
	}
	snprintf(path, sizeof(path), "%s/vgpud.conf", h->dir);
	unlink(path);
	rmdir(h->dir);
}

int harness_setup(void **state)
{
	static struct harness h;

	harness_config(&h);
	harness_start(&h);
	*state = &h;
	return 0;
}

int harness_teardown(void **state)
{
	harness_stop(*state);
	return 0;
}

bool harness_wait_vms(struct harness *h, unsigned vms, int timeout_ms)
{
	int waited;

	for (waited = 0; waited <= timeout_ms; waited += 5) {
		size_t count;

		vgpu_mutex_lock(&h->d->registry.lock);
		count = h->d->registry.count;
		vgpu_mutex_unlock(&h->d->registry.lock);
		if (count == vms)
			return true;
		usleep(5000);
	}
	return false;
}

int tenant_open(struct harness *h, struct tenant *t, const char *name, const char *profile)
{
	struct vgpu_local_device_config config = {
		.socket_path = h->config.socket_path,
		.vm_name = name,
		.profile = profile,
	};
	int err;

	memset(t, 0, sizeof(*t));
	err = vgpu_local_device_open(&config, &t->dev, &t->error);
	if (err)
		return err;
	t->bar2 = vgpu_local_device_bar2(t->dev);
	t->seq = 100;
	return 0;
}

void tenant_close(struct tenant *t)
{
	vgpu_local_device_close(t->dev);
	t->dev = NULL;
}

struct vgpu_mailbox_header *tenant_header(struct tenant *t)
{
	return (struct vgpu_mailbox_header *)(t->bar2 + VGPU_MAILBOX_OFFSET);
}

uint32_t tenant_put(struct tenant *t, const struct vgpu_request *request)
{
	uint8_t *slot = t->bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
	                (size_t)(t->req_head % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;

	memcpy(slot, request, sizeof(*request));
	t->req_head++;
	__atomic_store_n(&tenant_header(t)->req_head, t->req_head, __ATOMIC_RELEASE);
	return request->seq;
}

uint32_t tenant_put_op(struct tenant *t, uint16_t opcode, const void *payload, uint16_t size)
{
	struct vgpu_request request;

	memset(&request, 0, sizeof(request));
	request.opcode = opcode;
	request.payload_size = size;
	request.seq = ++t->seq;
	if (size)
		memcpy(request.payload, payload, size);
	return tenant_put(t, &request);
}

void tenant_kick(struct tenant *t)
{
	vgpu_local_device_reg_write(t->dev, VGPU_REG_MAILBOX_DOORBELL, 1);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tenant_wait(struct tenant *t, unsigned n, struct vgpu_response *out, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	unsigned got = 0;

	while (got < n) {
		uint32_t head = __atomic_load_n(&tenant_header(t)->resp_head, __ATOMIC_ACQUIRE);

		while (t->resp_tail != head && got < n) {
			memcpy(&out[got++],
			       t->bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
			               (size_t)(t->resp_tail % VGPU_MAILBOX_ENTRIES) *
			                       VGPU_MAILBOX_SLOT_SIZE,
			       sizeof(*out));
			t->resp_tail++;
			__atomic_store_n(&tenant_header(t)->resp_tail, t->resp_tail, __ATOMIC_RELEASE);
		}
		if (got == n)
			break;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		vgpu_local_device_wait_irq(t->dev, 50);
	}
	return 0;
}

int tenant_call(struct tenant *t, uint16_t opcode, const void *payload, uint16_t size,
                struct vgpu_response *response)
{
	struct vgpu_response local;
	uint32_t seq;
	int err;

	if (!response)
		response = &local;
	seq = tenant_put_op(t, opcode, payload, size);
	tenant_kick(t);
	err = tenant_wait(t, 1, response, 20000);
	if (err)
		return err;
	assert_int_equal(response->seq, seq);
	assert_int_equal(response->opcode, opcode);
	return (int)response->status;
}

int tenant_hello(struct tenant *t)
{
	struct vgpu_hello_request hello = {
		.abi_version = VGPU_ABI_VERSION,
		.guest_features = VGPU_FEATURE_STATS | VGPU_FEATURE_PRIORITY_HINTS,
	};

	return tenant_call(t, VGPU_OP_HELLO, &hello, sizeof(hello), NULL);
}

int tenant_alloc(struct tenant *t, uint64_t bytes, uint32_t priority, uint32_t *handle,
                 uint64_t *gpu_va)
{
	struct vgpu_alloc_request request = { .bytes = bytes, .priority = priority };
	struct vgpu_response response;
	struct vgpu_alloc_response r;
	int status = tenant_call(t, VGPU_OP_ALLOC, &request, sizeof(request), &response);

	if (status == VGPU_STATUS_OK) {
		assert_int_equal(response.payload_size, sizeof(r));
		memcpy(&r, response.payload, sizeof(r));
		if (handle)
			*handle = r.handle;
		if (gpu_va)
			*gpu_va = r.gpu_va;
	}
	return status;
}

int tenant_free(struct tenant *t, uint32_t handle)
{
	struct vgpu_free_request request = { .handle = handle };

	return tenant_call(t, VGPU_OP_FREE, &request, sizeof(request), NULL);
}

int tenant_channel_create(struct tenant *t, uint32_t entries,
                          struct vgpu_channel_create_response *out)
{
	struct vgpu_channel_create_request request = { .gpfifo_entries = entries };
	struct vgpu_response response;
	int status = tenant_call(t, VGPU_OP_CHANNEL_CREATE, &request, sizeof(request), &response);

	if (status == VGPU_STATUS_OK) {
		assert_int_equal(response.payload_size, sizeof(*out));
		memcpy(out, response.payload, sizeof(*out));
	}
	return status;
}

int tenant_stats(struct tenant *t, struct vgpu_stats_response *out)
{
	struct vgpu_response response;
	int status = tenant_call(t, VGPU_OP_STATS, NULL, 0, &response);

	if (status == VGPU_STATUS_OK)
		memcpy(out, response.payload, sizeof(*out));
	return status;
}

int tenant_module_load(struct tenant *t, uint64_t image_va, uint64_t image_bytes,
                       uint64_t table_va, uint32_t table_bytes,
                       struct vgpu_module_load_response *out)
{
	struct vgpu_module_load_request q = {
		.image_va = image_va, .image_bytes = image_bytes, .table_va = table_va,
		.table_bytes = table_bytes,
	};
	struct vgpu_response response;
	int status = tenant_call(t, VGPU_OP_MODULE_LOAD, &q, sizeof(q), &response);

	memset(out, 0, sizeof(*out));
	if (response.payload_size == sizeof(*out))
		memcpy(out, response.payload, sizeof(*out));
	return status;
}

int tenant_module_unload(struct tenant *t, uint32_t module)
{
	struct vgpu_module_unload_request q = { module, 0 };

	return tenant_call(t, VGPU_OP_MODULE_UNLOAD, &q, sizeof(q), NULL);
}

char *harness_read_file(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long size;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	text = malloc((size_t)size);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*bytes = (size_t)size;
	return text;
}

struct json_object *harness_control(struct harness *h, const char *request)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct json_object *response;

	strcpy(addr.sun_path, h->config.control_path);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(write(sock, request, strlen(request)), (ssize_t)strlen(request));
	assert_int_equal(write(sock, "\n", 1), 1);
	while (!memchr(buf, '\n', len) && (n = read(sock, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(sock);
	buf[len] = '\0';
	assert_non_null(strchr(buf, '\n'));
	response = json_tokener_parse(buf);
	assert_non_null(response);
	return response;
}

void harness_start_two_tenants(struct harness *h, struct tenant *a, struct tenant *b)
{
	harness_start(h);
	assert_int_equal(tenant_open(h, a, "alpha", "small"), 0);
	assert_int_equal(tenant_open(h, b, "beta", "big"), 0);
	assert_int_equal(tenant_hello(a), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(b), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(a, 8u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(b, 40u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	/* beyond VRAM: evictions */
	assert_int_equal(tenant_alloc(b, 24u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
}

void harness_stop_two_tenants(struct harness *h, struct tenant *a, struct tenant *b)
{
	if (a->dev)
		tenant_close(a);
	if (b->dev)
		tenant_close(b);
	harness_stop(h);
}

int count_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *entry;
	int n = 0;

	if (!dir)
		return -1;
	while ((entry = readdir(dir)))
		if (entry->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1; /* the directory's own descriptor */
}

uint64_t test_seed(void)
{
	const char *env = getenv("VGPU_SEED");
	struct timespec now;
	uint64_t seed;

	clock_gettime(CLOCK_REALTIME, &now);
	seed = env ? strtoull(env, NULL, 0)
	           : ((uint64_t)now.tv_sec * 1000003u) ^ (uint64_t)now.tv_nsec ^
	                     ((uint64_t)getpid() << 32);

	printf("# seed %llu (set VGPU_SEED to repeat)\n", (unsigned long long)seed);
	return seed;
}
