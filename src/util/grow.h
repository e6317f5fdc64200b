/* SPDX-License-Identifier: GPL-2.0-or-later */
/* grow: amortized growth of the arrays that are reused from pass to pass,
 * so that a steady-state pass allocates nothing. */
#pragma once
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes *p hold at least need elements of elem bytes, doubling from
 * at least 16. Returns 0 or -ENOMEM (then *p and *cap are unchanged). */
static inline int grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

#define GROW(arr, cap, need) grow_array((void **)&(arr), &(cap), (need), sizeof(*(arr)))
