/*
 * test_cluster_etcd.c - the etcd client's conditional writes against a real
 * etcd (etcd_client.c): a put whose answer is lost is sent again to the next
 * member, and the write it finds there is its own, not a conflict.
 *
 * Then, with etcd's authentication turned on (etcdctl: a root user, and a
 * user whose role may read and write under /t/ only): a wrong password is
 * -EACCES with etcd's reason, the right one reads, writes and watches
 * under /t/ and nothing outside it, and a token etcd stops taking (users
 * and roles changed) is replaced without the caller seeing it.
 *
 * Starts one etcd member on loopback in a temporary directory (skipped when
 * no etcd binary is installed; .ci/run installs it).  The "lost answer" is a
 * one-connection relay in front of it that passes the request on and never
 * answers, so the client times out after ETCD_ATTEMPT_MS and tries the real
 * member next.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/util.h"
#include "daemon/cluster/etcd_client.h"

static char dir[] = "/tmp/test_cluster_etcd_XXXXXX";
static pid_t etcd_pid;
static int client_port;

/* A TCP socket bound to a free loopback port (*port), or -1. */
static int loopback_socket(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (s >= 0 && (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		       getsockname(s, (struct sockaddr *)&a, &len) < 0)) {
		close(s);
		s = -1;
	}
	*port = s >= 0 ? ntohs(a.sin_port) : -1;
	return s;
}

/* A free loopback TCP port (bound, read, closed). */
static int free_port(void)
{
	int port;
	int s = loopback_socket(&port);
	if (s >= 0)
		close(s);
	return port;
}

static int etcd_installed(void)
{
	return access("/usr/bin/etcd", X_OK) == 0;
}

static int start_etcd(void **state)
{
	(void)state;
	if (!etcd_installed())
		return 0;
	if (!mkdtemp(dir))
		return -1;
	client_port = free_port();
	int peer = free_port();
	char data[sizeof(dir) + 16], curl_url[64], peer_url[64], cluster[96];
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(curl_url, sizeof(curl_url), "http://127.0.0.1:%d", client_port);
	snprintf(peer_url, sizeof(peer_url), "http://127.0.0.1:%d", peer);
	snprintf(cluster, sizeof(cluster), "t=%s", peer_url);
	etcd_pid = fork();
	if (etcd_pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execl("/usr/bin/etcd", "etcd", "--name", "t", "--data-dir", data,
		      "--listen-client-urls", curl_url, "--advertise-client-urls", curl_url,
		      "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
		      "--initial-cluster", cluster, "--auth-token-ttl", "2", (char *)NULL);
		_exit(127);
	}
	if (etcd_pid < 0)
		return -1;
	/* ready when a read answers */
	char ep[64];
	snprintf(ep, sizeof(ep), "etcd://127.0.0.1:%d", client_port);
	struct etcd *e;
	if (etcd_open(ep, NULL, &e) < 0)
		return -1;
	int r = -1;
	for (int i = 0; i < 100 && r < 0; i++) {
		struct etcd_kvs kvs;
		r = etcd_range(e, "/ready", 0, &kvs);
		if (r == 0)
			etcd_kvs_clear(&kvs);
		else
			usleep(100 * 1000);
	}
	etcd_close(e);
	return r;
}

static int stop_etcd(void **state)
{
	(void)state;
	if (etcd_pid > 0) {
		kill(etcd_pid, SIGKILL);
		waitpid(etcd_pid, NULL, 0);
	}
	if (etcd_installed()) {
		char cmd[sizeof(dir) + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

/* ---- the relay that loses the answer ------------------------------------- */

struct relay {
	int listen_fd;
	int port;
	int stop;                /* lock */
	int passed;              /* lock: requests passed on to etcd */
	pthread_mutex_t lock;
	pthread_t thread;
};

/* Read one HTTP request (headers and a Content-Length body) from fd. */
static ssize_t read_request(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			return -1;
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strcasestr(buf, "content-length:");
		if (end && cl && got >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
			return (ssize_t)got;
		if (got + 1 >= cap)
			return -1;
	}
}

static void *relay_main(void *arg)
{
	struct relay *rl = arg;
	int c = accept(rl->listen_fd, NULL, NULL);
	char buf[65536];
	ssize_t n = c < 0 ? -1 : read_request(c, buf, sizeof(buf));
	if (n > 0) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)client_port),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    write(s, buf, (size_t)n) == n) {
			/* etcd's answer arrives and goes nowhere */
			struct pollfd p = {.fd = s, .events = POLLIN};
			if (poll(&p, 1, 5000) == 1 && read(s, buf, sizeof(buf)) > 0) {
				pthread_mutex_lock(&rl->lock);
				rl->passed++;
				pthread_mutex_unlock(&rl->lock);
			}
		}
		if (s >= 0)
			close(s);
	}
	/* hold the client's connection open, silent, until told to stop */
	for (;;) {
		pthread_mutex_lock(&rl->lock);
		int stop = rl->stop;
		pthread_mutex_unlock(&rl->lock);
		if (stop)
			break;
		usleep(20 * 1000);
	}
	if (c >= 0)
		close(c);
	return NULL;
}

static void relay_start(struct relay *rl)
{
	memset(rl, 0, sizeof(*rl));
	pthread_mutex_init(&rl->lock, NULL);
	rl->listen_fd = loopback_socket(&rl->port);
	assert_true(rl->listen_fd >= 0);
	assert_int_equal(listen(rl->listen_fd, 4), 0);
	assert_int_equal(pthread_create(&rl->thread, NULL, relay_main, rl), 0);
}

static int relay_stop(struct relay *rl)
{
	pthread_mutex_lock(&rl->lock);
	rl->stop = 1;
	int passed = rl->passed;
	pthread_mutex_unlock(&rl->lock);
	pthread_join(rl->thread, NULL);
	close(rl->listen_fd);
	pthread_mutex_destroy(&rl->lock);
	return passed;
}

/* A client of the relay first, then the real member. */
static struct etcd *open_via(const struct relay *rl)
{
	char ep[128];
	struct etcd *e = NULL;
	if (rl)
		snprintf(ep, sizeof(ep), "etcd://127.0.0.1:%d,127.0.0.1:%d", rl->port, client_port);
	else
		snprintf(ep, sizeof(ep), "etcd://127.0.0.1:%d", client_port);
	assert_int_equal(etcd_open(ep, NULL, &e), 0);
	return e;
}

static void value_is(struct etcd *e, const char *key, const char *want)
{
	struct etcd_kvs kvs;
	assert_int_equal(etcd_range(e, key, 0, &kvs), 0);
	assert_int_equal(kvs.n, 1);
	assert_string_equal(kvs.v[0].value, want);
	etcd_kvs_clear(&kvs);
}

/* ---- tests --------------------------------------------------------------- */

static void put_new_conflicts(void **state)
{
	(void)state;
	if (!etcd_installed())
		skip();
	struct etcd *e = open_via(NULL);
	int64_t rev = 0;
	assert_int_equal(etcd_put_new(e, "/t/a", "one", 3, 0, &rev), 0);
	assert_true(rev > 0);
	/* another value: a real conflict, the key keeps the first */
	assert_int_equal(etcd_put_new(e, "/t/a", "two", 3, 0, NULL), -EEXIST);
	value_is(e, "/t/a", "one");
	/* the same bytes: the write is there already */
	int64_t rev2 = 0;
	assert_int_equal(etcd_put_new(e, "/t/a", "one", 3, 0, &rev2), 0);
	assert_int_equal(rev2, rev);
	/* put_at: a moved revision is stale unless the key holds the value */
	assert_int_equal(etcd_put_at(e, "/t/a", "three", 5, 0, rev + 100, NULL), -ESTALE);
	value_is(e, "/t/a", "one");
	assert_int_equal(etcd_put_at(e, "/t/a", "one", 3, 0, rev + 100, NULL), 0);
	assert_int_equal(etcd_put_at(e, "/t/a", "four", 4, 0, rev, NULL), 0);
	value_is(e, "/t/a", "four");
	etcd_close(e);
}

static void lost_answer_is_not_a_conflict(void **state)
{
	(void)state;
	if (!etcd_installed())
		skip();
	/* control: a write relayed and unanswered did reach etcd */
	struct relay rl;
	relay_start(&rl);
	struct etcd *e = open_via(&rl);
	int64_t t0 = util_now_ms();
	assert_int_equal(etcd_put_new(e, "/t/lost", "mine", 4, 0, NULL), 0);
	int64_t took = util_now_ms() - t0;
	assert_int_equal(relay_stop(&rl), 1);
	/* the first attempt timed out: the answer came from the second member */
	assert_true(took >= ETCD_ATTEMPT_MS);
	value_is(e, "/t/lost", "mine");
	etcd_close(e);

	/* and a lost answer does not turn a real conflict into a success */
	relay_start(&rl);
	e = open_via(&rl);
	assert_int_equal(etcd_put_new(e, "/t/lost", "theirs", 6, 0, NULL), -EEXIST);
	assert_int_equal(relay_stop(&rl), 1);
	value_is(e, "/t/lost", "mine");
	etcd_close(e);
}

/* ---- authentication ------------------------------------------------------ */

static struct etcd *open_as(const char *user, const char *password)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "etcd://127.0.0.1:%d", client_port);
	struct etcd_opts o = {.user = user, .password = password};
	struct etcd *e = NULL;
	assert_int_equal(etcd_open(ep, &o, &e), 0);
	return e;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	strncat(arg, p, size * n < 1000 ? size * n : 1000);
	return size * n;
}

/* POST body to path with token (may be NULL) by hand: the answer's status,
 * its body into out (1024 bytes). */
static long raw_post(const char *path, const char *body, const char *token, char *out)
{
	CURL *h = curl_easy_init();
	char url[128], auth[300];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", client_port, path);
	struct curl_slist *l = NULL;
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		l = curl_slist_append(l, auth);
	}
	out[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	long status = 0;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(l);
	curl_easy_cleanup(h);
	return status;
}

struct seen {
	int puts;
};

static int on_watch(void *arg, struct etcd_watch_msg *m)
{
	struct seen *s = arg;
	for (size_t i = 0; i < m->events.n; i++)
		s->puts += !m->events.v[i].deleted && !strcmp(m->events.v[i].key, "/t/watched");
	return s->puts ? 1 : 0;
}

static void *put_soon(void *arg)
{
	usleep(300 * 1000);
	etcd_put(arg, "/t/watched", "w", 1, 0, NULL);
	return NULL;
}

static void authentication(void **state)
{
	(void)state;
	if (!etcd_installed() || access("/usr/bin/etcdctl", X_OK) != 0)
		skip();
	/* etcd with users: root, and pds who may use /t/ only */
	char ep[64];
	snprintf(ep, sizeof(ep), "--endpoints http://127.0.0.1:%d", client_port);
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "set -e; E='etcdctl %s'; $E user add root:rootpw; $E user grant-role root root; "
		 "$E user add pds:pdspw; $E role add pds; "
		 "$E role grant-permission pds --prefix=true readwrite /t/; "
		 "$E user grant-role pds pds; $E auth enable",
		 ep);
	char quiet[600];
	snprintf(quiet, sizeof(quiet), "(%s) >/dev/null 2>&1", cmd);
	assert_int_equal(system(quiet), 0);

	/* no user: etcd says so, and the call is refused */
	struct etcd *e = open_via(NULL);
	struct etcd_kvs kvs;
	char why[ETCD_ERROR_MAX];
	assert_int_equal(etcd_range(e, "/t/a", 0, &kvs), -EACCES);
	etcd_last_error(e, why, sizeof(why));
	assert_non_null(strstr(why, "user name is empty"));
	etcd_close(e);
	/* a wrong password: refused, with etcd's reason, and never in it */
	e = open_as("pds", "wrong-password");
	assert_int_equal(etcd_range(e, "/t/a", 0, &kvs), -EACCES);
	etcd_last_error(e, why, sizeof(why));
	assert_non_null(strstr(why, "authentication failed"));
	assert_null(strstr(why, "wrong-password"));
	etcd_close(e);
	/* the right one: reads and writes under /t/ ... */
	e = open_as("pds", "pdspw");
	assert_int_equal(etcd_put(e, "/t/auth", "yes", 3, 0, NULL), 0);
	value_is(e, "/t/auth", "yes");
	/* ... and nothing outside it (the role's permission) */
	assert_int_equal(etcd_put(e, "/other", "no", 2, 0, NULL), -EACCES);
	/* a watch carries the token too: it sees a put */
	struct seen seen = {0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, put_soon, e), 0);
	int w = etcd_watch(e, "/t/", 0, 5000, on_watch, &seen, NULL);
	pthread_join(t, NULL);
	assert_int_equal(w, 1);
	assert_int_equal(seen.puts, 1);

	/* Tokens expire (--auth-token-ttl 2 here, 300 s by default) when not
	 * used.  Positive control by hand: a token taken now is refused once
	 * it was left alone for longer. */
	char out[1024];
	assert_int_equal(raw_post("/v3/auth/authenticate", "{\"name\":\"pds\",\"password\":\"pdspw\"}",
				  NULL, out),
			 200);
	char *tok = strstr(out, "\"token\":\"");
	assert_non_null(tok);
	tok += 9;
	*strchr(tok, '"') = '\0';
	char token[300];
	snprintf(token, sizeof(token), "%s", tok);
	const char *range = "{\"key\":\"L3QvYXV0aA==\"}"; /* /t/auth */
	assert_int_equal(raw_post("/v3/kv/range", range, token, out), 200);
	sleep(4);
	assert_int_equal(raw_post("/v3/kv/range", range, token, out), 401);
	assert_non_null(strstr(out, "invalid auth token"));
	/* the client's token is as old: it authenticates again by itself */
	value_is(e, "/t/auth", "yes");
	etcd_close(e);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_new_conflicts),
		cmocka_unit_test(lost_answer_is_not_a_conflict),
		cmocka_unit_test(authentication), /* last: it turns authentication on */
	};
	int r = cmocka_run_group_tests(tests, start_etcd, stop_etcd);
	curl_global_cleanup();
	return r;
}
