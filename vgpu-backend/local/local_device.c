// SPDX-License-Identifier: MIT
/*
 * local_device.c - the frontend of vgpud's local transport: attach over the
 * main socket, BAR0 as register round trips, BAR2 as one reserved mapping,
 * interrupts as eventfds (vgpu/local_device.h, vgpu/abi/local_protocol.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "local_device_internal.h"
#include "local_socket.h"
#include "window_trap.h"

#define ATTACH_TIMEOUT_MS 30000
#define REQUEST_TIMEOUT_MS 30000
#define DETACH_TIMEOUT_MS 60000

static const char *socket_path_of(const struct vgpu_local_device_config *config)
{
	const char *env;

	if (config->socket_path && config->socket_path[0])
		return config->socket_path;
	env = getenv("VGPUD_SOCKET");
	return env && env[0] ? env : VGPU_LOCAL_DEFAULT_SOCKET;
}

static bool name_ok(const char *name, bool allow_empty)
{
	size_t len, i;

	if (!name)
		return allow_empty;
	len = strlen(name);
	if (len >= VGPU_LOCAL_NAME_MAX || (!len && !allow_empty))
		return false;
	for (i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return false;
	return true;
}

static int connect_to(const char *path, struct vgpu_error *error)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int sock, err;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		return vgpu_error_set(error, -ENAMETOOLONG,
		                      "socket path '%s' is longer than %zu bytes; use a shorter "
		                      "path", path, sizeof(addr.sun_path) - 1);
	}
	strcpy(addr.sun_path, path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		err = -errno;
		return vgpu_error_set(error, err, "cannot create a socket: %s", strerror(-err));
	}
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		vgpu_error_set(error, err,
		               "cannot connect to vgpud at %s: %s; is vgpud running? Start it, or "
		               "point VGPUD_SOCKET at its socket",
		               path, strerror(-err));
		close(sock);
		return err;
	}
	return sock;
}

static void device_free(struct vgpu_local_device *dev)
{
	int i;

	vgpu_local_agent_stop(dev);
	if (dev->trap_slot >= 0)
		vgpu_window_trap_unregister(dev->trap_slot);
	if (dev->bar2)
		munmap(dev->bar2, VGPU_BAR2_SIZE);
	if (dev->sock >= 0)
		close(dev->sock);
	if (dev->backend_sock >= 0)
		close(dev->backend_sock);
	if (dev->kick_fd >= 0)
		close(dev->kick_fd);
	for (i = 0; i < (int)VGPU_MSIX_VECTORS; i++)
		if (dev->irq_fds[i] >= 0)
			close(dev->irq_fds[i]);
	if (dev->irq_epoll >= 0)
		close(dev->irq_epoll);
	pthread_mutex_destroy(&dev->request_lock);
	free(dev);
}

static int make_fds(struct vgpu_local_device *dev, int *peer_backend)
{
	int pair[2], i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		return -errno;
	dev->backend_sock = pair[0];
	*peer_backend = pair[1];
	dev->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->kick_fd < 0)
		return -errno;
	for (i = 0; i < (int)VGPU_MSIX_VECTORS; i++) {
		dev->irq_fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (dev->irq_fds[i] < 0)
			return -errno;
	}
	dev->irq_epoll = epoll_create1(EPOLL_CLOEXEC);
	if (dev->irq_epoll < 0)
		return -errno;
	for (i = 0; i < (int)VGPU_MSIX_VECTORS; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

		if (epoll_ctl(dev->irq_epoll, EPOLL_CTL_ADD, dev->irq_fds[i], &ev) < 0)
			return -errno;
	}
	return 0;
}

static int watch_hangup(struct vgpu_local_device *dev)
{
	struct epoll_event ev = { .events = EPOLLRDHUP, .data.u32 = VGPU_MSIX_VECTORS };

	return epoll_ctl(dev->irq_epoll, EPOLL_CTL_ADD, dev->sock, &ev) < 0 ? -errno : 0;
}

static int attach(struct vgpu_local_device *dev, const struct vgpu_local_device_config *config,
                  int peer_backend, const char *path, uint32_t flags, struct vgpu_error *error)
{
	struct vgpu_local_attach request;
	struct vgpu_local_msg reply;
	const struct vgpu_local_attach_reply *r = &reply.payload.attach_reply;
	int fds[VGPU_LOCAL_MAX_FDS] = { peer_backend, dev->kick_fd, dev->irq_fds[0],
		                        dev->irq_fds[1], dev->irq_fds[2] };
	void *mapped;
	int err;

	memset(&request, 0, sizeof(request));
	request.protocol_version = VGPU_LOCAL_PROTOCOL_VERSION;
	request.flags = flags;
	strcpy(request.vm_name, config->vm_name);
	if (config->profile)
		strcpy(request.profile, config->profile);
	err = vgpu_local_send(dev->sock, VGPU_LOCAL_ATTACH, 1, 0, &request, sizeof(request), fds,
	                      VGPU_LOCAL_MAX_FDS, ATTACH_TIMEOUT_MS);
	if (err) {
		return vgpu_error_set(error, err, "cannot send ATTACH to vgpud at %s: %s", path,
		                      strerror(-err));
	}
	err = vgpu_local_recv(dev->sock, &reply, ATTACH_TIMEOUT_MS);
	if (err) {
		return vgpu_error_set(error, err == -EPIPE ? -ECONNRESET : err,
		                      "vgpud at %s did not answer ATTACH: %s; check its log", path,
		                      err == -EPIPE ? "it closed the connection" : strerror(-err));
	}
	if (reply.header.type != VGPU_LOCAL_ATTACH || reply.header.flags != VGPU_LOCAL_FLAG_REPLY ||
	    reply.header.size != sizeof(*r) || reply.nfds != (r->status == 0 ? 1u : 0u)) {
		vgpu_local_msg_close_fds(&reply);
		return vgpu_error_set(error, -EPROTO,
		                      "vgpud at %s sent a malformed ATTACH reply; are vgpud and "
		                      "this program from the same build?", path);
	}
	if (r->status) {
		char message[VGPU_LOCAL_MESSAGE_MAX];

		memcpy(message, r->message, sizeof(message));
		message[sizeof(message) - 1] = '\0';
		return vgpu_error_set(error, r->status < 0 ? r->status : -EPROTO,
		                      "vgpud refused to attach VM '%s': %s", config->vm_name,
		                      message[0] ? message : strerror(-r->status));
	}
	if (r->mailbox_offset != VGPU_MAILBOX_OFFSET || r->mailbox_size != VGPU_MAILBOX_SIZE ||
	    r->bar2_size != VGPU_BAR2_SIZE) {
		vgpu_local_msg_close_fds(&reply);
		return vgpu_error_set(error, -EPROTO,
		                      "vgpud at %s uses a different BAR2 layout (device ABI); "
		                      "rebuild this program against vgpud's headers", path);
	}
	mapped = mmap(dev->bar2 + VGPU_MAILBOX_OFFSET, VGPU_MAILBOX_SIZE, PROT_READ | PROT_WRITE,
	              MAP_SHARED | MAP_FIXED, reply.fds[0], (off_t)r->mailbox_fd_offset);
	err = mapped == MAP_FAILED ? -errno : 0;
	vgpu_local_msg_close_fds(&reply);
	if (err) {
		return vgpu_error_set(error, err, "cannot map the mailbox vgpud sent: %s",
		                      strerror(-err));
	}
	dev->vm_id = r->vm_id;
	return 0;
}

/* The names of config as vgpud takes them. 0 or -EINVAL (error set). */
static int check_config(const struct vgpu_local_device_config *config, struct vgpu_error *error)
{
	if (!name_ok(config->vm_name, false)) {
		return vgpu_error_set(error, -EINVAL,
		                      "VM name '%s' is invalid: use 1 to %u printable characters "
		                      "without spaces", config->vm_name ? config->vm_name : "(null)",
		                      VGPU_LOCAL_NAME_MAX - 1);
	}
	if (!name_ok(config->profile, true)) {
		return vgpu_error_set(error, -EINVAL,
		                      "profile name '%s' is invalid: use up to %u printable "
		                      "characters without spaces", config->profile,
		                      VGPU_LOCAL_NAME_MAX - 1);
	}
	return 0;
}

/* A device with nothing open yet (NULL: out of memory, error set). */
static struct vgpu_local_device *device_new(const struct vgpu_local_device_config *config,
                                             struct vgpu_error *error)
{
	struct vgpu_local_device *dev = calloc(1, sizeof(*dev));

	if (!dev) {
		vgpu_error_set(error, -ENOMEM, "out of memory");
		return NULL;
	}
	dev->sock = dev->backend_sock = dev->kick_fd = dev->irq_epoll = -1;
	dev->agent_stop_fd = -1;
	dev->trap_slot = -1;
	for (unsigned i = 0; i < VGPU_MSIX_VECTORS; i++)
		dev->irq_fds[i] = -1;
	pthread_mutex_init(&dev->request_lock, NULL);
	dev->next_seq = 2;
	dev->never_ack_window_swaps = config->never_ack_window_swaps;
	return dev;
}

/* Reserve all of BAR2 (unbacked parts read as zero) and trap its window
 * accesses. 0 or a negative errno (error set). */
static int reserve_bar2(struct vgpu_local_device *dev, struct vgpu_error *error)
{
	dev->bar2 = mmap(NULL, VGPU_BAR2_SIZE, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (dev->bar2 == MAP_FAILED) {
		dev->bar2 = NULL;
		return vgpu_error_set(error, -ENOMEM,
		                      "cannot reserve %u bytes of address space for BAR2",
		                      VGPU_BAR2_SIZE);
	}
	dev->trap_slot = vgpu_window_trap_register(dev->bar2, VGPU_BAR2_SIZE);
	if (dev->trap_slot < 0) {
		return vgpu_error_set(error, dev->trap_slot,
		                      "cannot install the window trap: %s (too many devices open "
		                      "in this process?)", strerror(-dev->trap_slot));
	}
	return 0;
}

int vgpu_local_device_open(const struct vgpu_local_device_config *config,
                           struct vgpu_local_device **out, struct vgpu_error *error)
{
	struct vgpu_local_device *dev;
	const char *path;
	int peer_backend = -1, err;

	if (!config || !out) {
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_local_device_open needs a config and a place for the "
		                      "device");
	}
	err = check_config(config, error);
	if (err)
		return err;
	dev = device_new(config, error);
	if (!dev)
		return -ENOMEM;
	path = socket_path_of(config);
	err = make_fds(dev, &peer_backend);
	if (err) {
		vgpu_error_set(error, err, "cannot create the device's sockets and eventfds: %s",
		               strerror(-err));
		goto fail;
	}
	err = reserve_bar2(dev, error);
	if (err)
		goto fail;
	dev->sock = connect_to(path, error);
	if (dev->sock < 0) {
		err = dev->sock;
		goto fail;
	}
	err = vgpu_local_agent_start(dev);
	if (err) {
		vgpu_error_set(error, err, "cannot start the device's agent thread: %s",
		               strerror(-err));
		goto fail;
	}
	snprintf(dev->vm_name, sizeof(dev->vm_name), "%s", config->vm_name);
	err = attach(dev, config, peer_backend, path, 0, error);
	close(peer_backend);
	peer_backend = -1;
	if (err)
		goto fail;
	err = watch_hangup(dev);
	if (err) {
		vgpu_error_set(error, err, "cannot watch the vgpud connection: %s", strerror(-err));
		goto fail;
	}
	*out = dev;
	return 0;

fail:
	if (peer_backend >= 0)
		close(peer_backend);
	if (dev->sock >= 0)
		shutdown(dev->sock, SHUT_RDWR);
	device_free(dev);
	return err;
}

void vgpu_local_device_close(struct vgpu_local_device *dev)
{
	struct vgpu_local_msg reply;

	if (!dev)
		return;
	pthread_mutex_lock(&dev->request_lock);
	if (!atomic_load(&dev->gone) &&
	    vgpu_local_send(dev->sock, VGPU_LOCAL_DETACH, dev->next_seq++, 0, NULL, 0, NULL, 0,
	                    REQUEST_TIMEOUT_MS) == 0) {
		/* vgpud releases everything, possibly swapping our windows back
		 * meanwhile (the agent keeps serving), then replies. */
		while (vgpu_local_recv(dev->sock, &reply, DETACH_TIMEOUT_MS) == 0) {
			vgpu_local_msg_close_fds(&reply);
			if (reply.header.type == VGPU_LOCAL_DETACH)
				break;
		}
	}
	atomic_store(&dev->gone, true);
	pthread_mutex_unlock(&dev->request_lock);
	shutdown(dev->sock, SHUT_RDWR);
	device_free(dev);
}

uint32_t vgpu_local_device_reg_read(struct vgpu_local_device *dev, uint32_t offset)
{
	struct vgpu_local_reg request = { .offset = offset };
	struct vgpu_local_msg reply;
	uint32_t value = 0xffffffffu;
	uint32_t seq;

	pthread_mutex_lock(&dev->request_lock);
	if (atomic_load(&dev->gone))
		goto out;
	seq = dev->next_seq++;
	if (vgpu_local_send(dev->sock, VGPU_LOCAL_REG_READ, seq, 0, &request, sizeof(request), NULL,
	                    0, REQUEST_TIMEOUT_MS) ||
	    vgpu_local_recv(dev->sock, &reply, REQUEST_TIMEOUT_MS)) {
		atomic_store(&dev->gone, true);
		goto out;
	}
	if (vgpu_local_msg_expect(&reply, VGPU_LOCAL_REG_READ, true, sizeof(request), 0) ||
	    reply.header.seq != seq) {
		vgpu_local_msg_close_fds(&reply);
		atomic_store(&dev->gone, true);
		goto out;
	}
	value = reply.payload.reg.value;
out:
	pthread_mutex_unlock(&dev->request_lock);
	return value;
}

void vgpu_local_device_reg_write(struct vgpu_local_device *dev, uint32_t offset, uint32_t value)
{
	struct vgpu_local_reg request = { .offset = offset, .value = value };

	if (offset == VGPU_REG_MAILBOX_DOORBELL) {
		/* The ioeventfd path: no round trip, no ordering to keep. */
		uint64_t one = 1;

		if (!atomic_load(&dev->gone) && write(dev->kick_fd, &one, sizeof(one)) < 0 &&
		    errno != EAGAIN)
			atomic_store(&dev->gone, true);
		return;
	}
	pthread_mutex_lock(&dev->request_lock);
	if (!atomic_load(&dev->gone) &&
	    vgpu_local_send(dev->sock, VGPU_LOCAL_REG_WRITE, dev->next_seq++, 0, &request,
	                    sizeof(request), NULL, 0, REQUEST_TIMEOUT_MS))
		atomic_store(&dev->gone, true);
	pthread_mutex_unlock(&dev->request_lock);
}

void *vgpu_local_device_bar2(struct vgpu_local_device *dev)
{
	return dev->bar2;
}

static const uint32_t vector_irq[VGPU_MSIX_VECTORS] = {
	[VGPU_MSIX_VECTOR_MAILBOX] = VGPU_IRQ_MAILBOX,
	[VGPU_MSIX_VECTOR_FENCE] = VGPU_IRQ_FENCE,
	[VGPU_MSIX_VECTOR_ERROR] = VGPU_IRQ_CHANNEL_ERROR,
};

/* Consume every signalled vector without waiting. */
static int collect_irqs(struct vgpu_local_device *dev)
{
	int mask = 0, i;

	for (i = 0; i < (int)VGPU_MSIX_VECTORS; i++) {
		uint64_t count;

		if (read(dev->irq_fds[i], &count, sizeof(count)) == sizeof(count) && count)
			mask |= (int)vector_irq[i];
	}
	return mask;
}

int vgpu_local_device_wait_irq(struct vgpu_local_device *dev, int timeout_ms)
{
	struct epoll_event events[VGPU_MSIX_VECTORS + 1];
	int n, mask, i;
	bool hangup = false;

	mask = collect_irqs(dev);
	if (mask)
		return mask;
	if (atomic_load(&dev->gone))
		return -ENODEV;
	do {
		n = epoll_wait(dev->irq_epoll, events, VGPU_MSIX_VECTORS + 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++)
		if (events[i].data.u32 == VGPU_MSIX_VECTORS)
			hangup = true;
	mask = collect_irqs(dev);
	if (mask)
		return mask;
	if (hangup) {
		atomic_store(&dev->gone, true);
		return -ENODEV;
	}
	return 0;
}

int vgpu_local_device_irq_fd(struct vgpu_local_device *dev)
{
	return dev->irq_epoll;
}

uint32_t vgpu_local_device_vm_id(struct vgpu_local_device *dev)
{
	return dev->vm_id;
}

uint64_t vgpu_local_device_swap_waits(void)
{
	return vgpu_window_trap_waits();
}

int vgpu_local_device_move(struct vgpu_local_device *dev, const char *socket_path,
                           struct vgpu_error *error)
{
	struct vgpu_local_device_config config = { .socket_path = socket_path };
	const char *path;
	int pair[2], err;

	config.vm_name = dev->vm_name;
	path = socket_path_of(&config);
	/* Leave the source: no more of its swaps (its VM is frozen), and
	 * closing the connection detaches what is left of it there. */
	vgpu_local_agent_stop(dev);
	pthread_mutex_lock(&dev->request_lock);
	epoll_ctl(dev->irq_epoll, EPOLL_CTL_DEL, dev->sock, NULL);
	shutdown(dev->sock, SHUT_RDWR);
	close(dev->sock);
	close(dev->backend_sock);
	dev->sock = dev->backend_sock = -1;
	atomic_store(&dev->gone, true);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
		err = -errno;
		vgpu_error_set(error, err, "cannot create the backend channel: %s", strerror(-err));
		goto out;
	}
	dev->backend_sock = pair[0];
	dev->sock = connect_to(path, error);
	if (dev->sock < 0) {
		err = dev->sock;
		close(pair[1]);
		goto out;
	}
	err = vgpu_local_agent_start(dev);
	if (!err)
		err = attach(dev, &config, pair[1], path, VGPU_LOCAL_ATTACH_RESUME, error);
	close(pair[1]);
	if (!err)
		err = watch_hangup(dev);
	if (!err)
		atomic_store(&dev->gone, false);
out:
	pthread_mutex_unlock(&dev->request_lock);
	return err;
}
