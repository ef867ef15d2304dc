/*
 * api_mcp.c - POST /mcp and DELETE /mcp: the MCP Streamable HTTP transport
 * (revision 2025-11-25, "Transports: Streamable HTTP"; docs/mcp.md) in
 * front of the shared protocol core (mcp/mcp_server.h).  GET /mcp is not
 * a route, so it answers 405: this server opens no stream of its own.
 *
 * POST: one JSON-RPC message per request.  A request is answered with one
 * JSON object (Content-Type: application/json); a notification or a
 * response with 202 and no body.  `initialize` (without Mcp-Session-Id)
 * makes a session (api_mcp_sessions.h) and its answer carries the new
 * Mcp-Session-Id; every other message needs that header (400 without it,
 * 404 for an unknown or ended session).  An MCP-Protocol-Version header
 * naming a revision this server does not speak is 400.  An Origin header
 * that is not one of the allowed origins (origin_ok: this server's own
 * address and --mcp-allowed-origins, never the Host header) is 403 (DNS
 * rebinding).  HTTP-level
 * refusals carry a JSON-RPC error without an id.
 *
 * Backend: the tools call this daemon's own REST API over loopback (the
 * local address the client reached, from the connection's socket) with
 * the caller's own key, through the same client as `pandastack mcp`
 * (mcp/mcp_backend_rest.h).  Calling the handlers' internals instead would
 * need each handler split into "work" and "answer" and would give MCP a
 * second copy of their checks; over loopback, a tool gets exactly the
 * routes' validation, team boundaries, limits, error table, metrics and
 * request log, for the cost of a local HTTP exchange next to a call that
 * runs a guest.
 *
 * Threads: the request's connection thread; the call blocks for as long as
 * its tool.
 */
#include "daemon/api/api_mcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "client/client.h"
#include "common/base64.h"
#include "common/log.h"
#include "daemon/api/api.h"
#include "daemon/api/api_mcp_sessions.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"
#include "daemon/http/origin.h"
#include "mcp/mcp_backend_rest.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_server.h"

#define SESSION_HEADER "Mcp-Session-Id"
#define VERSION_HEADER "MCP-Protocol-Version"
#define ORIGIN_REFUSED "Forbidden: the Origin is not one this server allows (--mcp-allowed-origins)"

struct api_mcp {
	struct api_mcp_sessions *sessions;
	int https;     /* the daemon serves HTTPS */
	char pin[128]; /* "sha256//..." of its certificate's public key */
};

/* The pin of the first certificate in the PEM file path. */
static int cert_pin(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	EVP_PKEY *key = x ? X509_get0_pubkey(x) : NULL;
	unsigned char *der = NULL;
	int n = key ? i2d_PUBKEY(key, &der) : -1;
	X509_free(x);
	if (n <= 0)
		return -EINVAL;
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(der, (size_t)n, md);
	OPENSSL_free(der);
	char *b64;
	size_t len;
	if (base64_encode(md, sizeof(md), &b64, &len) < 0)
		return -ENOMEM;
	snprintf(out, cap, "sha256//%s", b64);
	free(b64);
	return 0;
}

int api_mcp_new(const struct daemon_cfg *cfg, struct api_mcp **out)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -EIO;
	struct api_mcp *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	int e = api_mcp_sessions_new(&m->sessions);
	if (!e && cfg->tls_cert[0]) {
		m->https = 1;
		e = cert_pin(cfg->tls_cert, m->pin, sizeof(m->pin));
	}
	if (e) {
		api_mcp_free(m);
		return e;
	}
	*out = m;
	return 0;
}

void api_mcp_free(struct api_mcp *m)
{
	if (!m)
		return;
	api_mcp_sessions_free(m->sessions);
	free(m);
}

/* Answer status with msg (stolen, may be NULL: no body) as JSON, with the
 * session header when sid is not NULL. */
static void reply(struct http_req *r, unsigned status, json_t *msg, const char *sid)
{
	if (!msg) {
		http_reply_empty(r, status);
		return;
	}
	size_t n;
	char *s = mcp_rpc_dump(msg, &n);
	json_decref(msg);
	struct MHD_Response *resp =
		s ? MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE) : NULL;
	if (!resp)
		free(s);
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		if (sid)
			MHD_add_response_header(resp, SESSION_HEADER, sid);
	}
	http_reply_response(r, status, resp);
}

/* An HTTP-level refusal: status with a JSON-RPC error that has no id. */
static void refuse(struct http_req *r, unsigned status, int code, const char *msg)
{
	reply(r, status, mcp_rpc_error(NULL, code, msg, NULL), NULL);
}

/* 1 when an Accept header, if any, takes application/json. */
static int accepts_json(struct http_req *r)
{
	const char *a = http_header(r, MHD_HTTP_HEADER_ACCEPT);
	return !a || strstr(a, "application/json") || strstr(a, "application/*") ||
	       strstr(a, "*/*");
}

/* The API's URL at the address this connection reached ("http://[::1]:8080"). */
static int self_url(struct http_req *r, char *out, size_t cap)
{
	const char *scheme = r->d->mcp->https ? "https" : "http";
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &sl) < 0)
		return -EIO;
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, cap, "%s://%s:%u", scheme, host, port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, cap, "%s://[%s]:%u", scheme, host, port);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

/*
 * 1 when the request has no Origin (not a browser's), or one this server
 * takes: its own address as this connection reached it (the dashboard's
 * origin too: the daemon serves it), "localhost" for a loopback address,
 * its --advertise URL, or one of --mcp-allowed-origins.  Never what the
 * Host header says: a page on a DNS name rebound to this address sends
 * that name as Host and Origin alike.
 */
static int origin_ok(struct http_req *r)
{
	const char *origin = http_header(r, "Origin");
	if (!origin)
		return 1;
	char norm[ORIGIN_MAX], self[128];
	if (origin_normalize(origin, norm) < 0)
		return 0; /* "null", a path, ...: no origin of ours */
	if (origin_in_list(norm, r->d->cfg.mcp_allowed_origins) ||
	    (r->d->cfg.advertise[0] && origin_in_list(norm, r->d->cfg.advertise)))
		return 1;
	if (self_url(r, self, sizeof(self)) < 0)
		return 0;
	if (origin_in_list(norm, self))
		return 1;
	/* a loopback address is "localhost" to a browser as well */
	const char *host = strstr(self, "://") + 3;
	const char *port = strrchr(self, ':');
	if (strncmp(host, "127.", 4) == 0 || strncmp(host, "[::1]", 5) == 0) {
		char alias[128];
		snprintf(alias, sizeof(alias), "%s://localhost%s", r->d->mcp->https ? "https" : "http",
			 port);
		return origin_in_list(norm, alias);
	}
	return 0;
}

/* The bearer key of the request (auth_check accepted it). */
static const char *bearer(struct http_req *r)
{
	const char *a = http_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *sp = a ? strchr(a, ' ') : NULL;
	while (sp && *sp == ' ')
		sp++;
	return sp;
}

/* Handle m on session s with a REST backend for the caller. */
static json_t *handle(struct http_req *r, struct mcp_session *s, const struct mcp_rpc_msg *m)
{
	char url[128], err[256];
	struct client *api = NULL;
	const char *key = bearer(r);
	int e = key ? self_url(r, url, sizeof(url)) : -EACCES;
	if (!e)
		e = client_new(url, key, NULL, &api, err, sizeof(err));
	if (!e && r->d->mcp->https)
		e = client_pin(api, r->d->mcp->pin);
	if (e) {
		client_free(api);
		log_kv(LOG_WARN, "mcp.loopback_failed", "err=%s", strerror(-e));
		return m->kind == MCP_RPC_REQUEST
			       ? mcp_rpc_error(m->id, MCP_RPC_INTERNAL_ERROR,
					       "Internal error: the API client could not start", NULL)
			       : NULL;
	}
	struct mcp_backend b;
	mcp_backend_rest(&b, api);
	json_t *resp = mcp_session_handle(s, &b, m);
	client_free(api);
	return resp;
}

void api_mcp_post(struct http_req *r)
{
	struct api_mcp_sessions *tab = r->d->mcp->sessions;
	if (!origin_ok(r)) {
		refuse(r, 403, MCP_RPC_INVALID_REQUEST, ORIGIN_REFUSED);
		return;
	}
	if (!accepts_json(r)) {
		refuse(r, 406, MCP_RPC_INVALID_REQUEST,
		       "Not Acceptable: this server answers application/json");
		return;
	}
	const char *ver = http_header(r, VERSION_HEADER);
	if (ver && !mcp_version_supported(ver)) {
		refuse(r, 400, MCP_RPC_INVALID_REQUEST,
		       "Bad Request: unsupported MCP-Protocol-Version");
		return;
	}
	struct mcp_rpc_msg m;
	struct mcp_rpc_err perr;
	int e = mcp_rpc_parse(r->body, r->body_len, &m, &perr);
	if (e == -ENOMEM) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
		return;
	}
	if (e < 0) {
		reply(r, 400, mcp_rpc_error(perr.id, perr.code, perr.message, NULL), NULL);
		mcp_rpc_err_clear(&perr);
		return;
	}
	const char *sid = http_header(r, SESSION_HEADER);
	int init = m.kind == MCP_RPC_REQUEST && strcmp(m.method, "initialize") == 0;
	struct mcp_session *s = NULL;
	char new_id[API_MCP_SESSION_ID_LEN + 1] = "";
	if (init && sid) {
		refuse(r, 400, MCP_RPC_INVALID_REQUEST,
		       "Bad Request: initialize starts a session; send it without Mcp-Session-Id");
		goto out;
	}
	if (init) {
		e = api_mcp_sessions_create(tab, r->who.team, r->who.key_id, PANDASTACK_VERSION, new_id, &s);
		if (e == -EBUSY) {
			refuse(r, 503, MCP_RPC_INTERNAL_ERROR,
			       "Service Unavailable: too many MCP sessions in use");
			goto out;
		}
		if (e < 0) {
			http_reply_error(r, API_ERR_INTERNAL, "an MCP session could not be made");
			goto out;
		}
	} else if (!sid) {
		refuse(r, 400, MCP_RPC_INVALID_REQUEST,
		       "Bad Request: Mcp-Session-Id is required (send initialize first)");
		goto out;
	} else if (api_mcp_sessions_get(tab, sid, r->who.key_id, &s) < 0) {
		refuse(r, 404, MCP_RPC_INVALID_REQUEST,
		       "Not Found: no such MCP session (it ended); initialize a new one");
		goto out;
	}
	json_t *resp = handle(r, s, &m);
	api_mcp_sessions_put(tab, s);
	if (init && (!resp || json_object_get(resp, "error"))) {
		/* a refused initialize leaves no session behind */
		api_mcp_sessions_end(tab, new_id, r->who.key_id);
		new_id[0] = '\0';
	}
	if (m.kind != MCP_RPC_REQUEST) {
		json_decref(resp);
		http_reply_empty(r, 202);
	} else if (!resp) {
		http_reply_error(r, API_ERR_INTERNAL, "out of memory");
	} else {
		reply(r, 200, resp, new_id[0] ? new_id : NULL);
	}
out:
	mcp_rpc_msg_clear(&m);
}

void api_mcp_delete(struct http_req *r)
{
	if (!origin_ok(r)) {
		refuse(r, 403, MCP_RPC_INVALID_REQUEST, ORIGIN_REFUSED);
		return;
	}
	const char *sid = http_header(r, SESSION_HEADER);
	if (!sid) {
		refuse(r, 400, MCP_RPC_INVALID_REQUEST, "Bad Request: Mcp-Session-Id is required");
		return;
	}
	if (api_mcp_sessions_end(r->d->mcp->sessions, sid, r->who.key_id) < 0) {
		refuse(r, 404, MCP_RPC_INVALID_REQUEST, "Not Found: no such MCP session");
		return;
	}
	http_reply_empty(r, 204);
}
