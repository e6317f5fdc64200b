/* SPDX-License-Identifier: GPL-2.0-or-later */
/* format_number() (json_number.c), the one formatter of the JSON outputs:
 * values as people read them, exact integers, valid JSON for hostile
 * values (NaN, infinities, -0, huge and tiny), and a buffer never overrun. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_number.h"

static void expect(double v, unsigned sig, const char *want)
{
	char buf[JSON_NUMBER_MAX];
	size_t n = format_number(buf, sizeof(buf), v, sig);

	if (strcmp(buf, want) != 0)
		fail_msg("format_number(%.17g, %u) = \"%s\", want \"%s\"", v, sig, buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_readable(void **state)
{
	(void)state;
	expect(2.0 / 3, JSON_SIG_RATIO, "0.667");
	expect(0.666667, JSON_SIG_RATIO, "0.667"); /* what the metrics file holds */
	expect(0.5, JSON_SIG_RATIO, "0.5");
	expect(0.1, JSON_SIG_SECONDS, "0.1"); /* not 0.10000000000000001 */
	expect(0.000123456789, JSON_SIG_SECONDS, "0.000123457");
	expect(1.5e-3, JSON_SIG_SECONDS, "0.0015");
	expect(12.3456789, JSON_SIG_SECONDS, "12.3457");
	expect(0.99996, JSON_SIG_RATIO, "1"); /* rounding carries into a new digit */
	expect(9.9996, JSON_SIG_RATIO, "10");
	expect(-0.25, JSON_SIG_RATIO, "-0.25");
	expect(123456.789, 3, "123000"); /* fewer digits than the integer part */
	expect(-98765.4321, 2, "-99000");
}

static void test_integers_exact(void **state)
{
	(void)state;
	expect(0, 3, "0");
	expect(-0.0, 3, "0");
	expect(1, 3, "1");
	expect(67108864, JSON_SIG_RATIO, "67108864");      /* bytes keep every digit */
	expect(9007199254740993.0, 3, "9007199254740992"); /* 2^53 + 1 as a double */
	expect(18446744073709551615.0, 3, "18446744073709551616");
	expect(-4294967296.0, 1, "-4294967296");
	expect(1e21, 6, "1e+21");
	expect(-1.5e300, 4, "-1.5e+300");
	expect(DBL_MAX, 17, "1.7976931348623157e+308");
}

static void test_hostile(void **state)
{
	char buf[JSON_NUMBER_MAX], small[4];

	(void)state;
	expect(NAN, 3, "null");
	expect(-NAN, 3, "null");
	expect(INFINITY, 3, "null");
	expect(-INFINITY, 3, "null");
	expect(1e-300, 6, "0"); /* below 1e-20 */
	expect(DBL_MIN / 2, 6, "0");
	expect(-1e-25, 6, "0");
	expect(1.23456789e-19, 3, "0.00000000000000000012");
	/* sig out of range is clamped, not trusted. */
	expect(2.0 / 3, 0, "0.7");
	expect(2.0 / 3, 1000, "0.66666666666666663");
	/* A short buffer is cut, and still terminated. */
	memset(small, 'x', sizeof(small));
	assert_int_equal(format_number(small, sizeof(small), 2.0 / 3, 6), 3);
	assert_string_equal(small, "0.6");
	assert_int_equal(format_number(buf, 0, 1, 3), 0);
	/* Every output fits JSON_NUMBER_MAX, over many magnitudes and signs. */
	for (int e = -330; e <= 308; e++)
		for (int sign = -1; sign <= 1; sign += 2) {
			double v = sign * 1.2345678901234567 * pow(10, e);

			assert_true(format_number(buf, sizeof(buf), v, 17) < sizeof(buf) - 1);
		}
}

static void test_json_number_writes(void **state)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	assert_non_null(f);
	json_number(f, 2.0 / 3, JSON_SIG_RATIO);
	fputc(',', f);
	json_number(f, NAN, JSON_SIG_RATIO);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(out, "0.667,null");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_readable),
	    cmocka_unit_test(test_integers_exact),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_json_number_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
