/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the fuzz targets: read fixed-size fields from the
 * input, zero-filled once it runs out, so every input is usable. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "units.h"

struct fuzz_input {
	const uint8_t *data;
	size_t size, pos;
};

static inline void fuzz_take(struct fuzz_input *in, void *out, size_t n)
{
	size_t have = in->pos < in->size ? in->size - in->pos : 0;

	if (have > n)
		have = n;
	memcpy(out, in->data + in->pos, have);
	memset((uint8_t *)out + have, 0, n - have);
	in->pos += n;
}

static inline uint64_t fuzz_u64(struct fuzz_input *in)
{
	uint64_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_input *in)
{
	uint16_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint8_t fuzz_u8(struct fuzz_input *in)
{
	uint8_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

/* Limits as a config file could set them (max_ptes_* 0..511, pct 0..100). */
static inline void fuzz_limits(struct fuzz_input *in, unsigned *none, unsigned *swap, unsigned *shared, unsigned *pct)
{
	*none = fuzz_u16(in) % HPAGE_PAGES;
	*swap = fuzz_u16(in) % HPAGE_PAGES;
	*shared = fuzz_u16(in) % HPAGE_PAGES;
	*pct = fuzz_u16(in) % 101u;
}
