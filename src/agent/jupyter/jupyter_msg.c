/*
 * jupyter_msg.c - Jupyter wire format: parse, verify, encode, sign (see
 * jupyter_msg.h).  HMAC through OpenSSL 3's EVP_MAC; the MAC algorithm is
 * fetched once and shared (EVP_MAC objects are thread-safe to use).
 */
#include "agent/jupyter/jupyter_msg.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "agent/jupyter/jupyter_json.h"
#include "common/util.h"

static EVP_MAC *hmac_alg;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_fetch(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

int jupyter_sign(const void *key, size_t keylen,
		 const struct jupyter_frame part[4], char out[JUPYTER_SIG_SIZE])
{
	out[0] = '\0';
	if (keylen == 0)
		return 0;
	if (keylen > JUPYTER_KEY_MAX)
		return -EINVAL;
	pthread_once(&hmac_once, hmac_fetch);
	if (!hmac_alg)
		return -EIO;
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(hmac_alg);
	if (!ctx)
		return -ENOMEM;
	char digest_name[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
		OSSL_PARAM_construct_end(),
	};
	unsigned char mac[32];
	size_t maclen = 0;
	int ok = EVP_MAC_init(ctx, key, keylen, params);
	for (int i = 0; ok && i < 4; i++)
		ok = EVP_MAC_update(ctx, part[i].data, part[i].len);
	if (ok)
		ok = EVP_MAC_final(ctx, mac, &maclen, sizeof(mac));
	EVP_MAC_CTX_free(ctx);
	if (!ok || maclen != sizeof(mac))
		return -EIO;
	util_hex(mac, sizeof(mac), out);
	return 0;
}

/* Parse one JSON part that must be an object; NULL if it is not. */
static json_t *load_object(const struct jupyter_frame *f)
{
	json_t *v = jupyter_json_load(f->data, f->len);
	if (v && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

/* obj[key] if it is a string, else "". */
static const char *str_field(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : "";
}

static void fill_strings(struct jupyter_msg *m)
{
	m->msg_type = str_field(m->header, "msg_type");
	m->msg_id = str_field(m->header, "msg_id");
	m->session = str_field(m->header, "session");
	m->parent_id = str_field(m->parent_header, "msg_id");
}

/* The index of the delimiter frame in f (n frames), or n if none. */
static size_t delimiter(const struct jupyter_frame *f, size_t n)
{
	static const size_t delim_len = sizeof(JUPYTER_DELIM) - 1;
	size_t d = 0;
	while (d < n && !(f[d].len == delim_len && memcmp(f[d].data, JUPYTER_DELIM, delim_len) == 0))
		d++;
	return d;
}

int jupyter_msg_is_output_of(const struct jupyter_frame *f, size_t n, const char *parent_id)
{
	static const char *const output[] = {"stream", "display_data", "update_display_data",
					     "execute_result"};
	size_t d = delimiter(f, n);
	if (d == n || n - d < 6 || f[d + 2].len > JUPYTER_HEADER_PEEK_MAX)
		return 0;
	json_t *h = load_object(&f[d + 2]);
	const char *t = str_field(h, "msg_type");
	int yes = 0;
	for (size_t i = 0; i < sizeof(output) / sizeof(output[0]); i++)
		yes |= strcmp(t, output[i]) == 0;
	json_decref(h);
	if (yes && parent_id) {
		json_t *ph = f[d + 3].len <= JUPYTER_HEADER_PEEK_MAX ? load_object(&f[d + 3]) : NULL;
		yes = strcmp(str_field(ph, "msg_id"), parent_id) == 0;
		json_decref(ph);
	}
	return yes;
}

int jupyter_msg_is_output(const struct jupyter_frame *f, size_t n)
{
	return jupyter_msg_is_output_of(f, n, NULL);
}

int jupyter_msg_parse(const struct jupyter_frame *f, size_t n,
		      const void *key, size_t keylen, struct jupyter_msg *m)
{
	memset(m, 0, sizeof(*m));
	size_t d = delimiter(f, n);
	if (d == n || n - d < 6)
		return -EBADMSG;
	const struct jupyter_frame *sig = &f[d + 1], *part = &f[d + 2];
	if (keylen > 0) {
		char want[JUPYTER_SIG_SIZE];
		int r = jupyter_sign(key, keylen, part, want);
		if (r < 0)
			return r;
		if (sig->len != 64 || CRYPTO_memcmp(sig->data, want, 64) != 0)
			return -EPERM;
	}
	json_t **slot[4] = { &m->header, &m->parent_header, &m->metadata, &m->content };
	for (int i = 0; i < 4; i++) {
		*slot[i] = load_object(&part[i]);
		if (!*slot[i]) {
			jupyter_msg_clear(m);
			return -EBADMSG;
		}
	}
	fill_strings(m);
	if (!m->msg_type[0]) {
		jupyter_msg_clear(m);
		return -EBADMSG;
	}
	m->nbuffers = n - d - 6;
	return 0;
}

int jupyter_msg_from_json(const json_t *obj, struct jupyter_msg *m)
{
	memset(m, 0, sizeof(*m));
	const char *type = json_string_value(json_object_get(obj, "msg_type"));
	json_t *content = json_object_get(obj, "content");
	if (!type || !type[0] || (content && !json_is_object(content)))
		return -EBADMSG;
	const char *parent = json_string_value(json_object_get(obj, "parent_id"));
	const char *id = json_string_value(json_object_get(obj, "msg_id"));
	m->header = json_pack("{s:s, s:s}", "msg_type", type, "msg_id", id ? id : "");
	m->parent_header = parent ? json_pack("{s:s}", "msg_id", parent) : json_object();
	m->metadata = json_object();
	m->content = content ? json_deep_copy(content) : json_object();
	if (!m->header || !m->parent_header || !m->metadata || !m->content) {
		jupyter_msg_clear(m);
		return -ENOMEM;
	}
	fill_strings(m);
	return 0;
}

void jupyter_msg_clear(struct jupyter_msg *m)
{
	if (!m)
		return;
	json_decref(m->header);
	json_decref(m->parent_header);
	json_decref(m->metadata);
	json_decref(m->content);
	memset(m, 0, sizeof(*m));
}

int jupyter_new_id(char out[JUPYTER_ID_SIZE])
{
	uint8_t b[16];
	char hex[33];
	int r = util_random(b, sizeof(b));
	if (r < 0)
		return r;
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	util_hex(b, sizeof(b), hex);
	snprintf(out, JUPYTER_ID_SIZE, "%.8s-%.4s-%.4s-%.4s-%.12s",
		 hex, hex + 8, hex + 12, hex + 16, hex + 20);
	return 0;
}

/* ISO-8601 UTC with microseconds, as jupyter_client writes dates. */
static void iso_now(char out[64])
{
	uint64_t ns = util_wall_ns();
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&sec, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ns % 1000000000u / 1000u));
}

int jupyter_msg_encode(const char *session, const char *msg_type,
		       const json_t *content, const void *key, size_t keylen,
		       struct jupyter_wire *w)
{
	memset(w, 0, sizeof(*w));
	if (!session || !msg_type)
		return -EINVAL;
	int r = jupyter_new_id(w->msg_id);
	if (r < 0)
		return r;
	char date[64];
	iso_now(date);
	json_t *hdr = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", w->msg_id,
				"session", session, "username", "pandastack", "date", date,
				"msg_type", msg_type, "version", JUPYTER_PROTOCOL_VERSION);
	if (!hdr)
		return -ENOMEM;
	w->part[0] = json_dumps(hdr, JSON_COMPACT);
	json_decref(hdr);
	w->part[1] = strdup("{}");
	w->part[2] = strdup("{}");
	w->part[3] = content ? json_dumps(content, JSON_COMPACT) : strdup("{}");
	struct jupyter_frame fr[4];
	for (int i = 0; i < 4; i++) {
		if (!w->part[i]) {
			jupyter_wire_clear(w);
			return -ENOMEM;
		}
		w->len[i] = strlen(w->part[i]);
		fr[i].data = w->part[i];
		fr[i].len = w->len[i];
	}
	r = jupyter_sign(key, keylen, fr, w->sig);
	if (r < 0)
		jupyter_wire_clear(w);
	return r;
}

void jupyter_wire_clear(struct jupyter_wire *w)
{
	if (!w)
		return;
	for (int i = 0; i < 4; i++)
		free(w->part[i]);
	memset(w, 0, sizeof(*w));
}
