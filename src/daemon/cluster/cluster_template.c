/*
 * cluster_template.c - templates by content hash (see cluster_int.h).
 *
 * A template's files are its folder's template.json, state, memory and
 * disk.qcow2, and the layers below disk.qcow2 (qcow2_backing_chain: the
 * image's root file system).  Each file's SHA-256 and size make its
 * manifest; the template's content hash is the SHA-256 of the manifest's
 * lines "<role> <size> <sha256>\n" in that order (layers as layer0,
 * layer1...).  Nodes advertise name and hash in their records.
 *
 * The template thread hashes this node's ready templates (again when a
 * file's size or mtime changes), then, every TPL_SCAN_MS, fetches each
 * template another node advertises and this one lacks:
 *   GET /cluster/v1/templates/{name}           its manifest (JSON)
 *   GET /cluster/v1/templates/{name}/files/{i} file i of the manifest
 * both signed (CLUSTER_NODE_HEADER), from a node that advertises the hash
 * most nodes do.  The manifest must hash to the advertised value and each
 * file to its line, checked as the bytes arrive; the files land in a
 * staging folder that is renamed into <cache>/templates/<name> only when
 * all of them are right.  A layer is used where it already is when a file
 * of that size and hash is found at the source's path or at the same place
 * under this node's cache; otherwise it is fetched to that place.  When
 * the first layer's path differs from the one disk.qcow2 names, disk.qcow2
 * is pointed at it (`qemu-img rebase -u`, after its hash was checked).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/json_get.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "daemon/cluster/cluster_int.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/http_req.h"
#include "daemon/sandbox/templates.h"
#include "engine/qemu/proc.h"
#include "engine/qemu/qcow2.h"

#define TPL_SCAN_MS 5000
#define TPL_RETRY_MS 30000
#define TPL_FILES_MAX (4 + QCOW2_CHAIN_MAX)
#define TPL_MANIFEST_MAX (64u * 1024u)
#define TPL_IO_BLOCK (1024u * 1024u)

static const char *const tpl_roles[4] = {"template.json", "state", "memory", "disk.qcow2"};

struct tpl_file {
	char role[32];          /* one of tpl_roles, or "layerN" */
	char path[PATH_MAX];    /* where it is on this node */
	char rel[PATH_MAX];     /* layers: the path under the cache, "" if outside it */
	uint64_t size;
	int64_t mtime_ns;
	char sha[CLUSTER_HASH_HEX];
};

struct tpl_manifest {
	char name[CLUSTER_NAME_MAX];
	char hash[CLUSTER_HASH_HEX];
	unsigned memory_mib;
	struct tpl_file files[TPL_FILES_MAX];
	size_t n;
};


/* SHA-256 of the file at path (and its size) into sha; -ECANCELED when
 * *stop became set (may be NULL). */
static int hash_file(const char *path, char sha[CLUSTER_HASH_HEX], uint64_t *size,
		     const volatile int *stop)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct sha256 h;
	char *buf = malloc(TPL_IO_BLOCK);
	int r = buf ? sha256_init(&h) : -ENOMEM;
	uint64_t total = 0;
	while (!r) {
		if (stop && *stop) {
			r = -ECANCELED;
			break;
		}
		ssize_t n = util_read_full(fd, buf, TPL_IO_BLOCK);
		if (n < 0)
			r = (int)n;
		else if (n == 0)
			break;
		else
			sha256_update(&h, buf, (size_t)n);
		total += n > 0 ? (uint64_t)n : 0;
	}
	if (!r)
		r = sha256_final_hex(&h, sha);
	else if (buf)
		sha256_drop(&h);
	*size = total;
	free(buf);
	close(fd);
	return r;
}

/* The content hash of m's lines. */
static int manifest_hash(const struct tpl_manifest *m, char out[CLUSTER_HASH_HEX])
{
	struct sha256 h;
	int r = sha256_init(&h);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->n; i++) {
		char line[128];
		int k = snprintf(line, sizeof(line), "%s %llu %s\n", m->files[i].role,
				 (unsigned long long)m->files[i].size, m->files[i].sha);
		sha256_update(&h, line, (size_t)k);
	}
	return sha256_final_hex(&h, out);
}

/* The files of local template name, with sizes and mtimes (no hashes). */
static int list_files(struct cluster *c, const char *name, struct tpl_manifest *m)
{
	const char *cache = c->d->cfg.cache_dir;
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	for (size_t i = 0; i < 4; i++) {
		snprintf(m->files[i].role, sizeof(m->files[i].role), "%s", tpl_roles[i]);
		if (snprintf(m->files[i].path, PATH_MAX, "%s/templates/%s/%s", cache, name,
			     tpl_roles[i]) >= PATH_MAX)
			return -ENAMETOOLONG;
	}
	m->n = 4;
	char chain[QCOW2_CHAIN_MAX][4096];
	int k = qcow2_backing_chain(m->files[3].path, chain);
	if (k < 0)
		return k;
	size_t cl = strlen(cache);
	for (int i = 0; i < k; i++) {
		struct tpl_file *f = &m->files[m->n++];
		snprintf(f->role, sizeof(f->role), "layer%d", i);
		snprintf(f->path, sizeof(f->path), "%s", chain[i]);
		if (!strncmp(chain[i], cache, cl) && chain[i][cl] == '/')
			snprintf(f->rel, sizeof(f->rel), "%s", chain[i] + cl + 1);
	}
	for (size_t i = 0; i < m->n; i++) {
		struct stat st;
		if (stat(m->files[i].path, &st) < 0 || !S_ISREG(st.st_mode))
			return -ENOENT;
		m->files[i].size = (uint64_t)st.st_size;
		m->files[i].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
	return 0;
}

/*
 * Hashes outlive a restart in <data-dir>/cluster-hashes.json: {path:
 * {"size", "mtime_ns", "sha256"}}, a file this node wrote (a value that
 * does not fit is just not used).  A file is hashed again when its size or
 * mtime changed.
 */
#define HASHES_FILE "cluster-hashes.json"
#define HASHES_MAX (1024u * 1024u)

static json_t *hashes_load(struct cluster *c)
{
	char path[PATH_MAX + 32], *text = NULL;
	snprintf(path, sizeof(path), "%s/" HASHES_FILE, c->d->cfg.data_dir);
	json_t *o = util_read_file(path, HASHES_MAX, &text, NULL) == 0
			    ? json_loads(text, JSON_REJECT_DUPLICATES, NULL)
			    : NULL;
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		o = json_object();
	}
	return o;
}

static void hashes_save(struct cluster *c, json_t *hashes)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/" HASHES_FILE, c->d->cfg.data_dir);
	char *text = json_dumps(hashes, JSON_COMPACT | JSON_SORT_KEYS);
	if (text)
		util_write_file(path, text, strlen(text), 0600);
	free(text);
}

/* The cached hash of f when its size and mtime are unchanged. */
static int hashes_get(json_t *hashes, struct tpl_file *f)
{
	json_t *e = json_object_get(hashes, f->path);
	json_t *sz = json_object_get(e, "size"), *mt = json_object_get(e, "mtime_ns");
	const char *sha = json_string_value(json_object_get(e, "sha256"));
	if (!json_is_integer(sz) || !json_is_integer(mt) || !sha || strlen(sha) != 64 ||
	    (uint64_t)json_integer_value(sz) != f->size || json_integer_value(mt) != f->mtime_ns)
		return 0;
	memcpy(f->sha, sha, 65);
	return 1;
}

/* Hash local template name (cached hashes of unchanged files reused). */
static int hash_local(struct cluster *c, const char *name, json_t *hashes, struct tpl_manifest *m,
		      int *dirty)
{
	int r = list_files(c, name, m);
	for (size_t i = 0; !r && i < m->n; i++) {
		struct tpl_file *f = &m->files[i];
		if (hashes_get(hashes, f))
			continue;
		uint64_t size;
		r = hash_file(f->path, f->sha, &size, &c->stop_flag);
		if (!r && size != f->size)
			r = -EAGAIN; /* changed while read */
		if (!r)
			*dirty = 1;
		if (!r)
			json_object_set_new(hashes, f->path,
					    json_pack("{s:I, s:I, s:s}", "size", (json_int_t)f->size,
						      "mtime_ns", (json_int_t)f->mtime_ns, "sha256",
						      f->sha));
	}
	if (!r)
		r = manifest_hash(m, m->hash);
	return r;
}

/* The ready local templates' names and sizes, hashes to come: placement
 * can use this node at once. */
static void names_local(struct cluster *c)
{
	char **names = NULL;
	int n = template_list(c->d->cfg.cache_dir, &names);
	size_t k = 0;
	struct cluster_tpl v[CLUSTER_TEMPLATES_MAX];
	for (int i = 0; i < n; i++) {
		struct tpl *t;
		char err[256];
		if (k < CLUSTER_TEMPLATES_MAX &&
		    templates_get(c->d->templates, names[i], &t, err, sizeof(err)) == 0) {
			memset(&v[k], 0, sizeof(v[k]));
			snprintf(v[k].name, sizeof(v[k].name), "%s", names[i]);
			v[k].memory_mib = template_memory_mib(tpl_template(t));
			templates_put(t);
			k++;
		}
		free(names[i]);
	}
	free(names);
	pthread_mutex_lock(&c->lock);
	memcpy(c->tpls, v, k * sizeof(v[0]));
	c->ntpls = k;
	pthread_mutex_unlock(&c->lock);
}

/* Hash every ready local template; publish names and hashes. */
static void scan_local(struct cluster *c, json_t *hashes)
{
	char **names = NULL;
	int n = template_list(c->d->cfg.cache_dir, &names);
	if (n < 0)
		return;
	struct tpl_manifest *ms = calloc((size_t)n + 1, sizeof(*ms));
	size_t k = 0;
	for (int i = 0; ms && i < n && k < CLUSTER_TEMPLATES_MAX; i++) {
		struct tpl *t;
		char err[256];
		if (templates_get(c->d->templates, names[i], &t, err, sizeof(err)) < 0)
			continue; /* not usable here: not advertised */
		unsigned mib = template_memory_mib(tpl_template(t));
		templates_put(t);
		char was[CLUSTER_HASH_HEX] = "";
		pthread_mutex_lock(&c->tpl_lock);
		for (size_t j = 0; j < c->tpl_nlocal; j++)
			if (!strcmp(c->tpl_local[j].name, names[i]))
				memcpy(was, c->tpl_local[j].hash, sizeof(was));
		pthread_mutex_unlock(&c->tpl_lock);
		int64_t t0 = util_now_ms();
		int dirty = 0;
		int hr = hash_local(c, names[i], hashes, &ms[k], &dirty);
		if (dirty)
			hashes_save(c, hashes);
		if (hr < 0)
			continue;
		ms[k].memory_mib = mib;
		if (strcmp(was, ms[k].hash) != 0)
			log_kv(LOG_INFO, "cluster.template_hashed", "name=%s hash=%s ms=%lld",
			       names[i], ms[k].hash, (long long)(util_now_ms() - t0));
		k++;
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (!ms)
		return;
	pthread_mutex_lock(&c->tpl_lock);
	free(c->tpl_local);
	c->tpl_local = ms;
	c->tpl_nlocal = k;
	pthread_mutex_unlock(&c->tpl_lock);
	pthread_mutex_lock(&c->lock);
	c->ntpls = k;
	for (size_t i = 0; i < k; i++) {
		snprintf(c->tpls[i].name, sizeof(c->tpls[i].name), "%s", ms[i].name);
		memcpy(c->tpls[i].hash, ms[i].hash, sizeof(c->tpls[i].hash));
		c->tpls[i].memory_mib = ms[i].memory_mib;
	}
	c->tpls_ready = 1;
	pthread_mutex_unlock(&c->lock);
	cluster__node_wake(c);
}

/* ---- serving ------------------------------------------------------------------ */

static json_t *manifest_json(const struct tpl_manifest *m)
{
	json_t *files = json_array();
	for (size_t i = 0; files && i < m->n; i++)
		json_array_append_new(files, json_pack("{s:s, s:s, s:s, s:I, s:s}", "role",
						       m->files[i].role, "path", m->files[i].path,
						       "rel", m->files[i].rel, "size",
						       (json_int_t)m->files[i].size, "sha256",
						       m->files[i].sha));
	return files ? json_pack("{s:s, s:s, s:i, s:o}", "name", m->name, "hash", m->hash,
				 "memory_mib", (int)m->memory_mib, "files", files)
		     : NULL;
}

int cluster__template_serve(struct cluster *c, struct http_req *r, const char *url)
{
	static const char base[] = "/cluster/v1/templates/";
	if (strncmp(url, base, sizeof(base) - 1) != 0)
		return 0;
	char name[CLUSTER_NAME_MAX] = "";
	int idx = -1, used = 0;
	const char *rest = url + sizeof(base) - 1;
	if (sscanf(rest, "%64[a-z0-9._-]%n", name, &used) != 1)
		goto not_found;
	if (rest[used] == '/') {
		int u2 = 0;
		if (sscanf(rest + used, "/files/%2d%n", &idx, &u2) != 1 || rest[used + u2] != '\0' ||
		    idx < 0 || idx >= TPL_FILES_MAX)
			goto not_found;
	} else if (rest[used] != '\0') {
		goto not_found;
	}
	char from[CLUSTER_NAME_MAX];
	int e = strcmp(r->method, "GET") != 0
			? -EBADMSG
			: cluster__verify(c, http_header(r, CLUSTER_NODE_HEADER), "GET", r->raw_target,
					  NULL, (int64_t)(util_wall_ns() / 1000000u), from);
	if (e) {
		log_kv(LOG_WARN, "cluster.bad_signature", "route=/cluster/v1/templates why=\"%s\"",
		       http_header(r, CLUSTER_NODE_HEADER) ? cluster__verify_why(e) : "none");
		http_reply_error(r, API_ERR_UNAUTHORIZED, "node-to-node calls need a node signature");
		return 1;
	}
	struct tpl_manifest m;
	int found = 0;
	pthread_mutex_lock(&c->tpl_lock);
	for (size_t i = 0; i < c->tpl_nlocal; i++)
		if (!strcmp(c->tpl_local[i].name, name)) {
			m = c->tpl_local[i];
			found = 1;
		}
	pthread_mutex_unlock(&c->tpl_lock);
	if (!found || (idx >= 0 && (size_t)idx >= m.n))
		goto not_found;
	if (idx < 0) {
		http_reply_json(r, 200, manifest_json(&m));
		return 1;
	}
	int fd = open(m.files[idx].path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size != m.files[idx].size) {
		if (fd >= 0)
			close(fd);
		http_reply_error(r, API_ERR_TEMPLATE_INVALID, "the template's file changed");
		return 1;
	}
	struct MHD_Response *resp = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
	if (!resp) {
		close(fd);
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return 1;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	log_kv(LOG_INFO, "cluster.template_serve", "name=%s file=%s to=%s", name,
	       m.files[idx].role, from);
	http_reply_response(r, 200, resp);
	return 1;
not_found:
	http_reply_error(r, API_ERR_NOT_FOUND, "no such node-to-node route");
	return 1;
}

int cluster_internal(struct cluster *c, struct http_req *r, const char *url)
{
	if (strncmp(url, "/cluster/", 9) != 0)
		return 0;
	if (cluster__template_serve(c, r, url))
		return 1;
	http_reply_error(r, API_ERR_NOT_FOUND, "no such node-to-node route");
	return 1;
}

/* ---- fetching ------------------------------------------------------------------- */

struct sink {
	int fd;
	struct sha256 *hash; /* NULL for the manifest */
	uint64_t got, want;
	int err;
	struct dynbuf *mem;   /* the manifest: kept in memory instead */
};

static int all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static size_t on_file_data(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	if (s->mem)
		return dynbuf_write(p, size, n, s->mem);
	if (s->got + len > s->want) {
		s->err = -EFBIG;
		return 0;
	}
	sha256_update(s->hash, p, len);
	/* zeros become holes: guest RAM and disk images are mostly empty */
	if (all_zero(p, len)) {
		if (lseek(s->fd, (off_t)len, SEEK_CUR) < 0) {
			s->err = -errno;
			return 0;
		}
	} else if (util_write_all(s->fd, p, len) < 0) {
		s->err = -EIO;
		return 0;
	}
	s->got += len;
	return len;
}

/* GET path (signed) from node into sink. */
static int fetch(struct cluster *c, const struct cluster_node *node, const char *path,
		 struct sink *s)
{
	char sig[600], url[CLUSTER_URL_MAX + 256];
	if (cluster__sign(c, node->name, "GET", path, NULL, (int64_t)(util_wall_ns() / 1000000u),
			  sig, sizeof(sig)) < 0 ||
	    snprintf(url, sizeof(url), "%s%s", node->url, path) >= (int)sizeof(url))
		return -ENAMETOOLONG;
	char hdr[sizeof(sig) + 64];
	snprintf(hdr, sizeof(hdr), "%s: %s", CLUSTER_NODE_HEADER, sig);
	struct curl_slist *h = curl_slist_append(NULL, hdr);
	CURL *e = h ? curl_easy_init() : NULL;
	if (!e) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_file_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
	if (c->d->cfg.cluster_ca_file[0])
		curl_easy_setopt(e, CURLOPT_CAINFO, c->d->cfg.cluster_ca_file);
	CURLcode cc = curl_easy_perform(e);
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	if (s->err)
		return s->err;
	return cc == CURLE_OK && status == 200 ? 0 : -EIO;
}

/* Fetch file i of m from node into path (created, mode), checking its
 * size and hash. */
static int fetch_file(struct cluster *c, const struct cluster_node *node,
		      const struct tpl_manifest *m, size_t i, const char *path, unsigned mode)
{
	char rpath[256];
	snprintf(rpath, sizeof(rpath), "/cluster/v1/templates/%s/files/%zu", m->name, i);
	struct sink s = {.want = m->files[i].size};
	s.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s.fd < 0)
		return -errno;
	struct sha256 h;
	s.hash = &h;
	int r = sha256_init(&h);
	if (!r)
		r = fetch(c, node, rpath, &s);
	if (!r && (s.got != s.want || ftruncate(s.fd, (off_t)s.want) < 0))
		r = -EIO;
	char sha[CLUSTER_HASH_HEX];
	if (!r)
		r = sha256_final_hex(&h, sha);
	else
		sha256_drop(&h);
	if (!r && strcmp(sha, m->files[i].sha) != 0) {
		log_kv(LOG_WARN, "cluster.template_bad_hash", "name=%s file=%s", m->name,
		       m->files[i].role);
		r = -EBADMSG;
	}
	if (!r && (fsync(s.fd) < 0 || fchmod(s.fd, mode) < 0))
		r = -errno;
	close(s.fd);
	if (r)
		unlink(path);
	return r;
}

/* A relative path under the cache that stays under it: no "..", no "//". */
static int rel_ok(const char *rel)
{
	if (!rel[0] || rel[0] == '/' || strstr(rel, "//") || strncmp(rel, "images/", 7) != 0)
		return 0;
	for (const char *p = rel; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	const char *p = rel;
	while (p) {
		if (!strncmp(p, "..", 2) && (p[2] == '/' || p[2] == '\0'))
			return 0;
		p = strchr(p, '/');
		p = p ? p + 1 : NULL;
	}
	return 1;
}

/* The manifest of name from node, checked against hash (outside input). */
static int fetch_manifest(struct cluster *c, const struct cluster_node *node, const char *name,
			  const char *hash, struct tpl_manifest *m)
{
	char path[256];
	snprintf(path, sizeof(path), "/cluster/v1/templates/%s", name);
	struct dynbuf b;
	dynbuf_init(&b, TPL_MANIFEST_MAX);
	struct sink s = {.mem = &b};
	int r = fetch(c, node, path, &s);
	json_t *o = r ? NULL : etcd_json_object(dynbuf_str(&b), b.len, TPL_MANIFEST_MAX);
	dynbuf_free(&b);
	if (r)
		return r;
	json_t *files = json_object_get(o, "files");
	memset(m, 0, sizeof(*m));
	r = json_is_object(o) && json_is_array(files) && json_array_size(files) >= 4 &&
		    json_array_size(files) <= TPL_FILES_MAX
	? 0 : -EPROTO;
	snprintf(m->name, sizeof(m->name), "%s", name);
	for (size_t i = 0; !r && i < json_array_size(files); i++) {
		json_t *f = json_array_get(files, i);
		struct tpl_file *t = &m->files[i];
		json_t *sz = json_object_get(f, "size");
		char want_role[32];
		if (i < 4)
			snprintf(want_role, sizeof(want_role), "%s", tpl_roles[i]);
		else
			snprintf(want_role, sizeof(want_role), "layer%zu", i - 4);
		if (json_get_str(f, "role", t->role, sizeof(t->role)) < 0 ||
		    strcmp(t->role, want_role) != 0 ||
		    json_get_str(f, "sha256", t->sha, sizeof(t->sha)) < 0 || strlen(t->sha) != 64 ||
		    !json_is_integer(sz) || json_integer_value(sz) < 0 ||
		    (i >= 4 && (json_get_str(f, "path", t->path, sizeof(t->path)) < 0 ||
				t->path[0] != '/' ||
				json_get_str(f, "rel", t->rel, sizeof(t->rel)) < 0 ||
				(t->rel[0] && !rel_ok(t->rel)))))
			r = -EPROTO;
		else
			t->size = (uint64_t)json_integer_value(sz);
		m->n = i + 1;
	}
	json_t *mib = json_object_get(o, "memory_mib");
	m->memory_mib = json_is_integer(mib) ? (unsigned)json_integer_value(mib) : 0;
	json_decref(o);
	if (!r && (manifest_hash(m, m->hash) < 0 || strcmp(m->hash, hash) != 0))
		r = -EBADMSG;
	return r;
}

/* A file at path of size and sha?  1 yes, 0 no. */
static int file_matches(const char *path, const struct tpl_file *f)
{
	struct stat st;
	char sha[CLUSTER_HASH_HEX];
	uint64_t size;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size)
		return 0;
	return hash_file(path, sha, &size, NULL) == 0 && !strcmp(sha, f->sha);
}

/* Make sure layer i of m is on this node; its path into out. */
static int place_layer(struct cluster *c, const struct cluster_node *node,
		       const struct tpl_manifest *m, size_t i, char *out)
{
	const struct tpl_file *f = &m->files[i];
	char local[PATH_MAX] = "";
	if (f->rel[0] && snprintf(local, sizeof(local), "%s/%s", c->d->cfg.cache_dir, f->rel) >=
				 (int)sizeof(local))
		return -ENAMETOOLONG;
	if (file_matches(f->path, f)) {
		snprintf(out, PATH_MAX, "%s", f->path);
		return 0;
	}
	if (!local[0])
		return -ENOENT; /* outside the source's cache: not ours to write */
	if (file_matches(local, f)) {
		snprintf(out, PATH_MAX, "%s", local);
		return 0;
	}
	char dir[PATH_MAX], tmp[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s", local);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int r = util_mkdir_p(dir, 0755);
	if (!r && snprintf(tmp, sizeof(tmp), "%s.fetch-%d", local, (int)getpid()) >= (int)sizeof(tmp))
		r = -ENAMETOOLONG;
	if (!r)
		r = fetch_file(c, node, m, i, tmp, 0644);
	if (!r && rename(tmp, local) < 0)
		r = -errno;
	if (!r)
		snprintf(out, PATH_MAX, "%s", local);
	return r;
}

/* Fetch template name (hash) from node into the cache. */
static int fetch_template(struct cluster *c, const struct cluster_node *node, const char *name,
			  const char *hash)
{
	int64_t t0 = util_now_ms();
	struct tpl_manifest m;
	int r = fetch_manifest(c, node, name, hash, &m);
	if (r)
		return r;
	log_kv(LOG_INFO, "cluster.template_fetch", "name=%s hash=%s from=%s files=%zu", name,
	       hash, node->name, m.n);
	char first_layer[PATH_MAX] = "";
	for (size_t i = 4; !r && i < m.n; i++) {
		char at[PATH_MAX];
		r = place_layer(c, node, &m, i, at);
		if (!r && i == 4)
			snprintf(first_layer, sizeof(first_layer), "%s", at);
		else if (!r && strcmp(at, m.files[i].path) != 0)
			r = -ENOTSUP; /* a deeper layer would need its parent rebased */
	}
	char stage[PATH_MAX], final[PATH_MAX], rnd[8], hex[17];
	util_random(rnd, sizeof(rnd));
	util_hex(rnd, sizeof(rnd), hex);
	if (!r && (snprintf(stage, sizeof(stage), "%s/templates/.fetch-%s-%s", c->d->cfg.cache_dir,
			    name, hex) >= (int)sizeof(stage) ||
		   snprintf(final, sizeof(final), "%s/templates/%s", c->d->cfg.cache_dir, name) >=
			   (int)sizeof(final)))
		r = -ENAMETOOLONG;
	if (!r)
		r = util_mkdir_p(stage, 0755);
	/* template.json last: a folder without it is never loaded */
	static const size_t order[4] = {1, 2, 3, 0};
	for (size_t k = 0; !r && k < 4; k++) {
		size_t i = order[k];
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "%s/%s", stage, tpl_roles[i]);
		r = fetch_file(c, node, &m, i, path, i == 3 ? 0444 : 0644);
		if (!r && i == 3 && m.n > 4 && strcmp(first_layer, m.files[4].path) != 0) {
			/* point the disk layer at where its backing file is here */
			char *argv[] = {"qemu-img", "rebase", "-u", "-f", "qcow2", "-b", first_layer,
					"-F", "raw", path, NULL};
			char out[512];
			chmod(path, 0644);
			r = proc_run_ok(argv, 30000, out, sizeof(out));
			chmod(path, 0444);
		}
	}
	if (!r && rename(stage, final) < 0)
		r = -errno; /* EEXIST/ENOTEMPTY: it appeared meanwhile */
	if (r)
		util_rm_rf(stage);
	log_kv(r ? LOG_WARN : LOG_INFO, "cluster.template_fetched", "name=%s from=%s err=%d ms=%lld",
	       name, node->name, r, (long long)(util_now_ms() - t0));
	return r;
}

/* Templates another node advertises and this one lacks: fetch each once
 * per TPL_RETRY_MS. */
static void fetch_missing(struct cluster *c, json_t *tried)
{
	pthread_mutex_lock(&c->lock);
	size_t n = c->nnodes;
	struct cluster_node *nodes = malloc((n ? n : 1) * sizeof(*nodes));
	if (nodes)
		memcpy(nodes, c->nodes, n * sizeof(*nodes));
	struct cluster_tpl mine[CLUSTER_TEMPLATES_MAX];
	size_t nmine = c->ntpls;
	memcpy(mine, c->tpls, sizeof(mine));
	pthread_mutex_unlock(&c->lock);
	if (!nodes)
		return;
	int64_t now = util_now_ms();
	for (size_t i = 0; i < n && !c->stop_flag; i++) {
		if (!strcmp(nodes[i].name, c->node))
			continue;
		for (size_t j = 0; j < nodes[i].ntpls; j++) {
			const struct cluster_tpl *t = &nodes[i].tpls[j];
			int have = 0;
			for (size_t k = 0; k < nmine; k++)
				have |= !strcmp(mine[k].name, t->name);
			char path[PATH_MAX + 128];
			snprintf(path, sizeof(path), "%s/templates/%s", c->d->cfg.cache_dir, t->name);
			if (have || !t->hash[0] || access(path, F_OK) == 0)
				continue;
			json_t *when = json_object_get(tried, t->name);
			if (when && now - json_integer_value(when) < TPL_RETRY_MS)
				continue;
			json_object_set_new(tried, t->name, json_integer(now));
			fetch_template(c, &nodes[i], t->name, t->hash);
		}
	}
	free(nodes);
}

static void *tpl_main(void *arg)
{
	struct cluster *c = arg;
	json_t *tried = json_object();
	json_t *hashes = hashes_load(c);
	do {
		if (hashes)
			scan_local(c, hashes);
		if (tried)
			fetch_missing(c, tried);
	} while (!cluster__wait(c, TPL_SCAN_MS, NULL));
	json_decref(tried);
	json_decref(hashes);
	return NULL;
}

int cluster__templates_start(struct cluster *c)
{
	names_local(c);
	int r = -pthread_create(&c->tpl_thread, NULL, tpl_main, c);
	if (!r)
		c->threads |= 4;
	return r;
}
