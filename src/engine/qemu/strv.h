/*
 * strv.h - a growable, NULL-terminated vector of owned strings, used to
 * build QEMU command lines (argv) and to compare machine arguments.
 *
 * Caps: at most STRV_MAX_ITEMS strings of at most STRV_MAX_LEN bytes each,
 * so a hostile template.json or manifest cannot make it grow without bound.
 * Threads: a vector is used by one thread at a time.
 */
#ifndef PANDASTACK_STRV_H
#define PANDASTACK_STRV_H

#include <stddef.h>

#define STRV_MAX_ITEMS 512u
#define STRV_MAX_LEN (64u * 1024u)

struct strv {
	char **v;     /* owned strings, v[n] == NULL when n > 0 */
	size_t n;     /* strings held */
	size_t cap;   /* slots allocated */
	int err;      /* first error of an add (sticky), 0 if none */
};

/* strv_init - empty vector (no allocation). */
void strv_init(struct strv *s);

/* strv_free - free every string and the array; s may be reused after. */
void strv_free(struct strv *s);

/*
 * strv_add - append a copy of str.  Errors are sticky: once an add fails
 * (-ENOMEM, -E2BIG over a cap, -EINVAL for NULL) later adds do nothing and
 * s->err keeps the first error, so a builder checks once at the end.
 * Returns 0 or -errno.
 */
int strv_add(struct strv *s, const char *str);

/* strv_addf - append a printf-formatted string (same rules as strv_add). */
int strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* strv_extend - append copies of every string of src.  0 or -errno. */
int strv_extend(struct strv *s, const struct strv *src);

/* strv_equal - 1 if a and b hold the same strings in the same order. */
int strv_equal(const struct strv *a, const struct strv *b);

/*
 * strv_join - the strings joined by sep into a new string (caller frees),
 * or NULL on allocation failure.  An empty vector gives "".
 */
char *strv_join(const struct strv *s, const char *sep);

#endif
