/* Block memos, and the refused and given-up sets of a process. */
#include "block_memo.h"

#include <stdlib.h>

#include "grow.h"

bool addr_set_has(const struct addr_set *set, uint64_t addr)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i] == addr)
			return true;
	return false;
}

void addr_set_add(struct addr_set *set, uint64_t addr)
{
	if (GROW(set->v, set->cap, set->n + 1) == 0)
		set->v[set->n++] = addr;
}

void addr_set_clear(struct addr_set *set)
{
	set->n = 0;
}

void addr_set_free(struct addr_set *set)
{
	free(set->v);
	set->v = NULL;
	set->n = set->cap = 0;
}

struct block_memo *memo_find(struct block_memo *b, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid].addr == addr)
			return &b[mid];
		if (b[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Blocks are 2 MiB-aligned, so bit 0 of a memo's address is free to mark it
 * dropped. Unlike overwriting the address, it keeps the array sorted: later
 * memo_find() calls in the same pass must still find their blocks, or a
 * collapsed block stays a candidate and is submitted again every pass. */
#define MEMO_DROPPED 1u

void drop_memo(struct block_memo *b, size_t n, uint64_t addr)
{
	struct block_memo *m = memo_find(b, n, addr);

	if (m)
		m->addr |= MEMO_DROPPED; /* compacted after the pass */
}

void compact_memos(struct block_memo *b, size_t *n, struct addr_set *given_up, unsigned eagain_retries)
{
	size_t w = 0;

	for (size_t i = 0; i < *n; i++) {
		const struct block_memo *m = &b[i];

		if (m->addr & MEMO_DROPPED)
			continue;
		if (m->eagain > eagain_retries)
			addr_set_add(given_up, m->addr);
		else
			b[w++] = *m;
	}
	*n = w;
}
