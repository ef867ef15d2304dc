/*
 * bench_rest.c - a benchmark's own pandastackd and timed REST creates (see
 * bench_rest.h).
 */
#include "bench_rest.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* Cap on an answer the benchmark reads, bytes. */
#define ANSWER_MAX (1u << 20)

struct answer {
	char *buf;
	size_t len;
};

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t k = sz * n;
	if (a->len + k > ANSWER_MAX)
		return 0;
	char *nb = realloc(a->buf, a->len + k + 1);
	if (!nb)
		return 0;
	memcpy(nb + a->len, p, k);
	a->len += k;
	nb[a->len] = '\0';
	a->buf = nb;
	return k;
}

/* One request; *status and the answer (caller frees a->buf).  0 or -EIO. */
static int rest_request(struct bench_daemon *d, const char *method, const char *path,
		   const char *body, long *status, struct answer *a)
{
	char url[512], auth[200];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", d->port, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", d->key);
	CURL *c = curl_easy_init();
	if (!c)
		return -ENOMEM;
	struct curl_slist *h = curl_slist_append(NULL, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	CURLcode rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc == CURLE_OK ? 0 : -EIO;
}

int bench_daemon_start(struct bench_daemon *d, const char *daemon, const char *dir,
		       const char *cache, const char *template, unsigned pool)
{
	char data[PATH_MAX], logp[PATH_MAX], sizes[128];
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	if (snprintf(data, sizeof(data), "%s/data", dir) >= (int)sizeof(data) ||
	    snprintf(logp, sizeof(logp), "%s/daemon.log", dir) >= (int)sizeof(logp))
		return -ENAMETOOLONG;
	snprintf(sizes, sizeof(sizes), "%s=%u", template, pool);
	int r = util_mkdir_p(dir, 0755);
	if (r < 0)
		return r;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(daemon, daemon, "--listen", "127.0.0.1:0", "--data-dir", data, "--cache", cache,
		      "--pool-size", "0", "--pool-sizes", sizes, (char *)NULL);
		_exit(127);
	}
	d->pid = pid;
	for (int i = 0; i < 1200; i++) {
		char *text = NULL, *keytext = NULL, key[PATH_MAX + 16];
		size_t len = 0;
		if (util_read_file(logp, 1u << 20, &text, &len) == 0) {
			const char *m = strstr(text, "event=http.listening");
			const char *p = m ? strstr(m, " port=") : NULL;
			if (p)
				d->port = (unsigned)strtoul(p + 6, NULL, 10);
			free(text);
		}
		snprintf(key, sizeof(key), "%s/admin.key", data);
		if (d->port && util_read_file(key, 4096, &keytext, &len) == 0) {
			snprintf(d->key, sizeof(d->key), "%.*s", (int)strcspn(keytext, "\r\n"), keytext);
			free(keytext);
			return 0;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			d->pid = 0;
			return -ECHILD;
		}
		usleep(100 * 1000);
	}
	bench_daemon_stop(d);
	return -ETIMEDOUT;
}

/* SIGKILL every QEMU whose qemu.pid is under dir (sandboxes outlive their
 * daemon by design). */
static void reap(const char *dir)
{
	DIR *dd = opendir(dir);
	if (!dd)
		return;
	struct dirent *e;
	while ((e = readdir(dd))) {
		char p[PATH_MAX], *text = NULL;
		size_t len = 0;
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			continue;
		if (e->d_type == DT_DIR) {
			reap(p);
		} else if (!strcmp(e->d_name, "qemu.pid") && util_read_file(p, 64, &text, &len) == 0) {
			pid_t pid = (pid_t)atoi(text);
			if (pid > 1)
				kill(pid, SIGKILL);
			free(text);
		}
	}
	closedir(dd);
}

void bench_daemon_stop(struct bench_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	reap(d->dir);
}

int bench_pool_ready(struct bench_daemon *d, const char *template)
{
	long st = 0;
	struct answer a = {0};
	int r = rest_request(d, "GET", "/v1/templates", NULL, &st, &a);
	json_t *o = r == 0 && st == 200 ? json_loads(a.buf, 0, NULL) : NULL;
	free(a.buf);
	if (!o)
		return -EIO;
	int n = -ENOENT;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(o, "templates"), i, t) {
		if (!strcmp(json_string_value(json_object_get(t, "name")) ?: "", template))
			n = (int)json_integer_value(json_object_get(t, "pool_ready"));
	}
	json_decref(o);
	return n;
}

int bench_create(struct bench_daemon *d, const char *template, double *ms, char *id,
		 int *from_pool)
{
	char body[256];
	snprintf(body, sizeof(body), "{\"template\": \"%s\", \"ttl_seconds\": 600}", template);
	long st = 0;
	struct answer a = {0};
	int64_t t0 = util_now_us();
	int r = rest_request(d, "POST", "/v1/sandboxes", body, &st, &a);
	*ms = (double)(util_now_us() - t0) / 1000.0;
	json_t *o = r == 0 && st == 201 ? json_loads(a.buf, 0, NULL) : NULL;
	if (!o) {
		fprintf(stderr, "bench: create answered %ld: %.300s\n", st, a.buf ? a.buf : "");
		free(a.buf);
		return -EIO;
	}
	free(a.buf);
	snprintf(id, 64, "%s", json_string_value(json_object_get(o, "id")) ?: "");
	const char *from = json_string_value(json_object_get(o, "restored_from"));
	*from_pool = from && !strcmp(from, "pool");
	json_decref(o);
	return 0;
}

int bench_exec(struct bench_daemon *d, const char *id, const char *cmd, double *ms, char *out,
	       size_t outlen)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	json_t *b = json_pack("{s:s}", "cmd", cmd);
	char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!body)
		return -ENOMEM;
	long st = 0;
	struct answer a = {0};
	int64_t t0 = util_now_us();
	int r = rest_request(d, "POST", path, body, &st, &a);
	*ms = (double)(util_now_us() - t0) / 1000.0;
	free(body);
	json_t *o = r == 0 && st == 200 ? json_loads(a.buf, 0, NULL) : NULL;
	if (!o || json_integer_value(json_object_get(o, "exit_code")) != 0 ||
	    !json_is_integer(json_object_get(o, "exit_code"))) {
		fprintf(stderr, "bench: exec answered %ld: %.300s\n", st, a.buf ? a.buf : "");
		r = r < 0 ? r : -EIO;
	} else if (out && outlen) {
		snprintf(out, outlen, "%s", json_string_value(json_object_get(o, "stdout")) ?: "");
	}
	json_decref(o);
	free(a.buf);
	return r;
}

int bench_delete(struct bench_daemon *d, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	long st = 0;
	struct answer a = {0};
	int r = rest_request(d, "DELETE", path, NULL, &st, &a);
	free(a.buf);
	return r < 0 ? r : st / 100 == 2 ? 0 : -EIO;
}
