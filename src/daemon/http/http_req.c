/*
 * http_req.c - a request's query, headers and connection, read through
 * libmicrohttpd (see http_req.h).
 */
#include "daemon/http/http_req.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

const char *http_query(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* Most query parameters looked at (more is an error). */
#define QUERY_PARAMS_MAX 64

struct query_walk {
	const char *const *allowed;
	const char *names[QUERY_PARAMS_MAX];
	size_t n;
	int failed;
	enum api_err err; /* when failed */
	char *msg;
	size_t msglen;
};

static int query_name_allowed(const char *const *allowed, const char *key)
{
	for (size_t i = 0; allowed[i]; i++) {
		size_t l = strlen(allowed[i]);
		if (l && allowed[i][l - 1] == '.' ? strncmp(key, allowed[i], l) == 0 && key[l]
						   : strcmp(key, allowed[i]) == 0)
			return 1;
	}
	return 0;
}

static enum MHD_Result query_visit(void *cls, enum MHD_ValueKind kind, const char *key,
				   size_t key_size, const char *value, size_t value_size)
{
	struct query_walk *w = cls;
	(void)kind;
	if (!key || strlen(key) != key_size) {
		w->failed = 1;
		w->err = API_ERR_INVALID_QUERY;
		snprintf(w->msg, w->msglen, "a query parameter name holds a NUL byte");
		return MHD_NO;
	}
	if (value && strlen(value) != value_size) {
		w->failed = 1;
		w->err = strcmp(key, "path") == 0 ? API_ERR_INVALID_PATH : API_ERR_INVALID_QUERY;
		snprintf(w->msg, w->msglen, "query parameter '%.64s' holds a NUL byte", key);
		return MHD_NO;
	}
	if (!query_name_allowed(w->allowed, key)) {
		w->failed = 1;
		w->err = API_ERR_INVALID_QUERY;
		snprintf(w->msg, w->msglen, "unknown query parameter '%.64s'", key);
		return MHD_NO;
	}
	for (size_t i = 0; i < w->n; i++) {
		if (strcmp(w->names[i], key) == 0) {
			w->failed = 1;
			w->err = API_ERR_INVALID_QUERY;
			snprintf(w->msg, w->msglen, "query parameter '%.64s' given twice", key);
			return MHD_NO;
		}
	}
	if (w->n == QUERY_PARAMS_MAX) {
		w->failed = 1;
		w->err = API_ERR_INVALID_QUERY;
		snprintf(w->msg, w->msglen, "more than %d query parameters", QUERY_PARAMS_MAX);
		return MHD_NO;
	}
	w->names[w->n++] = key;
	return MHD_YES;
}

int http_query_check(struct http_req *r, const char *const *allowed, enum api_err *err,
		     char *msg, size_t msglen)
{
	struct query_walk w = {.allowed = allowed, .msg = msg, .msglen = msglen};
	MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, query_visit, &w);
	if (w.failed) {
		*err = w.err;
		return -EINVAL;
	}
	return 0;
}

const char *http_header(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

void http_client_addr(struct MHD_Connection *conn, char *out, size_t outlen)
{
	snprintf(out, outlen, "unknown");
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								  : sizeof(struct sockaddr_in);
	if (getnameinfo(ci->client_addr, len, out, (socklen_t)outlen, NULL, 0, NI_NUMERICHOST))
		snprintf(out, outlen, "unknown");
}

int http_conn_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return 1;
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
		return 1;
	if (p.revents & POLLIN) {
		char c;
		ssize_t n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			return 1;
	}
	return 0;
}
