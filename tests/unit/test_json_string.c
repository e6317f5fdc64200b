/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json_string() (report.c) and the UTF-8 validator behind it: escapes,
 * control bytes, and hostile byte strings that must still give valid JSON
 * (a comm or a cgroup name may hold any byte). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report.h"
#include "utf8.h"

static char *json(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	json_string(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect(const char *in, const char *want)
{
	char *got = json(in);

	if (strcmp(got, want) != 0)
		fail_msg("json_string(\"%s\"): got %s, want %s", in, got, want);
	assert_true(utf8_valid(got));
	free(got);
}

static void test_plain_and_escapes(void **state)
{
	(void)state;
	expect("", "\"\"");
	expect("hugecollapsed", "\"hugecollapsed\"");
	expect("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
	/* Every control byte and DEL as \u00XX: JSON allows no raw ones. */
	expect("\x01\t\n\r\x1f\x7f", "\"\\u0001\\u0009\\u000a\\u000d\\u001f\\u007f\"");
}

static void test_valid_utf8_kept(void **state)
{
	(void)state;
	expect("caf\xc3\xa9", "\"caf\xc3\xa9\"");           /* 2 bytes */
	expect("\xe2\x82\xac", "\"\xe2\x82\xac\"");         /* 3 bytes */
	expect("\xf0\x9f\x90\xa7", "\"\xf0\x9f\x90\xa7\""); /* 4 bytes */
	expect("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
	expect("\xef\xbf\xbd", "\"\xef\xbf\xbd\"");         /* U+FFFD itself */
	expect("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");         /* U+D7FF, before the surrogates */
}

/* Each byte that starts no valid sequence is one \ufffd. */
static void test_invalid_utf8_replaced(void **state)
{
	(void)state;
	expect("\xff", "\"\\ufffd\"");
	expect("a\x80z", "\"a\\ufffdz\"");                              /* lone continuation */
	expect("\xc0\xaf", "\"\\ufffd\\ufffd\"");                       /* overlong '/' */
	expect("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");            /* overlong, 3 bytes */
	expect("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");            /* surrogate U+D800 */
	expect("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* above U+10FFFF */
	expect("\xf5\xbf", "\"\\ufffd\\ufffd\"");
	expect("ab\xe2\x82", "\"ab\\ufffd\\ufffd\"");             /* cut at the end */
	expect("\xe2\x82\"", "\"\\ufffd\\ufffd\\\"\"");           /* cut by a quote */
	expect("\xc3\n", "\"\\ufffd\\u000a\"");                   /* cut by a control byte */
	expect("\xfe\xff\xc3\xa9", "\"\\ufffd\\ufffd\xc3\xa9\""); /* then a valid one */
}

static void test_utf8_seq_len(void **state)
{
	(void)state;
	assert_int_equal(utf8_seq_len("a"), 1);
	assert_int_equal(utf8_seq_len("\x7f"), 1);
	assert_int_equal(utf8_seq_len("\xc2\x80"), 2);
	assert_int_equal(utf8_seq_len("\xc1\xbf"), 0);
	assert_int_equal(utf8_seq_len("\xdf\xbf"), 2);
	assert_int_equal(utf8_seq_len("\xe0\xa0\x80"), 3);
	assert_int_equal(utf8_seq_len("\xe0\x9f\xbf"), 0);
	assert_int_equal(utf8_seq_len("\xed\x9f\xbf"), 3);
	assert_int_equal(utf8_seq_len("\xed\xa0\x80"), 0);
	assert_int_equal(utf8_seq_len("\xee\x80\x80"), 3);
	assert_int_equal(utf8_seq_len("\xf0\x90\x80\x80"), 4);
	assert_int_equal(utf8_seq_len("\xf0\x8f\xbf\xbf"), 0);
	assert_int_equal(utf8_seq_len("\xf4\x8f\xbf\xbf"), 4);
	assert_int_equal(utf8_seq_len("\xf4\x90\x80\x80"), 0);
	assert_int_equal(utf8_seq_len("\xf0\x90\x80"), 0); /* cut by the NUL */
	assert_int_equal(utf8_seq_len("\xf0\x90"), 0);
	assert_int_equal(utf8_seq_len("\xf0"), 0);
	assert_int_equal(utf8_seq_len("\xc2"), 0);
	/* The bounded form (config.c's line reader): no NUL needed, and a
	 * sequence cut by the end of the bytes is invalid. */
	assert_int_equal(utf8_seq_len_n("\xf0\x90\x80\x80", 4), 4);
	assert_int_equal(utf8_seq_len_n("\xf0\x90\x80\x80", 3), 0);
	assert_int_equal(utf8_seq_len_n("\xe0\xa0\x80", 2), 0);
	assert_int_equal(utf8_seq_len_n("\xc2\x80", 1), 0);
	assert_int_equal(utf8_seq_len_n("a\xc2", 1), 1);
	assert_int_equal(utf8_seq_len_n("\xed\xa0\x80", 3), 0);
	assert_true(utf8_valid(""));
	assert_true(utf8_valid("/system.slice/a\\x2db.service"));
	assert_false(utf8_valid("/a\xff"));
}

/* Every 1- and 2-byte string: the output is always valid UTF-8, starts and
 * ends with a quote, and holds no raw control byte. */
static void test_exhaustive_two_bytes(void **state)
{
	(void)state;
	for (int a = 1; a < 256; a++)
		for (int b = 0; b < 256; b++) {
			char in[3] = {(char)a, (char)b, 0};
			char *out = json(in);
			size_t n = strlen(out);

			assert_true(utf8_valid(out));
			assert_true(n >= 2 && out[0] == '"' && out[n - 1] == '"');
			for (size_t i = 0; i < n; i++)
				assert_true((unsigned char)out[i] >= 0x20 && out[i] != 0x7f);
			free(out);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_and_escapes),     cmocka_unit_test(test_valid_utf8_kept),
	    cmocka_unit_test(test_invalid_utf8_replaced), cmocka_unit_test(test_utf8_seq_len),
	    cmocka_unit_test(test_exhaustive_two_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
