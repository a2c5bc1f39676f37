// SPDX-License-Identifier: MIT
/*
 * domain_names.c - libvirt domain / QEMU -name of an mdev VM, see
 * domain_names.h.
 */
#include "domain_names.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "vgpu/mutex.h"

#ifdef VGPUD_HAVE_LIBVIRT
#include <dlfcn.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include "vgpu/util.h"
#endif

#define MAX_ENTRIES 256
#define RETRY_FOREVER_MS 30000

/* Backoff after the first attempt (at once). */
static const unsigned retry_ms[] = { 200, 500, 1000, 2000, 5000 };

struct entry {
	char uuid[DOMAIN_UUID_LEN + 1];
	char name[DOMAIN_NAME_MAX];
	enum domain_name_source source;
	bool resolving;     /* more attempts are due */
	unsigned attempts;
	uint64_t due_ns;    /* next attempt (CLOCK_MONOTONIC) */
	uint64_t generation; /* bumped by watch: stale results are dropped */
};

enum libvirt_state {
	LIBVIRT_UNTRIED,     /* not loaded yet */
	LIBVIRT_DISABLED,    /* configured off, built without it, or not installed */
	LIBVIRT_LOADED,      /* library loaded; connection opened on demand */
};

#ifdef VGPUD_HAVE_LIBVIRT
struct libvirt_api {
	void *handle;
	__typeof__(&virConnectOpenReadOnly) open_read_only;
	__typeof__(&virConnectClose) close;
	__typeof__(&virConnectIsAlive) is_alive;
	__typeof__(&virConnectListAllDomains) list_all_domains;
	__typeof__(&virDomainGetXMLDesc) get_xml_desc;
	__typeof__(&virDomainGetName) get_name;
	__typeof__(&virDomainFree) domain_free;
	__typeof__(&virSetErrorFunc) set_error_func;
	__typeof__(&virGetLastErrorMessage) last_error;
};
#endif

struct domain_names {
	char libvirt_uri[256];
	char sysfs_root[PATH_MAX];
	char proc_root[PATH_MAX];

	pthread_t thread;
	struct vgpu_mutex lock; /* entries, stop */
	pthread_cond_t wake;
	bool stop;
	struct entry entries[MAX_ENTRIES];
	unsigned long libvirt_queries, proc_scans;

	/* the resolver thread's own */
	enum libvirt_state libvirt;
	bool libvirt_reachable; /* last connection attempt worked (for logs) */
	bool libvirt_reported;  /* said once that it is unreachable */
#ifdef VGPUD_HAVE_LIBVIRT
	struct libvirt_api api;
	virConnectPtr conn;
#endif
};

const char *domain_name_source_string(enum domain_name_source source)
{
	switch (source) {
	case DOMAIN_NAME_LIBVIRT: return "libvirt";
	case DOMAIN_NAME_QEMU: return "qemu";
	default: return "uuid";
	}
}

/* ------------------------------------------------------------ pure parts */

bool domain_names_sanitize(const char *name, size_t name_len, char *out, size_t out_len)
{
	size_t n = name_len, i;
	bool printable = false;

	if (!out_len)
		return false;
	if (n > out_len - 1) {
		n = out_len - 1;
		/* do not cut a UTF-8 sequence: drop its continuation bytes and lead */
		while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
		if (c > 0x20 && c != 0x7f)
			printable = true;
	}
	out[n] = 0;
	return printable;
}

/* One item of a QEMU option string, ",," unescaped: [*p, end) -> item. */
static const char *next_item(const char *p, const char *end, char *item, size_t item_len)
{
	size_t n = 0;

	while (p < end) {
		if (*p == ',') {
			if (p + 1 < end && p[1] == ',') {
				p += 2;
				if (n + 1 < item_len)
					item[n++] = ',';
				continue;
			}
			p++;
			break;
		}
		if (n + 1 < item_len)
			item[n++] = *p;
		p++;
	}
	item[n] = 0;
	return p;
}

int domain_names_qemu_name(const char *cmdline, size_t len, char *name, size_t name_len)
{
	const char *p = cmdline, *end = cmdline + len, *value = NULL;
	char item[512], guest[512] = "";
	bool first = true;

	/* the last -name wins, as in QEMU */
	while (p < end) {
		size_t n = strnlen(p, (size_t)(end - p));

		if ((!strcmp(p, "-name") || !strcmp(p, "--name")) && p + n + 1 < end)
			value = p + n + 1;
		p += n + 1;
	}
	if (!value)
		return -ENOENT;
	end = value + strnlen(value, (size_t)(end - value));
	for (p = value; p < end; first = false) {
		char *eq;

		p = next_item(p, end, item, sizeof(item));
		eq = strchr(item, '=');
		if (!eq) {
			if (first) /* "-name NAME,...": the implied key is guest */
				snprintf(guest, sizeof(guest), "%s", item);
		} else if (eq - item == 5 && !memcmp(item, "guest", 5)) { /* key "guest" */
			snprintf(guest, sizeof(guest), "%s", eq + 1);
		}
	}
	if (!guest[0] || !domain_names_sanitize(guest, strlen(guest), name, name_len))
		return -ENOENT;
	return 0;
}

/* The value of attribute attr in the tag text [tag, end), or NULL. */
static const char *attr_value(const char *tag, const char *end, const char *attr, size_t *len)
{
	size_t alen = strlen(attr);
	const char *p;

	for (p = tag; p + alen + 2 < end; p++) {
		char quote;
		const char *v, *q;

		if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n') || strncmp(p, attr, alen) ||
		    p[alen] != '=')
			continue;
		quote = p[alen + 1];
		if (quote != '\'' && quote != '"')
			continue;
		v = p + alen + 2;
		for (q = v; q < end && *q != quote; q++)
			;
		if (q >= end)
			return NULL;
		*len = (size_t)(q - v);
		return v;
	}
	return NULL;
}

bool domain_names_xml_assigns(const char *xml, const char *uuid)
{
	size_t ulen = strlen(uuid);
	const char *p = xml;

	while ((p = strstr(p, "<hostdev")) != NULL) {
		const char *tag_end = strchr(p, '>'), *element_end, *q;
		const char *type;
		size_t len;

		if (!tag_end)
			return false;
		element_end = strstr(tag_end, "</hostdev>");
		if (!element_end)
			element_end = tag_end; /* <hostdev .../>: nothing inside */
		type = attr_value(p + 8, tag_end, "type", &len);
		if (type && len == 4 && !strncmp(type, "mdev", 4)) {
			for (q = tag_end; (q = strstr(q, "<address")) && q < element_end; q++) {
				const char *a_end = strchr(q, '>');
				const char *v = a_end ? attr_value(q + 8, a_end, "uuid", &len) : NULL;

				if (v && len == ulen && !strncasecmp(v, uuid, ulen))
					return true;
			}
		}
		p = element_end > p ? element_end : p + 8;
	}
	return false;
}

int domain_names_vfio_holder(const char *sysfs_root, const char *proc_root, const char *uuid)
{
	char path[PATH_MAX + 512], link[PATH_MAX], target[64];
	const char *group;
	struct dirent *de;
	DIR *proc;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s/iommu_group", sysfs_root, uuid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	link[n] = 0;
	group = strrchr(link, '/');
	group = group ? group + 1 : link;
	snprintf(target, sizeof(target), "/dev/vfio/%.40s", group);

	proc = opendir(proc_root);
	if (!proc)
		return -errno;
	while ((de = readdir(proc)) != NULL) {
		struct dirent *fe;
		DIR *fds;
		int pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		snprintf(path, sizeof(path), "%s/%s/fd", proc_root, de->d_name);
		fds = opendir(path);
		if (!fds)
			continue; /* gone, or not ours to read */
		while ((fe = readdir(fds)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			n = readlinkat(dirfd(fds), fe->d_name, link, sizeof(link) - 1);
			if (n < 0)
				continue;
			link[n] = 0;
			if (!strcmp(link, target)) {
				closedir(fds);
				closedir(proc);
				return pid;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return -ENOENT;
}

/* ------------------------------------------------------------ resolvers */

static int qemu_name_of(struct domain_names *dn, const char *uuid, char *name, size_t len)
{
	char path[PATH_MAX + 64], cmdline[16384];
	ssize_t n;
	int pid, fd;

	pid = domain_names_vfio_holder(dn->sysfs_root, dn->proc_root, uuid);
	if (pid < 0)
		return pid;
	snprintf(path, sizeof(path), "%s/%d/cmdline", dn->proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, cmdline, sizeof(cmdline));
	close(fd);
	if (n <= 0)
		return -ENOENT;
	return domain_names_qemu_name(cmdline, (size_t)n, name, len);
}

#ifdef VGPUD_HAVE_LIBVIRT
static void libvirt_quiet(void *data, virErrorPtr error)
{
	(void)data;
	(void)error; /* failures are logged by us, at our level */
}

static void libvirt_load(struct domain_names *dn)
{
	struct libvirt_api *api = &dn->api;
	void *h = dlopen("libvirt.so.0", RTLD_NOW | RTLD_LOCAL);

	dn->libvirt = LIBVIRT_DISABLED;
	if (!h) {
		log_info("libvirt is not installed (%s): VM names come from QEMU's -name", dlerror());
		return;
	}
#define SYM(field, symbol)                                                  \
	do {                                                                \
		*(void **)&api->field = dlsym(h, symbol);                   \
		if (!api->field) {                                          \
			log_warn("libvirt.so.0 lacks %s: VM names come from " \
			         "QEMU's -name", symbol);                    \
			dlclose(h);                                         \
			return;                                             \
		}                                                           \
	} while (0)
	SYM(open_read_only, "virConnectOpenReadOnly");
	SYM(close, "virConnectClose");
	SYM(is_alive, "virConnectIsAlive");
	SYM(list_all_domains, "virConnectListAllDomains");
	SYM(get_xml_desc, "virDomainGetXMLDesc");
	SYM(get_name, "virDomainGetName");
	SYM(domain_free, "virDomainFree");
	SYM(set_error_func, "virSetErrorFunc");
	SYM(last_error, "virGetLastErrorMessage");
#undef SYM
	api->handle = h;
	api->set_error_func(NULL, libvirt_quiet);
	dn->libvirt = LIBVIRT_LOADED;
}

static void libvirt_disconnect(struct domain_names *dn)
{
	if (dn->conn)
		dn->api.close(dn->conn);
	dn->conn = NULL;
}

static bool libvirt_connect(struct domain_names *dn)
{
	if (dn->conn && dn->api.is_alive(dn->conn) == 1)
		return true;
	libvirt_disconnect(dn);
	dn->conn = dn->api.open_read_only(dn->libvirt_uri);
	if (!dn->conn) {
		if (dn->libvirt_reachable || !dn->libvirt_reported)
			log_info("libvirt at %s does not answer (%s): VM names come from QEMU's -name "
			         "until it does", dn->libvirt_uri, dn->api.last_error());
		dn->libvirt_reachable = false;
		dn->libvirt_reported = true;
		return false;
	}
	if (!dn->libvirt_reachable)
		log_info("libvirt at %s: VMs are named by their libvirt domain", dn->libvirt_uri);
	dn->libvirt_reachable = true;
	return true;
}

/* For each uuids[i], the running domain assigning it (names[i], found[i]).
 * false when libvirt could not be asked. */
static bool libvirt_lookup(struct domain_names *dn, char (*uuids)[DOMAIN_UUID_LEN + 1],
                           char (*names)[DOMAIN_NAME_MAX], bool *found, unsigned count)
{
	virDomainPtr *domains = NULL;
	int n, i;

	if (dn->libvirt == LIBVIRT_UNTRIED)
		libvirt_load(dn);
	if (dn->libvirt != LIBVIRT_LOADED || !libvirt_connect(dn))
		return false;
	n = dn->api.list_all_domains(dn->conn, &domains, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		log_debug("libvirt: listing domains failed: %s", dn->api.last_error());
		libvirt_disconnect(dn);
		return false;
	}
	for (i = 0; i < n; i++) {
		char *xml = dn->api.get_xml_desc(domains[i], 0);

		if (xml) {
			for (unsigned u = 0; u < count; u++) {
				const char *name;

				if (found[u] || !domain_names_xml_assigns(xml, uuids[u]))
					continue;
				name = dn->api.get_name(domains[i]);
				found[u] = name && domain_names_sanitize(name, strlen(name), names[u],
				                                         DOMAIN_NAME_MAX);
			}
			free(xml);
		}
		dn->api.domain_free(domains[i]);
	}
	free(domains);
	return true;
}
#else
static bool libvirt_lookup(struct domain_names *dn, char (*uuids)[DOMAIN_UUID_LEN + 1],
                           char (*names)[DOMAIN_NAME_MAX], bool *found, unsigned count)
{
	(void)uuids;
	(void)names;
	(void)found;
	(void)count;
	if (dn->libvirt == LIBVIRT_UNTRIED) {
		log_info("vgpud was built without libvirt: VM names come from QEMU's -name");
		dn->libvirt = LIBVIRT_DISABLED;
	}
	return false;
}
#endif

/* ------------------------------------------------------------ the thread */

static struct entry *find_locked(struct domain_names *dn, const char *uuid)
{
	vgpu_mutex_assert_held(&dn->lock);
	for (unsigned i = 0; i < MAX_ENTRIES; i++)
		if (dn->entries[i].uuid[0] && !strcasecmp(dn->entries[i].uuid, uuid))
			return &dn->entries[i];
	return NULL;
}

static uint64_t backoff_ns(unsigned attempts)
{
	unsigned n = sizeof(retry_ms) / sizeof(retry_ms[0]);

	return (uint64_t)(attempts - 1 < n ? retry_ms[attempts - 1] : RETRY_FOREVER_MS) * 1000000ull;
}

/* One round over the entries that are due: libvirt once for all of them,
 * then QEMU for those libvirt does not know. */
static void resolve_due(struct domain_names *dn, const unsigned *index, unsigned count)
{
	char uuids[MAX_ENTRIES][DOMAIN_UUID_LEN + 1];
	char names[MAX_ENTRIES][DOMAIN_NAME_MAX];
	uint64_t generation[MAX_ENTRIES];
	enum domain_name_source source[MAX_ENTRIES];
	bool found[MAX_ENTRIES] = { false };
	bool asked;
	uint64_t now;

	vgpu_mutex_lock(&dn->lock);
	for (unsigned i = 0; i < count; i++) {
		memcpy(uuids[i], dn->entries[index[i]].uuid, sizeof(uuids[i]));
		generation[i] = dn->entries[index[i]].generation;
		source[i] = DOMAIN_NAME_NONE;
	}
	vgpu_mutex_unlock(&dn->lock);

	asked = libvirt_lookup(dn, uuids, names, found, count);
	if (asked) {
		vgpu_mutex_lock(&dn->lock);
		dn->libvirt_queries++;
		vgpu_mutex_unlock(&dn->lock);
	}
	for (unsigned i = 0; i < count; i++) {
		if (found[i]) {
			source[i] = DOMAIN_NAME_LIBVIRT;
		} else if (qemu_name_of(dn, uuids[i], names[i], DOMAIN_NAME_MAX) == 0) {
			source[i] = DOMAIN_NAME_QEMU;
		}
	}

	now = vgpu_monotonic_ns();
	vgpu_mutex_lock(&dn->lock);
	dn->proc_scans += count;
	for (unsigned i = 0; i < count; i++) {
		struct entry *e = &dn->entries[index[i]];

		if (strcmp(e->uuid, uuids[i]) || e->generation != generation[i] || !e->resolving)
			continue; /* forgotten or watched again meanwhile */
		e->attempts++;
		/* a QEMU name does not replace a libvirt one (libvirt briefly busy) */
		if (source[i] != DOMAIN_NAME_NONE && source[i] >= e->source) {
			memcpy(e->name, names[i], sizeof(e->name));
			e->source = source[i];
		}
		/* done: libvirt answered for it, or QEMU's name is all we can get */
		if (e->source == DOMAIN_NAME_LIBVIRT ||
		    (e->source == DOMAIN_NAME_QEMU && dn->libvirt == LIBVIRT_DISABLED))
			e->resolving = false;
		else
			e->due_ns = now + backoff_ns(e->attempts);
	}
	vgpu_mutex_unlock(&dn->lock);
}

static void *resolver_main(void *arg)
{
	struct domain_names *dn = arg;
	unsigned index[MAX_ENTRIES];

	vgpu_mutex_lock(&dn->lock);
	while (!dn->stop) {
		uint64_t now = vgpu_monotonic_ns(), next = UINT64_MAX;
		unsigned count = 0;

		for (unsigned i = 0; i < MAX_ENTRIES; i++) {
			struct entry *e = &dn->entries[i];

			if (!e->uuid[0] || !e->resolving)
				continue;
			if (e->due_ns <= now)
				index[count++] = i;
			else if (e->due_ns < next)
				next = e->due_ns;
		}
		if (count) {
			vgpu_mutex_unlock(&dn->lock);
			resolve_due(dn, index, count);
			vgpu_mutex_lock(&dn->lock);
			continue;
		}
		if (next == UINT64_MAX) {
			vgpu_mutex_cond_wait(&dn->lock, &dn->wake);
		} else {
			struct timespec ts = { (time_t)(next / 1000000000ull),
				               (long)(next % 1000000000ull) };

			vgpu_mutex_cond_timedwait(&dn->lock, &dn->wake, &ts);
		}
	}
	vgpu_mutex_unlock(&dn->lock);
#ifdef VGPUD_HAVE_LIBVIRT
	if (dn->libvirt == LIBVIRT_LOADED)
		libvirt_disconnect(dn);
	/* the library stays loaded: libvirt registers atexit handlers */
#endif
	return NULL;
}

/* ------------------------------------------------------------ interface */

int domain_names_create(const struct domain_names_config *config, struct domain_names **out)
{
	struct domain_names *dn = calloc(1, sizeof(*dn));
	const char *uri = config ? config->libvirt_uri : NULL;
	pthread_condattr_t attr;
	int err;

	if (!dn)
		return -ENOMEM;
	if (!uri)
		uri = getenv("LIBVIRT_DEFAULT_URI");
	if (!uri)
		uri = "qemu:///system";
	snprintf(dn->libvirt_uri, sizeof(dn->libvirt_uri), "%s", uri);
	if (!uri[0] || !strcmp(uri, "none"))
		dn->libvirt = LIBVIRT_DISABLED;
	snprintf(dn->sysfs_root, sizeof(dn->sysfs_root), "%s",
	         config && config->sysfs_root ? config->sysfs_root : "/sys");
	snprintf(dn->proc_root, sizeof(dn->proc_root), "%s",
	         config && config->proc_root ? config->proc_root : "/proc");
	vgpu_mutex_init(&dn->lock);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&dn->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = -pthread_create(&dn->thread, NULL, resolver_main, dn);
	if (err) {
		pthread_cond_destroy(&dn->wake);
		vgpu_mutex_destroy(&dn->lock);
		free(dn);
		return err;
	}
	*out = dn;
	return 0;
}

void domain_names_destroy(struct domain_names *dn)
{
	if (!dn)
		return;
	vgpu_mutex_lock(&dn->lock);
	dn->stop = true;
	pthread_cond_signal(&dn->wake);
	vgpu_mutex_unlock(&dn->lock);
	pthread_join(dn->thread, NULL);
	pthread_cond_destroy(&dn->wake);
	vgpu_mutex_destroy(&dn->lock);
	free(dn);
}

void domain_names_watch(struct domain_names *dn, const char *uuid)
{
	struct entry *e;

	if (!dn || strlen(uuid) != DOMAIN_UUID_LEN)
		return;
	vgpu_mutex_lock(&dn->lock);
	e = find_locked(dn, uuid);
	for (unsigned i = 0; !e && i < MAX_ENTRIES; i++)
		if (!dn->entries[i].uuid[0])
			e = &dn->entries[i];
	if (e) {
		uint64_t generation = e->generation + 1;

		memset(e, 0, sizeof(*e));
		memcpy(e->uuid, uuid, DOMAIN_UUID_LEN);
		e->generation = generation;
		e->resolving = true;
		e->due_ns = vgpu_monotonic_ns();
		pthread_cond_signal(&dn->wake);
	} else {
		log_warn("more than %d mdevs: the VM of %s keeps its UUID as its name", MAX_ENTRIES,
		         uuid);
	}
	vgpu_mutex_unlock(&dn->lock);
}

void domain_names_forget(struct domain_names *dn, const char *uuid)
{
	struct entry *e;

	if (!dn)
		return;
	vgpu_mutex_lock(&dn->lock);
	e = find_locked(dn, uuid);
	if (e) {
		uint64_t generation = e->generation + 1;

		memset(e, 0, sizeof(*e));
		e->generation = generation;
	}
	vgpu_mutex_unlock(&dn->lock);
}

enum domain_name_source domain_names_get(struct domain_names *dn, const char *uuid, char *name,
                                         size_t len)
{
	enum domain_name_source source = DOMAIN_NAME_NONE;
	struct entry *e;

	if (!dn)
		return DOMAIN_NAME_NONE;
	vgpu_mutex_lock(&dn->lock);
	e = find_locked(dn, uuid);
	if (e && e->source != DOMAIN_NAME_NONE && len) {
		snprintf(name, len, "%s", e->name);
		source = e->source;
	}
	vgpu_mutex_unlock(&dn->lock);
	return source;
}

void domain_names_counters(struct domain_names *dn, unsigned long *libvirt_queries,
                           unsigned long *proc_scans)
{
	vgpu_mutex_lock(&dn->lock);
	*libvirt_queries = dn->libvirt_queries;
	*proc_scans = dn->proc_scans;
	vgpu_mutex_unlock(&dn->lock);
}
