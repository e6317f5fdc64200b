/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bounded, stable choice of groups with series of their own. */
#include "series_keep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct series_item *sort_items; /* qsort has no context argument */

/* Larger first, then by name: the same input gives the same order. */
static int cmp_size(const void *a, const void *b)
{
	const struct series_item *x = &sort_items[*(const size_t *)a], *y = &sort_items[*(const size_t *)b];

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool remembered(const struct series_keep *k, const char *name)
{
	for (size_t i = 0; k && i < k->n; i++)
		if (!strcmp(k->names[i], name))
			return true;
	return false;
}

/* Would "big" take the place of "small"? (Overflow-safe.) */
static bool displaces(uint64_t big, uint64_t small)
{
	return small < UINT64_MAX / SERIES_KEEP_FACTOR ? big > small * SERIES_KEEP_FACTOR : false;
}

static int remember(struct series_keep *k, const struct series_item *it, const size_t *order, size_t n, const bool *own)
{
	size_t m = 0;
	char **names;

	for (size_t i = 0; i < n; i++)
		m += own[order[i]];
	names = calloc(m ? m : 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	m = 0;
	for (size_t i = 0; i < n; i++) {
		if (!own[order[i]])
			continue;
		names[m] = strdup(it[order[i]].name);
		if (!names[m]) {
			while (m)
				free(names[--m]);
			free(names);
			return -ENOMEM;
		}
		m++;
	}
	series_keep_free(k);
	k->names = names;
	k->n = m;
	return 0;
}

int series_keep_select(struct series_keep *k, unsigned top_n, const struct series_item *it, size_t n, bool *own)
{
	size_t *order = NULL, nother = 0, kept = 0;
	bool other = k && k->other;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		own[i] = it[i].policy;
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM; /* own[]: the policy groups only */
	for (size_t i = 0; i < n; i++)
		if (!it[i].policy)
			order[nother++] = i;
	sort_items = it;
	if (nother > 1)
		qsort(order, nother, sizeof(*order), cmp_size);
	/* 1. Those that had their own series keep it, the largest first if
	 *    top_n went down (a reload). */
	for (size_t i = 0; i < nother && kept < top_n; i++)
		if (remembered(k, it[order[i]].name)) {
			own[order[i]] = true;
			kept++;
		}
	/* 2. Free places to the largest of the rest. */
	for (size_t i = 0; i < nother && kept < top_n; i++)
		if (!own[order[i]]) {
			own[order[i]] = true;
			kept++;
		}
	/* 3. An outsider far larger than the smallest member takes its place:
	 *    the largest outsiders against the smallest members, pairwise. */
	for (size_t out = 0, in = nother; kept;) {
		while (out < nother && own[order[out]])
			out++;
		while (in > 0 && !own[order[in - 1]])
			in--;
		if (out >= nother || in == 0 || out > in - 1 || !displaces(it[order[out]].size, it[order[in - 1]].size))
			break;
		own[order[out]] = true;
		own[order[in - 1]] = false;
	}
	for (size_t i = 0; i < nother; i++)
		other |= !own[order[i]];
	if (k && remember(k, it, order, nother, own) < 0)
		r = -ENOMEM;
	else if (k)
		k->other = other;
	free(order);
	return r;
}

void series_keep_free(struct series_keep *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->names[i]);
	free(k->names);
	k->names = NULL;
	k->n = 0;
}
