/* text_escape: control characters of comm and cgroup names never reach the
 * terminal raw (issue 16); valid UTF-8 passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "text_escape.h"

static void test_escape(void **state)
{
	char out[TEXT_ESCAPE_SIZE(64)];

	(void)state;
	assert_string_equal(text_escape("bash", out, sizeof(out)), "bash");
	/* ESC [ 2 J (clear screen), BEL, newline, tab, DEL. */
	assert_string_equal(text_escape("\x1b[2Jx\a\n\t\x7f", out, sizeof(out)), "\\x1b[2Jx\\x07\\x0a\\x09\\x7f");
	assert_string_equal(text_escape("a\\b", out, sizeof(out)), "a\\x5cb");
	/* C1 CSI (U+009B) escaped; U+00A0 and other valid UTF-8 kept. */
	assert_string_equal(text_escape("\xc2\x9b"
					"2J",
					out, sizeof(out)),
			    "\\xc2\\x9b2J");
	assert_string_equal(text_escape("caf\xc3\xa9 \xc2\xa0", out, sizeof(out)), "caf\xc3\xa9 \xc2\xa0");
	/* Invalid UTF-8: each byte escaped. */
	assert_string_equal(text_escape("\xff\xfe", out, sizeof(out)), "\\xff\\xfe");
	/* The worst case fits TEXT_ESCAPE_SIZE. */
	char ctl[17];
	memset(ctl, 0x1b, 16);
	ctl[16] = 0;
	text_escape(ctl, out, TEXT_ESCAPE_SIZE(16));
	assert_int_equal(strlen(out), 64);
	/* Cut at a whole escape, never in one. */
	assert_string_equal(text_escape("ab\x1b", out, 6), "ab");
	assert_string_equal(text_escape("x", out, 1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_escape)};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
