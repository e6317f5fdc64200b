/* SPDX-License-Identifier: GPL-2.0-or-later */
/* collapse_effects: what one round of collapses (collapse_selected(),
 * dispatch.h) changes of the processes it called, as the dispatcher's
 * output, and the one place that applies it to the process table.
 *
 * The dispatcher only reads struct proc_state: what its outcomes make of a
 * process (its blocks forgotten, its ENOMEM streak and back-off, its THP
 * usage read again after a collapse) and of a block (dropped, refused,
 * its EAGAIN count) comes back here, and engine.c applies it after each
 * round (the first, then the EAGAIN retry, which sees what the first one
 * changed). The blocks, the refused set and the usage are what the scanner
 * found (rescan.c), so this lives on its side. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thp_usage.h"

struct proc_state;

/* One process the round called (or tried to: its pidfd, its policy). */
struct proc_effect {
	uint32_t proc; /* index into the table the round was given */
	/* Its blocks are gone (nblocks 0): it moved under a policy that says
	 * no, it is not the process scanned, or an outcome forgot it. Applied
	 * after its blocks' effects. */
	bool forget;
	bool usage_set; /* usage: its smaps read again after a collapse */
	struct thp_usage usage;
	/* Its new ENOMEM streak and back-off (as they were if nothing
	 * changed them: proc_state.enomem_streak, backoff_until). */
	uint8_t enomem_streak;
	double backoff_until;
};

/* One block of a call, in the order the outcomes were read. */
struct block_effect {
	uint32_t proc;
	uint64_t addr;
	bool drop;        /* block_memo_drop(): collapsed, refused or gone */
	bool refused;     /* EINVAL: into proc_state.refused, while its VMA stays */
	uint32_t vma_tag; /* of its memo (0: none), for refused */
	double refused_at;
	bool set_eagain; /* its memo's EAGAIN count is now eagain */
	uint8_t eagain;
};

/* A round's effects: procs[0..nprocs) and blocks[0..nblocks), in buffers
 * the dispatcher owns (dispatch_reserve()). */
struct collapse_effects {
	struct proc_effect *procs;
	size_t nprocs;
	struct block_effect *blocks;
	size_t nblocks;
};

/* Applies fx to st[0..nst), the table the round was given: first each
 * block's effect in order, then each process's. */
void collapse_effects_apply(struct proc_state *st, size_t nst, const struct collapse_effects *fx);
