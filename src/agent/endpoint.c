/*
 * endpoint.c - where the agent's session finds its byte stream (see
 * endpoint.h): a virtio-serial port by name, a listening Unix socket.
 */
#include "agent/endpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

int endpoint_find_virtio_port(const char *name, char *out, size_t outlen)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return -errno;
	int rc = -ENOENT;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
		char *txt = NULL;
		size_t len = 0;
		if (util_read_file(p, 4096, &txt, &len) < 0)
			continue;
		while (len && (txt[len - 1] == '\n' || txt[len - 1] == ' '))
			txt[--len] = '\0';
		int match = strcmp(txt, name) == 0;
		free(txt);
		if (match) {
			snprintf(out, outlen, "/dev/%s", de->d_name);
			rc = 0;
			break;
		}
	}
	closedir(d);
	return rc;
}

int endpoint_listen_unix(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s.%d", path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(a.sun_path);
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		close(fd);
		return -EEXIST;
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0 ||
	    rename(a.sun_path, path) < 0) {
		int e = -errno;
		unlink(a.sun_path);
		close(fd);
		return e;
	}
	return fd;
}
