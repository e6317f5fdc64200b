/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_memory_stat_buf(): any bytes, in a buffer of exactly their
 * size (so ASan sees a read past the end). On success at least one of the
 * keys stands at the start of a line; on failure u is left untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coverage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_key(const char *buf, size_t len)
{
	static const char *const keys[] = {"anon ",      "anon_thp ",       "shmem_thp ",
					   "total_rss ", "total_rss_huge ", "total_shmem "};

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t n = strlen(keys[k]);

		for (size_t i = 0; i + n <= len; i++)
			if ((i == 0 || buf[i - 1] == '\n') && !memcmp(buf + i, keys[k], n))
				return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	struct thp_usage u = {.anon = 1, .anon_huge = 2, .shmem = 3, .shmem_huge = 4};
	int r;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	r = parse_memory_stat_buf(buf, size, &u);
	if (r == 0 && !has_key(buf, size))
		abort();
	if (r < 0 && (u.anon != 1 || u.anon_huge != 2 || u.shmem != 3 || u.shmem_huge != 4))
		abort();
	(void)thp_usage_ratio(&u);
	free(buf);
	return 0;
}
