/*
 * test_vm_exec.c - commands in one restored sandbox, through the engine's
 * agent connection: exit codes and signals, stderr, env and cwd, a 1 MiB
 * random file round trip, 20 MiB of stdout, a timeout that kills a whole
 * process tree, 64 concurrent execs, a 200 MiB upload that must not
 * hold up an exec beside it by more than a second, and the network the
 * agent configured at the bake, there at once in the restored sandbox.
 * Needs a baked template (make templates); see engine_test.h.
 */
#include "engine_test.h"

#include <pthread.h>

#include <openssl/evp.h>

static struct vm *vm1;

static int group_setup(void **state)
{
	if (et_setup(state) < 0)
		return -1;
	if (et_tpl)
		vm1 = et_restore();
	return 0;
}

static int group_teardown(void **state)
{
	if (vm1) {
		vm_stop(vm1);
		vm_free(vm1);
	}
	return et_teardown(state);
}

static void test_exit_codes_and_signals(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct guest_run_result r = et_exec(vm1, "exit 3", NULL);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.signal, 0);
	guest_run_result_free(&r);
	r = et_exec(vm1, "true", NULL);
	assert_int_equal(r.exit_code, 0);
	guest_run_result_free(&r);
	r = et_exec(vm1, "kill -9 $$", NULL);
	assert_int_equal(r.signal, 9);
	assert_int_equal(r.exit_code, 128 + 9);
	guest_run_result_free(&r);
	r = et_exec(vm1, "kill -TERM $$", NULL);
	assert_int_equal(r.signal, 15);
	assert_int_equal(r.exit_code, 128 + 15);
	guest_run_result_free(&r);
}

static void test_stdout_and_stderr_apart(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct guest_run_result r = et_exec(vm1, "echo out; echo err >&2; echo out2", NULL);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, "out\nout2\n");
	assert_string_equal(r.err, "err\n");
	guest_run_result_free(&r);
}

static void test_env_and_cwd(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	json_t *env = json_pack("{s:s, s:s}", "FOO", "bar baz", "EMPTY", "");
	struct guest_run_exec_opts o = {.timeout_ms = 60000, .env = env, .cwd = "/tmp"};
	struct guest_run_result r = et_exec(vm1, "echo \"$FOO|${EMPTY-unset}|$(pwd)\"", &o);
	json_decref(env);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, "bar baz||/tmp\n");
	guest_run_result_free(&r);
	/* A missing cwd is an error, not a run somewhere else. */
	struct guest_run_exec_opts bad = {.timeout_ms = 60000, .cwd = "/does/not/exist"};
	struct guest_run_result r2;
	assert_int_equal(guest_run_exec(vm_agent(vm1), "pwd", &bad, &r2), -EPROTO);
	guest_run_result_free(&r2);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned len = 0;
	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	util_hex(md, 32, out);
}

static void test_1mib_random_file_round_trip(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	size_t n = 1u << 20;
	uint8_t *data = malloc(n);
	assert_int_equal(util_random(data, n), 0);
	char want[65];
	sha256_hex(data, n, want);
	assert_int_equal(et_file_write(vm1, "/root/rand.bin", data, n), 0);
	/* The guest sees the same bytes ... */
	char *out = et_sh(vm1, "sha256sum /root/rand.bin | cut -d' ' -f1");
	out[strcspn(out, "\n")] = '\0';
	assert_string_equal(out, want);
	free(out);
	/* ... and gives them back unchanged. */
	uint8_t *back = NULL;
	size_t blen = 0;
	assert_int_equal(et_file_read(vm1, "/root/rand.bin", &back, &blen), 0);
	assert_int_equal(blen, n);
	char got[65];
	sha256_hex(back, blen, got);
	assert_string_equal(got, want);
	free(back);
	free(data);
}

static void test_20mib_stdout_arrives_whole(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct guest_run_exec_opts o = {.timeout_ms = 300000, .capture_cap = 21u << 20};
	/* 20 MiB of a known pattern: line i is "%07d" then 120 x's (128 bytes). */
	struct guest_run_result r = et_exec(
		vm1,
		"python3 -c \"import sys; w=sys.stdout.buffer.write; "
		"[w(b'%07d' % i + b'x' * 120 + b'\\n') for i in range(163840)]\"",
		&o);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.out_total, 20u << 20);
	assert_int_equal(r.out_len, 20u << 20);
	for (size_t i = 0; i < 163840; i += 4099) {
		char want[16];
		snprintf(want, sizeof(want), "%07zu", i);
		assert_memory_equal(r.out + i * 128, want, 7);
		assert_int_equal(r.out[i * 128 + 127], '\n');
	}
	assert_false(json_is_true(json_object_get(r.end, "stdout_truncated")));
	guest_run_result_free(&r);
}

static void test_timeout_kills_the_tree(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct guest_run_exec_opts o = {.timeout_ms = 1500};
	int64_t t0 = util_now_ms();
	struct guest_run_result r = et_exec(vm1, "sleep 100 & sleep 100", &o);
	int64_t ms = util_now_ms() - t0;
	assert_true(r.timed_out);
	assert_true(ms < 60000);
	guest_run_result_free(&r);
	/* Nothing named sleep is left (ps if the image has it, else /proc). */
	char *n = et_sh(vm1, "if command -v ps >/dev/null; then ps -e -o comm= | grep -c '^sleep$'; "
			     "else cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$'; fi; true");
	assert_string_equal(n, "0\n");
	free(n);
}

struct par {
	int i;
	int ok;
};

static void *par_exec(void *arg)
{
	struct par *p = arg;
	char cmd[64], want[32];
	snprintf(cmd, sizeof(cmd), "echo n=%d", p->i);
	snprintf(want, sizeof(want), "n=%d\n", p->i);
	struct guest_run_result r;
	struct guest_run_exec_opts o = {.timeout_ms = 240000};
	int rc = guest_run_exec(vm_agent(vm1), cmd, &o, &r);
	p->ok = rc == 0 && r.exit_code == 0 && r.out && !strcmp(r.out, want);
	guest_run_result_free(&r);
	return NULL;
}

static void test_64_concurrent_execs(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	enum { N = 64 };
	pthread_t th[N];
	struct par p[N];
	for (int i = 0; i < N; i++) {
		p[i].i = i;
		p[i].ok = 0;
		assert_int_equal(pthread_create(&th[i], NULL, par_exec, &p[i]), 0);
	}
	int ok = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ok += p[i].ok;
	}
	assert_int_equal(ok, N);
}

struct upload {
	int rc;
	int64_t ms;
};

static void *upload_200mib(void *arg)
{
	struct upload *u = arg;
	size_t n = 200u << 20;
	uint8_t *data = malloc(n);
	memset(data, 0xa5, n);
	int64_t t0 = util_now_ms();
	u->rc = data ? et_file_write(vm1, "/root/big.bin", data, n) : -ENOMEM;
	u->ms = util_now_ms() - t0;
	free(data);
	return NULL;
}

static int64_t exec_true_ms(void)
{
	int64_t t0 = util_now_ms();
	struct guest_run_result r = et_exec(vm1, "true", NULL);
	assert_int_equal(r.exit_code, 0);
	guest_run_result_free(&r);
	return util_now_ms() - t0;
}

static void test_upload_does_not_stall_exec(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	/* Baseline: the slowest of three `true` round trips when idle. */
	int64_t base = 0;
	for (int i = 0; i < 3; i++) {
		int64_t ms = exec_true_ms();
		base = ms > base ? ms : base;
	}
	struct upload u = {0, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, upload_200mib, &u), 0);
	usleep(300 * 1000); /* the upload is under way */
	int64_t during = exec_true_ms();
	pthread_join(th, NULL);
	assert_int_equal(u.rc, 0);
	char *size = et_sh(vm1, "stat -c %s /root/big.bin; rm -f /root/big.bin");
	assert_string_equal(size, "209715200\n");
	free(size);
	fprintf(stderr, "   exec true: idle %lld ms, beside the upload %lld ms (upload %lld ms)\n",
		(long long)base, (long long)during, (long long)u.ms);
	assert_true(during - base <= 1000);
}

/* The guest's network (docs/agent.md) comes with the snapshot: at the first
 * exec after the restore eth0 is up with its address, route, permanent
 * neighbours and resolver, IPv6 is off, and a TCP connection to the gateway
 * (the engine's listener in the sandbox's namespace) is accepted.  Read
 * without `ip`: /sys, /proc and Python's socket.  Every template has the
 * NIC (its machine arguments name it), so its absence is a failure. */
static void test_network_configured_at_restore(void **state)
{
	(void)state;
	ET_NEED_TEMPLATE();
	struct vm *v = et_restore();
	struct guest_run_result r = et_exec(v, "test -e /sys/class/net/eth0", NULL);
	int has_nic = r.exit_code == 0;
	guest_run_result_free(&r);
	if (!has_nic) {
		et_stop(v);
		fail_msg("the sandbox has no eth0: the template's machine has no NIC");
	}
	char *out = et_sh(v, "cd /proc/sys/net/ipv6/conf && cat /sys/class/net/eth0/operstate "
			     "all/disable_ipv6 eth0/disable_ipv6 /etc/resolv.conf");
	assert_string_equal(out, "up\n1\n1\nnameserver 10.0.2.3\n");
	free(out);
	/* positive control: the grep below fails on a route that is not there */
	r = et_exec(v, "grep -q '^eth0\t00000000\t0909000A' /proc/net/route", NULL);
	assert_int_equal(r.exit_code, 1);
	guest_run_result_free(&r);
	out = et_sh(v, "grep '^eth0\t' /proc/net/route | cut -f1-3,8");
	assert_string_equal(out, "eth0\t00000000\t0202000A\t00000000\n"
				 "eth0\t0002000A\t00000000\t00FFFFFF\n");
	free(out);
	out = et_sh(v, "awk '$6 == \"eth0\" { print $1, $3, $4 }' /proc/net/arp | sort");
	assert_string_equal(out, "10.0.2.2 0x6 52:54:00:12:35:02\n"
				 "10.0.2.3 0x6 52:54:00:12:35:02\n");
	free(out);
	out = et_sh(v, "python3 -c \"import socket; "
		       "s = socket.create_connection(('10.0.2.2', 3128), 10); "
		       "print(s.getsockname()[0])\"");
	assert_string_equal(out, "10.0.2.15\n");
	free(out);
	et_stop(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_codes_and_signals),
		cmocka_unit_test(test_stdout_and_stderr_apart),
		cmocka_unit_test(test_env_and_cwd),
		cmocka_unit_test(test_1mib_random_file_round_trip),
		cmocka_unit_test(test_20mib_stdout_arrives_whole),
		cmocka_unit_test(test_timeout_kills_the_tree),
		cmocka_unit_test(test_64_concurrent_execs),
		cmocka_unit_test(test_upload_does_not_stall_exec),
		cmocka_unit_test(test_network_configured_at_restore),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
