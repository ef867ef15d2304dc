/*
 * net_policy.c - egress policies: validation, JSON, decisions (see
 * net_policy.h).
 */
#include "daemon/net/net_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net_denied.h"

static const char *const refusal_names[NET_REFUSAL_COUNT] = {
	[NET_REFUSAL_DENIED_RANGE] = "denied_range",
	[NET_REFUSAL_DENY_RULE] = "deny_rule",
	[NET_REFUSAL_NOT_ALLOWED] = "not_allowed",
	[NET_REFUSAL_NO_ADDRESS] = "no_address",
	[NET_REFUSAL_AMBIGUOUS] = "ambiguous",
	[NET_REFUSAL_LIMIT] = "limit",
	[NET_REFUSAL_POLICY_CHANGED] = "policy_changed",
};

const char *net_refusal_name(enum net_refusal r)
{
	return (unsigned)r < NET_REFUSAL_COUNT ? refusal_names[r] : "unknown";
}

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

size_t net_policy_check_name(const char *s, size_t len)
{
	if (len > 0 && s[len - 1] == '.')
		len--;
	if (len == 0 || len > NET_NAME_MAX)
		return 0;
	size_t start = 0;
	int all_digits = 1;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || s[i] == '.') {
			size_t n = i - start;
			if (n == 0 || n > 63 || s[start] == '-' || s[i - 1] == '-')
				return 0;
			if (i == len && all_digits)
				return 0;
			start = i + 1;
			all_digits = 1;
			continue;
		}
		if (!is_alnum(s[i]) && s[i] != '-')
			return 0;
		if (s[i] < '0' || s[i] > '9')
			all_digits = 0;
	}
	return len;
}

static int printable_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/* One entry of list `list` (index i) into *r. */
static int parse_rule(json_t *v, const char *field, const char *list, size_t i, int allow,
		      struct net_rule *r, struct body_error *err)
{
	if (!json_is_string(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s%s[%zu]' must be a string",
				      field, list, i);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n >= NET_RULE_TEXT_MAX || !printable_ascii(s, n))
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field '%s%s[%zu]' must be 1-%d printable ASCII characters: an IPv4 CIDR, a "
			    "domain name or *.domain",
			    field, list, i, NET_RULE_TEXT_MAX - 1);
	memset(r, 0, sizeof(*r));
	if (strchr(s, ':'))
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field '%s%s[%zu]' '%.64s': IPv6 is not supported (sandboxes have no IPv6)",
			    field, list, i, s);
	if (strspn(s, "0123456789./") == n) {
		int e = net_addr_parse_cidr(s, &r->cidr);
		if (e == -EDOM) {
			char want[NET_CIDR_TEXT_MAX];
			net_addr_cidr_text(&r->cidr, want);
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "field '%s%s[%zu]' '%.64s' has bits set past its prefix length (the "
				    "network is %s)",
				    field, list, i, s, want);
		}
		if (e < 0)
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "field '%s%s[%zu]' '%.64s' is not an IPv4 address or CIDR (A.B.C.D/N)",
				    field, list, i, s);
		if (allow && net_addr_cidr_all_denied(&r->cidr))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "field '%s%s[%zu]' '%.64s' is always denied: sandboxes never reach private, "
				    "loopback, link-local, CGNAT or multicast addresses",
				    field, list, i, s);
		r->kind = NET_RULE_CIDR;
		memcpy(r->text, s, n + 1);
		return 0;
	}
	const char *name = s;
	size_t prefix = 0;
	if (n > 2 && s[0] == '*' && s[1] == '.') {
		prefix = 2;
		name += 2;
	}
	size_t len = net_policy_check_name(name, n - prefix);
	if (len == 0)
		return body_error_set(err, API_ERR_INVALID_FIELD,
			    "field '%s%s[%zu]' '%.64s' is not an IPv4 CIDR, a domain name (letters, digits, "
			    "hyphens; labels of 1-63, at most 253 in all) or *.domain",
			    field, list, i, s);
	r->kind = prefix ? NET_RULE_SUFFIX : NET_RULE_NAME;
	for (size_t k = 0; k < prefix + len; k++) {
		char c = s[k];
		r->text[k] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	r->text[prefix + len] = '\0';
	return 0;
}

static int parse_list(json_t *obj, const char *field, const char *list, int allow,
		      struct net_rule *out, size_t *n, int *has_names, struct body_error *err)
{
	json_t *a = json_object_get(obj, list);
	*n = 0;
	if (!a)
		return 0;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		int e = parse_rule(v, field, list, i, allow, &out[i], err);
		if (e)
			return e;
		*has_names |= out[i].kind != NET_RULE_CIDR;
	}
	*n = json_array_size(a);
	return 0;
}

static int check_list_shape(json_t *obj, const char *field, const char *list,
			    struct body_error *err)
{
	json_t *a = json_object_get(obj, list);
	if (!a)
		return 0;
	if (!json_is_array(a))
		return body_error_set(err, API_ERR_INVALID_FIELD,
				      "field '%s%s' must be an array of strings", field, list);
	if (json_array_size(a) > NET_POLICY_RULES_MAX)
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s%s' has more than %d entries",
				      field, list, NET_POLICY_RULES_MAX);
	return 0;
}

int net_policy_parse(json_t *v, const char *field, struct net_policy **out,
		     struct body_error *err)
{
	/* public_ports: the exposed ports' key of the same object (request_body.c) */
	static const char *const fields[] = {"egress", "allow_out", "deny_out", "public_ports",
					     "notes", NULL};
	*out = NULL;
	char prefix[80];
	snprintf(prefix, sizeof(prefix), "%s%s", field, field[0] ? "." : "");
	if (v && !json_is_object(v))
		return body_error_set(err, API_ERR_INVALID_FIELD, "field '%s' must be an object", field);
	if (v) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) {
			int known = 0;
			for (size_t i = 0; fields[i]; i++)
				known |= !strcmp(k, fields[i]);
			if (!known)
				return body_error_set(err, API_ERR_UNKNOWN_FIELD, "unknown field '%s%.64s'",
					    prefix, k);
		}
	}
	int egress_allow = 1;
	json_t *eg = v ? json_object_get(v, "egress") : NULL;
	if (eg) {
		const char *s = json_string_value(eg);
		if (!s || (strcmp(s, "allow") && strcmp(s, "deny")))
			return body_error_set(err, API_ERR_INVALID_FIELD,
				    "field '%segress' must be \"allow\" or \"deny\"", prefix);
		egress_allow = !strcmp(s, "allow");
	}
	int e = 0;
	if (v && ((e = check_list_shape(v, prefix, "allow_out", err)) ||
		  (e = check_list_shape(v, prefix, "deny_out", err))))
		return e;
	size_t na = v ? json_array_size(json_object_get(v, "allow_out")) : 0;
	size_t nd = v ? json_array_size(json_object_get(v, "deny_out")) : 0;
	struct net_policy *p = calloc(1, sizeof(*p) + (na + nd) * sizeof(struct net_rule));
	if (!p)
		return body_error_set(err, API_ERR_INVALID_JSON, "out of memory");
	p->egress_allow = egress_allow;
	p->allow = (struct net_rule *)(p + 1);
	p->deny = p->allow + na;
	if (v && ((e = parse_list(v, prefix, "allow_out", 1, p->allow, &p->n_allow,
				  &p->has_names, err)) ||
		  (e = parse_list(v, prefix, "deny_out", 0, p->deny, &p->n_deny, &p->has_names,
				  err)))) {
		free(p);
		return e;
	}
	*out = p;
	return 0;
}

static json_t *rules_json(const struct net_rule *r, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(r[i].text)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *net_policy_json(const struct net_policy *p)
{
	json_t *allow = rules_json(p->allow, p->n_allow);
	json_t *deny = rules_json(p->deny, p->n_deny);
	if (!allow || !deny) {
		json_decref(allow);
		json_decref(deny);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "egress", p->egress_allow ? "allow" : "deny",
			 "allow_out", allow, "deny_out", deny);
}

int net_policy_add_notes(json_t *o)
{
	json_t *allow = json_object_get(o, "allow_out");
	json_t *notes = NULL;
	size_t i;
	json_t *v;
	json_array_foreach(allow, i, v) {
		struct net_cidr c, inside[16];
		const char *s = json_string_value(v);
		if (!s || net_addr_parse_cidr(s, &c) < 0)
			continue;
		size_t n = net_addr_denied_inside(&c, inside, sizeof(inside) / sizeof(inside[0]));
		if (n == 0)
			continue;
		char text[512];
		size_t off = (size_t)snprintf(text, sizeof(text),
					      "allow_out[%zu] '%.32s' holds always-denied ranges, "
					      "which stay denied:",
					      i, s);
		for (size_t k = 0; k < n && k < 16 && off < sizeof(text); k++) {
			char t[NET_CIDR_TEXT_MAX];
			net_addr_cidr_text(&inside[k], t);
			off += (size_t)snprintf(text + off, sizeof(text) - off, "%s %s",
						k ? "," : "", t);
		}
		if (off < sizeof(text))
			snprintf(text + off, sizeof(text) - off,
				 " (and the host's own networks and --net-deny ranges)");
		if (!notes && !(notes = json_array()))
			return -ENOMEM;
		if (json_array_append_new(notes, json_string(text)) < 0) {
			json_decref(notes);
			return -ENOMEM;
		}
	}
	if (notes && json_object_set_new(o, "notes", notes) < 0)
		return -ENOMEM;
	return 0;
}

struct net_policy *net_policy_dup(const struct net_policy *p)
{
	if (!p) {
		struct net_policy *d = NULL;
		struct body_error e;
		net_policy_parse(NULL, "", &d, &e);
		return d;
	}
	size_t n = p->n_allow + p->n_deny;
	struct net_policy *c = malloc(sizeof(*c) + n * sizeof(struct net_rule));
	if (!c)
		return NULL;
	*c = *p;
	c->allow = (struct net_rule *)(c + 1);
	c->deny = c->allow + p->n_allow;
	memcpy(c->allow, p->allow, p->n_allow * sizeof(struct net_rule));
	memcpy(c->deny, p->deny, p->n_deny * sizeof(struct net_rule));
	return c;
}

void net_policy_free(struct net_policy *p)
{
	free(p);
}

static int name_matches(const struct net_rule *r, const char *name, size_t len)
{
	if (r->kind == NET_RULE_NAME)
		return strcmp(r->text, name) == 0;
	/* "*.example.com" matches "a.example.com", not "example.com" */
	const char *suffix = r->text + 1;
	size_t sl = strlen(suffix);
	return len > sl && memcmp(name + len - sl, suffix, sl) == 0;
}

/* Bit 1: a CIDR rule of list holds ip; bit 2: a domain rule matches name. */
static unsigned match(const struct net_rule *list, size_t n, uint32_t ip, int has_ip,
		      const char *name)
{
	unsigned m = 0;
	size_t len = name ? strlen(name) : 0;
	for (size_t i = 0; i < n; i++) {
		if (list[i].kind == NET_RULE_CIDR)
			m |= has_ip && net_addr_in_cidr(ip, &list[i].cidr) ? 1u : 0u;
		else
			m |= len && name_matches(&list[i], name, len) ? 2u : 0u;
	}
	return m;
}

struct net_decision net_policy_decide(const struct net_policy *p, struct net_denied *d,
				      uint32_t ip, const char *name, int64_t now_ms)
{
	struct net_decision r = {NET_REFUSE, NET_REFUSAL_DENIED_RANGE, 0};
	if (net_denied_has(d, ip, now_ms))
		return r;
	unsigned a = match(p->allow, p->n_allow, ip, 1, name);
	if (a & 1u) {
		r.verdict = NET_ALLOW_ADDR;
		r.by_allow_cidr = 1;
		return r;
	}
	if (a & 2u) {
		r.verdict = NET_ALLOW_NAME;
		return r;
	}
	if (match(p->deny, p->n_deny, ip, 1, name)) {
		r.why = NET_REFUSAL_DENY_RULE;
		return r;
	}
	if (p->egress_allow)
		r.verdict = NET_ALLOW_ADDR;
	else
		r.why = NET_REFUSAL_NOT_ALLOWED;
	return r;
}

int net_policy_may_resolve(const struct net_policy *p, const char *name)
{
	if (match(p->allow, p->n_allow, 0, 0, name) & 2u)
		return 1;
	return p->egress_allow && !(match(p->deny, p->n_deny, 0, 0, name) & 2u);
}
