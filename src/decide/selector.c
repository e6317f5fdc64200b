/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The selector's state and its pass (selector.h). Pure. */
#include "selector.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

int selector_init(struct selector *s, const struct config *cfg)
{
	int r;

	memset(s, 0, sizeof(*s));
	budget_init(&s->budget);
	r = budget_configure(&s->budget, NULL, cfg);
	if (r < 0)
		budget_free(&s->budget);
	return r;
}

void selector_free(struct selector *s)
{
	free(s->cands);
	free(s->sel);
	budget_free(&s->budget);
	memset(s, 0, sizeof(*s));
}

int selector_configure(struct selector *s, const struct config *old, const struct config *cfg)
{
	return budget_configure(&s->budget, old, cfg);
}

int selector_order(struct selector *s, const struct selector_input *in, unsigned *procs_active,
		   const struct candidate **order, size_t *n)
{
	int r =
	    budget_candidates(&s->cands, &s->ncands, &s->capcands, in->st, in->nst, &in->filter, in->now, procs_active);

	*order = s->cands;
	*n = s->ncands;
	return r;
}

size_t selector_reselect(struct selector *s, const struct selector_input *in, const struct candidate *from, size_t n,
			 bool unlimited, const struct candidate **sel)
{
	s->nsel = 0;
	*sel = NULL;
	if (GROW(s->sel, s->capsel, n + 1) < 0)
		return 0; /* nothing selected: fail closed */
	memcpy(s->sel, from, n * sizeof(*from));
	s->nsel = budget_select(&s->budget, in->cfg, s->sel, n, in->st, unlimited);
	*sel = s->sel;
	return s->nsel;
}

size_t selector_select(struct selector *s, const struct selector_input *in, const struct candidate *from, size_t n,
		       bool unlimited, const struct candidate **sel)
{
	budget_refill(&s->budget, in->cfg, in->now);
	return selector_reselect(s, in, from, n, unlimited, sel);
}

void selector_charge(struct selector *s, const struct config *cfg, const struct policy *pol, double bytes)
{
	budget_charge(&s->budget, cfg, pol, bytes);
}

const struct candidate *selector_candidates(const struct selector *s, size_t *n)
{
	*n = s->ncands;
	return s->cands;
}
