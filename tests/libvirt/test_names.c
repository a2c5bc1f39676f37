// SPDX-License-Identifier: MIT
/*
 * test_names.c - what vgpud calls an mdev VM (domain_names.h) and how the
 * name reaches the reports (registry display names, the control API):
 *   - QEMU -name parsing, libvirt domain XML matching, name sanitizing;
 *   - the holder of an mdev's VFIO group and the resolver thread, on fake
 *     /sys and /proc trees (libvirt off);
 *   - display names in an in-process vgpud: "name", "name_source" in the
 *     control API, lookups (stats, set-weight) by the display name,
 *     "#2" for a second VM of the same name, uniqueness against attach names.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "device.h"
#include "domain_names.h"
#include "harness.h"
#include "registry.h"

#define UUID_A "3b5c2a0e-1111-4222-8333-444455556666"
#define UUID_B "9f00aa11-2222-4333-8444-555566667777"

/* ------------------------------------------------------------ QEMU -name */

static int qemu_name(const char *const *args, char *out, size_t len)
{
	char cmdline[1024];
	size_t n = 0;

	for (; *args; args++) {
		size_t l = strlen(*args) + 1;

		memcpy(cmdline + n, *args, l);
		n += l;
	}
	return domain_names_qemu_name(cmdline, n, out, len);
}

static void test_qemu_name(void **state)
{
	char name[DOMAIN_NAME_MAX];
	(void)state;

	/* as libvirt starts QEMU */
	assert_int_equal(qemu_name((const char *const[]){ "/usr/bin/qemu-system-x86_64", "-name",
	                                                  "guest=guest-a,debug-threads=on", "-S",
	                                                  NULL },
	                           name, sizeof(name)),
	                 0);
	assert_string_equal(name, "guest-a");
	/* by hand: the implied key is guest */
	assert_int_equal(qemu_name((const char *const[]){ "qemu", "-name", "vm1,process=qemu-vm1",
	                                                  NULL },
	                           name, sizeof(name)),
	                 0);
	assert_string_equal(name, "vm1");
	/* guest= anywhere, ",," is a comma, the last -name wins */
	assert_int_equal(qemu_name((const char *const[]){ "qemu", "-name", "first", "--name",
	                                                  "process=p,guest=a,,b", NULL },
	                           name, sizeof(name)),
	                 0);
	assert_string_equal(name, "a,b");
	/* none, or -name as the last argument */
	assert_int_equal(qemu_name((const char *const[]){ "qemu", "-m", "256", NULL }, name,
	                           sizeof(name)),
	                 -ENOENT);
	assert_int_equal(qemu_name((const char *const[]){ "qemu", "-name", NULL }, name,
	                           sizeof(name)),
	                 -ENOENT);
	assert_int_equal(qemu_name((const char *const[]){ "qemu", "-name", "process=x", NULL },
	                           name, sizeof(name)),
	                 -ENOENT);
}

static void test_sanitize(void **state)
{
	char out[8];
	(void)state;

	assert_true(domain_names_sanitize("abc", 3, out, sizeof(out)));
	assert_string_equal(out, "abc");
	/* control characters */
	assert_true(domain_names_sanitize("a\nb\tc", 5, out, sizeof(out)));
	assert_string_equal(out, "a?b?c");
	/* cut at 7 bytes, not inside the 2-byte "é" at bytes 6..7 */
	assert_true(domain_names_sanitize("abcdef\xc3\xa9xyz", 11, out, sizeof(out)));
	assert_string_equal(out, "abcdef");
	assert_true(domain_names_sanitize("abcde\xc3\xa9xyz", 10, out, sizeof(out)));
	assert_string_equal(out, "abcde\xc3\xa9");
	/* nothing printable */
	assert_false(domain_names_sanitize("  ", 2, out, sizeof(out)));
	assert_false(domain_names_sanitize("", 0, out, sizeof(out)));
}

/* ------------------------------------------------------------ libvirt XML */

static void test_xml_assigns(void **state)
{
	static const char xml[] =
		"<domain type='kvm' id='1'>\n"
		"  <name>guest-a</name>\n"
		"  <uuid>" UUID_B "</uuid>\n" /* the domain's own UUID: not an mdev */
		"  <devices>\n"
		"    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
		"      <source><address domain='0x0000' bus='0x03' slot='0x00' function='0x0'/>"
		"</source>\n"
		"    </hostdev>\n"
		"    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci' "
		"display='off'>\n"
		"      <source>\n"
		"        <address uuid='3B5C2A0E-1111-4222-8333-444455556666'/>\n"
		"      </source>\n"
		"      <alias name='hostdev0'/>\n"
		"      <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0'/>\n"
		"    </hostdev>\n"
		"  </devices>\n"
		"</domain>\n";
	static const char other_type[] =
		"<domain><devices><hostdev mode='subsystem' type='scsi'><source>"
		"<address uuid=\"" UUID_A "\"/></source></hostdev></devices></domain>";
	static const char double_quotes[] =
		"<domain><devices><hostdev mode=\"subsystem\" type=\"mdev\" model=\"vfio-pci\">"
		"<source><address uuid=\"" UUID_A "\"/></source></hostdev></devices></domain>";
	(void)state;

	assert_true(domain_names_xml_assigns(xml, UUID_A)); /* any case */
	assert_false(domain_names_xml_assigns(xml, UUID_B)); /* <uuid> of the domain */
	assert_false(domain_names_xml_assigns(other_type, UUID_A));
	assert_true(domain_names_xml_assigns(double_quotes, UUID_A));
	assert_false(domain_names_xml_assigns("<domain><hostdev", UUID_A));
	assert_false(domain_names_xml_assigns("", UUID_A));
}

/* ------------------------------------------------------------ fake trees */

struct tree {
	char root[64];
	char sys[96], proc[96];
};

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* mdev uuid in IOMMU group `group`; process pid holds fd 7 -> /dev/vfio/group
 * (pid 0: nobody) with the given QEMU command line. */
static void tree_mdev(struct tree *t, const char *uuid, int group, int pid, const char *cmdline,
                      size_t cmdline_len)
{
	char path[PATH_MAX], target[64];

	snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s", t->sys, uuid);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s/iommu_group", t->sys, uuid);
	snprintf(target, sizeof(target), "../../../../kernel/iommu_groups/%d", group);
	assert_int_equal(symlink(target, path), 0);
	if (!pid)
		return;
	snprintf(path, sizeof(path), "%s/%d/fd", t->proc, pid);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/%d/fd/3", t->proc, pid);
	assert_int_equal(symlink("/dev/vfio/vfio", path), 0);
	snprintf(path, sizeof(path), "%s/%d/fd/7", t->proc, pid);
	snprintf(target, sizeof(target), "/dev/vfio/%d", group);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/%d/cmdline", t->proc, pid);
	write_file(path, cmdline, cmdline_len);
}

static void tree_init(struct tree *t)
{
	snprintf(t->root, sizeof(t->root), "/tmp/vgpu-names-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->sys, sizeof(t->sys), "%s/sys", t->root);
	snprintf(t->proc, sizeof(t->proc), "%s/proc", t->root);
	mkdirs(t->sys);
	mkdirs(t->proc);
	/* a process that is not QEMU, with an fd that is not a VFIO group */
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/1/fd", t->proc);
		mkdirs(path);
		snprintf(path, sizeof(path), "%s/1/fd/0", t->proc);
		assert_int_equal(symlink("/dev/null", path), 0);
		snprintf(path, sizeof(path), "%s/self", t->proc);
		mkdirs(path); /* not a pid */
	}
}

static void tree_fini(struct tree *t)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	assert_int_equal(system(cmd), 0);
}

static const char qemu_a[] = "qemu-system-x86_64\0-name\0guest=guest-a,debug-threads=on\0-S";

static void test_vfio_holder(void **state)
{
	struct tree t;
	(void)state;

	tree_init(&t);
	tree_mdev(&t, UUID_A, 12, 4242, qemu_a, sizeof(qemu_a));
	tree_mdev(&t, UUID_B, 13, 0, NULL, 0);
	assert_int_equal(domain_names_vfio_holder(t.sys, t.proc, UUID_A), 4242);
	assert_int_equal(domain_names_vfio_holder(t.sys, t.proc, UUID_B), -ENOENT); /* not open */
	assert_int_equal(domain_names_vfio_holder(t.sys, t.proc,
	                                          "00000000-0000-4000-8000-000000000000"),
	                 -ENOENT); /* no such mdev */
	tree_fini(&t);
}

static enum domain_name_source wait_name(struct domain_names *dn, const char *uuid, char *name,
                                         size_t len, int timeout_ms)
{
	enum domain_name_source s = DOMAIN_NAME_NONE;

	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		s = domain_names_get(dn, uuid, name, len);
		if (s != DOMAIN_NAME_NONE)
			break;
		usleep(10000);
	}
	return s;
}

static void test_resolver(void **state)
{
	struct domain_names_config config = { .libvirt_uri = "none" };
	struct domain_names *dn;
	char name[DOMAIN_NAME_MAX] = "";
	unsigned long libvirt_queries, proc_scans;
	struct tree t;
	(void)state;

	tree_init(&t);
	tree_mdev(&t, UUID_A, 12, 4242, qemu_a, sizeof(qemu_a));
	config.sysfs_root = t.sys;
	config.proc_root = t.proc;
	assert_int_equal(domain_names_create(&config, &dn), 0);

	/* nothing is known before a watch */
	assert_int_equal(domain_names_get(dn, UUID_A, name, sizeof(name)), DOMAIN_NAME_NONE);
	domain_names_watch(dn, UUID_A);
	assert_int_equal(wait_name(dn, UUID_A, name, sizeof(name), 5000), DOMAIN_NAME_QEMU);
	assert_string_equal(name, "guest-a");
	assert_string_equal(domain_name_source_string(DOMAIN_NAME_QEMU), "qemu");

	/* libvirt off: QEMU's name is final, no further scans */
	domain_names_counters(dn, &libvirt_queries, &proc_scans);
	assert_int_equal(libvirt_queries, 0);
	usleep(400000);
	{
		unsigned long q2, s2;

		domain_names_counters(dn, &q2, &s2);
		assert_int_equal(s2, proc_scans);
	}

	/* a VM nobody holds yet: retried (with backoff) until QEMU appears */
	tree_mdev(&t, UUID_B, 13, 0, NULL, 0);
	domain_names_watch(dn, UUID_B);
	usleep(100000);
	assert_int_equal(domain_names_get(dn, UUID_B, name, sizeof(name)), DOMAIN_NAME_NONE);
	{
		static const char qemu_b[] = "qemu\0-name\0vm-b";
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/4343/fd", t.proc);
		mkdirs(path);
		snprintf(path, sizeof(path), "%s/4343/cmdline", t.proc);
		write_file(path, qemu_b, sizeof(qemu_b));
		snprintf(path, sizeof(path), "%s/4343/fd/9", t.proc);
		assert_int_equal(symlink("/dev/vfio/13", path), 0);
	}
	assert_int_equal(wait_name(dn, UUID_B, name, sizeof(name), 5000), DOMAIN_NAME_QEMU);
	assert_string_equal(name, "vm-b");

	/* forget drops it; a new watch starts over */
	domain_names_forget(dn, UUID_A);
	assert_int_equal(domain_names_get(dn, UUID_A, name, sizeof(name)), DOMAIN_NAME_NONE);
	domain_names_watch(dn, UUID_A);
	assert_int_equal(wait_name(dn, UUID_A, name, sizeof(name), 5000), DOMAIN_NAME_QEMU);
	/* bad uuids are ignored */
	domain_names_watch(dn, "not-a-uuid");
	domain_names_destroy(dn);
	domain_names_destroy(NULL);
	tree_fini(&t);
}

/* ------------------------------------------------------------ reports */

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static bool ok(struct json_object *response)
{
	struct json_object *v;

	return json_object_object_get_ex(response, "ok", &v) && json_object_get_boolean(v);
}

/* The list entry whose "name" is name, or NULL. */
static struct json_object *listed(struct json_object *list, const char *name)
{
	struct json_object *vms;

	assert_true(json_object_object_get_ex(list, "vms", &vms));
	for (size_t i = 0; i < json_object_array_length(vms); i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i);
		const char *n = str(vm, "name");

		if (n && !strcmp(n, name))
			return vm;
	}
	return NULL;
}

static struct vgpud_device *device_named(struct harness *h, const char *name)
{
	struct vgpud_device *dev;

	vgpu_mutex_lock(&h->d->registry.lock);
	dev = vgpud_registry_find_locked(&h->d->registry, name);
	vgpu_mutex_unlock(&h->d->registry.lock);
	assert_non_null(dev);
	return dev;
}

static void test_display_names(void **state)
{
	struct harness h;
	struct tenant a, b;
	struct json_object *r, *vm;
	char given[DOMAIN_NAME_MAX];
	(void)state;

	harness_config(&h);
	harness_start(&h);
	assert_int_equal(tenant_open(&h, &a, UUID_A, "small"), 0);
	assert_int_equal(tenant_open(&h, &b, "beta", "small"), 0);
	assert_true(harness_wait_vms(&h, 2, 5000));

	/* before: the attach name, its source the transport's ("tenant" here) */
	r = harness_control(&h, "{\"command\":\"list\"}");
	vm = listed(r, UUID_A);
	assert_non_null(vm);
	assert_string_equal(str(vm, "name_source"), "tenant");
	assert_null(str(vm, "uuid")); /* only mdev VMs have one */
	json_object_put(r);

	/* the libvirt domain becomes the name everywhere */
	vgpud_registry_set_display_name(&h.d->registry, device_named(&h, UUID_A), "guest-a",
	                                "libvirt", given, sizeof(given));
	assert_string_equal(given, "guest-a");
	r = harness_control(&h, "{\"command\":\"list\"}");
	assert_null(listed(r, UUID_A));
	vm = listed(r, "guest-a");
	assert_non_null(vm);
	assert_string_equal(str(vm, "name_source"), "libvirt");
	assert_string_equal(str(vm, "profile"), "small");
	json_object_put(r);
	/* looked up by either name */
	r = harness_control(&h, "{\"command\":\"stats\",\"vm\":\"guest-a\"}");
	assert_true(ok(r));
	json_object_put(r);
	r = harness_control(&h, "{\"command\":\"stats\",\"vm\":\"" UUID_A "\"}");
	assert_true(ok(r));
	json_object_put(r);
	r = harness_control(&h, "{\"command\":\"set-weight\",\"vm\":\"guest-a\",\"weight\":3}");
	assert_true(ok(r));
	json_object_put(r);

	/* a second VM of that domain (two vGPUs) gets a suffix */
	vgpud_registry_set_display_name(&h.d->registry, device_named(&h, "beta"), "guest-a",
	                                "qemu", given, sizeof(given));
	assert_string_equal(given, "guest-a#2");
	r = harness_control(&h, "{\"command\":\"list\"}");
	assert_non_null(listed(r, "guest-a"));
	vm = listed(r, "guest-a#2");
	assert_non_null(vm);
	assert_string_equal(str(vm, "name_source"), "qemu");
	json_object_put(r);

	/* a new VM cannot attach under a name another VM is reported as */
	{
		struct tenant c;

		assert_int_not_equal(tenant_open(&h, &c, "guest-a", "small"), 0);
	}
	/* and a display name equal to the attach name clears it */
	vgpud_registry_set_display_name(&h.d->registry, device_named(&h, "beta"), "beta", "qemu",
	                                given, sizeof(given));
	assert_string_equal(given, "beta");
	r = harness_control(&h, "{\"command\":\"list\"}");
	assert_non_null(listed(r, "beta"));
	json_object_put(r);

	tenant_close(&a);
	tenant_close(&b);
	harness_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qemu_name),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_xml_assigns),
		cmocka_unit_test(test_vfio_holder),
		cmocka_unit_test(test_resolver),
		cmocka_unit_test(test_display_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
