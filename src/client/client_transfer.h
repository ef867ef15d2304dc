/*
 * client_transfer.h - streamed file transfers with the REST API: the body of
 * an upload is read from a file descriptor as libcurl sends it, and the
 * body of a download is written to one as it arrives, so no file is ever
 * held whole in memory (PUT/GET /v1/sandboxes/{id}/fs?path=..., see
 * docs/api.md).
 *
 * Errors are those of client.h, plus local I/O failures: the read(2) or
 * write(2) -errno (code "local_read_failed" / "local_write_failed") and
 * -EIO for a file that changed size while it was sent ("local_read_failed").
 *
 * Threads: as client.h.
 */
#ifndef PANDASTACK_CLIENT_CLIENT_TRANSFER_H
#define PANDASTACK_CLIENT_CLIENT_TRANSFER_H

#include <stdint.h>

#include "client/client.h"

#define CLIENT_ERROR_BODY_MAX (64 * 1024) /* bytes of an error answer kept by a download */

/*
 * client_progress_fn - told, from inside the transfer, how many body bytes
 * have moved (done) out of total (-1 while unknown).  Called often (also
 * while nothing moves): it should return quickly.  Returning non-zero
 * stops the transfer: the call then fails with -EINTR (code
 * "interrupted").
 */
typedef int (*client_progress_fn)(void *arg, int64_t done, int64_t total);

/*
 * client_upload - PUT path with the bytes of fd as the body
 * (application/octet-stream): exactly size bytes from fd's current
 * position with a Content-Length, or, with size -1, everything up to EOF in
 * chunked encoding.  fn (may be NULL) gets progress.  fd is borrowed and
 * left open.  Returns 0 with the API's JSON answer in *resp
 * (client_response_clear), or -errno with *err filled.
 */
int client_upload(struct client *c, const char *path, int fd, int64_t size, client_progress_fn fn,
		  void *arg, struct client_response *resp, struct client_error *err);

/*
 * client_download - GET path and write a 2xx answer's body to fd (borrowed,
 * left open; the caller decides what to do with a partial file on error).
 * An error answer is kept in memory (at most CLIENT_ERROR_BODY_MAX bytes) and
 * turned into *err; nothing of it reaches fd.  *written gets the bytes
 * written to fd.  Returns 0 or -errno with *err filled.
 */
int client_download(struct client *c, const char *path, int fd, client_progress_fn fn, void *arg,
		    int64_t *written, struct client_error *err);

#endif
