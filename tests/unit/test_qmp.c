/*
 * test_qmp.c - the QMP client against a fake QMP server on a socketpair:
 * greeting and capabilities, returns, errors mapped to -errno with the text
 * kept, events interleaved with replies, late replies, garbage and
 * oversized lines, a lost connection, and fd passing with SCM_RIGHTS.
 *
 * Reply ids are predictable ("ps-1" is qmp_capabilities, then "ps-2", ...),
 * so most server lines are written before the client reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "engine/qemu/qmp.h"

#define GREETING "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}}, \"capabilities\": [\"oob\"]}}\r\n"
#define CAPS_OK "{\"return\": {}, \"id\": \"ps-1\"}\r\n"

static int pair[2]; /* [0] client, [1] fake server */

static int setup(void **state)
{
	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (pair[1] >= 0)
		close(pair[1]);
	return 0;
}

static void srv(const char *s)
{
	assert_int_equal(write(pair[1], s, strlen(s)), (ssize_t)strlen(s));
}

/* Read one line the client sent, parsed. */
static json_t *srv_read_cmd(void)
{
	char line[4096];
	size_t n = 0;
	while (n + 1 < sizeof(line)) {
		ssize_t r = read(pair[1], line + n, 1);
		assert_true(r == 1);
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	json_t *o = json_loads(line, 0, NULL);
	assert_non_null(o);
	return o;
}

static struct qmp *attach_ok(void)
{
	struct qmp *q = NULL;
	srv(GREETING CAPS_OK);
	assert_int_equal(qmp_attach(pair[0], 2000, &q), 0);
	json_t *caps = srv_read_cmd();
	assert_string_equal(json_string_value(json_object_get(caps, "execute")), "qmp_capabilities");
	assert_string_equal(json_string_value(json_object_get(caps, "id")), "ps-1");
	json_decref(caps);
	return q;
}

static void test_greeting_and_return(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	json_t *g = qmp_greeting(q);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(g, "version"), "qemu"), "major")), 7);
	srv("{\"return\": {\"status\": \"running\", \"running\": true}, \"id\": \"ps-2\"}\r\n");
	json_t *ret = NULL;
	json_t *args = json_pack("{s:s}", "x", "y");
	assert_int_equal(qmp_call(q, "query-status", args, 2000, &ret), 0);
	json_decref(args);
	assert_string_equal(json_string_value(json_object_get(ret, "status")), "running");
	json_decref(ret);
	json_t *cmd = srv_read_cmd();
	assert_string_equal(json_string_value(json_object_get(cmd, "execute")), "query-status");
	assert_string_equal(json_string_value(json_object_get(json_object_get(cmd, "arguments"), "x")), "y");
	json_decref(cmd);
	assert_string_equal(qmp_last_error(q), "");
	qmp_close(q);
}

static void test_errors_mapped(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	srv("{\"error\": {\"class\": \"GenericError\", \"desc\": \"Migration is disabled\"}, \"id\": \"ps-2\"}\r\n"
	    "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command nope has not been found\"}, \"id\": \"ps-3\"}\r\n"
	    "{\"error\": {\"class\": \"DeviceNotFound\", \"desc\": \"no dev\"}, \"id\": \"ps-4\"}\r\n"
	    "{\"id\": \"ps-5\"}\r\n");
	json_t *ret = (json_t *)1;
	assert_int_equal(qmp_call(q, "migrate", NULL, 2000, &ret), -EIO);
	assert_null(ret);
	assert_non_null(strstr(qmp_last_error(q), "Migration is disabled"));
	assert_non_null(strstr(qmp_last_error(q), "migrate"));
	assert_int_equal(qmp_call(q, "nope", NULL, 2000, NULL), -EOPNOTSUPP);
	assert_non_null(strstr(qmp_last_error(q), "has not been found"));
	assert_int_equal(qmp_call(q, "device_del", NULL, 2000, NULL), -ENODEV);
	assert_int_equal(qmp_call(q, "odd", NULL, 2000, NULL), -EBADMSG);
	qmp_close(q);
}

static void test_events_interleaved(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	srv("{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"STOP\"}\r\n"
	    "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 3}, \"event\": \"MIGRATION\", \"data\": {\"status\": \"setup\"}}\r\n"
	    "{\"return\": {}, \"id\": \"ps-2\"}\r\n"
	    "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 4}, \"event\": \"MIGRATION\", \"data\": {\"status\": \"completed\"}}\r\n");
	assert_int_equal(qmp_call(q, "stop", NULL, 2000, NULL), 0);
	json_t *ev = NULL;
	assert_int_equal(qmp_event_next(q, 0, &ev), 1);
	assert_string_equal(json_string_value(json_object_get(ev, "event")), "STOP");
	json_decref(ev);
	assert_int_equal(qmp_event_next(q, 0, &ev), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "data"), "status")), "setup");
	json_decref(ev);
	/* The third was not read yet: it comes from the socket. */
	assert_int_equal(qmp_event_next(q, 1000, &ev), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "data"), "status")), "completed");
	json_decref(ev);
	assert_int_equal(qmp_event_next(q, 20, &ev), 0);
	qmp_close(q);
}

static void test_event_queue_is_capped(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	char line[128];
	for (unsigned i = 0; i < QMP_MAX_EVENTS + 10; i++) {
		snprintf(line, sizeof(line), "{\"event\": \"E\", \"data\": {\"n\": %u}}\r\n", i);
		srv(line);
	}
	srv("{\"return\": {}, \"id\": \"ps-2\"}\r\n");
	assert_int_equal(qmp_call(q, "x", NULL, 2000, NULL), 0);
	json_t *ev = NULL;
	assert_int_equal(qmp_event_next(q, 0, &ev), 1);
	/* The oldest ten were dropped. */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "data"), "n")), 10);
	json_decref(ev);
	qmp_close(q);
}

static void test_garbage_lines_skipped(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	srv("this is not json\r\n[1, 2, 3]\r\n\r\n{\"broken\": \r\n"
	    "{\"return\": {\"late\": true}, \"id\": \"ps-99\"}\r\n"
	    "{\"return\": 42, \"id\": \"ps-2\"}\r\n");
	json_t *ret = NULL;
	assert_int_equal(qmp_call(q, "x", NULL, 2000, &ret), 0);
	assert_int_equal(json_integer_value(ret), 42);
	json_decref(ret);
	assert_int_equal(qmp_skipped_lines(q), 4);
	qmp_close(q);
}

static void test_timeout_then_late_reply(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	assert_int_equal(qmp_call(q, "slow", NULL, 50, NULL), -ETIMEDOUT);
	assert_non_null(strstr(qmp_last_error(q), "timed out"));
	/* The late reply to ps-2 must not be taken as the reply to ps-3. */
	srv("{\"return\": {\"which\": 2}, \"id\": \"ps-2\"}\r\n{\"return\": {\"which\": 3}, \"id\": \"ps-3\"}\r\n");
	json_t *ret = NULL;
	assert_int_equal(qmp_call(q, "next", NULL, 2000, &ret), 0);
	assert_int_equal(json_integer_value(json_object_get(ret, "which")), 3);
	json_decref(ret);
	qmp_close(q);
}

static void *write_big(void *arg)
{
	(void)arg;
	size_t n = QMP_MAX_LINE + 4096;
	char *big = malloc(n);
	memset(big, 'x', n);
	big[0] = '{';
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(pair[1], big + off, n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(big);
	return NULL;
}

static void test_oversized_line_breaks_connection(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	pthread_t t;
	pthread_create(&t, NULL, write_big, NULL);
	assert_int_equal(qmp_call(q, "x", NULL, 5000, NULL), -EMSGSIZE);
	assert_int_equal(qmp_call(q, "y", NULL, 100, NULL), -EMSGSIZE);
	qmp_close(q);
	close(pair[1]); /* unblocks the writer if the client stopped reading */
	pair[1] = -1;
	pthread_join(t, NULL);
}

static void test_connection_lost(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	close(pair[1]);
	pair[1] = -1;
	int r = qmp_call(q, "x", NULL, 2000, NULL);
	assert_true(r == -EPIPE || r == -ECONNRESET);
	/* The connection stays failed with the same error. */
	assert_int_equal(qmp_call(q, "x", NULL, 10, NULL), r);
	json_t *ev = NULL;
	assert_true(qmp_event_next(q, 10, &ev) < 0);
	qmp_close(q);
}

static void test_bad_greeting(void **state)
{
	(void)state;
	struct qmp *q = NULL;
	srv("{\"hello\": 1}\r\n");
	assert_int_equal(qmp_attach(pair[0], 1000, &q), -EBADMSG);
	assert_null(q);
}

static void test_no_greeting_times_out(void **state)
{
	(void)state;
	struct qmp *q = NULL;
	assert_int_equal(qmp_attach(pair[0], 50, &q), -ETIMEDOUT);
}

static void test_fd_passing(void **state)
{
	(void)state;
	struct qmp *q = attach_ok();
	char path[] = "/tmp/test_qmp_fd_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	srv("{\"return\": {}, \"id\": \"ps-2\"}\r\n");
	json_t *args = json_pack("{s:s}", "fdname", "state");
	assert_int_equal(qmp_call_fd(q, "getfd", args, fd, 2000, NULL), 0);
	json_decref(args);
	/* The server side gets the command and a working descriptor. */
	char buf[512];
	union {
		char c[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {buf, sizeof(buf) - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
			    .msg_controllen = sizeof(cm.c)};
	ssize_t n = recvmsg(pair[1], &mh, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\"getfd\""));
	assert_non_null(strstr(buf, "\"state\""));
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	int got;
	memcpy(&got, CMSG_DATA(c), sizeof(int));
	assert_int_equal(write(got, "abc", 3), 3);
	struct stat a, b;
	fstat(fd, &a);
	fstat(got, &b);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(b.st_size, 3);
	close(got);
	close(fd);
	assert_int_equal(qmp_call_fd(q, "getfd", NULL, -1, 10, NULL), -EBADF);
	qmp_close(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_greeting_and_return, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_mapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_interleaved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_queue_is_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_lines_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_then_late_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_line_breaks_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_greeting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_greeting_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_passing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
