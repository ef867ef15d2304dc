/*
 * mcp_content.h - MCP content blocks (revision 2025-11-25, "Tool Result":
 * TextContent, ImageContent, EmbeddedResource) made from what the REST API
 * answers: a code context's Execution (docs/api.md) and a file's bytes.
 *
 * Everything handed in comes from a guest through the daemon and is
 * checked again here: wrong types are skipped, text is made valid UTF-8,
 * and image data is passed on only when it is valid base64 (an MCP client
 * rejects the whole result otherwise).
 *
 * Returns: new references (NULL on ENOMEM) or 0 / -ENOMEM.
 * Threads: pure functions, any thread.
 */
#ifndef PANDASTACK_MCP_CONTENT_H
#define PANDASTACK_MCP_CONTENT_H

#include <stddef.h>

#include <jansson.h>

/* mcp_content_text - {"type": "text", "text": ...} of len bytes of s made
 * valid UTF-8. */
json_t *mcp_content_text(const char *s, size_t len);

/*
 * mcp_content_execution - append to content (an array) the blocks of an
 * Execution (borrowed): stdout and stderr as text; per result its text,
 * png and jpeg as image blocks, html, svg and markdown as embedded text
 * resources named uri_prefix + "/" + N (N the result's index), json and
 * latex as text; the error's name, value and traceback as text.  Sets
 * *is_error to 1 when the Execution carries an error, else 0.  Returns 0
 * or -ENOMEM.
 */
int mcp_content_execution(json_t *content, const json_t *execution, const char *uri_prefix,
			  int *is_error);

/*
 * mcp_content_file - one block for a file's len bytes: text when they are
 * valid UTF-8 without NULs; an image block for PNG, JPEG, GIF or WebP
 * (told by their signatures); otherwise an embedded resource with the
 * bytes in base64 ("blob") and mimeType application/octet-stream.  uri
 * names the file in resource blocks.
 */
json_t *mcp_content_file(const char *uri, const char *data, size_t len);

#endif
