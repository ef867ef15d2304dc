/*
 * test_jupyter_msg.c - the pure parts of the Jupyter client: tolerant JSON
 * (UTF-8 and surrogate repair), wire format (signing, verification,
 * delimiter, identities), MIME-bundle mapping (quotes, base64, json,
 * extra), ANSI stripping, and the per-execution state machine (reply and
 * idle in either order, errors, output cap).  No kernel, no sockets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "agent/jupyter/jupyter_exec.h"
#include "agent/jupyter/jupyter_json.h"
#include "agent/jupyter/jupyter_map.h"
#include "agent/jupyter/jupyter_msg.h"

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* --- tolerant JSON --------------------------------------------------------*/

static void test_json_repairs_invalid_utf8(void **state)
{
	(void)state;
	/* A surrogateescape'd byte (0xE9 alone), an overlong, a truncated
	 * sequence at the end of a string: each becomes U+FFFD. */
	const char in[] = "{\"t\": \"a\xE9" "b\xC0\xAF" "c\xE2\x82\"}";
	json_t *v = jupyter_json_load(in, sizeof(in) - 1);
	assert_non_null(v);
	assert_string_equal(str(v, "t"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD" "c\xEF\xBF\xBD");
	json_decref(v);
}

static void test_json_keeps_valid_text(void **state)
{
	(void)state;
	const char in[] = "{\"t\": \"caf\xC3\xA9 \\u00e9 \\ud83d\\ude00 \xF0\x9F\x98\x80\", \"n\": [1, 2.5, null]}";
	char *out;
	size_t len;
	assert_int_equal(jupyter_json_repair(in, sizeof(in) - 1, &out, &len), 0);
	assert_int_equal(len, sizeof(in) - 1);
	assert_memory_equal(out, in, len);
	free(out);
	json_t *v = jupyter_json_load(in, sizeof(in) - 1);
	assert_non_null(v);
	assert_string_equal(str(v, "t"), "caf\xC3\xA9 \xC3\xA9 \xF0\x9F\x98\x80 \xF0\x9F\x98\x80");
	json_decref(v);
}

static void test_json_repairs_lone_surrogates_and_controls(void **state)
{
	(void)state;
	const char in[] = "{\"a\": \"x\\udc80y\", \"b\": \"\\ud800\", \"c\": \"tab\there\", \"d\": \"\\q\"}";
	json_t *v = jupyter_json_load(in, sizeof(in) - 1);
	assert_non_null(v);
	assert_string_equal(str(v, "a"), "x\xEF\xBF\xBDy");
	assert_string_equal(str(v, "b"), "\xEF\xBF\xBD");
	assert_string_equal(str(v, "c"), "tab\there");
	assert_string_equal(str(v, "d"), "\\q");
	json_decref(v);
}

static void test_json_keeps_nul(void **state)
{
	(void)state;
	const char in[] = "{\"t\": \"a\\u0000b\"}";
	json_t *v = jupyter_json_load(in, sizeof(in) - 1);
	assert_non_null(v);
	assert_int_equal(json_string_length(json_object_get(v, "t")), 3);
	json_decref(v);
}

static void test_json_rejects_garbage(void **state)
{
	(void)state;
	assert_null(jupyter_json_load("{\"a\": ", 6));
	assert_null(jupyter_json_load("", 0));
	assert_null(jupyter_json_load("\xff\xfe", 2));
}

/* --- wire format ----------------------------------------------------------*/

struct wire {
	struct jupyter_frame f[10];
	size_t n;
};

static void wire_from(struct wire *w, const struct jupyter_wire *jw, int with_ident)
{
	w->n = 0;
	if (with_ident)
		w->f[w->n++] = (struct jupyter_frame){ "kernel.1234.status", 18 };
	w->f[w->n++] = (struct jupyter_frame){ JUPYTER_DELIM, sizeof(JUPYTER_DELIM) - 1 };
	w->f[w->n++] = (struct jupyter_frame){ jw->sig, strlen(jw->sig) };
	for (int i = 0; i < 4; i++)
		w->f[w->n++] = (struct jupyter_frame){ jw->part[i], jw->len[i] };
}

static void test_encode_parse_roundtrip(void **state)
{
	(void)state;
	const char key[] = "0123456789abcdef0123456789abcdef";
	json_t *content = json_pack("{s:s}", "code", "1+1");
	struct jupyter_wire jw;
	assert_int_equal(jupyter_msg_encode("sess-1", "execute_request", content, key,
					    strlen(key), &jw), 0);
	json_decref(content);
	assert_int_equal(strlen(jw.sig), 64);
	assert_int_equal(strlen(jw.msg_id), 36);

	struct wire w;
	wire_from(&w, &jw, 1);
	struct jupyter_msg m;
	assert_int_equal(jupyter_msg_parse(w.f, w.n, key, strlen(key), &m), 0);
	assert_string_equal(m.msg_type, "execute_request");
	assert_string_equal(m.msg_id, jw.msg_id);
	assert_string_equal(m.session, "sess-1");
	assert_string_equal(m.parent_id, "");
	assert_string_equal(str(m.content, "code"), "1+1");
	assert_string_equal(str(m.header, "version"), JUPYTER_PROTOCOL_VERSION);
	jupyter_msg_clear(&m);

	/* Another key, a flipped byte of content, a cut signature: refused. */
	assert_int_equal(jupyter_msg_parse(w.f, w.n, "other", 5, &m), -EPERM);
	char bad[256];
	memcpy(bad, jw.part[3], jw.len[3]);
	bad[2] ^= 1;
	w.f[w.n - 1].data = bad;
	assert_int_equal(jupyter_msg_parse(w.f, w.n, key, strlen(key), &m), -EPERM);
	w.f[w.n - 1].data = jw.part[3];
	w.f[2].len = 63;
	assert_int_equal(jupyter_msg_parse(w.f, w.n, key, strlen(key), &m), -EPERM);
	jupyter_wire_clear(&jw);
}

static void test_sign_known_vector(void **state)
{
	(void)state;
	/* HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog")
	 * split over the four parts. */
	struct jupyter_frame p[4] = {
		{ "The quick ", 10 }, { "brown fox ", 10 }, { "jumps over ", 11 }, { "the lazy dog", 12 },
	};
	char sig[JUPYTER_SIG_SIZE];
	assert_int_equal(jupyter_sign("key", 3, p, sig), 0);
	assert_string_equal(sig, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
	assert_int_equal(jupyter_sign("", 0, p, sig), 0);
	assert_string_equal(sig, "");
}

static void test_parse_unsigned_and_malformed(void **state)
{
	(void)state;
	struct jupyter_frame f[8] = {
		{ JUPYTER_DELIM, 9 }, { "", 0 },
		{ "{\"msg_type\":\"status\",\"msg_id\":\"m\"}", 34 },
		{ "{\"msg_id\":\"p1\"}", 15 }, { "{}", 2 },
		{ "{\"execution_state\":\"idle\"}", 26 }, { "raw", 3 },
	};
	struct jupyter_msg m;
	assert_int_equal(jupyter_msg_parse(f, 7, NULL, 0, &m), 0);
	assert_string_equal(m.parent_id, "p1");
	assert_int_equal(m.nbuffers, 1);
	jupyter_msg_clear(&m);
	/* Too few frames, no delimiter, a part that is not an object. */
	assert_int_equal(jupyter_msg_parse(f, 5, NULL, 0, &m), -EBADMSG);
	assert_int_equal(jupyter_msg_parse(f + 1, 6, NULL, 0, &m), -EBADMSG);
	f[4] = (struct jupyter_frame){ "[1]", 3 };
	assert_int_equal(jupyter_msg_parse(f, 7, NULL, 0, &m), -EBADMSG);
	f[4] = (struct jupyter_frame){ "{}", 2 };
	f[2] = (struct jupyter_frame){ "{\"msg_id\":\"m\"}", 14 };
	assert_int_equal(jupyter_msg_parse(f, 7, NULL, 0, &m), -EBADMSG);
}

/* Output messages are told apart by their header alone, unverified. */
static void test_is_output(void **state)
{
	(void)state;
	struct jupyter_frame f[7] = {
		{ "ident", 5 }, { JUPYTER_DELIM, 9 }, { "not-a-signature", 15 },
		{ "{\"msg_type\":\"stream\"}", 21 }, { "{}", 2 }, { "{}", 2 },
		{ "this content is never read", 27 },
	};
	assert_int_equal(jupyter_msg_is_output(f, 7), 1);
	static const char *const yes[] = { "{\"msg_type\":\"display_data\"}",
					   "{\"msg_type\":\"update_display_data\"}",
					   "{\"msg_type\":\"execute_result\"}" };
	for (size_t i = 0; i < 3; i++) {
		f[3] = (struct jupyter_frame){ yes[i], strlen(yes[i]) };
		assert_int_equal(jupyter_msg_is_output(f, 7), 1);
	}
	/* the end of a run, errors and anything malformed are not */
	static const char *const no[] = { "{\"msg_type\":\"status\"}",
					  "{\"msg_type\":\"error\"}",
					  "{\"msg_type\":\"execute_reply\"}", "{\"msg_type\":1}",
					  "[\"stream\"]", "{", "" };
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		f[3] = (struct jupyter_frame){ no[i], strlen(no[i]) };
		assert_int_equal(jupyter_msg_is_output(f, 7), 0);
	}
	f[3] = (struct jupyter_frame){ "{\"msg_type\":\"stream\"}", 21 };
	assert_int_equal(jupyter_msg_is_output(f, 6), 0);     /* too few frames */
	assert_int_equal(jupyter_msg_is_output(f + 2, 5), 0); /* no delimiter */
	/* a header past the peek cap is left to the full parse */
	static char big[JUPYTER_HEADER_PEEK_MAX + 64];
	int n = snprintf(big, sizeof(big), "{\"msg_type\":\"stream\",\"pad\":\"%*s\"}",
			 JUPYTER_HEADER_PEEK_MAX, "");
	f[3] = (struct jupyter_frame){ big, (size_t)n };
	assert_int_equal(jupyter_msg_is_output(f, 7), 0);
}

/* ... and by their parent header, for the output of one request. */
static void test_is_output_of(void **state)
{
	(void)state;
	struct jupyter_frame f[7] = {
		{ "ident", 5 }, { JUPYTER_DELIM, 9 }, { "not-a-signature", 15 },
		{ "{\"msg_type\":\"stream\"}", 21 }, { "{\"msg_id\":\"run-1\"}", 18 }, { "{}", 2 },
		{ "this content is never read", 27 },
	};
	assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-1"), 1);
	assert_int_equal(jupyter_msg_is_output_of(f, 7, NULL), 1);
	assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-2"), 0);
	assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-"), 0);
	/* not output, or no parent to compare: kept */
	f[3] = (struct jupyter_frame){ "{\"msg_type\":\"status\"}", 21 };
	assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-1"), 0);
	f[3] = (struct jupyter_frame){ "{\"msg_type\":\"stream\"}", 21 };
	static const char *const no_parent[] = { "{}", "{\"msg_id\":1}", "[]", "{", "" };
	for (size_t i = 0; i < sizeof(no_parent) / sizeof(no_parent[0]); i++) {
		f[4] = (struct jupyter_frame){ no_parent[i], strlen(no_parent[i]) };
		assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-1"), 0);
	}
	/* a parent header past the peek cap is not read */
	static char big[JUPYTER_HEADER_PEEK_MAX + 64];
	int n = snprintf(big, sizeof(big), "{\"msg_id\":\"run-1\",\"pad\":\"%*s\"}",
			 JUPYTER_HEADER_PEEK_MAX, "");
	f[4] = (struct jupyter_frame){ big, (size_t)n };
	assert_int_equal(jupyter_msg_is_output_of(f, 7, "run-1"), 0);
}

/* --- mapping --------------------------------------------------------------*/

static void test_map_result_fields(void **state)
{
	(void)state;
	json_t *data = json_pack("{s:s, s:s, s:s, s:{s:i}, s:s, s:{s:b}, s:s}",
				 "text/plain", "'abc'", "text/html", "<b>x</b>",
				 "image/png", "iVBO\nRw0K GgoA\n", "application/json", "a", 1,
				 "text/latex", "$x$", "application/vnd.custom+json", "ok", 1,
				 "application/pdf", "JVBE");
	json_t *r = jupyter_map_result(data, 1);
	assert_non_null(r);
	assert_string_equal(str(r, "type"), "result");
	assert_true(json_is_true(json_object_get(r, "is_main_result")));
	assert_string_equal(str(r, "text"), "abc");
	assert_string_equal(str(r, "html"), "<b>x</b>");
	assert_string_equal(str(r, "png"), "iVBORw0KGgoA");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "json"), "a")), 1);
	assert_string_equal(str(r, "latex"), "$x$");
	json_t *extra = json_object_get(r, "extra");
	assert_non_null(json_object_get(extra, "application/vnd.custom+json"));
	assert_string_equal(str(extra, "application/pdf"), "JVBE");
	assert_null(json_object_get(r, "markdown"));
	assert_null(json_object_get(r, "svg"));
	json_decref(r);
	json_decref(data);
}

static void test_map_text_quotes(void **state)
{
	(void)state;
	const char *cases[][2] = {
		{ "5050", "5050" }, { "42", "42" }, { "'abc'", "abc" }, { "'5050'", "5050" },
		{ "\"it's\"", "\"it's\"" }, { "'", "'" }, { "''", "" }, { "['a']", "['a']" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *data = json_pack("{s:s}", "text/plain", cases[i][0]);
		json_t *r = jupyter_map_result(data, 0);
		assert_string_equal(str(r, "text"), cases[i][1]);
		assert_false(json_is_true(json_object_get(r, "is_main_result")));
		assert_null(json_object_get(r, "extra"));
		json_decref(r);
		json_decref(data);
	}
}

static void test_map_wrong_types_go_to_extra(void **state)
{
	(void)state;
	json_t *data = json_pack("{s:i, s:[s,s]}", "text/html", 5, "text/markdown", "# a", "\nb");
	json_t *r = jupyter_map_result(data, 0);
	assert_null(json_object_get(r, "html"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "extra"), "text/html")), 5);
	assert_string_equal(str(r, "markdown"), "# a\nb");
	json_decref(r);
	json_decref(data);
	/* an image that is not base64 is not passed off as one */
	static const char *const bad[] = { "not base64 !!", "QUJD\x01", "QUJ", "Q===", "QU=D",
					   "QUJD\u00e9" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *img = json_pack("{s:s}", "image/png", bad[i]);
		r = jupyter_map_result(img, 0);
		assert_null(json_object_get(r, "png"));
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(r, "extra"), "image/png")),
				    bad[i]);
		json_decref(r);
		json_decref(img);
	}
	/* control: base64 with line breaks and padding is one */
	json_t *img = json_pack("{s:s}", "image/jpeg", "QUJD\nRA==\n");
	r = jupyter_map_result(img, 0);
	assert_string_equal(str(r, "jpeg"), "QUJDRA==");
	json_decref(r);
	json_decref(img);
	json_t *three = json_integer(3);
	assert_null(jupyter_map_result(three, 0)); /* not an object */
	json_decref(three);
}

static void test_strip_ansi_and_error(void **state)
{
	(void)state;
	size_t n;
	const char *in = "\x1b[0;31mRed\x1b[0m \x1b]0;title\x07ok\x1b(B!";
	char *s = jupyter_strip_ansi(in, strlen(in), &n);
	assert_string_equal(s, "Red ok!");
	free(s);
	json_t *c = json_pack("{s:s, s:s, s:[s,s]}", "ename", "ValueError", "evalue", "bad",
			      "traceback", "\x1b[1;31mTraceback\x1b[0m", "ValueError: bad");
	json_t *e = jupyter_map_error(c);
	assert_string_equal(str(e, "name"), "ValueError");
	assert_string_equal(str(e, "value"), "bad");
	assert_string_equal(str(e, "traceback"), "Traceback\nValueError: bad");
	json_decref(e);
	json_decref(c);
	e = jupyter_map_error(json_object_get(NULL, "x"));
	assert_string_equal(str(e, "name"), "");
	json_decref(e);
}

/* --- the execution state machine -----------------------------------------*/

static struct jupyter_msg msg(const char *type, const char *parent, json_t *content)
{
	json_t *o = json_pack("{s:s, s:s, s:o}", "msg_type", type, "parent_id", parent,
			      "content", content);
	struct jupyter_msg m;
	assert_int_equal(jupyter_msg_from_json(o, &m), 0);
	json_decref(o);
	return m;
}

static int feed(struct jupyter_exec *x, const char *type, const char *parent, json_t *content)
{
	struct jupyter_msg m = msg(type, parent, content);
	int r = jupyter_exec_feed(x, &m);
	jupyter_msg_clear(&m);
	return r;
}

static void test_exec_sequence(void **state)
{
	(void)state;
	struct jupyter_exec x;
	assert_int_equal(jupyter_exec_init(&x, "req1", 1 << 20), 0);
	assert_int_equal(feed(&x, "status", "other", json_pack("{s:s}", "execution_state", "idle")), 0);
	assert_int_equal(feed(&x, "status", "req1", json_pack("{s:s}", "execution_state", "busy")), 1);
	feed(&x, "execute_input", "req1", json_pack("{s:i}", "execution_count", 7));
	feed(&x, "stream", "req1", json_pack("{s:s, s:s}", "name", "stdout", "text", "hi\n"));
	feed(&x, "display_data", "req1", json_pack("{s:{s:s}}", "data", "text/plain", "1"));
	feed(&x, "update_display_data", "req1", json_pack("{s:{s:s}}", "data", "text/plain", "x"));
	feed(&x, "execute_result", "req1", json_pack("{s:{s:s}, s:i}", "data", "text/plain", "2",
						     "execution_count", 7));
	/* Reply before idle: not complete until idle. */
	feed(&x, "execute_reply", "req1", json_pack("{s:s, s:i}", "status", "ok", "execution_count", 7));
	assert_false(jupyter_exec_complete(&x));
	feed(&x, "status", "req1", json_pack("{s:s}", "execution_state", "idle"));
	assert_true(jupyter_exec_complete(&x));

	json_t *evs = jupyter_exec_take_events(&x);
	assert_int_equal(json_array_size(evs), 3);
	assert_string_equal(str(json_array_get(evs, 0), "type"), "stdout");
	assert_string_equal(str(json_array_get(evs, 0), "text"), "hi\n");
	assert_false(json_is_true(json_object_get(json_array_get(evs, 1), "is_main_result")));
	assert_true(json_is_true(json_object_get(json_array_get(evs, 2), "is_main_result")));
	json_decref(evs);
	json_t *done = jupyter_exec_done(&x, 12, 0, NULL);
	assert_string_equal(str(done, "type"), "done");
	assert_int_equal(json_integer_value(json_object_get(done, "execution_count")), 7);
	assert_true(json_is_null(json_object_get(done, "error")));
	assert_int_equal(json_integer_value(json_object_get(done, "duration_ms")), 12);
	json_decref(done);
	jupyter_exec_clear(&x);
}

static void test_exec_error_idle_first_and_aborted(void **state)
{
	(void)state;
	struct jupyter_exec x;
	jupyter_exec_init(&x, "r", 1 << 20);
	feed(&x, "status", "r", json_pack("{s:s}", "execution_state", "idle"));
	assert_false(jupyter_exec_complete(&x));
	feed(&x, "error", "r", json_pack("{s:s, s:s, s:[s]}", "ename", "NameError", "evalue",
					 "name 'q' is not defined", "traceback", "tb"));
	feed(&x, "error", "r", json_pack("{s:s, s:s, s:[]}", "ename", "Second", "evalue", "",
					 "traceback"));
	feed(&x, "execute_reply", "r", json_pack("{s:s}", "status", "error"));
	assert_true(jupyter_exec_complete(&x));
	json_t *done = jupyter_exec_done(&x, 1, 0, NULL);
	json_t *err = json_object_get(done, "error");
	assert_string_equal(str(err, "name"), "NameError");
	assert_string_equal(str(err, "traceback"), "tb");
	assert_true(json_is_null(json_object_get(done, "execution_count")));
	json_decref(done);
	jupyter_exec_clear(&x);

	jupyter_exec_init(&x, "r2", 1 << 20);
	feed(&x, "execute_reply", "r2", json_pack("{s:s}", "status", "aborted"));
	done = jupyter_exec_done(&x, 1, 1, NULL);
	assert_string_equal(str(json_object_get(done, "error"), "name"), "ExecutionAborted");
	assert_true(json_is_true(json_object_get(done, "timed_out")));
	json_decref(done);
	jupyter_exec_clear(&x);
}

static void test_exec_output_cap(void **state)
{
	(void)state;
	struct jupyter_exec x;
	jupyter_exec_init(&x, "r", 10);
	feed(&x, "stream", "r", json_pack("{s:s, s:s}", "name", "stdout", "text", "12345"));
	feed(&x, "stream", "r", json_pack("{s:s, s:s}", "name", "stderr", "text", "abc\xC3\xA9xyz"));
	feed(&x, "stream", "r", json_pack("{s:s, s:s}", "name", "stdout", "text", "dropped"));
	feed(&x, "display_data", "r", json_pack("{s:{s:s}}", "data", "text/plain", "dropped"));
	json_t *evs = jupyter_exec_take_events(&x);
	assert_int_equal(json_array_size(evs), 3);
	assert_string_equal(str(json_array_get(evs, 0), "text"), "12345");
	/* 5 bytes of room: "abc" + the 2-byte é fits exactly. */
	assert_string_equal(str(json_array_get(evs, 1), "text"), "abc\xC3\xA9");
	assert_string_equal(str(json_array_get(evs, 1), "type"), "stderr");
	assert_non_null(strstr(str(json_array_get(evs, 2), "text"),
			       "[pandastack: output truncated at 10 bytes]"));
	json_decref(evs);
	jupyter_exec_clear(&x);

	/* Raw bytes (the fallback's fd output) are repaired, then capped. */
	jupyter_exec_init(&x, "r", 100);
	assert_int_equal(jupyter_exec_stream(&x, 0, "a\xFF" "b", 3), 0);
	evs = jupyter_exec_take_events(&x);
	assert_string_equal(str(json_array_get(evs, 0), "text"), "a\xEF\xBF\xBD" "b");
	json_decref(evs);
	jupyter_exec_clear(&x);
}

static void test_exec_big_stream_is_split(void **state)
{
	(void)state;
	size_t n = JUPYTER_STREAM_CHUNK * 2 + 10;
	char *big = malloc(n);
	memset(big, 'x', n);
	struct jupyter_exec x;
	jupyter_exec_init(&x, "r", n + 1);
	assert_int_equal(jupyter_exec_stream(&x, 0, big, n), 0);
	json_t *evs = jupyter_exec_take_events(&x);
	assert_int_equal(json_array_size(evs), 3);
	assert_int_equal(json_string_length(json_object_get(json_array_get(evs, 2), "text")), 10);
	json_decref(evs);
	jupyter_exec_clear(&x);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_repairs_invalid_utf8),
		cmocka_unit_test(test_json_keeps_valid_text),
		cmocka_unit_test(test_json_repairs_lone_surrogates_and_controls),
		cmocka_unit_test(test_json_keeps_nul),
		cmocka_unit_test(test_json_rejects_garbage),
		cmocka_unit_test(test_encode_parse_roundtrip),
		cmocka_unit_test(test_sign_known_vector),
		cmocka_unit_test(test_parse_unsigned_and_malformed),
		cmocka_unit_test(test_is_output),
		cmocka_unit_test(test_is_output_of),
		cmocka_unit_test(test_map_result_fields),
		cmocka_unit_test(test_map_text_quotes),
		cmocka_unit_test(test_map_wrong_types_go_to_extra),
		cmocka_unit_test(test_strip_ansi_and_error),
		cmocka_unit_test(test_exec_sequence),
		cmocka_unit_test(test_exec_error_idle_first_and_aborted),
		cmocka_unit_test(test_exec_output_cap),
		cmocka_unit_test(test_exec_big_stream_is_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
