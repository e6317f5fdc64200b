/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Applying a round of collapses' effects to the process table. */
#include "collapse_effects.h"

#include "block_memo.h"
#include "proc_state.h"

void collapse_effects_apply(struct proc_state *st, size_t nst, const struct collapse_effects *fx)
{
	for (size_t i = 0; i < fx->nblocks; i++) {
		const struct block_effect *b = &fx->blocks[i];
		struct proc_state *s;

		if (b->proc >= nst) /* not of this table */
			continue;
		s = &st[b->proc];
		if (b->refused)
			addr_set_add(&s->refused, b->addr, b->vma_tag, b->refused_at);
		if (b->drop)
			block_memo_drop(s->blocks, s->nblocks, b->addr);
		if (b->set_eagain) {
			struct block_memo *m = block_memo_find(s->blocks, s->nblocks, b->addr);

			if (m)
				m->eagain = b->eagain;
		}
	}
	for (size_t i = 0; i < fx->nprocs; i++) {
		const struct proc_effect *p = &fx->procs[i];
		struct proc_state *s;

		if (p->proc >= nst)
			continue;
		s = &st[p->proc];
		s->enomem_streak = p->enomem_streak;
		s->backoff_until = p->backoff_until;
		if (p->usage_set)
			s->usage = p->usage;
		if (p->forget)
			s->nblocks = 0;
	}
}
