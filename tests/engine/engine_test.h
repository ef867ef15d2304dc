/*
 * engine_test.h - shared helpers for the engine integration tests (real
 * guests restored from baked templates; see tests/engine/README.md).
 * Header-only: each test program is one .c file plus this.
 *
 * The template comes from $PANDASTACK_CACHE (default /var/cache/pandastack)
 * and $PANDASTACK_TEST_TEMPLATE (default code-interpreter).  Run
 * directories go under a folder made with mkdtemp in /tmp and removed at
 * the end.
 */
#ifndef PANDASTACK_ENGINE_TEST_H
#define PANDASTACK_ENGINE_TEST_H

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proto.h"
#include "common/util.h"
#include "engine/guest/guest_run.h"
#include "engine/paths.h"
#include "engine/template/template.h"
#include "engine/vm/vm.h"

#define ET_RESTORE_MS 60000

static struct template *et_tpl;
static char et_base[] = "/tmp/pandastack-engine-test-XXXXXX";
static unsigned et_seq;

/* Group setup: open the template (skips every test if it is not baked). */
static inline int et_setup(void **state)
{
	(void)state;
	char err[512];
	const char *name = getenv("PANDASTACK_TEST_TEMPLATE");
	if (!name || !name[0])
		name = "code-interpreter";
	int r = template_open(engine_cache_dir(NULL), name, ACCEL_AUTO, &et_tpl, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "engine tests need a baked template (make templates): %s\n", err);
		et_tpl = NULL;
		return 0;
	}
	if (!mkdtemp(et_base)) {
		template_free(et_tpl);
		et_tpl = NULL;
		return -1;
	}
	return 0;
}

static inline int et_teardown(void **state)
{
	(void)state;
	if (et_tpl) {
		util_rm_rf(et_base);
		template_free(et_tpl);
	}
	return 0;
}

/* Skip the test when no template could be opened. */
#define ET_NEED_TEMPLATE()                                                       \
	do {                                                                     \
		if (!et_tpl)                                                     \
			skip();                                                  \
	} while (0)

/* A fresh run directory path (not created). */
static inline void et_run_dir(char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s/vm%u", et_base, ++et_seq);
}

/* Restore a sandbox or fail the test with the engine's message. */
static inline struct vm *et_restore(void)
{
	char dir[PATH_MAX];
	struct vm *v = NULL;
	struct vm_err err;
	et_run_dir(dir);
	int r = vm_restore(et_tpl, dir, NULL, ET_RESTORE_MS, &v, &err);
	if (r < 0)
		fail_msg("vm_restore: %d %s", r, err.msg);
	return v;
}

static inline void et_stop(struct vm *v)
{
	assert_int_equal(vm_stop(v), 0);
	vm_free(v);
}

/* Run cmd, require the exec to complete; returns the result (caller frees). */
static inline struct guest_run_result et_exec(struct vm *v, const char *cmd,
					 const struct guest_run_exec_opts *o)
{
	struct guest_run_result res;
	struct guest_run_exec_opts dflt = {.timeout_ms = 120000};
	int r = guest_run_exec(vm_agent(v), cmd, o ? o : &dflt, &res);
	if (r < 0)
		fail_msg("exec %s: %d (%s)", cmd, r, res.end ? json_dumps(res.end, 0) : "no END");
	return res;
}

/* Run cmd and return its stdout (malloc'd) after checking exit code 0. */
static inline char *et_sh(struct vm *v, const char *cmd)
{
	struct guest_run_result res = et_exec(v, cmd, NULL);
	if (res.exit_code != 0)
		fail_msg("%s exited %d: %s", cmd, res.exit_code, res.err);
	char *out = strdup(res.out ? res.out : "");
	guest_run_result_free(&res);
	return out;
}

/* Upload len bytes to path in the guest (op file_write); returns 0 or -errno. */
static inline int et_file_write(struct vm *v, const char *path, const void *data, size_t len)
{
	json_t *req = json_pack("{s:s, s:s, s:i, s:b}", "op", "file_write", "path", path, "mode",
				0644, "parents", 1);
	struct guest_stream *s = NULL;
	int r = guest_stream_open(vm_agent(v), req, &s);
	json_decref(req);
	if (r < 0)
		return r;
	if ((r = guest_stream_write(s, data, len, 120000)) == 0)
		r = guest_stream_write_eof(s);
	int ended = 0;
	while (r == 0) {
		struct guest_msg m = {0};
		int k = guest_stream_read(s, &m, 120000);
		if (k <= 0) {
			r = k == 0 ? (ended ? 0 : -EPROTO) : k;
			break;
		}
		if (m.kind == GUEST_MSG_END)
			ended = json_object_get(m.json, "error") ? -1 : 1;
		if (m.kind == GUEST_MSG_ERROR)
			ended = -1;
		guest_msg_clear(&m);
		if (ended) {
			r = ended > 0 ? 0 : -EIO;
			break;
		}
	}
	guest_stream_close(s);
	return r;
}

/* Download path from the guest (op file_read) into *out (malloc'd). */
static inline int et_file_read(struct vm *v, const char *path, uint8_t **out, size_t *len)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "file_read", "path", path);
	struct guest_stream *s = NULL;
	int r = guest_stream_open(vm_agent(v), req, &s);
	json_decref(req);
	if (r < 0)
		return r;
	size_t cap = 1 << 20, n = 0;
	uint8_t *buf = malloc(cap);
	int ended = 0;
	while (buf) {
		struct guest_msg m = {0};
		int k = guest_stream_read(s, &m, 120000);
		if (k <= 0) {
			r = k == 0 ? (ended > 0 ? 0 : -EPROTO) : k;
			break;
		}
		if (m.kind == GUEST_MSG_DATA && m.channel == PROTO_CH_STDOUT) {
			while (n + m.len > cap) {
				uint8_t *nb = realloc(buf, cap * 2);
				if (!nb) {
					free(buf);
					buf = NULL;
					break;
				}
				buf = nb;
				cap *= 2;
			}
			if (buf) {
				memcpy(buf + n, m.data, m.len);
				n += m.len;
			}
		}
		if (m.kind == GUEST_MSG_END)
			ended = json_object_get(m.json, "error") ? -1 : 1;
		if (m.kind == GUEST_MSG_ERROR)
			ended = -1;
		guest_msg_clear(&m);
		if (ended < 0) {
			r = -EIO;
			break;
		}
	}
	guest_stream_close(s);
	if (!buf)
		return -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	*len = n;
	return 0;
}

#endif
