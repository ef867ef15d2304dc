/*
 * test_common_files.c - the small common helpers the engine and the daemon
 * share for files and records: SHA-256 as hex (common/sha256.c) against
 * FIPS 180-4's test vectors, string fields of untrusted JSON
 * (common/json_get.c) and the in-kernel file copy (util_copy_range).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/json_get.h"
#include "common/sha256.h"
#include "common/util.h"

static void test_sha256_vectors(void **state)
{
	(void)state;
	char hex[SHA256_HEX_LEN];
	assert_int_equal(sha256_hex("", 0, hex), 0);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_int_equal(sha256_hex("abc", 3, hex), 0);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* the same bytes fed in parts give the same digest */
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct sha256 h;
	assert_int_equal(sha256_init(&h), 0);
	sha256_update(&h, two, 10);
	sha256_update(&h, two + 10, 0);
	sha256_update(&h, two + 10, strlen(two) - 10);
	assert_int_equal(sha256_final_hex(&h, hex), 0);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	assert_null(h.ctx);
	/* a digest dropped before its end releases its state (ASan sees a leak) */
	assert_int_equal(sha256_init(&h), 0);
	sha256_update(&h, "x", 1);
	sha256_drop(&h);
	sha256_drop(&h);
}

static void test_json_get_str(void **state)
{
	(void)state;
	json_t *o = json_pack("{s:s, s:i, s:s#, s:s}", "name", "base", "n", 3, "nul", "a\0b",
			      (size_t)3, "long", "0123456789");
	assert_non_null(o);
	char out[8];
	assert_int_equal(json_get_str(o, "name", out, sizeof(out)), 0);
	assert_string_equal(out, "base");
	memcpy(out, "keep", 5);
	assert_int_equal(json_get_str(o, "missing", out, sizeof(out)), -EINVAL);
	assert_int_equal(json_get_str(o, "n", out, sizeof(out)), -EINVAL);
	assert_int_equal(json_get_str(o, "nul", out, sizeof(out)), -EINVAL);
	assert_int_equal(json_get_str(o, "long", out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "keep"); /* refused fields leave out alone */
	assert_int_equal(json_get_str(o, "long", out, 10), -EINVAL); /* no room for the NUL */
	char big[11];
	assert_int_equal(json_get_str(o, "long", big, sizeof(big)), 0);
	assert_string_equal(big, "0123456789");
	assert_int_equal(json_get_str(NULL, "name", out, sizeof(out)), -EINVAL);
	json_decref(o);
}

static void test_copy_range(void **state)
{
	(void)state;
	FILE *in = tmpfile(), *out = tmpfile();
	assert_non_null(in);
	assert_non_null(out);
	char data[200000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + i / 251);
	assert_int_equal(util_write_all(fileno(in), data, sizeof(data)), 0);
	assert_int_equal(lseek(fileno(in), 0, SEEK_SET), 0);
	assert_int_equal(util_copy_range(fileno(in), fileno(out), sizeof(data)), 0);
	char back[sizeof(data)];
	assert_int_equal(pread(fileno(out), back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, data, sizeof(data));
	/* asking for more than the source holds says so */
	assert_int_equal(lseek(fileno(in), 0, SEEK_SET), 0);
	assert_int_equal(util_copy_range(fileno(in), fileno(out), sizeof(data) + 1), -EIO);
	/* a bad descriptor is an errno, not a crash */
	assert_int_equal(util_copy_range(-1, fileno(out), 1), -EBADF);
	fclose(in);
	fclose(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_json_get_str),
		cmocka_unit_test(test_copy_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
