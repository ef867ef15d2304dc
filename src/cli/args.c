/*
 * args.c - command-line flag parsing for the CLI (see args.h).
 */
#include "cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static size_t count_positionals(const struct args_spec *spec)
{
	size_t n = 0;
	while (spec->positionals && spec->positionals[n])
		n++;
	return n;
}

/* Index of flag name (nlen bytes) in spec, or -1. */
static int find_flag(const struct args_spec *spec, const char *name, size_t nlen)
{
	if (!spec->flags)
		return -1;
	for (int i = 0; spec->flags[i].name; i++) {
		if (strlen(spec->flags[i].name) == nlen &&
		    memcmp(spec->flags[i].name, name, nlen) == 0)
			return i;
	}
	return -1;
}

static int is_help(const char *a)
{
	return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

/* "-5" and "-1.5" are values or positionals, not flags. */
static int looks_like_flag(const char *a)
{
	return a[0] == '-' && a[1] != '\0' && !isdigit((unsigned char)a[1]);
}

int args_join(int n, char *const words[], size_t cap, char **out)
{
	*out = NULL;
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		size_t need = strlen(words[i]) + (i ? 1 : 0);
		if (need > cap - total) /* total <= cap holds */
			return -E2BIG;
		total += need;
	}
	char *s = malloc(total + 1);
	if (!s)
		return -ENOMEM;
	size_t o = 0;
	for (int i = 0; i < n; i++) {
		if (i)
			s[o++] = ' ';
		size_t l = strlen(words[i]);
		memcpy(s + o, words[i], l);
		o += l;
	}
	s[o] = '\0';
	*out = s;
	return 0;
}

/* Keep one flag occurrence. */
static int add_occ(struct args_result *out, int flag, const char *value, char *err,
		   size_t errlen)
{
	if (out->nocc >= ARGS_MAX_VALUES)
		return fail(err, errlen, -E2BIG, "too many flags (at most %d)", ARGS_MAX_VALUES);
	out->occ[out->nocc].flag = flag;
	out->occ[out->nocc].value = value;
	out->nocc++;
	return 0;
}

/*
 * One "--name" or "--name=value" word at argv[*i]; may consume the next
 * word as the value.
 */
static int parse_long_flag(const struct args_spec *spec, int argc, char *const argv[], int *i,
			   struct args_result *out, char *err, size_t errlen)
{
	const char *a = argv[*i] + 2;
	const char *eq = strchr(a, '=');
	size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
	if (nlen == 4 && memcmp(a, "json", 4) == 0) {
		if (eq)
			return fail(err, errlen, -EINVAL, "flag --json takes no value");
		out->json = 1;
		return 0;
	}
	if (nlen == 7 && memcmp(a, "ca-file", 7) == 0) {
		if (!eq && *i + 1 >= argc)
			return fail(err, errlen, -EINVAL, "flag --ca-file needs a value (FILE)");
		out->ca_file = eq ? eq + 1 : argv[++*i];
		if (!*out->ca_file)
			return fail(err, errlen, -EINVAL, "flag --ca-file needs a non-empty value");
		return 0;
	}
	int f = find_flag(spec, a, nlen);
	if (f < 0)
		return fail(err, errlen, -EINVAL, "unknown flag --%.*s", (int)(nlen > 64 ? 64 : nlen),
			    a);
	const struct arg_flag *fl = &spec->flags[f];
	if (fl->kind == ARG_BOOL) {
		if (eq)
			return fail(err, errlen, -EINVAL, "flag --%s takes no value", fl->name);
		return add_occ(out, f, NULL, err, errlen);
	}
	const char *value;
	if (eq) {
		value = eq + 1;
	} else {
		if (*i + 1 >= argc)
			return fail(err, errlen, -EINVAL, "flag --%s needs a value (%s)", fl->name,
				    fl->metavar ? fl->metavar : "VALUE");
		value = argv[++*i];
	}
	if (!*value)
		return fail(err, errlen, -EINVAL, "flag --%s needs a non-empty value", fl->name);
	return add_occ(out, f, value, err, errlen);
}

static int check_complete(const struct args_spec *spec, struct args_result *out, int have_rest,
			  char *err, size_t errlen)
{
	size_t npos = count_positionals(spec);
	if (out->npos < npos)
		return fail(err, errlen, -EINVAL, "missing %s", spec->positionals[out->npos]);
	if (spec->flags) {
		for (int f = 0; spec->flags[f].name; f++) {
			if (spec->flags[f].required && !args_has(out, spec->flags[f].name))
				return fail(err, errlen, -EINVAL, "missing --%s %s", spec->flags[f].name,
					    spec->flags[f].metavar ? spec->flags[f].metavar : "VALUE");
		}
	}
	if (spec->rest && spec->rest_required && !have_rest)
		return fail(err, errlen, -EINVAL, "missing %s (put it after --)", spec->rest);
	return 0;
}

int args_parse(const struct args_spec *spec, int argc, char *const argv[],
	       struct args_result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->spec = spec;
	if (err && errlen)
		err[0] = '\0';
	size_t npos = count_positionals(spec);
	if (npos > ARGS_MAX_POS)
		return fail(err, errlen, -EINVAL, "internal: too many positionals");

	int rest_start = -1;
	int rc = 0;
	int i;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (is_help(a)) {
			args_result_free(out);
			memset(out, 0, sizeof(*out));
			out->spec = spec;
			out->help = 1;
			return 0;
		}
		if (strcmp(a, "--") == 0) {
			if (spec->rest) {
				rest_start = i + 1;
				break;
			}
			/* No trailing words: what follows are positionals. */
			for (int j = i + 1; j < argc; j++) {
				if (out->npos >= npos) {
					rc = fail(err, errlen, -EINVAL, "unexpected argument '%.64s'",
						  argv[j]);
					goto bad;
				}
				out->pos[out->npos++] = argv[j];
			}
			break;
		}
		if (a[0] == '-' && a[1] == '-') {
			rc = parse_long_flag(spec, argc, argv, &i, out, err, errlen);
			if (rc)
				goto bad_flag;
			continue;
		}
		if (looks_like_flag(a)) {
			rc = fail(err, errlen, -EINVAL, "unknown flag %.64s", a);
			goto bad_flag;
		}
		if (out->npos < npos) {
			out->pos[out->npos++] = a;
			continue;
		}
		if (spec->rest) {
			rest_start = i;
			break;
		}
		rc = fail(err, errlen, -EINVAL, "unexpected argument '%.64s'", a);
		goto bad_flag;
	}

	int have_rest = rest_start >= 0 && rest_start < argc;
	rc = check_complete(spec, out, have_rest, err, errlen);
	if (rc)
		goto bad;
	if (have_rest) {
		rc = args_join(argc - rest_start, argv + rest_start, ARGS_REST_MAX, &out->rest);
		if (rc == -E2BIG)
			fail(err, errlen, rc, "%s is longer than %d bytes", spec->rest, ARGS_REST_MAX);
		else if (rc)
			fail(err, errlen, rc, "out of memory");
		if (rc)
			goto bad;
		if (spec->rest_required && out->rest[0] == '\0') {
			rc = fail(err, errlen, -EINVAL, "%s is empty", spec->rest);
			goto bad;
		}
	}
	return 0;
bad_flag:
	/* A help flag later among the flags still wins over this error. */
	for (int j = i + 1; j < argc && strcmp(argv[j], "--") != 0; j++) {
		if (is_help(argv[j])) {
			args_result_free(out);
			memset(out, 0, sizeof(*out));
			out->spec = spec;
			out->help = 1;
			return 0;
		}
	}
bad:
	args_result_free(out);
	out->npos = 0;
	out->nocc = 0;
	return rc;
}

void args_result_free(struct args_result *r)
{
	free(r->rest);
	r->rest = NULL;
}

/* Index of flag name in r's spec, or -1. */
static int flag_index(const struct args_result *r, const char *name)
{
	return find_flag(r->spec, name, strlen(name));
}

const char *args_value(const struct args_result *r, const char *name)
{
	int f = flag_index(r, name);
	if (f < 0)
		return NULL;
	for (size_t i = r->nocc; i-- > 0;) {
		if (r->occ[i].flag == f)
			return r->occ[i].value;
	}
	return NULL;
}

int args_has(const struct args_result *r, const char *name)
{
	int f = flag_index(r, name);
	if (f < 0)
		return 0;
	for (size_t i = 0; i < r->nocc; i++) {
		if (r->occ[i].flag == f)
			return 1;
	}
	return 0;
}

size_t args_values(const struct args_result *r, const char *name, const char **out, size_t cap)
{
	int f = flag_index(r, name);
	size_t n = 0;
	if (f < 0)
		return 0;
	for (size_t i = 0; i < r->nocc; i++) {
		if (r->occ[i].flag != f)
			continue;
		if (n < cap)
			out[n] = r->occ[i].value;
		n++;
	}
	return n;
}

int args_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	if (!*p)
		return -EINVAL;
	for (const char *q = p; *q; q++) {
		if (!isdigit((unsigned char)*q))
			return -EINVAL;
	}
	errno = 0;
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (!end || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = (int64_t)v;
	return 0;
}

void args_print_help(const struct args_spec *spec, FILE *f)
{
	fprintf(f, "Usage: pandastack %s %s\n\n%s\n", spec->path, spec->usage ? spec->usage : "",
		spec->summary ? spec->summary : "");
	fprintf(f, "\nFlags:\n");
	size_t width = 12;
	if (spec->flags) {
		for (int i = 0; spec->flags[i].name; i++) {
			size_t w = strlen(spec->flags[i].name) + 3 +
				   (spec->flags[i].metavar ? strlen(spec->flags[i].metavar) : 0);
			if (w > width)
				width = w;
		}
		for (int i = 0; spec->flags[i].name; i++) {
			const struct arg_flag *fl = &spec->flags[i];
			char left[96];
			snprintf(left, sizeof(left), "--%s%s%s", fl->name, fl->metavar ? " " : "",
				 fl->metavar ? fl->metavar : "");
			fprintf(f, "  %-*s  %s%s%s\n", (int)width, left, fl->help ? fl->help : "",
				fl->required ? " (required)" : "",
				fl->kind == ARG_REPEAT ? " (may be repeated)" : "");
		}
	}
	fprintf(f, "  %-*s  %s\n", (int)width, "--json", "print the API's JSON answer as is");
	fprintf(f, "  %-*s  %s\n", (int)width, "--ca-file FILE",
		"trust only the CA certificates in FILE (PEM) for https");
	fprintf(f, "  %-*s  %s\n", (int)width, "-h, --help", "show this help");
	if (spec->details)
		fprintf(f, "\n%s", spec->details);
}
