/*
 * web_static.c - serving the dashboard's files (see web_static.h).
 */
#include "daemon/http/web_static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/http/http_reply.h"

/* The application: its own files and API only; scripts only with the
 * page's nonce (%s); sandbox HTML goes to frames of the frame page. */
#define APP_CSP                                                                         \
	"default-src 'self'; script-src 'nonce-%s'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; frame-src 'self'; worker-src 'none'; object-src 'none'; "        \
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The frame page: an opaque origin whatever embeds it, the dashboard's
 * frame script (its nonce), the untrusted page's inline styles and data:
 * images. */
#define FRAME_CSP                                                                 \
	"sandbox allow-scripts; default-src 'none'; script-src 'nonce-%s'; "            \
	"style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; " \
	"frame-ancestors 'self'"

/* Random bytes of a page's nonce (base64: 24 characters). */
#define NONCE_BYTES 18

static const struct {
	const char *ext;
	const char *type;
} types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".svg", "image/svg+xml"},
	{".png", "image/png"},
	{".ico", "image/x-icon"},
	{".json", "application/json"},
	{".map", "application/json"},
	{".txt", "text/plain; charset=utf-8"},
	{".woff2", "font/woff2"},
};

int web_static_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > WEB_STATIC_NAME_MAX || strstr(name, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}

const char *web_static_content_type(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return NULL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return NULL;
}

int web_static_immutable(const char *name)
{
	const char *ext = strrchr(name, '.');
	if (!ext || ext - name < 9 || ext[-9] != '.')
		return 0;
	for (const char *p = ext - 8; p < ext; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

char *web_static_add_nonce(const char *html, size_t len, const char *nonce, size_t *outlen)
{
	static const char tag[] = "<script";
	const size_t tl = sizeof(tag) - 1;
	char attr[64];
	int al = snprintf(attr, sizeof(attr), " nonce=\"%s\"", nonce);
	if (al < 0 || (size_t)al >= sizeof(attr))
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i + tl <= len; i++)
		if (!strncasecmp(html + i, tag, tl) &&
		    (i + tl == len || strchr(" \t\r\n/>", html[i + tl])))
			n++;
	char *out = malloc(len + n * (size_t)al + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		out[o++] = html[i];
		if (i + 1 >= tl && !strncasecmp(html + i + 1 - tl, tag, tl) &&
		    (i + 1 == len || strchr(" \t\r\n/>", html[i + 1]))) {
			memcpy(out + o, attr, (size_t)al);
			o += (size_t)al;
		}
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* The response for a page (name ends in .html): read from fd (closed
 * here) with a new nonce in its script tags, and its policy.  NULL on
 * failure. */
static struct MHD_Response *page_response(int fd, const char *name)
{
	char *text = NULL, *b64 = NULL, *page = NULL;
	size_t len = 0, b64len = 0, plen = 0;
	unsigned char raw[NONCE_BYTES];
	int e = util_read_fd(fd, WEB_STATIC_FILE_MAX, &text, &len);
	close(fd);
	if (!e)
		e = util_random(raw, sizeof(raw));
	if (!e)
		e = base64_encode(raw, sizeof(raw), &b64, &b64len);
	if (!e && !(page = web_static_add_nonce(text, len, b64, &plen)))
		e = -ENOMEM;
	free(text);
	struct MHD_Response *resp =
		e ? NULL : MHD_create_response_from_buffer(plen, page, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(page);
		free(b64);
		return NULL;
	}
	char csp[700];
	snprintf(csp, sizeof(csp), strcmp(name, WEB_STATIC_FRAME_PAGE) == 0 ? FRAME_CSP : APP_CSP,
		 b64);
	free(b64);
	MHD_add_response_header(resp, "Content-Security-Policy", csp);
	return resp;
}

/* Answer name from the web directory, or 404. */
static void serve(struct http_req *r, const char *name)
{
	const char *dir = r->d->cfg.web_dir;
	const char *ctype = web_static_content_type(name);
	if (!dir[0]) {
		http_reply_error(r, API_ERR_NOT_FOUND, "the dashboard is not installed (make web)");
		return;
	}
	char path[PATH_MAX];
	if (!web_static_name_ok(name) || !ctype ||
	    snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		http_reply_error(r, API_ERR_NOT_FOUND, "no such file");
		return;
	}
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > WEB_STATIC_FILE_MAX) {
		if (fd >= 0)
			close(fd);
		if (strcmp(name, WEB_STATIC_INDEX) == 0)
			http_reply_error(r, API_ERR_NOT_FOUND,
					 "the dashboard is not installed in %.200s (make web)", dir);
		else
			http_reply_error(r, API_ERR_NOT_FOUND, "no such file");
		return;
	}
	/* the response owns fd once it exists (a page: read and closed) */
	size_t nl = strlen(name);
	int page = nl > 5 && strcmp(name + nl - 5, ".html") == 0;
	struct MHD_Response *resp = page ? page_response(fd, name)
					 : MHD_create_response_from_fd((size_t)st.st_size, fd);
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
		MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
					web_static_immutable(name) ? "public, max-age=31536000, immutable"
								   : "no-cache");
	} else if (!page) {
		close(fd);
	}
	http_reply_response(r, 200, resp);
}

void web_static_index(struct http_req *r)
{
	serve(r, WEB_STATIC_INDEX);
}

void web_static_file(struct http_req *r)
{
	serve(r, r->params[0]);
}
