/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_swaps_buf(): any bytes, in a buffer of exactly their size
 * (so ASan sees a read past the end). The count can never exceed the
 * number of newlines after the header line plus one. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lazyfree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	int lines = 1;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	for (size_t i = 0; i < size; i++)
		lines += buf[i] == '\n';
	int n = parse_swaps_buf(buf, size);
	if (n < 0 && n != -EINVAL)
		abort();
	if (n > lines)
		abort();
	free(buf);
	return 0;
}
