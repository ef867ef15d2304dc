/*
 * args.h - command-line flag parsing for the pandastack CLI.
 *
 * Each command describes its flags and positional arguments in a static
 * struct args_spec; args_parse checks argv against it and gives back the
 * values, or a usage message (the caller exits 2).  Rules (docs/cli.md):
 *   - long flags only: "--ttl 3600" and "--ttl=3600" are the same; a
 *     boolean flag takes no value; -h and --help ask for help;
 *   - every command also accepts --json (machine output) and --ca-file FILE
 *     (the CA certificates trusted for https);
 *   - required positionals (ID, ...) come in order, flags may be mixed in;
 *   - "--" ends the flags: every word after it belongs to the command's
 *     trailing argument (CMD, CODE), and so does every word from the first
 *     positional beyond the required ones; those words are joined with one
 *     space, as a shell joins "$*".
 *
 * Ownership: results point into argv (borrowed) except rest, which is
 * allocated (args_result_free).  Threads: any; no global state.
 */
#ifndef PANDASTACK_CLI_ARGS_H
#define PANDASTACK_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARGS_MAX_POS 4             /* required positionals a command may have */
#define ARGS_MAX_VALUES 256        /* flag occurrences kept per command line */
#define ARGS_REST_MAX (1024 * 1024) /* bytes of the joined trailing words */

enum arg_kind {
	ARG_BOOL = 0,   /* --recursive */
	ARG_VALUE = 1,  /* --ttl S (the last one given wins) */
	ARG_REPEAT = 2, /* --env K=V, may be given many times */
};

struct arg_flag {
	const char *name;    /* without the dashes: "ttl"; NULL ends a table */
	enum arg_kind kind;
	int required;        /* 1: the command refuses to run without it */
	const char *metavar; /* what the value is in help: "S", "PATH" */
	const char *help;    /* one line */
};

struct args_spec {
	const char *path;                /* "sandbox exec": for messages and help */
	const char *usage;               /* after the path: "ID [flags] [--] CMD..." */
	const char *summary;             /* one line */
	const char *details;             /* more help text, or NULL */
	const struct arg_flag *flags;    /* table ended by a NULL name; may be NULL */
	const char *const *positionals;  /* required names, NULL-terminated; may be NULL */
	const char *rest;                /* name of the trailing words ("CMD") or NULL */
	int rest_required;               /* 1: the trailing words must be given */
};

struct args_occurrence {
	int flag;            /* index into spec->flags */
	const char *value;   /* borrowed from argv; NULL for a boolean */
};

struct args_result {
	const struct args_spec *spec;
	int help;                                  /* -h or --help seen */
	int json;                                  /* --json seen */
	const char *ca_file;                       /* --ca-file's value (borrowed) or NULL */
	const char *pos[ARGS_MAX_POS];             /* borrowed from argv */
	size_t npos;
	struct args_occurrence occ[ARGS_MAX_VALUES];
	size_t nocc;
	char *rest;                                /* joined words (owned) or NULL */
};

/*
 * args_parse - parse argc words of argv (the words after the command's
 * name) against spec into *out.  When -h/--help appears before "--", returns
 * 0 with out->help set and nothing else checked.  Returns 0, -EINVAL with a
 * one-line message in err (errlen bytes, always NUL-terminated) for a usage
 * error, -E2BIG when the trailing words pass ARGS_REST_MAX or flags pass
 * ARGS_MAX_VALUES (also with a message), -ENOMEM.  On error *out holds
 * nothing to free.
 */
int args_parse(const struct args_spec *spec, int argc, char *const argv[],
	       struct args_result *out, char *err, size_t errlen);

/* args_result_free - free what args_parse allocated (not r itself).  Safe
 * on a zeroed or already freed result. */
void args_result_free(struct args_result *r);

/* args_value - the last value given for flag name, or NULL when absent (or
 * when name is not a value flag of the spec).  Borrowed. */
const char *args_value(const struct args_result *r, const char *name);

/* args_has - 1 when flag name was given at least once, else 0. */
int args_has(const struct args_result *r, const char *name);

/*
 * args_values - the values of repeatable flag name in command-line order:
 * up to cap pointers into out (borrowed).  Returns how many were given
 * (which may exceed cap; only cap are written).
 */
size_t args_values(const struct args_result *r, const char *name, const char **out, size_t cap);

/*
 * args_parse_int64 - s as a base-10 integer in [min, max] into *out: an
 * optional sign, then digits only (spaces, hex, "" are refused).
 * Returns 0, -EINVAL (not a number) or -ERANGE (outside [min, max]).
 */
int args_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/*
 * args_join - the n words of words joined by single spaces into a new
 * string (*out, owned by the caller) of at most cap bytes without the NUL.
 * Returns 0, -E2BIG or -ENOMEM.
 */
int args_join(int n, char *const words[], size_t cap, char **out);

/* args_print_help - the command's help (usage, summary, flags, details) on
 * f, each line prefixed as "pandastack <path>". */
void args_print_help(const struct args_spec *spec, FILE *f);

#endif
