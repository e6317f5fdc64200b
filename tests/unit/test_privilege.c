/* SPDX-License-Identifier: GPL-2.0-or-later */
/* privilege: parse_cap_eff() on a real /proc/PID/status capture and on
 * malformed CapEff lines; check_privileges() on this process. */
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

#include "privilege.h"

#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

static int parse(const char *s, uint64_t *caps)
{
	*caps = SENTINEL;
	return parse_cap_eff(s, strlen(s), caps);
}

static void test_real_capture(void **state)
{
	char buf[8192];
	FILE *f = fopen(HC_FIXTURES "/proc/real/status", "r");
	size_t n;
	uint64_t caps = 0;

	(void)state;
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(parse_cap_eff(buf, n, &caps), 0);
	assert_int_equal(caps, UINT64_C(0x000001fffeffffff));
	assert_true(caps >> HC_CAP_SYS_ADMIN & 1);
}

static void test_forms(void **state)
{
	uint64_t c;

	(void)state;
	assert_int_equal(parse("CapEff:\t0000000000000000\n", &c), 0);
	assert_int_equal(c, 0);
	/* Any blanks, any case, no final newline, fewer digits. */
	assert_int_equal(parse("Name:\tx\nCapEff:  \t 1FfFfFfFfFf", &c), 0);
	assert_int_equal(c, UINT64_C(0x1ffffffffff));
	assert_int_equal(parse("CapEff:\tffffffffffffffff\n", &c), 0);
	assert_int_equal(c, UINT64_MAX);
	/* The first CapEff line counts. */
	assert_int_equal(parse("CapEff:\t1\nCapEff:\t2\n", &c), 0);
	assert_int_equal(c, 1);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n\n",
	    "CapPrm:\tffffffffffffffff\n",  /* another set */
	    "CapEff:\n",                    /* no value */
	    "CapEff:\t\n",                  /* only blanks */
	    "CapEff:",                      /* cut after the key */
	    "CapEff:\t-1\n",                /* strtoull: every capability */
	    "CapEff:\t+1\n",                /* a sign */
	    "CapEff:\t0x1f\n",              /* a prefix */
	    "CapEff:\t1ffffffffffffffff\n", /* 17 digits: overflow */
	    "CapEff:\t00000000000000001\n", /* 17 digits, small value */
	    "CapEff:\t1fg\n",               /* not hex */
	    "CapEff:\t1f \n",               /* trailing blank */
	    "CapEff:\t1f\r\n",              /* CRLF */
	    "CapEff:\t1 2\n",               /* two words */
	    "capeff:\t1\n",                 /* the key is case-sensitive */
	    "CapEffective:\t1\n",           /* a longer key */
	    "XCapEff:\t1\n",                /* not at the line start */
	    "Name:\tCapEff:\t1\n",          /* mid-line */
	    "CapEff :\t1\n",                /* a space before the colon */
	    "CapEff:\t\xff\xfe\n",          /* bytes that are not text */
	};
	uint64_t c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &c) != -EINVAL)
			fail_msg("accepted case %zu: %s", i, bad[i]);
		assert_int_equal(c, SENTINEL); /* untouched on failure */
	}
}

/* A NUL inside the value ends nothing: the length bounds the parse. */
static void test_nul_in_value(void **state)
{
	static const char buf[] = "CapEff:\t1f\0ff\n";
	uint64_t c = SENTINEL;

	(void)state;
	assert_int_equal(parse_cap_eff(buf, sizeof(buf) - 1, &c), -EINVAL);
	assert_int_equal(c, SENTINEL);
	/* And nothing past len is read: the line is cut at 10 bytes. */
	assert_int_equal(parse_cap_eff(buf, 10, &c), 0);
	assert_int_equal(c, 0x1f);
}

/* Root here (the suite runs as root) has every capability it needs. */
static void test_check_privileges_here(void **state)
{
	char msg[512];

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	assert_int_equal(check_privileges(true, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_capture),
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_nul_in_value),
	    cmocka_unit_test(test_check_privileges_here),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
