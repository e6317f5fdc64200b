/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json_number: numbers in JSON output as people read them, and the schema
 * versions of the JSON documents (hugecollapsed(8), JSON OUTPUT).
 *
 * One formatter for every JSON writer (report.c: --once --json, with or
 * without --dry-run; status.c: --status --json): an integral value prints
 * as an integer, exactly (byte counts); any other with at most `sig`
 * significant digits and no trailing zeros (2/3 at 3 digits: 0.667, not
 * 0.66666700000000001); NaN and infinities, which JSON cannot hold, as
 * null. Never an exponent below 1e21. Pure. */
#pragma once
#include <stddef.h>
#include <stdio.h>

/* Bumped when a field changes meaning or goes away; new fields do not bump
 * it. Each document has its own. */
#define REPORT_JSON_SCHEMA_VERSION 1 /* --once --json, --once --dry-run --json */
#define STATUS_JSON_SCHEMA_VERSION 1 /* --status --json */

/* Significant digits by kind. */
#define JSON_SIG_RATIO   3 /* coverage 0.667 */
#define JSON_SIG_SECONDS 6 /* microseconds of a second-long pass */
#define JSON_SIG_SCORE   4

/* Writes v into buf (at least JSON_NUMBER_MAX bytes are enough for any
 * value), always NUL-terminated. Returns the length written. sig is
 * clamped to 1..17. */
#define JSON_NUMBER_MAX 40
size_t format_number(char *buf, size_t len, double v, unsigned sig);

/* format_number() to f. */
void json_number(FILE *f, double v, unsigned sig);
