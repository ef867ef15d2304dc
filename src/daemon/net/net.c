/*
 * net.c - the network service: its start and stop, the registry of
 * attached sandboxes, policy changes and the per-sandbox metrics (see
 * net.h).  The work runs on the loop's thread: the calls here post it
 * there (net_loop_call) and wait.
 */
#include "daemon/net/net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/net/net_int.h"

/* Descriptors kept for everything but proxied connections (2 each). */
#define FD_RESERVE 1024

int net_start(const struct net_config *cfg, struct net **out, char *err, size_t errlen)
{
	struct net *n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&n->lock, NULL);
	n->max_conns = cfg->max_conns;
	n->max_conns_sandbox = cfg->max_conns_sandbox;
	/* Two descriptors per connection: stay within RLIMIT_NOFILE. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t fit = rl.rlim_cur > 2 * FD_RESERVE ? (rl.rlim_cur - FD_RESERVE) / 2 : rl.rlim_cur / 4;
		if (n->max_conns > fit) {
			log_kv(LOG_WARN, "net.max_conns_lowered", "from=%u to=%llu nofile=%llu",
			       n->max_conns, (unsigned long long)fit, (unsigned long long)rl.rlim_cur);
			n->max_conns = (unsigned)fit;
		}
	}
	int e = net_denied_new(cfg->deny, &n->denied);
	if (e < 0) {
		snprintf(err, errlen, "bad --net-deny list");
		goto fail;
	}
	if ((e = net_loop_new(&n->loop)) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-e));
		goto fail;
	}
	if ((e = net_resolve_new(n->loop, cfg->dns_upstream, &n->resolver, err, errlen)) < 0)
		goto fail;
	if ((e = net_loop_start(n->loop)) < 0) {
		snprintf(err, errlen, "thread: %s", strerror(-e));
		goto fail;
	}
	log_kv(LOG_INFO, "net.started", "dns_upstream=%s max_conns=%u max_conns_per_sandbox=%u",
	       cfg->dns_upstream && *cfg->dns_upstream ? cfg->dns_upstream : "resolv.conf",
	       n->max_conns, n->max_conns_sandbox);
	*out = n;
	return 0;
fail:
	net_resolve_free(n->resolver);
	net_loop_free(n->loop);
	net_denied_free(n->denied);
	pthread_mutex_destroy(&n->lock);
	free(n);
	return e;
}

/* ---- boxes (on the loop's thread) --------------------------------------------- */

static struct net_box *find(struct net *n, const char *id)
{
	for (struct net_box *b = n->boxes; b; b = b->next)
		if (!strcmp(b->id, id))
			return b;
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Stop serving b, take it off the list and free it. */
static void box_free(struct net *n, struct net_box *b)
{
	net_proxy_stop(b);
	net_dns_stop(b);
	close_fd(&b->fd_proxy);
	close_fd(&b->fd_dns_udp);
	close_fd(&b->fd_dns_tcp);
	pthread_mutex_lock(&n->lock);
	if (b->prev)
		b->prev->next = b->next;
	else if (n->boxes == b)
		n->boxes = b->next;
	if (b->next)
		b->next->prev = b->prev;
	pthread_mutex_unlock(&n->lock);
	net_policy_free(b->policy);
	free(b);
}

struct attach_job {
	struct net *n;
	const char *id;
	const struct netslot_listeners *l;
	struct net_policy *p;
	int r;
};

static int dup_fd(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static void do_attach(void *arg)
{
	struct attach_job *j = arg;
	struct net *n = j->n;
	if (find(n, j->id)) {
		j->r = -EEXIST;
		return;
	}
	struct net_box *b = calloc(1, sizeof(*b));
	if (!b) {
		j->r = -ENOMEM;
		return;
	}
	snprintf(b->id, sizeof(b->id), "%s", j->id);
	b->net = n;
	b->policy = j->p;
	j->p = NULL;
	b->w_proxy.fd = b->w_dns_udp.fd = b->w_dns_tcp.fd = -1;
	b->fd_proxy = dup_fd(j->l->proxy);
	b->fd_dns_udp = dup_fd(j->l->dns_udp);
	b->fd_dns_tcp = dup_fd(j->l->dns_tcp);
	pthread_mutex_lock(&n->lock);
	b->next = n->boxes;
	if (n->boxes)
		n->boxes->prev = b;
	n->boxes = b;
	pthread_mutex_unlock(&n->lock);
	int r = b->fd_proxy < 0 || b->fd_dns_udp < 0 || b->fd_dns_tcp < 0 ? -EBADF : 0;
	if (!r)
		r = net_proxy_start(b);
	if (!r)
		r = net_dns_start(b);
	if (r)
		box_free(n, b);
	j->r = r;
}

int net_attach(struct net *n, const char *id, const struct netslot_listeners *l,
	       struct net_policy *p)
{
	struct attach_job j = {n, id, l, p, 0};
	int64_t t0 = util_now_us();
	int e = net_loop_call(n->loop, do_attach, &j, 1);
	net_policy_free(j.p); /* not taken by a box */
	/* its cost on a create's path (bench/network.py reads it) */
	log_kv(LOG_DEBUG, "net.attached", "id=%s err=%d us=%lld", id, e < 0 ? e : j.r,
	       (long long)(util_now_us() - t0));
	return e < 0 ? e : j.r;
}

struct id_job {
	struct net *n;
	const char *id;
	struct net_policy *p;
	int r;
};

static void do_detach(void *arg)
{
	struct id_job *j = arg;
	struct net_box *b = find(j->n, j->id);
	if (b)
		box_free(j->n, b);
}

void net_detach(struct net *n, const char *id)
{
	struct id_job j = {n, id, NULL, 0};
	net_loop_call(n->loop, do_detach, &j, 1);
}

static void do_set_policy(void *arg)
{
	struct id_job *j = arg;
	struct net_box *b = find(j->n, j->id);
	if (!b) {
		j->r = -ENOENT;
		return;
	}
	net_policy_free(b->policy);
	b->policy = j->p;
	j->p = NULL;
	net_proxy_recheck(b);
}

int net_set_policy(struct net *n, const char *id, struct net_policy *p)
{
	struct id_job j = {n, id, p, 0};
	int e = net_loop_call(n->loop, do_set_policy, &j, 1);
	net_policy_free(j.p);
	return e < 0 ? e : j.r;
}

static void do_stop(void *arg)
{
	struct net *n = arg;
	while (n->boxes)
		box_free(n, n->boxes);
	net_resolve_free(n->resolver);
	n->resolver = NULL;
}

void net_stop(struct net *n)
{
	if (!n)
		return;
	net_loop_call(n->loop, do_stop, n, 1);
	net_loop_free(n->loop);
	net_denied_free(n->denied);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

/* ---- metrics --------------------------------------------------------------------- */

void net_metrics_write(struct net *n, FILE *f)
{
	net_proxy_metrics_write(f);
	static const struct {
		const char *name, *type, *help;
	} series[] = {
		{"pandastack_sandbox_net_bytes_total", "counter",
		 "Bytes the proxy carried for a sandbox, by direction (out: to the internet)."},
		{"pandastack_sandbox_net_connections_total", "counter",
		 "Connections the proxy opened for a sandbox."},
		{"pandastack_sandbox_net_refused_total", "counter",
		 "Connections of a sandbox refused or closed by its policy or a cap."},
		{"pandastack_sandbox_net_connections_open", "gauge",
		 "Proxied connections of a sandbox open now."},
		{"pandastack_sandbox_dns_queries_total", "counter",
		 "DNS queries of a sandbox answered."},
	};
	pthread_mutex_lock(&n->lock);
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", series[s].name, series[s].help,
			series[s].name, series[s].type);
		for (struct net_box *b = n->boxes; b; b = b->next) {
			const struct net_stats *st = &b->st;
			switch (s) {
			case 0:
				fprintf(f, "%s{sandbox=\"%s\",direction=\"out\"} %llu\n", series[s].name,
					b->id, (unsigned long long)atomic_load(&st->bytes_out));
				fprintf(f, "%s{sandbox=\"%s\",direction=\"in\"} %llu\n", series[s].name,
					b->id, (unsigned long long)atomic_load(&st->bytes_in));
				break;
			case 1:
				fprintf(f, "%s{sandbox=\"%s\"} %llu\n", series[s].name, b->id,
					(unsigned long long)atomic_load(&st->conns));
				break;
			case 2:
				fprintf(f, "%s{sandbox=\"%s\"} %llu\n", series[s].name, b->id,
					(unsigned long long)atomic_load(&st->refused));
				break;
			case 3:
				fprintf(f, "%s{sandbox=\"%s\"} %u\n", series[s].name, b->id,
					atomic_load(&st->open));
				break;
			default:
				fprintf(f, "%s{sandbox=\"%s\"} %llu\n", series[s].name, b->id,
					(unsigned long long)atomic_load(&st->dns_queries));
				break;
			}
		}
	}
	pthread_mutex_unlock(&n->lock);
}
