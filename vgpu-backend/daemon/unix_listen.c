// SPDX-License-Identifier: MIT
/* unix_listen.c - listening UNIX socket files, see unix_listen.h. */
#include "unix_listen.h"

#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgpu/error.h"

#include "log.h"

static int make_parent(const char *path)
{
	char copy[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *dir;

	strcpy(copy, path);
	dir = dirname(copy);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static bool someone_listens(const struct sockaddr_un *addr, int type)
{
	int probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	bool live;

	if (probe < 0)
		return false;
	live = connect(probe, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
	close(probe);
	return live;
}

int vgpud_listen_unix(const char *path, int type, const char *group, const char *what,
                      struct vgpu_error *error)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return vgpu_error_set(error, -ENAMETOOLONG,
		                      "%s path '%s' is longer than %zu bytes; choose a shorter one",
		                      what, path, sizeof(addr.sun_path) - 1);
	strcpy(addr.sun_path, path);
	err = make_parent(path);
	if (err)
		return vgpu_error_set(error, err,
		                      "cannot create the directory of %s %s: %s; create it or "
		                      "choose another path", what, path, strerror(-err));
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		return vgpu_error_set(error, err, "cannot create the %s: %s", what, strerror(-err));
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno != EADDRINUSE)
			goto fail_bind;
		if (someone_listens(&addr, type)) {
			vgpu_error_set(error, -EADDRINUSE,
			               "another server already listens on %s %s; stop it (another "
			               "vgpud?) or choose another path", what, path);
			close(fd);
			return -EADDRINUSE;
		}
		unlink(path); /* stale, from a vgpud that did not exit cleanly */
		if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
			goto fail_bind;
	}
	if (chmod(path, 0660) < 0)
		log_warn("cannot set mode 0660 on %s %s: %s", what, path, strerror(errno));
	if (group && group[0]) {
		struct group *g = getgrnam(group);

		if (!g || chown(path, (uid_t)-1, g->gr_gid) < 0)
			log_warn("cannot give %s %s to group '%s': %s; check that the group "
			         "exists", what, path, group, g ? strerror(errno) : "no such group");
	}
	if (listen(fd, 64) < 0) {
		err = -errno;
		vgpu_error_set(error, err, "cannot listen on %s %s: %s", what, path,
		               strerror(-err));
		close(fd);
		return err;
	}
	return fd;

fail_bind:
	err = -errno;
	vgpu_error_set(error, err,
	               "cannot bind the %s to %s: %s; check the directory's permissions",
	               what, path, strerror(-err));
	close(fd);
	return err;
}

void vgpud_unlink_unix(const char *path)
{
	if (path && path[0])
		unlink(path);
}
