/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_vmstat_buf(): any bytes, in a buffer of exactly their size
 * (so ASan sees a read past the end). On success the key must stand at the
 * start of a line, and the value must print back as the digits after it. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY "thp_collapse_alloc_failed "

/* The first line that starts with KEY, or NULL. */
static const char *key_line(const char *buf, size_t len)
{
	size_t n = strlen(KEY);

	for (size_t i = 0; i + n <= len; i++)
		if ((i == 0 || buf[i - 1] == '\n') && !memcmp(buf + i, KEY, n))
			return buf + i;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	uint64_t v = 0;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	if (parse_vmstat_buf(buf, size, &v) == 0) {
		const char *line = key_line(buf, size);
		char digits[32];
		int n;

		if (!line)
			abort();
		n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
		line += strlen(KEY);
		/* The digits may have leading zeros; the tail must match. */
		size_t rest = size - (size_t)(line - buf), len = 0;
		while (len < rest && line[len] != '\n')
			len++;
		if (len < (size_t)n || memcmp(line + len - (size_t)n, digits, (size_t)n))
			abort();
	}
	free(buf);
	return 0;
}
