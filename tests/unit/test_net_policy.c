/*
 * test_net_policy.c - sandbox egress policies (daemon/net/net_policy.h): the
 * network object's validation and canonical form, the always-denied ranges
 * (net_addr.h, net_denied.h), and the decision for a destination and a
 * name, as tables of cases.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/api_errors.h"
#include "daemon/http/request_body.h"
#include "daemon/net/net_addr.h"
#include "daemon/net/net_denied.h"
#include "daemon/net/net_policy.h"

static uint32_t ip(const char *s)
{
	uint32_t a = 0;
	assert_int_equal(net_addr_parse_ipv4(s, &a), 0);
	return a;
}

/* A policy from JSON text; fails the test if it does not parse. */
static struct net_policy *policy(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	assert_non_null(j);
	struct net_policy *p = NULL;
	struct body_error e = {0};
	int r = net_policy_parse(j, "network", &p, &e);
	if (r)
		fail_msg("%s: %s", text, e.message);
	json_decref(j);
	return p;
}

static void addresses(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int ok;
	} quads[] = {
		{"0.0.0.0", 1},      {"255.255.255.255", 1}, {"1.2.3.4", 1},  {"1.2.3", 0},
		{"1.2.3.4.5", 0},    {"256.1.1.1", 0},       {"01.2.3.4", 0}, {"1.2.3.4 ", 0},
		{"", 0},             {"a.b.c.d", 0},         {"1..3.4", 0},   {"1.2.3.-4", 0},
		{"1.2.3.0004", 0},
	};
	for (size_t i = 0; i < sizeof(quads) / sizeof(quads[0]); i++) {
		uint32_t a;
		assert_int_equal(net_addr_parse_ipv4(quads[i].s, &a) == 0, quads[i].ok);
	}
	struct net_cidr c;
	assert_int_equal(net_addr_parse_cidr("10.0.0.0/8", &c), 0);
	assert_int_equal(c.prefix, 8);
	assert_int_equal(net_addr_parse_cidr("10.0.0.1/8", &c), -EDOM);
	char t[NET_CIDR_TEXT_MAX];
	net_addr_cidr_text(&c, t);
	assert_string_equal(t, "10.0.0.0/8");
	assert_int_equal(net_addr_parse_cidr("1.2.3.4", &c), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(net_addr_parse_cidr("0.0.0.0/0", &c), 0);
	assert_int_equal(c.mask, 0);
	assert_int_equal(net_addr_parse_cidr("1.2.3.4/33", &c), -EINVAL);
	assert_int_equal(net_addr_parse_cidr("1.2.3.4/", &c), -EINVAL);
	assert_int_equal(net_addr_parse_cidr("1.2.3.4/08", &c), -EINVAL);

	static const struct {
		const char *a;
		int denied;
	} fixed[] = {
		{"0.1.2.3", 1},        {"10.0.2.15", 1},     {"100.64.0.1", 1},   {"100.127.255.255", 1},
		{"100.128.0.0", 0},    {"127.0.0.1", 1},     {"127.255.0.1", 1},  {"169.254.169.254", 1},
		{"172.16.0.1", 1},     {"172.31.255.255", 1}, {"172.32.0.0", 0},  {"192.168.1.1", 1},
		{"192.169.0.1", 0},    {"224.0.0.1", 1},     {"239.1.1.1", 1},    {"240.0.0.1", 1},
		{"255.255.255.255", 1}, {"8.8.8.8", 0},      {"203.0.113.7", 0},  {"9.255.255.255", 0},
		{"11.0.0.0", 0},       {"192.0.0.9", 1},     {"192.0.1.1", 0},    {"198.18.0.1", 1},
		{"198.19.255.255", 1}, {"198.20.0.0", 0},    {"198.17.255.255", 0},
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (net_addr_always_denied(ip(fixed[i].a)) != fixed[i].denied)
			fail_msg("%s", fixed[i].a);
	assert_int_equal(net_addr_parse_cidr("10.1.0.0/16", &c), 0);
	assert_true(net_addr_cidr_all_denied(&c));
	assert_int_equal(net_addr_parse_cidr("0.0.0.0/0", &c), 0);
	assert_false(net_addr_cidr_all_denied(&c));
	assert_int_equal(net_addr_parse_cidr("8.0.0.0/7", &c), 0);
	assert_false(net_addr_cidr_all_denied(&c)); /* 8/8 and 9/8 are public */
}

/* An allow rule wider than the always-denied ranges: which stay denied,
 * in address order, and the note an answer carries about them. */
static void denied_inside(void **state)
{
	(void)state;
	struct net_cidr c, in[16];
	char t[NET_CIDR_TEXT_MAX];
	assert_int_equal(net_addr_parse_cidr("0.0.0.0/0", &c), 0);
	size_t n = net_addr_denied_inside(&c, in, 16);
	assert_int_equal(n, 11);
	net_addr_cidr_text(&in[0], t);
	assert_string_equal(t, "0.0.0.0/8");
	net_addr_cidr_text(&in[1], t);
	assert_string_equal(t, "10.0.0.0/8");
	net_addr_cidr_text(&in[10], t);
	assert_string_equal(t, "240.0.0.0/4");
	for (size_t i = 1; i < n; i++)
		assert_true(in[i - 1].addr < in[i].addr);
	assert_int_equal(net_addr_denied_inside(&c, in, 2), 11); /* counts past max */
	assert_int_equal(net_addr_parse_cidr("126.0.0.0/7", &c), 0);
	assert_int_equal(net_addr_denied_inside(&c, in, 16), 1);
	net_addr_cidr_text(&in[0], t);
	assert_string_equal(t, "127.0.0.0/8");
	assert_int_equal(net_addr_parse_cidr("203.0.113.0/24", &c), 0);
	assert_int_equal(net_addr_denied_inside(&c, in, 16), 0);
	json_t *o = json_pack("{s:[s, s, s]}", "allow_out", "203.0.113.0/24", "pypi.org",
			      "126.0.0.0/7");
	assert_int_equal(net_policy_add_notes(o), 0);
	json_t *notes = json_object_get(o, "notes");
	assert_int_equal(json_array_size(notes), 1);
	const char *note = json_string_value(json_array_get(notes, 0));
	assert_non_null(strstr(note, "allow_out[2] '126.0.0.0/7'"));
	assert_non_null(strstr(note, "127.0.0.0/8"));
	json_decref(o);
	o = json_pack("{s:[s]}", "allow_out", "203.0.113.0/24");
	assert_int_equal(net_policy_add_notes(o), 0);
	assert_null(json_object_get(o, "notes")); /* nothing to say, nothing said */
	json_decref(o);
}

static void denied_set(void **state)
{
	(void)state;
	struct net_denied *d;
	assert_int_equal(net_denied_new("198.51.100.0/24, 192.0.2.1", &d), 0);
	struct net_cidr host[2];
	net_denied_host_net(ip("203.0.113.1"), UINT32_MAX, &host[0]);      /* a /32 */
	net_denied_host_net(ip("198.19.254.10"), 0xfffffff0u, &host[1]);  /* a /28 */
	net_denied_set_host(d, host, 2);
	assert_true(net_denied_has(d, ip("198.51.100.77"), 0));
	assert_true(net_denied_has(d, ip("192.0.2.1"), 0));
	assert_false(net_denied_has(d, ip("192.0.2.2"), 0));
	assert_true(net_denied_has(d, ip("203.0.113.1"), 0));
	assert_false(net_denied_has(d, ip("203.0.113.2"), 0));
	assert_true(net_denied_has(d, ip("127.0.0.1"), 0));
	net_denied_free(d);
	/* the host's networks: its gateway and neighbours too */
	assert_int_equal(net_denied_new("", &d), 0);
	net_denied_host_net(ip("93.184.216.34"), 0xffffff00u, &host[0]);
	net_denied_set_host(d, host, 1);
	assert_true(net_denied_has(d, ip("93.184.216.1"), 0));
	assert_true(net_denied_has(d, ip("93.184.216.255"), 0));
	assert_false(net_denied_has(d, ip("93.184.217.1"), 0));
	net_denied_free(d);
	/* a mask wider than a /8, or not a prefix: the address alone */
	struct net_cidr c;
	net_denied_host_net(ip("93.184.216.34"), 0, &c);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(c.addr, ip("93.184.216.34"));
	net_denied_host_net(ip("93.184.216.34"), 0xff00ff00u, &c);
	assert_int_equal(c.prefix, 32);
	net_denied_host_net(ip("10.1.2.3"), 0xff000000u, &c);
	assert_int_equal(c.prefix, 8);
	assert_int_equal(c.addr, ip("10.0.0.0"));

	/* the real host's own addresses: loopback at least */
	assert_int_equal(net_denied_new(NULL, &d), 0);
	assert_true(net_denied_has(d, ip("127.0.0.1"), 0));
	net_denied_free(d);

	struct net_cidr list[2];
	char err[128];
	assert_int_equal(net_denied_parse_list("", list, 2, err, sizeof(err)), 0);
	assert_int_equal(net_denied_parse_list("1.0.0.0/8,2.0.0.0/8", list, 2, err, sizeof(err)), 2);
	assert_int_equal(net_denied_parse_list("1.0.0.0/8,2.0.0.0/8,3.0.0.0/8", list, 2, err,
					       sizeof(err)),
			 -EINVAL);
	assert_int_equal(net_denied_parse_list("1.0.0.1/8", list, 2, err, sizeof(err)), -EINVAL);
	assert_int_equal(net_denied_new("nope", &d), -EINVAL);
}

static void parse_ok(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"{}", "{\"allow_out\":[],\"deny_out\":[],\"egress\":\"allow\"}"},
		{"{\"egress\":\"deny\"}", "{\"allow_out\":[],\"deny_out\":[],\"egress\":\"deny\"}"},
		{"{\"egress\":\"deny\",\"allow_out\":[\"PyPI.org\",\"*.PythonHosted.org.\","
		 "\"203.0.113.0/24\",\"198.51.100.7\"]}",
		 "{\"allow_out\":[\"pypi.org\",\"*.pythonhosted.org\",\"203.0.113.0/24\","
		 "\"198.51.100.7\"],\"deny_out\":[],\"egress\":\"deny\"}"},
		{"{\"deny_out\":[\"10.0.0.0/8\",\"evil.example\",\"0.0.0.0/0\"]}",
		 "{\"allow_out\":[],\"deny_out\":[\"10.0.0.0/8\",\"evil.example\",\"0.0.0.0/0\"],"
		 "\"egress\":\"allow\"}"},
		{"{\"allow_out\":[\"0.0.0.0/0\",\"localhost\",\"xn--bcher-kva.example\","
		 "\"a-b.c-d.e1\"]}",
		 "{\"allow_out\":[\"0.0.0.0/0\",\"localhost\",\"xn--bcher-kva.example\",\"a-b.c-d.e1\"],"
		 "\"deny_out\":[],\"egress\":\"allow\"}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_policy *p = policy(cases[i].in);
		json_t *j = net_policy_json(p);
		char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		assert_string_equal(s, cases[i].out);
		free(s);
		json_decref(j);
		struct net_policy *c = net_policy_dup(p);
		j = net_policy_json(c);
		s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		assert_string_equal(s, cases[i].out);
		free(s);
		json_decref(j);
		net_policy_free(c);
		net_policy_free(p);
	}
	struct net_policy *d = net_policy_dup(NULL);
	assert_true(d->egress_allow && d->n_allow == 0 && d->n_deny == 0 && !d->has_names);
	net_policy_free(d);
	struct net_policy *p;
	struct body_error e;
	assert_int_equal(net_policy_parse(NULL, "network", &p, &e), 0);
	assert_true(p->egress_allow);
	net_policy_free(p);
}

static void parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *in, *code, *says;
	} cases[] = {
		{"[]", "invalid_field", "must be an object"},
		{"{\"egress\":\"maybe\"}", "invalid_field", "\"allow\" or \"deny\""},
		{"{\"egress\":true}", "invalid_field", "egress"},
		{"{\"public\":true}", "unknown_field", "network.public"},
		{"{\"allow_out\":\"pypi.org\"}", "invalid_field", "array"},
		{"{\"allow_out\":[1]}", "invalid_field", "must be a string"},
		{"{\"allow_out\":[\"\"]}", "invalid_field", "printable ASCII"},
		{"{\"allow_out\":[\"caf\\u00e9.example\"]}", "invalid_field", "printable ASCII"},
		{"{\"allow_out\":[\"10.0.0.1/8\"]}", "invalid_field", "network is 10.0.0.0/8"},
		{"{\"allow_out\":[\"10.0.0.0/8\"]}", "invalid_field", "always denied"},
		{"{\"allow_out\":[\"169.254.169.254\"]}", "invalid_field", "always denied"},
		{"{\"allow_out\":[\"1.2.3.4/33\"]}", "invalid_field", "not an IPv4"},
		{"{\"allow_out\":[\"300.1.1.1\"]}", "invalid_field", "not an IPv4"},
		{"{\"allow_out\":[\"2001:db8::/32\"]}", "invalid_field", "IPv6"},
		{"{\"deny_out\":[\"-bad.example\"]}", "invalid_field", "not an IPv4 CIDR, a domain"},
		{"{\"deny_out\":[\"bad-.example\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"under_score.example\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"a..b\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"*\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"*.\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"a.*.b\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"example.123\"]}", "invalid_field", "domain"},
		{"{\"deny_out\":[\"1.2.3.4.5\"]}", "invalid_field", "not an IPv4"},
		{"{\"deny_out\":[\"a b.example\"]}", "invalid_field", "domain"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_loads(cases[i].in, 0, NULL);
		assert_non_null(j);
		struct net_policy *p = (struct net_policy *)1;
		struct body_error e = {0};
		assert_int_equal(net_policy_parse(j, "network", &p, &e), -EINVAL);
		assert_null(p);
		if (strcmp(api_errors_code(e.code), cases[i].code) || !strstr(e.message, cases[i].says))
			fail_msg("%s -> %s: %s", cases[i].in, api_errors_code(e.code), e.message);
		json_decref(j);
	}
	/* caps: 256 entries per list, 255 bytes per entry */
	json_t *list = json_array();
	for (int i = 0; i <= NET_POLICY_RULES_MAX; i++)
		json_array_append_new(list, json_string("example.com"));
	json_t *j = json_pack("{s:o}", "allow_out", list);
	struct net_policy *p;
	struct body_error e;
	assert_int_equal(net_policy_parse(j, "network", &p, &e), -EINVAL);
	assert_non_null(strstr(e.message, "more than 256"));
	json_array_remove(list, 0);
	assert_int_equal(net_policy_parse(j, "network", &p, &e), 0);
	assert_int_equal(p->n_allow, NET_POLICY_RULES_MAX);
	net_policy_free(p);
	json_decref(j);
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	for (int i = 63; i < 299; i += 64)
		longname[i] = '.';
	longname[299] = '\0';
	j = json_pack("{s:[s]}", "deny_out", longname);
	assert_int_equal(net_policy_parse(j, "network", &p, &e), -EINVAL);
	json_decref(j);
	longname[253] = '\0'; /* 253 bytes: the longest name */
	j = json_pack("{s:[s]}", "deny_out", longname);
	assert_int_equal(net_policy_parse(j, "network", &p, &e), 0);
	net_policy_free(p);
	json_decref(j);
}

static void names(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t len;
	} cases[] = {
		{"example.com", 11}, {"example.com.", 11}, {"EXAMPLE.com", 11}, {"a", 1},
		{"1a.example", 10},  {"a.1", 0},          {"1.2.3.4", 0},     {"", 0},
		{".", 0},            {"a..b", 0},         {"-a.b", 0},        {"a-.b", 0},
		{"a_b.c", 0},        {"a.b..", 0},        {"*.a.b", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (net_policy_check_name(cases[i].s, strlen(cases[i].s)) != cases[i].len)
			fail_msg("%s", cases[i].s);
	char label[70];
	memset(label, 'x', 64);
	label[64] = '\0';
	assert_int_equal(net_policy_check_name(label, 64), 0);
	assert_int_equal(net_policy_check_name(label, 63), 63);
}

/* The decision table: policy, destination, name -> verdict, reason. */
static void decisions(void **state)
{
	(void)state;
	enum { R = NET_REFUSE, A = NET_ALLOW_ADDR, N = NET_ALLOW_NAME };
	static const struct {
		const char *policy, *dst, *name;
		int verdict;
		enum net_refusal why;
	} cases[] = {
		/* default: public addresses, nothing else */
		{"{}", "93.184.216.34", NULL, A, 0},
		{"{}", "93.184.216.34", "example.com", A, 0},
		{"{}", "10.0.2.2", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "169.254.169.254", "metadata.google.internal", R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "127.0.0.1", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "192.168.1.1", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "100.100.100.100", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "224.0.0.251", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{}", "203.0.113.1", NULL, R, NET_REFUSAL_DENIED_RANGE}, /* the host's own */
		{"{}", "198.51.100.9", NULL, R, NET_REFUSAL_DENIED_RANGE}, /* --net-deny */
		/* allow-all cannot open the denied ranges */
		{"{\"allow_out\":[\"0.0.0.0/0\"]}", "10.1.2.3", NULL, R, NET_REFUSAL_DENIED_RANGE},
		{"{\"allow_out\":[\"localhost\"]}", "127.0.0.1", "localhost", R,
		 NET_REFUSAL_DENIED_RANGE},
		/* egress deny */
		{"{\"egress\":\"deny\"}", "93.184.216.34", NULL, R, NET_REFUSAL_NOT_ALLOWED},
		{"{\"egress\":\"deny\"}", "93.184.216.34", "example.com", R, NET_REFUSAL_NOT_ALLOWED},
		/* an allowlist of names: enforced on the name, dialled by name */
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\",\"*.pythonhosted.org\"]}",
		 "151.101.0.223", "pypi.org", N, 0},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\",\"*.pythonhosted.org\"]}",
		 "151.101.0.223", "files.pythonhosted.org", N, 0},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\",\"*.pythonhosted.org\"]}",
		 "151.101.0.223", "pythonhosted.org", R, NET_REFUSAL_NOT_ALLOWED},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}", "151.101.0.223", "evilpypi.org", R,
		 NET_REFUSAL_NOT_ALLOWED},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}", "151.101.0.223", "pypi.org.evil", R,
		 NET_REFUSAL_NOT_ALLOWED},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}", "151.101.0.223", NULL, R,
		 NET_REFUSAL_NOT_ALLOWED},
		/* the allowed domain's address with another name: refused */
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}", "151.101.0.223", "other.example",
		 R, NET_REFUSAL_NOT_ALLOWED},
		/* CIDR allow: the address decides, dialled as is */
		{"{\"egress\":\"deny\",\"allow_out\":[\"203.0.113.0/24\"]}", "203.0.113.9", NULL, A, 0},
		{"{\"egress\":\"deny\",\"allow_out\":[\"203.0.113.0/24\"]}", "203.0.114.9", NULL, R,
		 NET_REFUSAL_NOT_ALLOWED},
		/* deny rules under egress allow */
		{"{\"deny_out\":[\"93.184.216.0/24\"]}", "93.184.216.34", NULL, R, NET_REFUSAL_DENY_RULE},
		{"{\"deny_out\":[\"evil.example\"]}", "93.184.216.34", "evil.example", R,
		 NET_REFUSAL_DENY_RULE},
		{"{\"deny_out\":[\"*.evil.example\"]}", "93.184.216.34", "a.b.evil.example", R,
		 NET_REFUSAL_DENY_RULE},
		{"{\"deny_out\":[\"*.evil.example\"]}", "93.184.216.34", "evil.example", A, 0},
		{"{\"deny_out\":[\"evil.example\"]}", "93.184.216.34", "good.example", A, 0},
		/* allow_out wins over deny_out */
		{"{\"deny_out\":[\"0.0.0.0/0\"],\"allow_out\":[\"pypi.org\"]}", "151.101.0.223",
		 "pypi.org", N, 0},
		{"{\"deny_out\":[\"0.0.0.0/0\"],\"allow_out\":[\"pypi.org\"]}", "151.101.0.223",
		 "other.example", R, NET_REFUSAL_DENY_RULE},
		{"{\"deny_out\":[\"*.example\"],\"allow_out\":[\"93.184.216.34\"]}", "93.184.216.34",
		 "a.example", A, 0},
	};
	struct net_denied *d;
	assert_int_equal(net_denied_new("198.51.100.0/24", &d), 0);
	struct net_cidr host[1];
	net_denied_host_net(ip("203.0.113.1"), UINT32_MAX, &host[0]);
	net_denied_set_host(d, host, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_policy *p = policy(cases[i].policy);
		struct net_decision r = net_policy_decide(p, d, ip(cases[i].dst), cases[i].name, 0);
		if ((int)r.verdict != cases[i].verdict ||
		    (r.verdict == NET_REFUSE && r.why != cases[i].why))
			fail_msg("case %zu: %s %s %s -> verdict %d why %s", i, cases[i].policy,
				 cases[i].dst, cases[i].name ? cases[i].name : "-", r.verdict,
				 net_refusal_name(r.why));
		net_policy_free(p);
	}
	net_denied_free(d);
}

static void may_resolve(void **state)
{
	(void)state;
	static const struct {
		const char *policy, *name;
		int may;
	} cases[] = {
		{"{}", "example.com", 1},
		{"{\"deny_out\":[\"example.com\"]}", "example.com", 0},
		{"{\"deny_out\":[\"*.example.com\"]}", "x.example.com", 0},
		{"{\"deny_out\":[\"1.2.3.4\"]}", "example.com", 1},
		{"{\"egress\":\"deny\"}", "example.com", 0},
		/* a CIDR rule permits connections, not lookups */
		{"{\"egress\":\"deny\",\"allow_out\":[\"203.0.113.0/24\"]}", "example.com", 0},
		{"{\"egress\":\"deny\",\"allow_out\":[\"pypi.org\"]}", "pypi.org", 1},
		{"{\"egress\":\"deny\",\"allow_out\":[\"*.pypi.org\"]}", "a.pypi.org", 1},
		{"{\"egress\":\"deny\",\"allow_out\":[\"*.pypi.org\"]}", "pypi.org", 0},
		{"{\"deny_out\":[\"*.example.com\"],\"allow_out\":[\"ok.example.com\"]}",
		 "ok.example.com", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_policy *p = policy(cases[i].policy);
		if (net_policy_may_resolve(p, cases[i].name) != cases[i].may)
			fail_msg("%s %s", cases[i].policy, cases[i].name);
		net_policy_free(p);
	}
}

static void refusal_names(void **state)
{
	(void)state;
	for (int i = 0; i < NET_REFUSAL_COUNT; i++) {
		const char *n = net_refusal_name((enum net_refusal)i);
		assert_true(n && *n && strcmp(n, "unknown") != 0);
	}
	assert_string_equal(net_refusal_name(NET_REFUSAL_COUNT), "unknown");
}

/* PUT's body over the policy in force: the keys sent replace theirs. */
static void put_merges(void **state)
{
	(void)state;
	static const struct {
		const char *body, *out;
	} cases[] = {
		{"{}", "{\"allow_out\":[\"a.test\"],\"deny_out\":[\"9.9.9.9\"],\"egress\":\"deny\"}"},
		{"{\"egress\":\"allow\"}",
		 "{\"allow_out\":[\"a.test\"],\"deny_out\":[\"9.9.9.9\"],\"egress\":\"allow\"}"},
		{"{\"allow_out\":[]}", "{\"allow_out\":[],\"deny_out\":[\"9.9.9.9\"],\"egress\":\"deny\"}"},
		{"{\"egress\":\"allow\",\"allow_out\":[],\"deny_out\":[]}",
		 "{\"allow_out\":[],\"deny_out\":[],\"egress\":\"allow\"}"},
	};
	int pp;
	json_t *cur = json_loads("{\"egress\":\"deny\",\"allow_out\":[\"a.test\"],"
				 "\"deny_out\":[\"9.9.9.9\"]}", 0, NULL);
	assert_non_null(cur);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_policy *p = NULL;
		struct body_error e;
		assert_int_equal(body_parse_network(cases[i].body, strlen(cases[i].body), cur, &p, &pp, &e), 0);
		json_t *j = net_policy_json(p);
		char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		assert_string_equal(s, cases[i].out);
		free(s);
		json_decref(j);
		net_policy_free(p);
	}
	/* the body's own errors, and no current policy: the default's */
	struct net_policy *p = (struct net_policy *)1;
	struct body_error e;
	const char *bad = "{\"egress\":\"maybe\"}";
	assert_int_equal(body_parse_network(bad, strlen(bad), cur, &p, &pp, &e), -EINVAL);
	assert_null(p);
	assert_int_equal(body_parse_network("{}", 2, NULL, &p, &pp, &e), 0);
	assert_true(p->egress_allow && p->n_allow == 0 && p->n_deny == 0);
	assert_int_equal(pp, -1);
	net_policy_free(p);
	/* public_ports belongs to exposed ports: read, type-checked, not a policy key */
	const char *pub = "{\"public_ports\":true}";
	assert_int_equal(body_parse_network(pub, strlen(pub), cur, &p, &pp, &e), 0);
	assert_int_equal(pp, 1);
	assert_false(p->egress_allow);
	net_policy_free(p);
	const char *badpub = "{\"public_ports\":\"yes\"}";
	assert_int_equal(body_parse_network(badpub, strlen(badpub), cur, &p, &pp, &e), -EINVAL);
	assert_non_null(strstr(e.message, "public_ports"));
	json_decref(cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(addresses),    cmocka_unit_test(denied_inside),
		cmocka_unit_test(denied_set),
		cmocka_unit_test(parse_ok),     cmocka_unit_test(parse_errors),
		cmocka_unit_test(names),        cmocka_unit_test(decisions),
		cmocka_unit_test(may_resolve),  cmocka_unit_test(refusal_names),
		cmocka_unit_test(put_merges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
