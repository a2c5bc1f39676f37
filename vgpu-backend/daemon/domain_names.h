/* SPDX-License-Identifier: MIT */
/*
 * domain_names.h - the name operators know a VM by, for an mdev VM that
 * vgpud only knows by its mdev UUID.
 *
 * When QEMU opens an mdev, the kernel tells vgpud the mdev's UUID and
 * nothing else; vgpud attaches the VM under that UUID. A resolver thread
 * then looks for a better name, best first:
 *
 *   libvirt  the running libvirt domain whose XML assigns the mdev
 *            (<hostdev type='mdev'><source><address uuid='UUID'/>), asked
 *            on a read-only connection to the configured URI
 *            (qemu:///system by default). libvirt is loaded with dlopen when
 *            first needed, so vgpud neither links against it nor needs it
 *            installed; built without libvirt's headers, this step is
 *            skipped.
 *   qemu     the -name of the QEMU process that holds the mdev's VFIO group
 *            (/dev/vfio/<iommu_group>) open, from /proc/<pid>/cmdline:
 *            "-name guest=NAME,..." or "-name NAME". QEMU started by libvirt
 *            has -name guest=<domain>, so this gives the domain name too
 *            when libvirt cannot be asked (but not the proof that libvirt
 *            assigned the device).
 *   none     neither: the UUID stays the name.
 *
 * Why a thread: libvirt holds its domain's lock while QEMU opens the
 * device, so asking libvirt while vgpud answers the OPEN would deadlock.
 * Resolution starts right after the attach (domain_names_watch) and is
 * retried with backoff (0.2 s, 0.5 s, 1 s, 2 s, 5 s, then every 30 s) until
 * libvirt answered; a name found through QEMU is kept meanwhile. A name
 * never changes while QEMU keeps the device open (a domain cannot be renamed
 * while running), so one success is final until the next watch.
 *
 * Names are at most DOMAIN_NAME_MAX - 1 bytes (longer ones are cut at a
 * UTF-8 character boundary) and never contain control characters.
 *
 * Thread safety: every function may be called from any thread; none waits
 * for libvirt or the file system (only the resolver thread does).
 */
#ifndef VGPUD_DOMAIN_NAMES_H
#define VGPUD_DOMAIN_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define DOMAIN_NAME_MAX 64   /* = VGPU_VM_NAME_MAX, including the NUL */
#define DOMAIN_UUID_LEN 36   /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */

enum domain_name_source {
	DOMAIN_NAME_NONE = 0, /* not (yet) known: the UUID is the name */
	DOMAIN_NAME_QEMU,     /* QEMU's -name */
	DOMAIN_NAME_LIBVIRT,  /* libvirt's domain */
};

/* "uuid", "qemu", "libvirt": the control API's "name_source". */
const char *domain_name_source_string(enum domain_name_source source);

struct domain_names_config {
	/* libvirt connection URI; NULL: $LIBVIRT_DEFAULT_URI, else
	 * "qemu:///system"; "" (or "none"): never ask libvirt. */
	const char *libvirt_uri;
	const char *sysfs_root; /* NULL: "/sys" (tests point these elsewhere) */
	const char *proc_root;  /* NULL: "/proc" */
};

struct domain_names;

/* 0 or -ENOMEM / a pthread error; starts the resolver thread. */
int domain_names_create(const struct domain_names_config *config, struct domain_names **out);

/* Stops the thread (waiting for a libvirt call in progress). NULL: no-op. */
void domain_names_destroy(struct domain_names *names);

/* Resolve (again) the VM of the mdev uuid: forgets what was known about it
 * and starts at once. uuid as the kernel writes it (lower case). */
void domain_names_watch(struct domain_names *names, const char *uuid);

/* Stop resolving it and forget its name (the mdev was removed). */
void domain_names_forget(struct domain_names *names, const char *uuid);

/* The best name known for uuid: copies it into name (size len) and returns
 * its source, or DOMAIN_NAME_NONE (name untouched) when none is known. */
enum domain_name_source domain_names_get(struct domain_names *names, const char *uuid,
                                         char *name, size_t len);

/* Times the resolver looked (tests): libvirt queries made, /proc scans. */
void domain_names_counters(struct domain_names *names, unsigned long *libvirt_queries,
                           unsigned long *proc_scans);

/* ---- the parts, exposed for the unit tests ---- */

/* The guest name of a QEMU command line (NUL-separated arguments, as in
 * /proc/PID/cmdline): the value of -name/--name, either "guest=NAME,..."
 * or "NAME,..." (",," is a literal comma). 0, or -ENOENT when there is
 * none. The result is sanitized like every name (see above). */
int domain_names_qemu_name(const char *cmdline, size_t len, char *name, size_t name_len);

/* Does this libvirt domain XML assign the mdev uuid (a <hostdev> element
 * with type='mdev' whose <address uuid='...'/> is uuid, any case)? */
bool domain_names_xml_assigns(const char *xml, const char *uuid);

/* The pid of the process holding /dev/vfio/<group of uuid> open, or
 * -ENOENT (no such mdev, not open) / -errno. */
int domain_names_vfio_holder(const char *sysfs_root, const char *proc_root, const char *uuid);

/* Copy name into out, cut to fit at a UTF-8 character boundary, control
 * characters replaced by '?'. false if nothing printable is left. */
bool domain_names_sanitize(const char *name, size_t name_len, char *out, size_t out_len);

#endif /* VGPUD_DOMAIN_NAMES_H */
