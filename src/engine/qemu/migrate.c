/*
 * migrate.c - state to and from files through fd: migration URIs (see
 * migrate.h).
 */
#include "engine/qemu/migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#define FD_NAME "pandastack-state"

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - util_now_ms();
	return l > 0 ? (int)l : 0;
}

int migrate_set_caps(struct qmp *q, int timeout_ms)
{
	json_t *args = json_pack("{s:[{s:s,s:b},{s:s,s:b}]}", "capabilities",
				 "capability", "x-ignore-shared", "state", 1,
				 "capability", "events", "state", 1);
	if (!args)
		return -ENOMEM;
	int r = qmp_call(q, "migrate-set-capabilities", args, timeout_ms, NULL);
	json_decref(args);
	return r;
}

/* Map a migration status string to 1 (done), 0 (going on), -EIO (failed). */
static int status_of(const char *s)
{
	if (!s)
		return 0;
	if (!strcmp(s, "completed"))
		return 1;
	if (!strcmp(s, "failed") || !strcmp(s, "cancelled"))
		return -EIO;
	return 0;
}

/* Wait for the migration to finish: MIGRATION events, with query-migrate
 * every 100 ms as a fallback. */
static int wait_done(struct qmp *q, int64_t deadline, char *msg, size_t msglen)
{
	int64_t next_query = util_now_ms() + 100;
	for (;;) {
		int wait = left_ms(deadline);
		int64_t to_query = next_query - util_now_ms();
		if (to_query < wait)
			wait = to_query > 0 ? (int)to_query : 0;
		json_t *ev = NULL;
		int r = qmp_event_next(q, wait, &ev);
		if (r < 0) {
			snprintf(msg, msglen, "%s", qmp_last_error(q));
			return r;
		}
		int st = 0;
		if (r == 1) {
			const char *name = json_string_value(json_object_get(ev, "event"));
			if (name && !strcmp(name, "MIGRATION"))
				st = status_of(json_string_value(
					json_object_get(json_object_get(ev, "data"), "status")));
			json_decref(ev);
		} else if (util_now_ms() >= next_query) {
			json_t *info = NULL;
			r = qmp_call(q, "query-migrate", NULL, left_ms(deadline) + 1, &info);
			if (r < 0) {
				snprintf(msg, msglen, "%s", qmp_last_error(q));
				return r;
			}
			st = status_of(json_string_value(json_object_get(info, "status")));
			json_decref(info);
			next_query = util_now_ms() + 100;
		}
		if (st == 1)
			return 0;
		if (st < 0) {
			json_t *info = NULL;
			const char *why = "migration failed";
			if (qmp_call(q, "query-migrate", NULL, 1000, &info) == 0 &&
			    json_is_string(json_object_get(info, "error-desc")))
				why = json_string_value(json_object_get(info, "error-desc"));
			snprintf(msg, msglen, "%s", why);
			json_decref(info);
			return -EIO;
		}
		if (util_now_ms() >= deadline) {
			snprintf(msg, msglen, "migration did not complete in time");
			return -ETIMEDOUT;
		}
	}
}

/* Pass fd to QEMU under FD_NAME, then run cmd with uri fd:FD_NAME. */
static int start_with_fd(struct qmp *q, int fd, const char *cmd, int64_t deadline,
			 char *msg, size_t msglen)
{
	json_t *args = json_pack("{s:s}", "fdname", FD_NAME);
	if (!args)
		return -ENOMEM;
	int r = qmp_call_fd(q, "getfd", args, fd, left_ms(deadline), NULL);
	json_decref(args);
	if (r < 0) {
		snprintf(msg, msglen, "%s", qmp_last_error(q));
		return r;
	}
	args = json_pack("{s:s}", "uri", "fd:" FD_NAME);
	if (!args)
		return -ENOMEM;
	r = qmp_call(q, cmd, args, left_ms(deadline), NULL);
	json_decref(args);
	if (r < 0)
		snprintf(msg, msglen, "%s", qmp_last_error(q));
	return r;
}

int migrate_save(struct qmp *q, const char *path, int timeout_ms, char *msg, size_t msglen)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	msg[0] = '\0';
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = -errno;
		snprintf(msg, msglen, "%s: %s", path, strerror(-e));
		return e;
	}
	int r = start_with_fd(q, fd, "migrate", deadline, msg, msglen);
	close(fd);
	if (r < 0)
		return r;
	r = wait_done(q, deadline, msg, msglen);
	if (r == 0) {
		/* QEMU closed its copy; make the bytes durable before the
		 * template is declared complete. */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	return r;
}

int migrate_load_start(struct qmp *q, const char *path, int timeout_ms, char *msg,
		       size_t msglen)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	msg[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		snprintf(msg, msglen, "%s: %s", path, strerror(-e));
		return e;
	}
	int r = start_with_fd(q, fd, "migrate-incoming", deadline, msg, msglen);
	close(fd);
	return r;
}

int migrate_wait(struct qmp *q, int timeout_ms, char *msg, size_t msglen)
{
	msg[0] = '\0';
	return wait_done(q, util_now_ms() + timeout_ms, msg, msglen);
}

int migrate_load(struct qmp *q, const char *path, int timeout_ms, char *msg, size_t msglen)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	int r = migrate_load_start(q, path, timeout_ms, msg, msglen);
	if (r < 0)
		return r;
	return migrate_wait(q, left_ms(deadline), msg, msglen);
}
