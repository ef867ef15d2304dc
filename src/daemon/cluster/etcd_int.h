/*
 * etcd_int.h - the etcd client's state, shared by etcd_client.c (the
 * members, authentication, the calls) and etcd_watch.c (the watch);
 * private: the rest of the daemon uses etcd_client.h.  etcd_watch.c calls
 * etcd_client.c, never the other way.
 * Threads: as etcd_client.h; e->lock guards what its fields say.
 */
#ifndef PANDASTACK_DAEMON_ETCD_INT_H
#define PANDASTACK_DAEMON_ETCD_INT_H

#include <pthread.h>
#include <stddef.h>

#include <curl/curl.h>
#include <jansson.h>

#include "daemon/cluster/etcd_client.h"

#define URL_MAX 300
#define IDLE_HANDLES 8

struct etcd {
	char urls[ETCD_ENDPOINTS_MAX][URL_MAX]; /* "http://h:p" without a trailing / */
	size_t n;
	char ca_file[4096];
	char cert_file[4096];           /* "": no client certificate */
	char key_file[4096];
	char user[ETCD_USER_MAX];       /* "": no authentication */
	char *password;                 /* owned, wiped at etcd_close */
	pthread_mutex_t lock;
	size_t current;                 /* lock: the endpoint that last answered */
	CURL *idle[IDLE_HANDLES];       /* lock: handles kept for their connections */
	size_t nidle;
	char token[ETCD_TOKEN_MAX];     /* lock: etcd's auth token, "" while none */
	unsigned token_gen;             /* lock: bumped with each new token */
	char last_error[ETCD_ERROR_MAX]; /* lock: why the last call failed */
	pthread_mutex_t auth_lock;      /* one authentication at a time */
};

/* etcd__set_common - the options every call's handle h gets: url, hdrs
 * (borrowed until the call ends), timeouts, TLS (CA, client certificate). */
void etcd__set_common(struct etcd *e, CURL *h, const char *url, struct curl_slist *hdrs);

/* etcd__note_error - remember why a call to member url failed, for
 * etcd_last_error (what: curl's or etcd's message, never a secret). */
void etcd__note_error(struct etcd *e, const char *url, const char *what);

/*
 * etcd__token_get - the token to send into out ("" without a user),
 * authenticating first when there is none (one thread at a time; the
 * others wait for it); *gen is its generation, for etcd__token_drop.
 * 0, -EACCES (etcd refused the user or password), -ENOTCONN, -ENOMEM.
 */
int etcd__token_get(struct etcd *e, char out[ETCD_TOKEN_MAX], unsigned *gen);

/* etcd__token_drop - forget the token of generation gen (etcd refused
 * it); a newer one stays. */
void etcd__token_drop(struct etcd *e, unsigned gen);

/* etcd__key_obj - {"key": base64(key)}, with "range_end" when prefix is
 * set: a new reference, NULL on ENOMEM. */
json_t *etcd__key_obj(const char *key, int prefix);

#endif
