/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Block memos, and the refused and given-up sets of a process. */
#include "block_memo.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* The index of addr, or where it would go. */
static size_t addr_set_lower(const struct addr_set *set, uint64_t addr)
{
	size_t lo = 0, hi = set->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct addr_entry *addr_set_find(const struct addr_set *set, uint64_t addr)
{
	size_t i = addr_set_lower(set, addr);

	return i < set->n && set->v[i].addr == addr ? &set->v[i] : NULL;
}

bool addr_set_has(const struct addr_set *set, uint64_t addr)
{
	return addr_set_find(set, addr) != NULL;
}

static void addr_set_erase(struct addr_set *set, size_t i)
{
	memmove(&set->v[i], &set->v[i + 1], (set->n - i - 1) * sizeof(*set->v));
	set->n--;
}

void addr_set_add(struct addr_set *set, uint64_t addr, uint32_t tag, double now)
{
	size_t i = addr_set_lower(set, addr);

	if (i < set->n && set->v[i].addr == addr) {
		set->v[i].tag = tag;
		set->v[i].added = now;
		return;
	}
	if (set->n >= ADDR_SET_MAX) {
		/* Full: the oldest goes (it is merely tried again). O(n), and only
		 * for a process that was refused thousands of blocks. */
		size_t old = 0;

		for (size_t j = 1; j < set->n; j++)
			if (set->v[j].added < set->v[old].added)
				old = j;
		addr_set_erase(set, old);
		if (old < i)
			i--;
	}
	if (GROW(set->v, set->cap, set->n + 1) < 0)
		return;
	memmove(&set->v[i + 1], &set->v[i], (set->n - i) * sizeof(*set->v));
	set->v[i] = (struct addr_entry){.addr = addr, .added = now, .tag = tag};
	set->n++;
}

void addr_set_remove(struct addr_set *set, uint64_t addr)
{
	size_t i = addr_set_lower(set, addr);

	if (i < set->n && set->v[i].addr == addr)
		addr_set_erase(set, i);
}

void addr_set_expire(struct addr_set *set, double before)
{
	size_t w = 0;

	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].added >= before)
			set->v[w++] = set->v[i];
	set->n = w;
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

struct block_memo *block_memo_find(struct block_memo *b, size_t n, uint64_t addr)
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
 * block_memo_find() calls in the same pass must still find their blocks, or a
 * collapsed block stays a candidate and is submitted again every pass. */
#define MEMO_DROPPED 1u

void block_memo_drop(struct block_memo *b, size_t n, uint64_t addr)
{
	struct block_memo *m = block_memo_find(b, n, addr);

	if (m)
		m->addr |= MEMO_DROPPED; /* compacted after the pass */
}

void block_memo_compact(struct block_memo *b, size_t *n, struct addr_set *given_up, unsigned eagain_retries, double now)
{
	size_t w = 0;

	for (size_t i = 0; i < *n; i++) {
		const struct block_memo *m = &b[i];

		if (m->addr & MEMO_DROPPED)
			continue;
		if (m->eagain > eagain_retries)
			addr_set_add(given_up, m->addr, m->vma_tag, now);
		else
			b[w++] = *m;
	}
	*n = w;
}
