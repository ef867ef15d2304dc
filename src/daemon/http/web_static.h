/*
 * web_static.h - the dashboard's files (web/, built by `make web` into
 * build/web) served by pandastackd itself: GET / answers index.html and
 * GET /ui/{file} every other file.  No key is needed for these routes; the
 * dashboard asks for one and sends it with each API call (docs/dashboard.md).
 *
 * Names: the directory is flat.  A {file} is 1 to WEB_STATIC_NAME_MAX bytes
 * of [A-Za-z0-9._-], starts with a letter or digit and holds no "..", so it
 * cannot name anything outside the directory; a symbolic link or anything
 * but a regular file is not served.  Only known extensions are served, each
 * with its content type; anything else is 404.
 *
 * Headers on every answer: X-Content-Type-Options: nosniff, Referrer-Policy:
 * no-referrer and a Content-Security-Policy.  The pages (*.html) are served
 * with a nonce of their own, new for each answer, added to each of their
 * <script> tags, and their policy runs no script without it (script-src
 * 'nonce-...').  'self' would not do: a sandbox's exposed port is served
 * on this origin too (/v1/sandboxes/{id}/ports/{port}/..., the path form),
 * so anything a sandbox serves would pass for the dashboard's script.
 * Beyond scripts the application's policy allows its own styles and API
 * (no inline script or style), images from data: URLs, frames from itself,
 * and no framing of the app (frame-ancestors 'none').
 * WEB_STATIC_FRAME_PAGE, the page the dashboard shows a sandbox's HTML in,
 * has its own policy: it is always sandboxed (an opaque origin: no access
 * to the dashboard's storage or DOM), runs only the script its nonce names,
 * and loads nothing but data: images.  Other files get the daemon's
 * default policy (http_reply.h), which runs nothing.
 *
 * Caching: names with an 8-character content hash before the extension
 * ("app.K3V2X7QZ.js", [A-Z0-9]{8}) are immutable for a year; the rest
 * (index.html, the frame page) are revalidated on every load.
 *
 * Threads: the handlers run on their request's connection thread; the other
 * functions are pure.
 */
#ifndef PANDASTACK_DAEMON_WEB_STATIC_H
#define PANDASTACK_DAEMON_WEB_STATIC_H

#include "daemon/http/http_req.h"

#define WEB_STATIC_NAME_MAX 128          /* bytes of a file name */
#define WEB_STATIC_FILE_MAX (16u << 20)  /* largest file served, bytes */
#define WEB_STATIC_INDEX "index.html"
#define WEB_STATIC_FRAME_PAGE "frame.html"

/* web_static_name_ok - 1 if name is a servable file name (see above), else 0. */
int web_static_name_ok(const char *name);

/* web_static_content_type - the Content-Type for name's extension (static
 * string), or NULL when the extension is not served. */
const char *web_static_content_type(const char *name);

/* web_static_immutable - 1 if name carries a content hash (cached for a
 * year), else 0. */
int web_static_immutable(const char *name);

/*
 * web_static_add_nonce - len bytes of html with ` nonce="<nonce>"` added
 * to each <script> tag (matched without regard to case; "<scripts" and the
 * like are not tags), as a new buffer (*outlen bytes, NUL-terminated; the
 * caller frees it), or NULL on ENOMEM.  nonce must be base64 (no quote).
 * Pure.
 */
char *web_static_add_nonce(const char *html, size_t len, const char *nonce, size_t *outlen);

/* GET /: index.html of the web directory (404 when the dashboard is not
 * built or --web-dir names no such directory). */
void web_static_index(struct http_req *r);

/* GET /ui/{file}: one file of the web directory, or 404. */
void web_static_file(struct http_req *r);

#endif
