/*
 * body_table.h - the one parser of the API's JSON request bodies, for the
 * routes' tables in request_body.c (no other file uses it).
 *
 * A route's body is a table of fields (name, kind, whether required, bounds,
 * a check, and where the value goes in the route's struct), checked in the
 * table's order, then the route's rules between fields.  body_parse loads
 * the bytes with jansson (duplicate keys and NUL in strings refused) and
 * answers unknown_field for a key the table does not name; body_clear
 * releases what the fields hold.  Pure (no I/O, no globals); any thread.
 */
#ifndef PANDASTACK_DAEMON_HTTP_BODY_TABLE_H
#define PANDASTACK_DAEMON_HTTP_BODY_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/body_error.h"
#include "daemon/config.h" /* struct body_limits */

#define BODY_XSTR(x) BODY_STR(x)
#define BODY_STR(x) #x
#define NO_OFF ((size_t)-1)
#define BODY_FIELDS_MAX 15 /* fields of one route's body */
#define F_REQUIRED 1u

/* What a field holds (and where its value goes in the body's struct). */
enum field_kind {
	K_STRING,   /* const char * at off, its length (size_t) at off2 */
	K_BOOL,     /* int at off; dflt when absent */
	K_INT,      /* int64_t at off, lo..hi; dflt when absent */
	K_TTL,      /* int64_t at off, 1..lim->max_ttl_seconds; 0 when absent */
	K_TIMEOUT,  /* "has" (int) at off, ms (int64_t) at off2 */
	K_ENV,      /* json_t * (new reference, {} when absent) at off */
	K_METADATA, /* json_t * (new reference, {} when absent) at off */
	K_NETWORK,  /* struct net_policy * at off, public_ports (int) at off2 */
};

/* A K_STRING's check beyond its type and length; msg when it fails. */
enum field_check {
	C_ANY,
	C_NONEMPTY,   /* invalid_field msg when "" */
	C_PRINTABLE,  /* invalid_field msg unless 1+ printable UTF-8 characters */
	C_NAME,       /* invalid_field msg unless body_check_name */
	C_PATH,       /* body_check_path's invalid_path */
	C_ABS_PATH,   /* invalid_field msg unless body_check_path (optionally "") */
	C_SNAPSHOT,   /* invalid_field msg unless a snapshot id */
	C_CHOICE,     /* invalid_field msg unless one of choices; the static
		       * choice is stored, not the JSON string */
};

struct field {
	const char *name;
	enum field_kind kind;
	unsigned flags;                /* F_REQUIRED */
	enum field_check check;
	int64_t lo, hi;                /* K_STRING: hi = most bytes; K_INT: range */
	int64_t dflt;                  /* K_BOOL, K_INT */
	const char *const *choices;    /* C_CHOICE, NULL-terminated */
	int empty_ok;                  /* C_ABS_PATH: "" is taken */
	const char *msg;               /* the check's message */
	size_t off, off2;
};

/* One route's body: its fields in the order they are checked. */
struct body_spec {
	const struct field *fields;
	size_t nfields;    /* at most BODY_FIELDS_MAX */
	size_t root_off;   /* where the root goes (kept: strings point into it),
			    * or NO_OFF (released once parsed) */
	int empty_ok;      /* an empty body takes every default */
	/* the rules between fields, after them all: 0 or -EINVAL with err */
	int (*rules)(void *out, struct body_error *err);
};

#define AT(type, member) offsetof(type, member)
#define FIELDS(a) (a), sizeof(a) / sizeof((a)[0])

/*
 * body_parse - len bytes of buf (may be NULL when len is 0) against spec,
 * into out (a route's struct of size bytes; zeroed first).  lim may be NULL
 * for a table without K_TTL or K_TIMEOUT.  Returns 0 with out filled
 * (body_clear releases it), or -EINVAL with err and out empty.
 */
int body_parse(const struct body_spec *spec, const char *buf, size_t len,
	       const struct body_limits *lim, void *out, size_t size, struct body_error *err);

/* body_clear - release what out holds for spec (its JSON references, its
 * policy, its root) and zero its size bytes. */
void body_clear(const struct body_spec *spec, void *out, size_t size);

/* body_load_object - buf as a JSON object (a new reference), or NULL with
 * err (invalid_json). */
json_t *body_load_object(const char *buf, size_t len, struct body_error *err);

/* body_public_ports - "public_ports" of the network object net (NULL:
 * absent): *out 1 or 0, or -1 when absent; field prefixes the name in
 * messages.  0 or -EINVAL with err. */
int body_public_ports(json_t *net, const char *field, int *out, struct body_error *err);

#endif
