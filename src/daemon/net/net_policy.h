/*
 * net_policy.h - a sandbox's egress policy: its JSON form (the "network"
 * object of POST /v1/sandboxes and PUT /v1/sandboxes/{id}/network,
 * docs/network.md) and the decision for one outbound connection or name.
 *
 *   {"egress": "allow" | "deny",          default "allow"
 *    "allow_out": [RULE, ...],            default []
 *    "deny_out":  [RULE, ...]}            default []
 *   RULE: an IPv4 CIDR ("203.0.113.0/24", or an address: a /32), a domain
 *   name ("pypi.org": that name only) or "*.domain" (every name below it,
 *   not the domain itself).
 *
 * Order of a decision for destination address A and name N (N from TLS SNI,
 * the HTTP Host header, or what the sandbox's resolver answered for A; it
 * may be absent):
 *   1. A is always denied (net_denied.h)               refuse: denied_range
 *   2. an allow_out CIDR holds A                       allow, dial A
 *      an allow_out domain rule matches N              allow, dial N as the
 *                                                      daemon resolves it
 *   3. a deny_out CIDR holds A or domain matches N     refuse: deny_rule
 *   4. egress "allow"                                  allow, dial A
 *      egress "deny"                                   refuse: not_allowed
 * allow_out wins over deny_out, as E2B's lists do; the always-denied ranges
 * win over everything.
 *
 * Names are compared lowercase without a trailing dot (RFC 4343); callers
 * pass them so (net_sniff.h and net_dnsmsg.h produce that form).
 *
 * Ownership: a struct net_policy is immutable once made; the maker frees it
 * (net_policy_free).  Threads: any; net_policy_decide uses a net_denied set
 * and so runs on that set's thread.
 */
#ifndef PANDASTACK_DAEMON_NET_POLICY_H
#define PANDASTACK_DAEMON_NET_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/body_error.h"
#include "daemon/net/net_addr.h"

#define NET_POLICY_RULES_MAX 256  /* entries per list */
#define NET_RULE_TEXT_MAX 256     /* bytes of one entry, with the NUL */
#define NET_NAME_MAX 253          /* a domain name's text (RFC 1035 2.3.4) */

/* Why a connection or a name was refused: a label of the refusal counter
 * (GET /metrics, pandastack_net_refused_total{reason}). */
enum net_refusal {
	NET_REFUSAL_DENIED_RANGE = 0, /* an always-denied address */
	NET_REFUSAL_DENY_RULE,        /* a deny_out rule */
	NET_REFUSAL_NOT_ALLOWED,      /* egress "deny" and no allow_out rule matched */
	NET_REFUSAL_NO_ADDRESS,       /* an allowed name has no reachable address */
	NET_REFUSAL_AMBIGUOUS,        /* the connection names two hosts, or its
				       * name does not come within the sniff */
	NET_REFUSAL_LIMIT,            /* a connection or query cap */
	NET_REFUSAL_POLICY_CHANGED,   /* open, then closed by a new policy */
	NET_REFUSAL_COUNT
};

/* net_refusal_name - the metric label of r ("denied_range", ...); static. */
const char *net_refusal_name(enum net_refusal r);

enum net_rule_kind {
	NET_RULE_CIDR = 0,
	NET_RULE_NAME,     /* exactly this name */
	NET_RULE_SUFFIX,   /* "*.domain": names ending in ".domain" */
};

struct net_rule {
	enum net_rule_kind kind;
	struct net_cidr cidr;          /* NET_RULE_CIDR */
	char text[NET_RULE_TEXT_MAX];  /* the entry as stored and shown: lowercase */
};

struct net_policy {
	int egress_allow;        /* 1: "allow", 0: "deny" */
	size_t n_allow, n_deny;
	struct net_rule *allow;  /* n_allow rules, inside this allocation */
	struct net_rule *deny;
	int has_names;           /* some rule is a domain rule (a decision may need a name) */
};

/*
 * net_policy_parse - check v, the "network" object of a request body (NULL:
 * absent, the default policy), and make the policy.  field names it in
 * messages ("network", or "" for a body that is the object itself).
 * The key "public_ports" of the same object belongs to exposed ports
 * (request_body.h): allowed, not read here.
 * Returns 0 with *out (net_policy_free), or -EINVAL with err: unknown_field,
 * invalid_field (wrong type; more than NET_POLICY_RULES_MAX entries; an
 * entry that is neither an IPv4 CIDR nor a domain name; IPv6; host bits
 * set; an allow_out CIDR wholly inside the always-denied ranges), or
 * invalid_json (out of memory).
 */
int net_policy_parse(json_t *v, const char *field, struct net_policy **out,
		     struct body_error *err);

/* net_policy_json - p as its JSON object (every field present): a new
 * reference, NULL when out of memory. */
json_t *net_policy_json(const struct net_policy *p);

/*
 * net_policy_add_notes - add "notes" to the network object o (as answered:
 * net_policy_json's fields) when its allow_out holds CIDRs that contain
 * always-denied ranges: one sentence per such rule naming the ranges that
 * stay denied (docs/network.md).  Nothing is added when there is nothing
 * to say.  Returns 0 or -ENOMEM.  "notes" is read-only: net_policy_parse
 * takes and ignores it, so an answer may be sent back as a request.
 */
int net_policy_add_notes(json_t *o);

/* net_policy_dup - a copy of p (NULL: the default policy) to free with
 * net_policy_free, or NULL (ENOMEM). */
struct net_policy *net_policy_dup(const struct net_policy *p);

/* net_policy_free - release p.  NULL is a no-op. */
void net_policy_free(struct net_policy *p);

enum net_verdict {
	NET_REFUSE = 0,
	NET_ALLOW_ADDR,    /* dial the destination address */
	NET_ALLOW_NAME,    /* dial the name, resolved by the daemon */
};

struct net_decision {
	enum net_verdict verdict;
	enum net_refusal why;     /* when NET_REFUSE */
	int by_allow_cidr;        /* an allow_out CIDR decided: no name can change it */
};

struct net_denied;

/*
 * net_policy_decide - the decision for a connection to ip (host order)
 * whose name is name (normalised as above; NULL or "" when unknown), by the
 * rules in this header's comment.  now_ms: CLOCK_MONOTONIC (the host's
 * addresses may be re-read).
 */
struct net_decision net_policy_decide(const struct net_policy *p, struct net_denied *d,
				      uint32_t ip, const char *name, int64_t now_ms);

/*
 * net_policy_may_resolve - 1 if the resolver may look name up upstream for
 * this policy: an allow_out domain rule matches it, or egress is "allow"
 * and no deny_out domain rule matches it.  Else 0 (the sandbox gets
 * NXDOMAIN and nothing leaves the host).  Pure.
 */
int net_policy_may_resolve(const struct net_policy *p, const char *name);

/*
 * net_policy_check_name - is s (len bytes, not NUL-terminated) a host name
 * by RFC 1035 2.3.1 as relaxed by RFC 1123 2.1: labels of 1-63 letters,
 * digits and hyphens, not starting or ending with a hyphen, at most
 * NET_NAME_MAX bytes, the last label not all digits; one trailing dot
 * allowed.  Returns the length without the trailing dot (> 0), or 0.
 * Upper case is accepted (callers lowercase).  Pure.
 */
size_t net_policy_check_name(const char *s, size_t len);

#endif
