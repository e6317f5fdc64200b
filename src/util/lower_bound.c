/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lower_bound.h"

#include <string.h>

size_t lower_bound_pid(const void *base, size_t n, size_t stride, size_t offset, pid_t pid)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		pid_t key;

		/* memcpy: base is an array of any struct, aligned for it. */
		memcpy(&key, b + mid * stride + offset, sizeof(key));
		if (key < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
