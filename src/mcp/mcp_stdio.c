/*
 * mcp_stdio.c - newline-delimited JSON-RPC on two file descriptors (see
 * mcp_stdio.h).
 */
#include "mcp/mcp_stdio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "common/util.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_server.h"

#define READ_CHUNK 65536

static int send_line(int out, const char *s, size_t len)
{
	int e = util_write_all(out, s, len);
	return e ? e : util_write_all(out, "\n", 1);
}

/* Answer one complete line (without its "\n"). */
static int one_line(struct mcp_session *s, const struct mcp_backend *b, int out, char *line,
		    size_t len)
{
	if (len && line[len - 1] == '\r')
		len--;
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == len)
		return 0;
	size_t n;
	char *resp = mcp_session_handle_bytes(s, b, line, len, &n);
	if (!resp)
		return 0;
	int e = send_line(out, resp, n);
	free(resp);
	return e;
}

static int too_large(int out)
{
	json_t *m = mcp_rpc_error(NULL, MCP_RPC_PARSE_ERROR, "Parse error: the message is too large",
				  NULL);
	size_t n;
	char *s = m ? mcp_rpc_dump(m, &n) : NULL;
	json_decref(m);
	int e = s ? send_line(out, s, n) : -ENOMEM;
	free(s);
	return e;
}

int mcp_stdio_serve(int in, int out, const struct mcp_backend *b, const char *server_version)
{
	struct mcp_session *s;
	int e = mcp_session_new(server_version, &s);
	if (e)
		return e;
	struct dynbuf line;
	dynbuf_init(&line, MCP_RPC_MESSAGE_MAX);
	char *chunk = malloc(READ_CHUNK);
	int skipping = 0; /* inside a line that passed the cap */
	if (!chunk)
		e = -ENOMEM;
	while (!e) {
		ssize_t got = read(in, chunk, READ_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = -errno;
			break;
		}
		if (got == 0) {
			/* a last message without its newline is still one */
			if (skipping)
				e = too_large(out);
			else if (line.len)
				e = one_line(s, b, out, line.p, line.len);
			break;
		}
		char *p = chunk, *end = chunk + got;
		while (!e && p < end) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = (size_t)((nl ? nl : end) - p);
			if (!skipping) {
				int a = dynbuf_add(&line, p, n);
				if (a == -ENOMEM)
					e = a;
				else if (a == -EFBIG)
					skipping = 1;
			}
			if (nl) {
				if (skipping)
					e = too_large(out);
				else if (!e)
					e = one_line(s, b, out, line.p ? line.p : chunk, line.len);
				dynbuf_reset(&line);
				skipping = 0;
			}
			p += n + (nl ? 1 : 0);
		}
		if (skipping)
			dynbuf_reset(&line);
	}
	free(chunk);
	dynbuf_free(&line);
	mcp_session_free(s);
	return e;
}
