/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What one block's outcome makes the dispatcher do; the cases are listed in
 * dispatch_outcome.h. */
#include "dispatch_outcome.h"

double enomem_backoff_s(unsigned alloc_backoff_ms, unsigned streak)
{
	unsigned shift = streak ? streak - 1 : 0;

	if (shift > ENOMEM_BACKOFF_MAX_SHIFT)
		shift = ENOMEM_BACKOFF_MAX_SHIFT;
	return (double)alloc_backoff_ms / 1000.0 * (double)(1u << shift);
}

struct outcome_decision dispatch_outcome(const struct outcome_facts *f)
{
	struct outcome_decision d = {.fate = BLOCK_KEEP};

	switch (f->outcome) {
	case COLLAPSE_OK:
		d.collapsed = true;
		d.fate = BLOCK_DROP;
		break;
	case COLLAPSE_EINVAL:
		d.fate = BLOCK_REFUSED;
		break;
	case COLLAPSE_UNMAPPED:
	case COLLAPSE_STALE:
		d.fate = BLOCK_DROP;
		break;
	case COLLAPSE_EAGAIN:
	case COLLAPSE_EBUSY:
		if (!f->has_memo)
			break; /* nothing to count it in, nor to judge a retry by */
		d.count_eagain = true;
		d.eagain = (uint8_t)(f->eagain + 1); /* the memo's own width */
		/* The retry later in this pass is one of its eagain_retries. */
		d.retry = f->collect_retry && f->outcome == COLLAPSE_EAGAIN && d.eagain <= f->eagain_retries;
		break;
	case COLLAPSE_ENOMEM:
		/* This process only (its nodes may be full, or its own
		 * MADV_COLLAPSE loop moved the count); the block stays. */
		d.back_off = true;
		d.enomem_streak = f->enomem_streak < UINT8_MAX ? (uint8_t)(f->enomem_streak + 1) : UINT8_MAX;
		d.backoff_s = enomem_backoff_s(f->alloc_backoff_ms, d.enomem_streak);
		d.stop_pass = f->enomem_procs + 1 >= ENOMEM_PROCS_PER_PASS;
		break;
	case COLLAPSE_ESRCH:
		d.forget_process = true;
		break;
	case COLLAPSE_EPERM:
		d.missing_privilege = true;
		d.stop_pass = true;
		break;
	default: /* COLLAPSE_OTHER, COLLAPSE_NOT_TRIED: counted, nothing else */
		break;
	}
	return d;
}
