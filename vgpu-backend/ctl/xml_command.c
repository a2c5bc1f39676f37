// SPDX-License-Identifier: MIT
/*
 * xml_command.c - `vgpuctl xml VM PROFILE`, see xml_command.h.
 */
#include "xml_command.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define EXIT_REFUSED 1
#define EXIT_USAGE 64
#define NAME_MAX_LEN 64

const char vgpuctl_xml_usage[] =
	"  xml [OPTIONS] VM PROFILE the libvirt XML that gives VM a vGPU of PROFILE:\n"
	"                           node-device XML creating its mdev, then the\n"
	"                           <hostdev> element assigning it (see 'vgpuctl xml\n"
	"                           --help'); needs no vgpud\n";

static void xml_usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpuctl xml [OPTIONS] VM PROFILE\n"
	        "Print what gives the libvirt domain VM a vGPU of profile PROFILE: the\n"
	        "node-device XML that creates its mdev (virsh nodedev-define, nodedev-start,\n"
	        "nodedev-autostart; or nodedev-create for one until the next reboot), then the\n"
	        "<hostdev type='mdev'> element that assigns it (virsh attach-device VM FILE\n"
	        "--config, or paste it into the domain's <devices>). Both name the same mdev\n"
	        "UUID, generated unless --uuid gives one.\n"
	        "\n"
	        "The parent device and mdev type are looked up in sysfs: the type whose 'name'\n"
	        "is PROFILE under /sys/class/mdev_bus/*/mdev_supported_types (vgpu_mdev.ko\n"
	        "loaded, vgpud running). Give --parent (and --type) to print XML for another\n"
	        "host.\n"
	        "\n"
	        "Options:\n"
	        "  -u, --uuid UUID        the mdev's UUID (default: a new random one)\n"
	        "  -p, --parent PARENT    the mdev parent: libvirt's name (pci_0000_00_10_0)\n"
	        "                         or its sysfs name (0000:00:10.0)\n"
	        "  -t, --type TYPE        the mdev type (default: found in sysfs, else\n"
	        "                         vgpu-PROFILE without a second 'vgpu-')\n"
	        "  -a, --autostart        mdevctl starts the mdev at boot (mdevctl JSON\n"
	        "                         \"start\": \"auto\"; with libvirt: nodedev-autostart)\n"
	        "      --nodedev          print only the node-device XML\n"
	        "      --hostdev          print only the <hostdev> element\n"
	        "      --mdevctl          print only the mdevctl JSON definition\n"
	        "                         (mdevctl define -u UUID -p PARENT --jsonfile FILE)\n"
	        "  -o, --output-dir DIR   write VM-vgpu-nodedev.xml, VM-vgpu-hostdev.xml and\n"
	        "                         VM-vgpu-mdevctl.json into DIR and print the commands\n"
	        "  -h, --help             this text\n"
	        "\n"
	        "Environment: VGPU_SYSFS (default /sys).\n");
}

static int xml_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "vgpuctl xml: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see 'vgpuctl xml --help'\n");
	return EXIT_USAGE;
}

/* ------------------------------------------------------------------ names */

static bool uuid_valid(const char *s)
{
	static const int dashes[] = { 8, 13, 18, 23 };
	size_t i, d = 0;

	if (strlen(s) != 36)
		return false;
	for (i = 0; i < 36; i++) {
		if (d < 4 && (int)i == dashes[d]) {
			if (s[i] != '-')
				return false;
			d++;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

static int new_uuid(char out[37])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, 37,
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
	         b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
	         b[14], b[15]);
	return 0;
}

/* "0000:00:10.0" -> true */
static bool is_pci_address(const char *s)
{
	unsigned d, b, sl, f;
	char tail;

	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1u%c", &d, &b, &sl, &f, &tail) == 4 &&
	       s[4] == ':' && s[7] == ':' && s[10] == '.';
}

/* libvirt's node-device name of a sysfs parent: "pci_0000_00_10_0", or ""
 * when libvirt cannot create mdevs on it (not a PCI function). */
static void nodedev_name(const char *sysfs_parent, char *out, size_t len)
{
	size_t i;

	if (!is_pci_address(sysfs_parent)) {
		snprintf(out, len, "%s", "");
		return;
	}
	snprintf(out, len, "pci_%s", sysfs_parent);
	for (i = 0; out[i]; i++)
		if (out[i] == ':' || out[i] == '.')
			out[i] = '_';
		else
			out[i] = (char)tolower((unsigned char)out[i]);
}

/* --parent in either form -> the sysfs name ("0000:00:10.0", "vgpu"). */
static void sysfs_parent_of(const char *parent, char *out, size_t len)
{
	unsigned d, b, s, f;
	char tail;

	if (!strncmp(parent, "pci_", 4) && strlen(parent) == 16 &&
	    sscanf(parent + 4, "%4x_%2x_%2x_%1u%c", &d, &b, &s, &f, &tail) == 4)
		snprintf(out, len, "%04x:%02x:%02x.%u", d, b, s, f);
	else
		snprintf(out, len, "%s", parent);
}

static bool read_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(out, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

struct lookup {
	char parent[NAME_MAX_LEN]; /* sysfs name */
	char type[NAME_MAX_LEN];
	unsigned matches;
	char others[256]; /* the parents offering it, for the error */
};

/* The (parent, type) whose type 'name' is profile, restricted to parent
 * when given. */
static void find_type(const char *sysfs, const char *profile, const char *parent,
                      struct lookup *l)
{
	char path[PATH_MAX];
	struct dirent *pe;
	DIR *bus;

	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "%s/class/mdev_bus", sysfs);
	bus = opendir(path);
	if (!bus)
		return;
	while ((pe = readdir(bus)) != NULL) {
		struct dirent *te;
		DIR *types;

		if (pe->d_name[0] == '.' || (parent && strcmp(parent, pe->d_name)))
			continue;
		snprintf(path, sizeof(path), "%s/class/mdev_bus/%s/mdev_supported_types", sysfs,
		         pe->d_name);
		types = opendir(path);
		if (!types)
			continue;
		while ((te = readdir(types)) != NULL) {
			char name[128];

			if (te->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path),
			         "%s/class/mdev_bus/%s/mdev_supported_types/%s/name", sysfs,
			         pe->d_name, te->d_name);
			if (!read_line(path, name, sizeof(name)) || strcmp(name, profile))
				continue;
			if (!l->matches++) {
				snprintf(l->parent, sizeof(l->parent), "%.63s", pe->d_name);
				snprintf(l->type, sizeof(l->type), "%.63s", te->d_name);
			}
			if (strlen(l->others) + strlen(pe->d_name) + 2 < sizeof(l->others)) {
				if (l->others[0])
					strcat(l->others, " ");
				strcat(l->others, pe->d_name);
			}
		}
		closedir(types);
	}
	closedir(bus);
}

/* ------------------------------------------------------------------ output */

/* Text inside an XML comment: a space after every '-' that another '-' or
 * the end follows, so the text holds no "--" and does not end in '-' (XML
 * forbids both in a comment; libxml2, and so libvirt, refuses the document). */
static void comment_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		fputc(*s, out);
		if (s[0] == '-' && (s[1] == '-' || !s[1]))
			fputc(' ', out);
	}
}

/* "<!-- TEXT -->" and a newline, TEXT formatted as printf does and made safe
 * by comment_text whatever the VM, profile, type, parent or path in it. */
__attribute__((format(printf, 2, 3))) static void print_comment(FILE *out, const char *format,
                                                                ...)
{
	va_list args;
	char *text;
	int len;

	va_start(args, format);
	len = vsnprintf(NULL, 0, format, args);
	va_end(args);
	if (len < 0)
		return;
	text = malloc((size_t)len + 1);
	if (!text)
		return; /* the comment is advice; the document is whole without it */
	va_start(args, format);
	vsnprintf(text, (size_t)len + 1, format, args);
	va_end(args);
	fputs("<!-- ", out);
	comment_text(out, text);
	fputs(" -->\n", out);
	free(text);
}

/* Text inside an attribute or element: &, <, >, ' and " escaped. */
static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out); break;
		}
	}
}

struct vgpu_xml {
	const char *vm, *profile, *uuid, *type;
	char parent[NAME_MAX_LEN];  /* sysfs name */
	char nodedev[NAME_MAX_LEN]; /* libvirt name of the parent, "" if none */
	char mdev_name[256];        /* libvirt name of the mdev */
	bool autostart;
};

static void print_nodedev(FILE *out, const struct vgpu_xml *x, const char *file)
{
	print_comment(out,
	              "%s's vGPU: profile %s, mdev %s of type %s on %s.\n"
	              "     Persistent: virsh nodedev-define %s && virsh nodedev-start %s%s%s\n"
	              "     Until the next reboot only: virsh nodedev-create %s",
	              x->vm, x->profile, x->uuid, x->type, x->parent, file, x->mdev_name,
	              x->autostart ? " && virsh nodedev-autostart " : "",
	              x->autostart ? x->mdev_name : "", file);
	fputs("<device>\n  <name>", out);
	xml_text(out, x->mdev_name);
	fputs("</name>\n  <parent>", out);
	xml_text(out, x->nodedev);
	fputs("</parent>\n  <capability type='mdev'>\n    <type id='", out);
	xml_text(out, x->type);
	fprintf(out, "'/>\n    <uuid>%s</uuid>\n  </capability>\n</device>\n", x->uuid);
}

static void print_hostdev(FILE *out, const struct vgpu_xml *x, const char *file)
{
	/* the flag is named, not spelled: comment_text would split its "--" */
	print_comment(out,
	              "%s's vGPU (profile %s, mdev %s).\n"
	              "     Paste it into the domain's <devices> (virsh edit), or: virsh "
	              "attach-device %s %s with the config flag",
	              x->vm, x->profile, x->uuid, x->vm, file);
	fprintf(out,
	        "<hostdev mode='subsystem' type='mdev' model='vfio-pci' display='off'>\n"
	        "  <source>\n"
	        "    <address uuid='%s'/>\n"
	        "  </source>\n"
	        "</hostdev>\n",
	        x->uuid);
}

static void print_mdevctl(FILE *out, const struct vgpu_xml *x)
{
	fputs("{\n  \"mdev_type\": \"", out);
	xml_text(out, x->type); /* type names are [A-Za-z0-9_.-] */
	fprintf(out, "\",\n  \"start\": \"%s\",\n  \"attrs\": []\n}\n",
	        x->autostart ? "auto" : "manual");
}

static int write_file(const char *dir, const char *vm, const char *suffix, char *path,
                      size_t path_len, void (*print)(FILE *, const struct vgpu_xml *,
                                                     const char *),
                      const struct vgpu_xml *x)
{
	FILE *f;

	snprintf(path, path_len, "%s/%s-vgpu-%s", dir, vm, suffix);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "vgpuctl xml: cannot write %s: %s\n", path, strerror(errno));
		return EXIT_REFUSED;
	}
	print(f, x, path);
	if (fclose(f)) {
		fprintf(stderr, "vgpuctl xml: writing %s failed: %s\n", path, strerror(errno));
		return EXIT_REFUSED;
	}
	return 0;
}

static void print_mdevctl_file(FILE *out, const struct vgpu_xml *x, const char *file)
{
	(void)file;
	print_mdevctl(out, x);
}

/* ------------------------------------------------------------------ command */

enum only { ONLY_ALL, ONLY_NODEDEV, ONLY_HOSTDEV, ONLY_MDEVCTL };

static bool vm_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= NAME_MAX_LEN || s[0] == '.' || strchr(s, '/'))
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* What the command line asks for; uuid and type filled in later when not
 * given. */
struct xml_request {
	const char *parent_arg; /* --parent, or NULL: looked up */
	const char *dir;        /* --output-dir, or NULL: print */
	char uuid[37];
	char type[NAME_MAX_LEN];
	enum only only;
};

/* The options and VM PROFILE into r and x. true: go on; false: stop with
 * *status (0 after --help, EXIT_USAGE after a bad argument). */
static bool parse_args(int argc, char **argv, struct xml_request *r, struct vgpu_xml *x,
                       int *status)
{
	static const struct option options[] = {
		{ "uuid", required_argument, NULL, 'u' },
		{ "parent", required_argument, NULL, 'p' },
		{ "type", required_argument, NULL, 't' },
		{ "autostart", no_argument, NULL, 'a' },
		{ "nodedev", no_argument, NULL, 'N' },
		{ "hostdev", no_argument, NULL, 'H' },
		{ "mdevctl", no_argument, NULL, 'M' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	optind = 0; /* 0: getopt starts over, permuting (options may follow VM PROFILE) */
	while ((opt = getopt_long(argc, argv, "u:p:t:ao:h", options, NULL)) != -1) {
		switch (opt) {
		case 'u':
			if (!uuid_valid(optarg)) {
				*status = xml_usage_error("--uuid '%s' is not a UUID "
				                          "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
				                          optarg);
				return false;
			}
			snprintf(r->uuid, sizeof(r->uuid), "%s", optarg);
			for (char *c = r->uuid; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			break;
		case 'p':
			r->parent_arg = optarg;
			break;
		case 't':
			if (!*optarg || strlen(optarg) >= sizeof(r->type) ||
			    strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			                   "0123456789_.-") != strlen(optarg)) {
				*status = xml_usage_error("--type '%s' is not an mdev type name",
				                          optarg);
				return false;
			}
			snprintf(r->type, sizeof(r->type), "%s", optarg);
			break;
		case 'a':
			x->autostart = true;
			break;
		case 'N':
		case 'H':
		case 'M':
			if (r->only != ONLY_ALL) {
				*status = xml_usage_error("%s", "give at most one of --nodedev, "
				                          "--hostdev, --mdevctl");
				return false;
			}
			r->only = opt == 'N' ? ONLY_NODEDEV : opt == 'H' ? ONLY_HOSTDEV : ONLY_MDEVCTL;
			break;
		case 'o':
			r->dir = optarg;
			break;
		case 'h':
			xml_usage(stdout);
			*status = 0;
			return false;
		default:
			*status = xml_usage_error("%s", "unknown option");
			return false;
		}
	}
	*status = EXIT_USAGE;
	if (optind != argc - 2) {
		xml_usage_error("%s", "xml needs a VM (libvirt domain) name and a profile");
		return false;
	}
	if (r->dir && r->only != ONLY_ALL) {
		xml_usage_error("%s", "--output-dir writes all three files: drop --nodedev, "
		                "--hostdev, --mdevctl");
		return false;
	}
	x->vm = argv[optind];
	x->profile = argv[optind + 1];
	if (!vm_name_ok(x->vm)) {
		xml_usage_error("VM name '%s' must be 1..63 printable characters without '/' "
		                "that do not start with '.'", x->vm);
		return false;
	}
	if (!*x->profile || strlen(x->profile) >= NAME_MAX_LEN) {
		xml_usage_error("profile '%s' is not a profile name ('vgpuctl types' lists them)",
		                x->profile);
		return false;
	}
	return true;
}

/* The mdev parent and type of x->profile: from sysfs, else from --parent
 * and --type (or vgpud's naming rule). 0 or EXIT_REFUSED (said why). */
static int find_parent_and_type(const char *sysfs, struct xml_request *r, struct vgpu_xml *x)
{
	struct lookup l;

	if (r->parent_arg) {
		char p[NAME_MAX_LEN];

		sysfs_parent_of(r->parent_arg, p, sizeof(p));
		snprintf(x->parent, sizeof(x->parent), "%s", p);
	}
	find_type(sysfs, x->profile, r->parent_arg ? x->parent : NULL, &l);
	if (l.matches > 1 && !r->parent_arg) {
		fprintf(stderr, "vgpuctl xml: several parents offer profile %s (%s): choose one "
		        "with --parent\n", x->profile, l.others);
		return EXIT_REFUSED;
	}
	if (l.matches) {
		snprintf(x->parent, sizeof(x->parent), "%s", l.parent);
		if (r->type[0] && strcmp(r->type, l.type)) {
			fprintf(stderr, "vgpuctl xml: profile %s is type %s on %s, not %s: drop "
			        "--type\n", x->profile, l.type, l.parent, r->type);
			return EXIT_REFUSED;
		}
		snprintf(r->type, sizeof(r->type), "%s", l.type);
	} else if (!r->parent_arg) {
		fprintf(stderr,
		        "vgpuctl xml: no mdev parent offers profile %s here (%s/class/mdev_bus/*/"
		        "mdev_supported_types/*/name): is vgpu_mdev.ko loaded and vgpud running "
		        "with that profile ('vgpuctl types', 'mdevctl types')? To print XML for "
		        "another host, give --parent (and --type).\n", x->profile, sysfs);
		return EXIT_REFUSED;
	} else if (!r->type[0]) {
		/* vgpud's rule: "vgpu-" + the profile without its "vgpu-" prefix */
		const char *base = strncmp(x->profile, "vgpu-", 5) ? x->profile : x->profile + 5;

		snprintf(r->type, sizeof(r->type), "vgpu-%.*s", NAME_MAX_LEN - 6, base);
		for (char *c = r->type; *c; c++)
			if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
				*c = '_';
	}
	x->type = r->type;
	return 0;
}

/* The mdev's UUID (new unless given) and its libvirt names. 0 or
 * EXIT_REFUSED (said why). */
static int name_mdev(struct xml_request *r, struct vgpu_xml *x)
{
	if (!r->uuid[0] && new_uuid(r->uuid)) {
		fprintf(stderr, "vgpuctl xml: cannot make a UUID: %s; give --uuid\n",
		        strerror(errno));
		return EXIT_REFUSED;
	}
	x->uuid = r->uuid;
	nodedev_name(x->parent, x->nodedev, sizeof(x->nodedev));
	snprintf(x->mdev_name, sizeof(x->mdev_name), "mdev_%.36s_%.63s", r->uuid,
	         x->nodedev[0] ? x->nodedev + 4 : x->parent);
	for (char *c = x->mdev_name; *c; c++)
		if (*c == '-')
			*c = '_';
	if (!x->nodedev[0] && r->only != ONLY_HOSTDEV && r->only != ONLY_MDEVCTL) {
		fprintf(stderr,
		        "vgpuctl xml: the mdev parent '%s' is not a PCI device, and libvirt creates "
		        "mdevs only on PCI (or s390) parents: bind the GPU's PCI function to "
		        "vgpu_mdev.ko (host-kmod/README.md), or create the mdev with mdevctl "
		        "(--mdevctl) and give libvirt only the <hostdev> (--hostdev)\n", x->parent);
		if (r->only == ONLY_NODEDEV)
			return EXIT_REFUSED;
	}
	return 0;
}

/* --output-dir: the three files, then the commands that use them. An exit
 * status. */
static int write_files(const char *dir, const struct vgpu_xml *x)
{
	char nodedev_path[PATH_MAX] = "", hostdev_path[PATH_MAX], json_path[PATH_MAX];
	int err;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "vgpuctl xml: cannot create %s: %s\n", dir, strerror(errno));
		return EXIT_REFUSED;
	}
	if (x->nodedev[0]) {
		err = write_file(dir, x->vm, "nodedev.xml", nodedev_path, sizeof(nodedev_path),
		                 print_nodedev, x);
		if (err)
			return err;
	}
	err = write_file(dir, x->vm, "hostdev.xml", hostdev_path, sizeof(hostdev_path),
	                 print_hostdev, x);
	if (!err)
		err = write_file(dir, x->vm, "mdevctl.json", json_path, sizeof(json_path),
		                 print_mdevctl_file, x);
	if (err)
		return err;
	printf("mdev %s, type %s on %s, for VM %s\n", x->uuid, x->type, x->parent, x->vm);
	if (x->nodedev[0]) {
		printf("create it:  virsh nodedev-define %s\n", nodedev_path);
		printf("            virsh nodedev-start %s\n", x->mdev_name);
		if (x->autostart)
			printf("            virsh nodedev-autostart %s\n", x->mdev_name);
	}
	printf("     or:    mdevctl define -u %s -p %s --jsonfile %s && mdevctl start -u %s\n",
	       x->uuid, x->parent, json_path, x->uuid);
	printf("attach it:  virsh attach-device '%s' %s --config\n", x->vm, hostdev_path);
	return 0;
}

/* Without --output-dir: the documents asked for, on stdout. */
static void print_documents(enum only only, const struct vgpu_xml *x)
{
	switch (only) {
	case ONLY_NODEDEV:
		print_nodedev(stdout, x, "FILE");
		break;
	case ONLY_HOSTDEV:
		print_hostdev(stdout, x, "FILE");
		break;
	case ONLY_MDEVCTL:
		print_mdevctl(stdout, x);
		break;
	case ONLY_ALL:
		if (x->nodedev[0]) {
			print_nodedev(stdout, x, "FILE");
			printf("\n");
		}
		print_hostdev(stdout, x, "FILE");
		break;
	}
}

int vgpuctl_xml_command(int argc, char **argv)
{
	const char *sysfs = getenv("VGPU_SYSFS") ? getenv("VGPU_SYSFS") : "/sys";
	struct xml_request r = { .only = ONLY_ALL };
	struct vgpu_xml x = { 0 };
	int status;

	if (!parse_args(argc, argv, &r, &x, &status))
		return status;
	status = find_parent_and_type(sysfs, &r, &x);
	if (!status)
		status = name_mdev(&r, &x);
	if (status)
		return status;
	if (r.dir)
		return write_files(r.dir, &x);
	print_documents(r.only, &x);
	return 0;
}
