/*
 * test_agent_files.c - the agent's file operations driven through
 * guest_conn: a 1 MiB random file written and read back byte-identical,
 * atomic replace, modes, parents, stat/list/remove/mkdir, distinct errors
 * (ENOENT, ENOTDIR, EISDIR, EACCES, EEXIST, ENOTEMPTY), cancelled uploads
 * leaving nothing, the 256-stream limit, procfs/sysfs files read whole
 * (their st_size is 0 or 4096) with the true size announced, and uploads
 * refused onto devices, FIFOs and sockets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "agent_harness.h"
#include "common/proto.h"

/* f->path = workspace + "/" + rel */
static const char *ws_path(struct agent_fixture *f, const char *rel)
{
	snprintf(f->path, sizeof(f->path), "%.3000s/%s", f->a.ws, rel);
	return f->path;
}

static json_t *call(struct agent_fixture *f, const char *op, const char *path)
{
	return harness_call(f->c, json_pack("{s:s, s:s}", "op", op, "path", path));
}

static void expect_error(json_t *end, const char *code)
{
	assert_non_null(end);
	const char *got = end_error(end);
	if (!got || strcmp(got, code) != 0)
		fail_msg("expected %s, got %s", code, got ? got : "success");
	json_decref(end);
}

static void test_roundtrip_1mib(void **state)
{
	struct agent_fixture *f = *state;
	size_t n = 1u << 20;
	uint8_t *data = malloc(n);
	assert_non_null(data);
	assert_int_equal(util_random(data, n), 0);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", ws_path(f, "deep/er/random.bin"));
	json_t *end = harness_write_file(f->c, path, data, n, 0640);
	assert_non_null(end);
	assert_null(end_error(end));
	assert_int_equal(end_int(end, "size"), (json_int_t)n);
	json_decref(end);

	end = call(f, "stat", path);
	assert_null(end_error(end));
	assert_string_equal(json_string_value(json_object_get(end, "type")), "file");
	assert_string_equal(json_string_value(json_object_get(end, "name")), "random.bin");
	assert_int_equal(end_int(end, "size"), (json_int_t)n);
	assert_int_equal(end_int(end, "mode"), 0640);
	assert_true(end_int(end, "mtime_ms") > 1600000000000ll);
	json_decref(end);

	uint8_t *back = NULL;
	size_t len = 0;
	json_t *ev = NULL;
	end = harness_read_file(f->c, path, &back, &len, &ev);
	assert_non_null(end);
	assert_null(end_error(end));
	assert_int_equal(end_int(end, "size"), (json_int_t)n);
	assert_int_equal(len, n);
	assert_memory_equal(back, data, n);
	assert_string_equal(json_string_value(json_object_get(ev, "event")), "stat");
	assert_int_equal(end_int(ev, "size"), (json_int_t)n);
	assert_int_equal(end_int(ev, "mode"), 0640);
	json_decref(ev);
	json_decref(end);
	free(back);
	free(data);
}

static void test_empty_file_and_replace(void **state)
{
	struct agent_fixture *f = *state;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", ws_path(f, "x.txt"));
	json_t *end = harness_write_file(f->c, path, "", 0, 0600);
	assert_int_equal(end_int(end, "size"), 0);
	json_decref(end);
	end = harness_write_file(f->c, path, "second version\n", 15, 0755);
	assert_int_equal(end_int(end, "size"), 15);
	json_decref(end);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* exact: no umask applied */
	uint8_t *back;
	size_t len;
	end = harness_read_file(f->c, path, &back, &len, NULL);
	assert_int_equal(len, 15);
	assert_memory_equal(back, "second version\n", 15);
	free(back);
	json_decref(end);
	/* no temporary file is left beside it */
	end = call(f, "list", f->a.ws);
	assert_int_equal(json_array_size(json_object_get(end, "entries")), 1);
	json_decref(end);
}

static void test_list_stat_mkdir_remove(void **state)
{
	struct agent_fixture *f = *state;
	json_t *end = harness_call(f->c, json_pack("{s:s, s:s, s:i}", "op", "mkdir", "path",
						   ws_path(f, "d/e/f"), "mode", 0700));
	assert_null(end_error(end));
	json_decref(end);
	struct stat st;
	assert_int_equal(stat(ws_path(f, "d/e/f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* mkdir -p of an existing folder is fine, without parents it is EEXIST */
	json_decref(harness_call(f->c, json_pack("{s:s, s:s}", "op", "mkdir", "path",
						 ws_path(f, "d/e"))));
	expect_error(harness_call(f->c, json_pack("{s:s, s:s, s:b}", "op", "mkdir", "path",
						  ws_path(f, "d/e"), "parents", 0)),
		     "EEXIST");
	expect_error(harness_call(f->c, json_pack("{s:s, s:s, s:b}", "op", "mkdir", "path",
						  ws_path(f, "no/such/parent"), "parents", 0)),
		     "ENOENT");

	json_decref(harness_write_file(f->c, ws_path(f, "d/b.txt"), "bb", 2, 0644));
	json_decref(harness_write_file(f->c, ws_path(f, "d/a.txt"), "a", 1, 0644));
	assert_int_equal(symlink("a.txt", ws_path(f, "d/link")), 0);
	end = call(f, "list", ws_path(f, "d"));
	assert_null(end_error(end));
	json_t *e = json_object_get(end, "entries");
	assert_int_equal(json_array_size(e), 4);
	static const char *const names[] = {"a.txt", "b.txt", "e", "link"};
	static const char *const types[] = {"file", "file", "dir", "symlink"};
	for (size_t i = 0; i < 4; i++) {
		json_t *x = json_array_get(e, i);
		assert_string_equal(json_string_value(json_object_get(x, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(x, "type")), types[i]);
	}
	assert_int_equal(end_int(json_array_get(e, 1), "size"), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 0), "path")),
			    ws_path(f, "d/a.txt"));
	assert_true(json_is_false(json_object_get(end, "truncated")));
	json_decref(end);

	/* remove: a file, a non-empty folder (refused), then recursively */
	json_decref(call(f, "remove", ws_path(f, "d/a.txt")));
	assert_int_equal(access(ws_path(f, "d/a.txt"), F_OK), -1);
	expect_error(call(f, "remove", ws_path(f, "d")), "ENOTEMPTY");
	end = harness_call(f->c, json_pack("{s:s, s:s, s:b}", "op", "remove", "path",
					   ws_path(f, "d"), "recursive", 1));
	assert_null(end_error(end));
	json_decref(end);
	assert_int_equal(access(ws_path(f, "d"), F_OK), -1);
	expect_error(call(f, "remove", ws_path(f, "d")), "ENOENT");
}

static void test_list_truncates_at_10000(void **state)
{
	struct agent_fixture *f = *state;
	const char *dir = ws_path(f, "many");
	assert_int_equal(mkdir(dir, 0755), 0);
	char p[PATH_MAX + 32];
	for (int i = 0; i < 10050; i++) {
		snprintf(p, sizeof(p), "%s/n%05d", dir, 10049 - i);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	json_t *end = call(f, "list", dir);
	json_t *e = json_object_get(end, "entries");
	assert_int_equal(json_array_size(e), 10000);
	assert_true(json_is_true(json_object_get(end, "truncated")));
	/* the first 10000 by name, in order */
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 0), "name")),
			    "n00000");
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 9999), "name")),
			    "n09999");
	json_decref(end);
}

static void test_distinct_errors(void **state)
{
	struct agent_fixture *f = *state;
	json_decref(harness_write_file(f->c, ws_path(f, "plain"), "x", 1, 0644));
	expect_error(call(f, "file_read", ws_path(f, "missing")), "ENOENT");
	expect_error(call(f, "stat", ws_path(f, "missing")), "ENOENT");
	expect_error(call(f, "list", ws_path(f, "missing")), "ENOENT");
	expect_error(call(f, "file_read", f->a.ws), "EISDIR");
	expect_error(call(f, "file_read", ws_path(f, "plain/below")), "ENOTDIR");
	expect_error(call(f, "list", ws_path(f, "plain")), "ENOTDIR");
	expect_error(harness_write_file(f->c, f->a.ws, "x", 1, 0644), "EISDIR");
	/* a last component ".." or "." names a directory: refused before its
	 * parent is made (parents is on in harness_write_file) */
	expect_error(harness_write_file(f->c, ws_path(f, "made/.."), "x", 1, 0644), "EISDIR");
	expect_error(harness_write_file(f->c, ws_path(f, "made2/."), "x", 1, 0644), "EISDIR");
	struct stat st;
	assert_int_equal(stat(ws_path(f, "made"), &st), -1);
	assert_int_equal(stat(ws_path(f, "made2"), &st), -1);
	expect_error(harness_write_file(f->c, ws_path(f, "plain/below"), "x", 1, 0644), "ENOTDIR");
	expect_error(call(f, "file_read", "/dev/null"), "EINVAL"); /* not a regular file */
	expect_error(call(f, "file_read", "relative"), "EINVAL");
	/* no write without parents into a missing folder */
	json_t *req = json_pack("{s:s, s:s, s:b}", "op", "file_write", "path",
				ws_path(f, "nodir/file"), "parents", 0);
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(f->c, req, &s), 0);
	json_decref(req);
	struct exec_result r = {0};
	assert_int_equal(harness_collect(s, &r, 10000), 0);
	assert_string_equal(end_error(r.end), "ENOENT");
	exec_result_clear(&r);
	guest_stream_close(s);
}

/* EACCES needs an agent that is not root: run one as nobody. */
static void test_eacces(void **state)
{
	(void)state;
	uid_t uid = geteuid() == 0 ? 65534 : 0;
	struct agent_proc a;
	struct guest_conn *c;
	assert_int_equal(harness_start_as(&a, uid, NULL), 0);
	assert_int_equal(guest_conn_open(a.sock, 5000, &c), 0);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/secret", a.ws);
	json_t *end = harness_write_file(c, p, "s", 1, 0);
	assert_null(end_error(end));
	json_decref(end);
	expect_error(harness_call(c, json_pack("{s:s, s:s}", "op", "file_read", "path", p)),
		     "EACCES");
	/* a folder made by us, not writable by the agent's user */
	char d[PATH_MAX + 32];
	snprintf(d, sizeof(d), "%s/locked", a.ws);
	assert_int_equal(mkdir(d, 0555), 0);
	snprintf(p, sizeof(p), "%s/f", d);
	expect_error(harness_write_file(c, p, "x", 1, 0644), "EACCES");
	assert_int_equal(chmod(d, 0), 0);
	expect_error(harness_call(c, json_pack("{s:s, s:s}", "op", "list", "path", d)), "EACCES");
	expect_error(harness_call(c, json_pack("{s:s, s:s}", "op", "stat", "path", p)), "EACCES");
	assert_int_equal(chmod(d, 0755), 0);
	guest_conn_close(c);
	assert_int_equal(harness_stop(&a), 0);
}

/* An upload cancelled half-way leaves neither the target nor a temporary. */
static void test_cancelled_upload_leaves_nothing(void **state)
{
	struct agent_fixture *f = *state;
	json_t *req = json_pack("{s:s, s:s}", "op", "file_write", "path", ws_path(f, "part"));
	struct guest_stream *s;
	assert_int_equal(guest_stream_open(f->c, req, &s), 0);
	json_decref(req);
	static uint8_t chunk[200000];
	assert_int_equal(guest_stream_write(s, chunk, sizeof(chunk), 10000), 0);
	assert_int_equal(guest_stream_cancel(s), 0);
	struct exec_result r = {0};
	assert_int_equal(harness_collect(s, &r, 10000), 0);
	assert_string_equal(end_error(r.end), "ECANCELED");
	exec_result_clear(&r);
	guest_stream_close(s);
	json_t *end = call(f, "list", f->a.ws);
	assert_int_equal(json_array_size(json_object_get(end, "entries")), 0);
	json_decref(end);
}

/* 256 streams may be open; the 257th is refused on the host, and the agent
 * still serves once they are closed. */
/* The host's own bytes of a small pseudo file, or -1. */
static ssize_t host_read(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return -1;
	size_t n = fread(buf, 1, len, fp);
	fclose(fp);
	return (ssize_t)n;
}

/* procfs files have st_size 0, sysfs files 4096: the agent reads them
 * whole and announces the true size (the daemon sends it as Content-Length). */
static void test_pseudo_files_read_whole(void **state)
{
	struct agent_fixture *f = *state;
	static const char *const paths[] = {"/proc/version", "/proc/cpuinfo",
					    "/sys/devices/system/cpu/online"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		static char want[1 << 16];
		ssize_t wn = host_read(paths[i], want, sizeof(want));
		if (wn < 0)
			continue; /* not on this host */
		uint8_t *back = NULL;
		size_t len = 0;
		json_t *ev = NULL;
		json_t *end = harness_read_file(f->c, paths[i], &back, &len, &ev);
		assert_non_null(end);
		if (end_error(end))
			fail_msg("%s: %s", paths[i], end_error(end));
		assert_true(len > 0);
		assert_int_equal(end_int(ev, "size"), (json_int_t)len); /* announced = sent */
		assert_int_equal(end_int(end, "size"), (json_int_t)len);
		if (strcmp(paths[i], "/proc/cpuinfo") != 0) { /* cpuinfo's MHz moves */
			assert_int_equal(len, (size_t)wn);
			assert_memory_equal(back, want, len);
		}
		json_decref(ev);
		json_decref(end);
		free(back);
	}
	/* the agent's own status: its name, and the size it announced */
	uint8_t *back = NULL;
	size_t len = 0;
	json_t *ev = NULL;
	json_t *end = harness_read_file(f->c, "/proc/self/status", &back, &len, &ev);
	assert_null(end_error(end));
	assert_true(len > 5 && memcmp(back, "Name:", 5) == 0);
	assert_int_equal(end_int(ev, "size"), (json_int_t)len);
	json_decref(ev);
	json_decref(end);
	free(back);
}

/* A procfs file over the 1 MiB cap (a process's environ with 1.2 MiB of
 * variables) is refused with EFBIG, not cut. */
static void test_pseudo_file_over_cap(void **state)
{
	struct agent_fixture *f = *state;
	enum { NVARS = 10, VARLEN = 120 * 1024 };
	char *envp[NVARS + 1];
	for (int i = 0; i < NVARS; i++) {
		envp[i] = malloc(VARLEN + 1);
		assert_non_null(envp[i]);
		memset(envp[i], 'v', VARLEN);
		envp[i][0] = (char)('A' + i);
		envp[i][1] = '=';
		envp[i][VARLEN] = '\0';
	}
	envp[NVARS] = NULL;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		dup2(p[0], 0);
		char *argv[] = {"cat", NULL};
		execve("/bin/cat", argv, envp); /* waits on the pipe */
		_exit(127);
	}
	close(p[0]);
	for (int i = 0; i < NVARS; i++)
		free(envp[i]);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	/* wait for the exec to have happened: the environ is then the big one */
	for (int i = 0; i < 500; i++) {
		static char probe[16];
		if (host_read(path, probe, sizeof(probe)) > 0 && probe[0] == 'A')
			break;
		usleep(10000);
	}
	expect_error(call(f, "file_read", path), "EFBIG");
	close(p[1]); /* cat sees EOF and exits */
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

/* Uploading onto an existing device, FIFO or socket (or a symlink to one)
 * is refused with EINVAL and leaves the node as it was: renaming over it
 * would replace, say, /dev/null for every later command. */
static void test_upload_refuses_special_files(void **state)
{
	struct agent_fixture *f = *state;
	char fifo[PATH_MAX], sock[PATH_MAX], dev[PATH_MAX], link[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s", ws_path(f, "fifo"));
	snprintf(sock, sizeof(sock), "%s", ws_path(f, "sock"));
	snprintf(dev, sizeof(dev), "%s", ws_path(f, "null"));
	snprintf(link, sizeof(link), "%s", ws_path(f, "link-to-fifo"));
	assert_int_equal(mkfifo(fifo, 0644), 0);
	assert_int_equal(symlink(fifo, link), 0);
	int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(sfd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int have_sock = strlen(sock) < sizeof(sa.sun_path);
	if (have_sock) {
		memcpy(sa.sun_path, sock, strlen(sock) + 1);
		assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	/* a character device like /dev/null (root only; never the host's own) */
	int have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;

	struct stat st;
	expect_error(harness_write_file(f->c, fifo, "data", 4, 0644), "EINVAL");
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	expect_error(harness_write_file(f->c, link, "data", 4, 0644), "EINVAL");
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	if (have_sock) {
		expect_error(harness_write_file(f->c, sock, "data", 4, 0644), "EINVAL");
		assert_int_equal(stat(sock, &st), 0);
		assert_true(S_ISSOCK(st.st_mode));
	}
	if (have_dev) {
		expect_error(harness_write_file(f->c, dev, "data", 4, 0644), "EINVAL");
		assert_int_equal(stat(dev, &st), 0);
		assert_true(S_ISCHR(st.st_mode));
	}
	close(sfd);
	/* no temporary file was left beside them */
	json_t *end = call(f, "list", f->a.ws);
	assert_int_equal(json_array_size(json_object_get(end, "entries")),
			 2 + (size_t)have_sock + (size_t)have_dev);
	json_decref(end);
	/* a regular file is still replaced */
	char plain[PATH_MAX];
	snprintf(plain, sizeof(plain), "%s", ws_path(f, "plain"));
	json_decref(harness_write_file(f->c, plain, "one", 3, 0644));
	end = harness_write_file(f->c, plain, "two!", 4, 0644);
	assert_null(end_error(end));
	assert_int_equal(end_int(end, "size"), 4);
	json_decref(end);
}

static void test_stream_limit(void **state)
{
	struct agent_fixture *f = *state;
	struct guest_stream *s[PROTO_MAX_STREAMS];
	char name[64];
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++) {
		snprintf(name, sizeof(name), "up%u", i);
		json_t *req = json_pack("{s:s, s:s}", "op", "file_write", "path", ws_path(f, name));
		assert_int_equal(guest_stream_open(f->c, req, &s[i]), 0);
		json_decref(req);
	}
	struct guest_stream *extra;
	json_t *req = json_pack("{s:s, s:s}", "op", "stat", "path", "/");
	assert_int_equal(guest_stream_open(f->c, req, &extra), -EMFILE);
	/* every one of them is live on the agent: finish the last one */
	assert_int_equal(guest_stream_write(s[255], "z", 1, 5000), 0);
	assert_int_equal(guest_stream_write_eof(s[255]), 0);
	struct exec_result r = {0};
	assert_int_equal(harness_collect(s[255], &r, 10000), 0);
	assert_int_equal(end_int(r.end, "size"), 1);
	exec_result_clear(&r);
	for (unsigned i = 0; i < PROTO_MAX_STREAMS; i++)
		guest_stream_close(s[i]);
	json_t *end = NULL;
	assert_int_equal(guest_call(f->c, req, 10000, &end), 0);
	assert_string_equal(json_string_value(json_object_get(end, "type")), "dir");
	json_decref(end);
	json_decref(req);
	end = call(f, "list", f->a.ws);
	assert_int_equal(json_array_size(json_object_get(end, "entries")), 1); /* up255 */
	json_decref(end);
}

/* Non-UTF-8 names are listed (with U+FFFD) instead of failing the list. */
static void test_odd_names(void **state)
{
	struct agent_fixture *f = *state;
	int fd = open(ws_path(f, "bad\xff\xfename"), O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	json_t *end = call(f, "list", f->a.ws);
	assert_null(end_error(end));
	json_t *e = json_array_get(json_object_get(end, "entries"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "name")),
			    "bad\xef\xbf\xbd\xef\xbf\xbdname");
	json_decref(end);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		AGENT_TEST(test_roundtrip_1mib),
		AGENT_TEST(test_empty_file_and_replace),
		AGENT_TEST(test_list_stat_mkdir_remove),
		AGENT_TEST(test_list_truncates_at_10000),
		AGENT_TEST(test_distinct_errors),
		cmocka_unit_test(test_eacces),
		AGENT_TEST(test_cancelled_upload_leaves_nothing),
		AGENT_TEST(test_stream_limit),
		AGENT_TEST(test_odd_names),
		AGENT_TEST(test_pseudo_files_read_whole),
		AGENT_TEST(test_pseudo_file_over_cap),
		AGENT_TEST(test_upload_refuses_special_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
