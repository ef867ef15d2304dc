/*
 * config.c - defaults, environment and flags (see config.h).
 */
#include "daemon/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/body_caps.h"
#include "common/pip_index.h"
#include "engine/paths.h"
#include "engine/qemu/jail.h"
#include "engine/template/template.h"

#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_DATA_DIR "/var/lib/pandastack"

enum opt_kind {
	OPT_LISTEN, OPT_PATH, OPT_TEXT, OPT_U64, OPT_ACCEL, OPT_FLAG, OPT_PIP_INDEX, OPT_POOL_SIZES,
	OPT_DOMAIN
};

struct opt {
	const char *flag;
	const char *env;
	enum opt_kind kind;
	size_t off;       /* offset of the field in struct daemon_cfg */
	size_t width;     /* bytes of the field (OPT_U64: 4 or 8; OPT_PATH, OPT_TEXT: buffer) */
	uint64_t min, max; /* OPT_U64 range */
	const char *help;
};

#define F(field) offsetof(struct daemon_cfg, field), sizeof(((struct daemon_cfg *)0)->field)

static const struct opt opts[] = {
	{"--listen", "PANDASTACK_LISTEN", OPT_LISTEN, 0, 0, 0, 0,
	 "HOST:PORT to listen on (" DEFAULT_LISTEN "; port 0 picks a free one)"},
	{"--data-dir", "PANDASTACK_DATA_DIR", OPT_PATH, F(data_dir), 0, 0,
	 "registry, admin.key and sandbox run dirs (" DEFAULT_DATA_DIR ")"},
	{"--cache", "PANDASTACK_CACHE", OPT_PATH, F(cache_dir), 0, 0,
	 "template cache filled by `make templates` (" ENGINE_DEFAULT_CACHE ")"},
	{"--pool-size", "PANDASTACK_POOL_SIZE", OPT_U64, F(pool_size), 0, 64,
	 "ready sandboxes kept per template (2; 0 turns the pool off)"},
	{"--pool-sizes", "PANDASTACK_POOL_SIZES", OPT_POOL_SIZES, 0, 0, 0, 0,
	 "NAME=N,... ready sandboxes of those templates (others: --pool-size)"},
	{"--accel", "PANDASTACK_ACCEL", OPT_ACCEL, F(accel), 0, 0,
	 "auto, kvm or tcg (auto)"},
	{"--max-sandboxes-per-team", "PANDASTACK_MAX_SANDBOXES_PER_TEAM", OPT_U64,
	 F(max_sandboxes_per_team), 1, 100000, "running sandboxes a team may have (20)"},
	{"--default-ttl", "PANDASTACK_DEFAULT_TTL", OPT_U64, F(default_ttl_s), 1,
	 365u * 86400u, "seconds a sandbox lives when create names no ttl (300)"},
	{"--max-ttl", "PANDASTACK_MAX_TTL", OPT_U64, F(max_ttl_s), 1, 365u * 86400u,
	 "largest ttl_seconds accepted (86400)"},
	{"--exec-timeout", "PANDASTACK_EXEC_TIMEOUT", OPT_U64, F(exec_default_timeout_s), 0,
	 BODY_TIMEOUT_MAX_S, "seconds an exec may run when it names no timeout (60; 0: no limit)"},
	{"--exec-output-cap", "PANDASTACK_EXEC_OUTPUT_CAP", OPT_U64, F(exec_output_cap), 1024,
	 256u * 1024 * 1024, "stdout/stderr bytes kept per exec and stream (4194304)"},
	{"--max-upload", "PANDASTACK_MAX_UPLOAD", OPT_U64, F(max_upload), 1,
	 1ull << 40, "largest file upload, bytes (4294967296)"},
	{"--retention", "PANDASTACK_RETENTION", OPT_U64, F(retention_s), 0, 365u * 86400u,
	 "seconds stopped and failed sandboxes stay listed (3600)"},
	{"--context-idle-timeout", "PANDASTACK_CONTEXT_IDLE_TIMEOUT", OPT_U64,
	 F(context_idle_timeout_s), 1, 7u * 86400u,
	 "seconds a code context may stay idle before the guest reaps it (1800)"},
	{"--web-dir", "PANDASTACK_WEB_DIR", OPT_PATH, F(web_dir), 0, 0,
	 "the dashboard's built files, served at / (web/ beside this program)"},
	{"--jail-uid-first", "PANDASTACK_JAIL_UID_FIRST", OPT_U64, F(jail_uid_first), 1,
	 4000000000u, "first uid (and gid) of the range jailed QEMUs run as (1500000000)"},
	{"--jail-uid-count", "PANDASTACK_JAIL_UID_COUNT", OPT_U64, F(jail_uid_count), 1, 16777216u,
	 "how many uids the range holds: at most that many sandboxes at once (65536)"},
	{"--vm-memory-overhead", "PANDASTACK_VM_MEMORY_OVERHEAD", OPT_U64, F(vm_memory_overhead_mib),
	 64, 65536, "MiB a sandbox's QEMU may use beyond its guest RAM (384)"},
	{"--vm-pids-max", "PANDASTACK_VM_PIDS_MAX", OPT_U64, F(vm_pids_max), 16, 65536,
	 "threads a sandbox's QEMU may have (256)"},
	{"--reserve-disk", "PANDASTACK_RESERVE_DISK", OPT_U64, F(reserve_disk_mib), 0, 1u << 30,
	 "MiB of free disk a create must leave, counting its disk cap (1024)"},
	{"--reserve-memory", "PANDASTACK_RESERVE_MEMORY", OPT_U64, F(reserve_memory_mib), 0,
	 1u << 30, "MiB of available memory a create must leave, counting its RAM (512)"},
	{"--ttl-grace", "PANDASTACK_TTL_GRACE", OPT_U64, F(ttl_grace_s), 1, 3600,
	 "seconds past its TTL after which a sandbox's own monitor ends it (10)"},
	{"--paused-retention", "PANDASTACK_PAUSED_RETENTION", OPT_U64, F(paused_retention_s), 60,
	 3650u * 86400u, "seconds a paused sandbox is kept before it is stopped (604800)"},
	{"--max-snapshots-per-team", "PANDASTACK_MAX_SNAPSHOTS_PER_TEAM", OPT_U64,
	 F(max_snapshots_per_team), 1, 100000, "snapshots a team may keep (100)"},
	{"--max-snapshot-disk-per-team", "PANDASTACK_MAX_SNAPSHOT_DISK_PER_TEAM", OPT_U64,
	 F(max_snapshot_disk_mib), 1, 1ull << 30,
	 "MiB of host disk a team's captures (snapshots, forks', paused sandboxes) may hold before "
	 "it takes another (20480)"},
	{"--snapshot-max-depth", "PANDASTACK_SNAPSHOT_MAX_DEPTH", OPT_U64, F(snapshot_max_depth), 1,
	 16, "snapshots of snapshots stacked before one is flattened in the background (4)"},
	{"--snapshot-merge-after", "PANDASTACK_SNAPSHOT_MERGE_AFTER", OPT_U64,
	 F(snapshot_merge_after), 0, 1000000,
	 "creates from one snapshot after which its RAM is merged into one shared image (3; 0: never)"},
	{"--snapshot-merge-max", "PANDASTACK_SNAPSHOT_MERGE_MAX", OPT_U64, F(snapshot_merge_max), 0,
	 1024, "merged snapshot RAM images kept at once, each the size of its guest RAM (4)"},
	{"--tls-cert", "PANDASTACK_TLS_CERT", OPT_PATH, F(tls_cert), 0, 0,
	 "PEM certificate (chain) to serve HTTPS with (with --tls-key)"},
	{"--tls-key", "PANDASTACK_TLS_KEY", OPT_PATH, F(tls_key), 0, 0,
	 "PEM private key of --tls-cert"},
	{"--insecure-http", NULL, OPT_FLAG, F(insecure_http), 0, 0,
	 "serve plain HTTP on a non-loopback address (API keys then cross the network in clear)"},
	{"--max-conns-per-ip", "PANDASTACK_MAX_CONNS_PER_IP", OPT_U64, F(max_conns_per_ip), 1,
	 100000, "connections one client address may hold open (64)"},
	{"--idle-timeout", "PANDASTACK_IDLE_TIMEOUT", OPT_U64, F(idle_timeout_s), 1, 3600,
	 "seconds a connection may stay silent while the daemon reads a request's body (60)"},
	{"--head-timeout", "PANDASTACK_HEAD_TIMEOUT", OPT_U64, F(head_timeout_s), 1, 600,
	 "seconds in all for a request's head to arrive, from the connection's start or the "
	 "end of its previous answer (10)"},
	{"--pip-index-url", "PANDASTACK_PIP_INDEX_URL", OPT_PIP_INDEX, F(pip_index_url), 0, 0,
	 "package index (http:// or https://) every sandbox's pip uses (none: PyPI)"},
	{"--proxy-domain", "PANDASTACK_PROXY_DOMAIN", OPT_DOMAIN, F(proxy_domain), 0, 0,
	 "serve sandbox ports at PORT-SANDBOX_ID.DOMAIN too (the Host form; needs wildcard DNS)"},
	{"--dns-upstream", "PANDASTACK_DNS_UPSTREAM", OPT_TEXT, F(dns_upstream), 0, 0,
	 "IP[:PORT],... the sandboxes' resolver asks (the host's /etc/resolv.conf servers)"},
	{"--net-deny", "PANDASTACK_NET_DENY", OPT_TEXT, F(net_deny), 0, 0,
	 "CIDR,... no sandbox may reach, beyond the always-denied ranges (none)"},
	{"--net-max-conns", "PANDASTACK_NET_MAX_CONNS", OPT_U64, F(net_max_conns), 1, 1000000,
	 "connections the sandbox proxy holds open at once, in all (4096)"},
	{"--net-max-conns-per-sandbox", "PANDASTACK_NET_MAX_CONNS_PER_SANDBOX", OPT_U64,
	 F(net_max_conns_sandbox), 1, 1000000, "... per sandbox (256)"},
	{"--cluster", "PANDASTACK_CLUSTER", OPT_PATH, F(cluster), 0, 0,
	 "join the cluster whose etcd members are etcd://HOST:PORT[,HOST:PORT...] "
	 "(docs/cluster.md; none: one host)"},
	{"--node-name", "PANDASTACK_NODE_NAME", OPT_PATH, F(node_name), 0, 0,
	 "this node's name in the cluster, [a-z0-9._-] (the host name)"},
	{"--advertise", "PANDASTACK_ADVERTISE", OPT_PATH, F(advertise), 0, 0,
	 "the URL other nodes reach this node's API at (with --cluster)"},
	{"--cluster-secret-file", "PANDASTACK_CLUSTER_SECRET_FILE", OPT_PATH,
	 F(cluster_secret_file), 0, 0,
	 "file whose first line is the secret every node signs its calls to the others with"},
	{"--cluster-ttl", "PANDASTACK_CLUSTER_TTL", OPT_U64, F(cluster_ttl_s), 2, 300,
	 "seconds of the node's lease: a node silent this long is gone (10)"},
	{"--cluster-prefix", "PANDASTACK_CLUSTER_PREFIX", OPT_PATH, F(cluster_prefix), 0, 0,
	 "where in etcd the cluster keeps its records (/pandastack/)"},
	{"--cluster-ca-file", "PANDASTACK_CLUSTER_CA_FILE", OPT_PATH, F(cluster_ca_file), 0, 0,
	 "PEM CA certificates for https:// etcd members and nodes"},
	{"--cluster-etcd-user", "PANDASTACK_CLUSTER_ETCD_USER", OPT_TEXT, F(cluster_etcd_user), 0, 0,
	 "the etcd user this node authenticates as (none: etcd without authentication)"},
	{"--cluster-etcd-password-file", "PANDASTACK_CLUSTER_ETCD_PASSWORD_FILE", OPT_PATH,
	 F(cluster_etcd_password_file), 0, 0,
	 "file whose first line is that user's password (mode 0600)"},
	{"--cluster-etcd-cert", "PANDASTACK_CLUSTER_ETCD_CERT", OPT_PATH, F(cluster_etcd_cert), 0, 0,
	 "PEM client certificate for etcd members run with --client-cert-auth"},
	{"--cluster-etcd-key", "PANDASTACK_CLUSTER_ETCD_KEY", OPT_PATH, F(cluster_etcd_key), 0, 0,
	 "PEM private key of --cluster-etcd-cert (mode 0600)"},
	{"--mcp-allowed-origins", "PANDASTACK_MCP_ALLOWED_ORIGINS", OPT_TEXT, F(mcp_allowed_origins),
	 0, 0, "ORIGIN,... browser origins POST /mcp takes besides this daemon's own (none)"},
	{"--print-routes", NULL, OPT_FLAG, F(print_routes), 0, 0,
	 "print the served routes and exit"},
	{"--print-errors", NULL, OPT_FLAG, F(print_errors), 0, 0,
	 "print the API's error table (status, code) and exit"},
	{"--help", NULL, OPT_FLAG, F(help), 0, 0, "this text"},
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

int config_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port)
{
	const char *colon;
	const char *h = s;
	size_t hl;
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen)
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned)p;
	return 0;
}

/* A DNS name (RFC 1123 2.1): dot-separated labels of 1-63 letters, digits
 * and hyphens, not starting or ending with a hyphen, at most 253 bytes.
 * Copied lowercase into out (outlen bytes).  Returns 0 or -EINVAL. */
static int set_domain(const char *val, char *out, size_t outlen)
{
	size_t n = strlen(val);
	if (n && val[n - 1] == '.')
		n--;
	if (n == 0 || n > 253 || n >= outlen)
		return -EINVAL;
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? val[i] : '.';
		if (c == '.') {
			if (label == 0 || label > 63 || val[i - 1] == '-')
				return -EINVAL;
			if (i < n)
				out[i] = '.';
			label = 0;
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && label > 0)))
			return -EINVAL;
		out[i] = c;
		label++;
	}
	out[n] = '\0';
	return 0;
}

static int set_opt(struct daemon_cfg *cfg, const struct opt *o, const char *val, char *err,
		   size_t errlen, const char *from)
{
	char *base = (char *)cfg;
	switch (o->kind) {
	case OPT_LISTEN:
		if (config_parse_listen(val, cfg->listen_host, sizeof(cfg->listen_host),
					&cfg->listen_port) < 0)
			goto bad;
		return 0;
	case OPT_PATH: {
		size_t n = strlen(val);
		if (n == 0 || n >= o->width || n > PATH_MAX - 128)
			goto bad;
		memcpy(base + o->off, val, n + 1);
		return 0;
	}
	case OPT_TEXT: {
		size_t n = strlen(val);
		if (n >= o->width)
			goto bad;
		memcpy(base + o->off, val, n + 1);
		return 0;
	}
	case OPT_U64: {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(val, &end, 10);
		if (errno || end == val || *end || val[0] == '-' || v < o->min || v > o->max)
			goto bad;
		if (o->width == sizeof(uint32_t)) {
			uint32_t u = (uint32_t)v;
			memcpy(base + o->off, &u, sizeof(u));
		} else {
			uint64_t u = v;
			memcpy(base + o->off, &u, sizeof(u));
		}
		return 0;
	}
	case OPT_DOMAIN:
		if (set_domain(val, base + o->off, o->width) < 0)
			goto bad;
		return 0;
	case OPT_ACCEL:
		if (accel_parse(val, &cfg->accel) < 0)
			goto bad;
		return 0;
	case OPT_FLAG: {
		int one = 1;
		memcpy(base + o->off, &one, sizeof(one));
		return 0;
	}
	case OPT_PIP_INDEX: {
		/* the guest writes it into an INI file: the shared check */
		const char *why = "";
		if (pip_index_check(val, NULL, 0, NULL, &why) < 0) {
			snprintf(err, errlen, "bad value for %s: %s", from, why);
			return -EINVAL;
		}
		snprintf(base + o->off, o->width, "%s", val);
		return 0;
	}
	case OPT_POOL_SIZES:
		if (config_parse_pool_sizes(val, cfg) < 0)
			goto bad;
		return 0;
	}
bad:
	snprintf(err, errlen, "bad value for %s: '%.200s'", from, val);
	return -EINVAL;
}

/* "web" beside the running program (build/web for build/pandastackd), or ""
 * when /proc/self/exe cannot be read. */
static void default_web_dir(char *out, size_t outlen)
{
	char exe[PATH_MAX];
	out[0] = '\0';
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	if (snprintf(out, outlen, "%s/web", exe) >= (int)outlen)
		out[0] = '\0';
}

/* The host name, lower-cased, when it is a valid node name; else "". */
static void default_node_name(char *out, size_t outlen)
{
	char h[256];
	out[0] = '\0';
	if (gethostname(h, sizeof(h)) < 0)
		return;
	h[sizeof(h) - 1] = '\0';
	size_t n = strcspn(h, ".");
	for (size_t i = 0; i < n; i++)
		if (h[i] >= 'A' && h[i] <= 'Z')
			h[i] = (char)(h[i] - 'A' + 'a');
	h[n] = '\0';
	if (n > 0 && n < outlen && body_check_name(h) == 0)
		memcpy(out, h, n + 1);
}

int config_load(struct daemon_cfg *cfg, int argc, char **argv, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	config_parse_listen(DEFAULT_LISTEN, cfg->listen_host, sizeof(cfg->listen_host),
			    &cfg->listen_port);
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", DEFAULT_DATA_DIR);
	snprintf(cfg->cache_dir, sizeof(cfg->cache_dir), "%s", ENGINE_DEFAULT_CACHE);
	cfg->pool_size = 2;
	cfg->accel = ACCEL_AUTO;
	cfg->max_sandboxes_per_team = 20;
	cfg->default_ttl_s = 300;
	cfg->max_ttl_s = 86400;
	cfg->exec_default_timeout_s = 60;
	cfg->exec_max_timeout_s = BODY_TIMEOUT_MAX_S;
	cfg->exec_output_cap = 4u * 1024 * 1024;
	cfg->max_upload = 4ull << 30;
	cfg->retention_s = 3600;
	cfg->context_idle_timeout_s = 1800;
	default_web_dir(cfg->web_dir, sizeof(cfg->web_dir));
	cfg->jail_uid_first = JAIL_DEFAULT_UID_FIRST;
	cfg->jail_uid_count = JAIL_DEFAULT_UID_COUNT;
	cfg->vm_memory_overhead_mib = JAIL_DEFAULT_MEM_OVERHEAD_MIB;
	cfg->vm_pids_max = JAIL_DEFAULT_PIDS_MAX;
	cfg->reserve_disk_mib = 1024;
	cfg->reserve_memory_mib = 512;
	cfg->ttl_grace_s = 10;
	cfg->paused_retention_s = 7 * 86400;
	cfg->max_snapshots_per_team = 100;
	cfg->max_snapshot_disk_mib = 20480;
	cfg->snapshot_max_depth = 4;
	cfg->snapshot_merge_after = 3;
	cfg->snapshot_merge_max = 4;
	cfg->max_conns_per_ip = 64;
	cfg->idle_timeout_s = 60;
	cfg->head_timeout_s = 10;
	cfg->net_max_conns = 4096;
	cfg->net_max_conns_sandbox = 256;
	cfg->cluster_ttl_s = 10;
	snprintf(cfg->cluster_prefix, sizeof(cfg->cluster_prefix), "/pandastack/");
	default_node_name(cfg->node_name, sizeof(cfg->node_name));

	for (size_t i = 0; i < N_OPTS; i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
		if (v && *v && set_opt(cfg, &opts[i], v, err, errlen, opts[i].env) < 0)
			return -EINVAL;
	}
	for (int a = 1; a < argc; a++) {
		const char *arg = argv[a];
		const char *eq = strchr(arg, '=');
		size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct opt *o = NULL;
		for (size_t i = 0; i < N_OPTS; i++)
			if (strlen(opts[i].flag) == name_len && !strncmp(arg, opts[i].flag, name_len))
				o = &opts[i];
		if (!o) {
			snprintf(err, errlen, "unknown argument '%.200s' (see --help)", arg);
			return -EINVAL;
		}
		const char *val;
		if (o->kind == OPT_FLAG) {
			if (eq) {
				snprintf(err, errlen, "%s takes no value", o->flag);
				return -EINVAL;
			}
			val = "1";
		} else if (eq) {
			val = eq + 1;
		} else if (a + 1 < argc) {
			val = argv[++a];
		} else {
			snprintf(err, errlen, "%s needs a value", o->flag);
			return -EINVAL;
		}
		if (set_opt(cfg, o, val, err, errlen, o->flag) < 0)
			return -EINVAL;
	}
	if (cfg->default_ttl_s > cfg->max_ttl_s) {
		snprintf(err, errlen, "--default-ttl (%lld) is above --max-ttl (%lld)",
			 (long long)cfg->default_ttl_s, (long long)cfg->max_ttl_s);
		return -EINVAL;
	}
	if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (!cfg->cluster_etcd_cert[0] != !cfg->cluster_etcd_key[0]) {
		snprintf(err, errlen, "--cluster-etcd-cert and --cluster-etcd-key go together");
		return -EINVAL;
	}
	if (!cfg->cluster_etcd_user[0] != !cfg->cluster_etcd_password_file[0]) {
		snprintf(err, errlen,
			 "--cluster-etcd-user and --cluster-etcd-password-file go together");
		return -EINVAL;
	}
	for (const char *u = cfg->cluster_etcd_user; *u; u++)
		if ((unsigned char)*u < 0x20 || *u == 0x7f) {
			snprintf(err, errlen, "--cluster-etcd-user holds a control character");
			return -EINVAL;
		}
	if ((uint64_t)cfg->jail_uid_first + cfg->jail_uid_count > 0xfffffffeu) {
		snprintf(err, errlen, "--jail-uid-first + --jail-uid-count passes the largest uid");
		return -EINVAL;
	}
	if (!cfg->tls_cert[0] && !cfg->insecure_http && !config_host_is_loopback(cfg->listen_host)) {
		snprintf(err, errlen, "refusing to serve plain HTTP on %s, which is not a loopback "
			 "address: API keys would cross the network in clear; give --tls-cert and "
			 "--tls-key, or --insecure-http", cfg->listen_host);
		return -EINVAL;
	}
	return 0;
}

int config_parse_pool_sizes(const char *s, struct daemon_cfg *cfg)
{
	struct config_pool_size out[CONFIG_POOL_SIZES_MAX];
	unsigned n = 0;
	if (!s)
		return -EINVAL;
	for (const char *p = s; *p;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t nl = eq ? (size_t)(eq - p) : 0;
		if (!eq || nl == 0 || nl >= sizeof(out[0].name) || eq + 1 == end)
			return -EINVAL;
		for (const char *c = p; c < eq; c++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *c))
				return -EINVAL;
		unsigned v = 0;
		for (const char *c = eq + 1; c < end; c++) {
			if (*c < '0' || *c > '9' || (v = v * 10 + (unsigned)(*c - '0')) > 64)
				return -EINVAL;
		}
		unsigned i = 0;
		while (i < n && (strlen(out[i].name) != nl || strncmp(out[i].name, p, nl)))
			i++;
		if (i == n && n++ == CONFIG_POOL_SIZES_MAX)
			return -EINVAL;
		memcpy(out[i].name, p, nl);
		out[i].name[nl] = '\0';
		out[i].size = v;
		p = comma ? comma + 1 : end;
		if (comma && !*p)
			return -EINVAL;
	}
	memcpy(cfg->pool_sizes, out, n * sizeof(out[0]));
	cfg->npool_sizes = n;
	return 0;
}

unsigned config_pool_size_of(const struct daemon_cfg *cfg, const char *name)
{
	for (unsigned i = 0; i < cfg->npool_sizes; i++)
		if (!strcmp(cfg->pool_sizes[i].name, name))
			return cfg->pool_sizes[i].size;
	return cfg->pool_size;
}

int config_host_is_loopback(const char *host)
{
	if (!strcmp(host, "localhost") || !strcmp(host, "::1"))
		return 1;
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

void config_usage(FILE *f)
{
	fprintf(f, "usage: pandastackd [options]\n\n"
		   "The PandaStack daemon: the REST API (docs/api.md) over QEMU microVM sandboxes.\n"
		   "Flags may also be given as --flag=value.  Environment variables in brackets.\n\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		fprintf(f, "  %-28s %s", opts[i].flag, opts[i].help);
		if (opts[i].env)
			fprintf(f, " [%s]", opts[i].env);
		fputc('\n', f);
	}
}
