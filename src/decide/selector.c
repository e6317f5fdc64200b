/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The selector's state and its pass (selector.h). Pure. */
#include "selector.h"

#include <stdlib.h>
#include <string.h>

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
	budget_free(&s->budget);
	memset(s, 0, sizeof(*s));
}

int selector_configure(struct selector *s, const struct config *old, const struct config *cfg)
{
	return budget_configure(&s->budget, old, cfg);
}

int selector_order(struct selector *s, const struct selector_input *in, unsigned *procs_active, struct selection *out)
{
	int r =
	    budget_candidates(&s->cands, &s->ncands, &s->capcands, in->st, in->nst, &in->filter, in->now, procs_active);

	*out = (struct selection){.v = s->cands, .n = &s->ncands};
	return r;
}

size_t selector_reselect(struct selector *s, const struct selector_input *in, bool unlimited)
{
	return budget_select(&s->budget, in->cfg, s->cands, s->ncands, in->st, unlimited);
}

size_t selector_select(struct selector *s, const struct selector_input *in, bool unlimited)
{
	budget_refill(&s->budget, in->cfg, in->now);
	return selector_reselect(s, in, unlimited);
}

const struct candidate *selector_candidates(const struct selector *s, size_t *n)
{
	*n = s->ncands;
	return s->cands;
}

struct budget *selector_budget(struct selector *s)
{
	return &s->budget;
}
