/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one number formatter of the JSON outputs. */
#include "json_number.h"

#include <math.h>
#include <string.h>

/* Integers print exactly up to here (a double's %.0f is its exact value);
 * beyond, as JavaScript does, with an exponent. */
#define PLAIN_MAX 1e21

static size_t put(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (!len)
		return 0;
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return n;
}

/* "1.2300" -> "1.23", "2.000" -> "2"; "-0" -> "0". */
static void trim(char *s)
{
	char *dot = strchr(s, '.'), *end;

	if (dot) {
		end = s + strlen(s);
		while (end > dot + 1 && end[-1] == '0')
			*--end = '\0';
		if (end == dot + 1)
			*dot = '\0';
	}
	if (!strcmp(s, "-0"))
		memmove(s, s + 1, 2);
}

size_t format_number(char *buf, size_t len, double v, unsigned sig)
{
	char tmp[64];
	int decimals;

	if (!isfinite(v))
		return put(buf, len, "null");
	if (sig < 1)
		sig = 1;
	if (sig > 17)
		sig = 17;
	if (v == 0)
		return put(buf, len, "0");
	if (fabs(v) >= PLAIN_MAX) {
		snprintf(tmp, sizeof(tmp), "%.*g", (int)sig, v);
		return put(buf, len, tmp);
	}
	if (v == trunc(v)) {
		snprintf(tmp, sizeof(tmp), "%.0f", v);
		return put(buf, len, tmp);
	}
	/* The first significant digit's place: 10^mag <= |v| < 10^(mag+1). */
	decimals = (int)sig - 1 - (int)floor(log10(fabs(v)));
	if (decimals < 0) {
		double unit = pow(10, -decimals);

		snprintf(tmp, sizeof(tmp), "%.0f", round(v / unit) * unit);
	} else {
		/* Below 1e-20 the digits are noise for every value we print. */
		snprintf(tmp, sizeof(tmp), "%.*f", decimals > 20 ? 20 : decimals, v);
	}
	trim(tmp);
	return put(buf, len, tmp);
}

void json_number(FILE *f, double v, unsigned sig)
{
	char buf[JSON_NUMBER_MAX];

	format_number(buf, sizeof(buf), v, sig);
	fputs(buf, f);
}
