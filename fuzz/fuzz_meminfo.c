/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_meminfo_buf(): any bytes, in a buffer of exactly their size
 * (so ASan sees a read past the end). On success both fields must stand at
 * the start of a line and the sum must fit what 18 digits each allow. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapped_memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool at_line_start(const char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i + n <= len; i++)
		if ((i == 0 || buf[i - 1] == '\n') && !memcmp(buf + i, name, n))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	uint64_t kb = 0;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	if (parse_meminfo_buf(buf, size, &kb) == 0) {
		if (!at_line_start(buf, size, "AnonPages:") || !at_line_start(buf, size, "Mapped:"))
			abort();
		if (kb > UINT64_C(1999999999999999998))
			abort();
	}
	free(buf);
	return 0;
}
