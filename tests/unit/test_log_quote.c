/*
 * test_log_quote.c - log_quote (src/common/log.c): a value from outside
 * (a guest's complaint, a client's header) becomes one quoted UTF-8 token:
 * quotes and backslashes escaped, controls and bytes that are not
 * well-formed UTF-8 replaced by '?', cut without splitting a character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/utf8.h"

static void quoted(void **state)
{
	(void)state;
	char out[64];
	assert_string_equal(log_quote("plain text", out, sizeof(out)), "\"plain text\"");
	assert_string_equal(log_quote("a\"b\\c", out, sizeof(out)), "\"a\\\"b\\\\c\"");
	assert_string_equal(log_quote("x\ny\r\x1b[2J\x7f", out, sizeof(out)), "\"x?y??[2J?\"");
	assert_string_equal(log_quote(NULL, out, sizeof(out)), "\"\"");
	/* well-formed UTF-8 is kept (the control: it is not all replaced) */
	assert_string_equal(log_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xbc", out, sizeof(out)),
			    "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xbc\"");
}

static void invalid_utf8_becomes_question_marks(void **state)
{
	(void)state;
	char out[64];
	/* lone bytes, an overlong form, a surrogate, a cut sequence at the end */
	log_quote("a\xff\xfe" "b\xc0\xaf" "c\xed\xa0\x80" "d\xe2\x82", out, sizeof(out));
	assert_true(utf8_valid(out, strlen(out)));
	assert_non_null(strchr(out, 'a'));
	assert_non_null(strchr(out, 'd'));
	assert_null(strchr(out, '\xff'));
	assert_int_equal(out[strlen(out) - 1], '"');
}

static void cut_without_splitting(void **state)
{
	(void)state;
	char big[400];
	size_t n = 0;
	while (n + 3 < sizeof(big) - 1) {
		memcpy(big + n, "\xe2\x82\xac", 3); /* the euro sign */
		n += 3;
	}
	big[n] = '\0';
	for (size_t cap = 3; cap < 40; cap++) {
		char out[40];
		log_quote(big, out, cap);
		size_t len = strlen(out);
		assert_true(len < cap);
		assert_true(len >= 2 && out[0] == '"' && out[len - 1] == '"');
		assert_true(utf8_valid(out, len));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quoted),
		cmocka_unit_test(invalid_utf8_becomes_question_marks),
		cmocka_unit_test(cut_without_splitting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
