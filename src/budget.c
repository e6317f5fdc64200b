/* Candidates, the budget, and the selection within it. Pure. */
#include "budget.h"

#include "config.h"
#include "grow.h"

#define MIB (1024.0 * 1024.0)

bool pid_filter_match(const struct pid_filter *f, pid_t pid)
{
	if (pid == f->self)
		return false;
	if (!f->npids)
		return true;
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}

int budget_candidates(struct candidate **cands, size_t *ncands, size_t *capcands, const struct proc_state *st,
		      size_t nst, const struct pid_filter *f, double now, unsigned *procs_active)
{
	*ncands = 0;
	for (size_t i = 0; i < nst; i++) {
		const struct proc_state *s = &st[i];
		const struct policy *pol = s->policy;
		bool active;

		if (!pol || !pol->enable || !pid_filter_match(f, s->pid))
			continue;
		active = now - s->last_active <= pol->idle_after_s;
		if (procs_active)
			*procs_active += active;
		if (GROW(*cands, *capcands, *ncands + s->nblocks) < 0)
			return -ENOMEM;
		for (size_t j = 0; j < s->nblocks; j++) {
			const struct block_memo *m = &s->blocks[j];
			struct candidate *c = &(*cands)[(*ncands)++];

			c->addr = m->addr;
			c->proc = (uint32_t)i;
			c->present = m->present;
			if (now - m->first_seen >= pol->max_wait_s) {
				/* Aged blocks go first, oldest first: FIFO bounds the wait. */
				c->tier = TIER_AGED;
				c->score = now - m->first_seen;
			} else {
				c->tier = active ? TIER_ACTIVE : TIER_IDLE;
				c->score = candidate_score(pol->weight, &s->activity, m->referenced_pct, m->present);
			}
		}
	}
	plan_order(*cands, *ncands);
	return 0;
}

/* Per-policy spending within one pass (rules may cap their subtree). */
struct spend {
	const struct policy *pol;
	double bytes;
};

static bool within_budget(struct spend *sp, size_t *nsp, size_t cap, const struct policy *pol, double *global,
			  double global_budget, double scale)
{
	size_t i;

	if (*global + HPAGE_SIZE > global_budget)
		return false;
	for (i = 0; i < *nsp && sp[i].pol != pol; i++)
		;
	if (i == *nsp) {
		if (*nsp == cap)
			return false;
		sp[(*nsp)++] = (struct spend){pol, 0};
	}
	if (sp[i].bytes + HPAGE_SIZE > pol->budget_mb_per_s * MIB * scale)
		return false;
	sp[i].bytes += HPAGE_SIZE;
	*global += HPAGE_SIZE;
	return true;
}

size_t budget_select(struct candidate *cands, size_t ncands, const struct proc_state *st, double global_mb_per_s,
		     double scale, bool unlimited)
{
	double global = 0, global_budget;
	struct spend sp[64];
	size_t nsp = 0, nsel = 0;

	global_budget = unlimited ? 1e300 : global_mb_per_s * MIB * scale;
	for (size_t i = 0; i < ncands; i++) {
		struct candidate c = cands[i];

		if (unlimited || within_budget(sp, &nsp, 64, st[c.proc].policy, &global, global_budget, scale))
			cands[nsel++] = c;
		else if (global + HPAGE_SIZE > global_budget)
			break;
	}
	return nsel;
}
