/*
 * dynbuf.h - a growable byte buffer with a cap, the one every part uses to
 * collect bytes of unknown length (an HTTP body, a command's output, a file,
 * a line from a pipe, a queue of bytes to write).  In the spirit of curl's
 * dynbuf: the buffer never holds more than its cap, and an add that would
 * pass the cap keeps what fits, marks the buffer truncated and fails with
 * -EFBIG, so a caller either stops (-EFBIG is its answer) or carries on with
 * a truncated copy (it reports `truncated`).
 *
 * Contents are always NUL-terminated once anything was added (the NUL is not
 * counted in len and not in the cap), so text can be used as a C string; the
 * bytes themselves may hold NULs.  Memory is the caller's struct plus one
 * heap block owned by the buffer until dynbuf_take or dynbuf_free.
 *
 * Threads: a buffer is used by one thread at a time (no locking inside).
 */
#ifndef PANDASTACK_DYNBUF_H
#define PANDASTACK_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>

struct dynbuf {
	char *p;        /* contents, NUL-terminated; NULL until the first add */
	size_t len;     /* bytes held, without the NUL; <= cap */
	size_t alloc;   /* bytes allocated at p */
	size_t cap;     /* most bytes the buffer may hold */
	int truncated;  /* an add hit the cap and kept only what fit */
};

/* Read-only use of the fields is fine; change them only through the calls. */

/* dynbuf_init - an empty buffer holding at most cap bytes (0 is allowed:
 * every non-empty add then fails).  Allocates nothing. */
void dynbuf_init(struct dynbuf *b, size_t cap);

/*
 * dynbuf_add - append n bytes of data.  Returns 0; -EFBIG when len + n is
 * over the cap: the bytes that fit are appended and truncated is set;
 * -ENOMEM when memory ran out: nothing is appended.
 */
int dynbuf_add(struct dynbuf *b, const void *data, size_t n);

/*
 * dynbuf_write - a write callback of fwrite's and libcurl's shape
 * (CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA the dynbuf): appends size *
 * nmemb bytes of data to the struct dynbuf b.  Returns size * nmemb, or 0
 * when they did not all fit (over the cap or out of memory: libcurl then
 * stops the transfer with CURLE_WRITE_ERROR).
 */
size_t dynbuf_write(char *data, size_t size, size_t nmemb, void *b);

/* dynbuf_add_str - dynbuf_add of strlen(s) bytes. */
int dynbuf_add_str(struct dynbuf *b, const char *s);

/*
 * dynbuf_addf / dynbuf_vaddf - append printf-formatted text.  Returns 0,
 * -EFBIG (over the cap: the part that fits is kept, truncated set), -ENOMEM,
 * or -EINVAL when the format fails.
 */
int dynbuf_addf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int dynbuf_vaddf(struct dynbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * dynbuf_reserve - make room for n more bytes without adding them, for a
 * caller that reads straight into p + len and then calls dynbuf_commit.
 * Returns 0, -EFBIG (len + n over the cap; nothing changes), -ENOMEM.
 */
int dynbuf_reserve(struct dynbuf *b, size_t n);

/* dynbuf_commit - count n bytes written at p + len after dynbuf_reserve(n)
 * (or less) as added; keeps the NUL. */
void dynbuf_commit(struct dynbuf *b, size_t n);

/* dynbuf_consume - drop the first n bytes (all of them if n >= len); the
 * rest moves to the front.  Memory is kept. */
void dynbuf_consume(struct dynbuf *b, size_t n);

/* dynbuf_str - the contents as a C string: "" when nothing was added. */
const char *dynbuf_str(const struct dynbuf *b);

/*
 * dynbuf_take - hand the contents to the caller: a NUL-terminated heap
 * string the caller frees (*len, if not NULL, gets its length).  The buffer
 * is left empty with the same cap.  Returns NULL only when the buffer was
 * never added to and allocating the empty string fails.
 */
char *dynbuf_take(struct dynbuf *b, size_t *len);

/* dynbuf_reset - empty the buffer and clear truncated; memory is kept. */
void dynbuf_reset(struct dynbuf *b);

/* dynbuf_free - release the memory; the buffer is empty, keeps its cap and
 * may be used again. */
void dynbuf_free(struct dynbuf *b);

#endif
