/* SPDX-License-Identifier: GPL-2.0-or-later */
/* collapse: batched process_madvise(MADV_COLLAPSE) through a pidfd.
 *
 * Each process_madvise() call drains the LRU caches once
 * (lru_add_drain_all()), so blocks are submitted in batches of up to
 * COLLAPSE_MAX_IOV iovecs, one 2 MiB block per iovec so that each block's
 * outcome is known. The kernel returns the bytes of the iovecs it completed;
 * the errno of the first failed one is learned by submitting again from it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "madvise_call.h" /* enum collapse_outcome, process_madvise_fn */

/* UIO_MAXIOV is 1024, but the total must stay below MAX_RW_COUNT
 * (INT_MAX & PAGE_MASK): 1024 × 2 MiB is exactly 2 GiB, one too many. */
#define COLLAPSE_MAX_IOV 1023

const char *collapse_outcome_name(enum collapse_outcome o); /* "collapsed", "eagain", … */
enum collapse_outcome collapse_outcome_from_errno(int err);

/* Reads the kernel's count of failed huge page allocations for collapse
 * (vmstat.h: thp_collapse_alloc_failed). Returns 0 or -errno. */
typedef int (*alloc_failed_fn)(void *ctx, uint64_t *count);

/* How collapse_blocks_io() spreads a process's blocks over calls. The
 * kernel holds the target's mmap lock for a whole call, so the target's
 * own faults and mmaps can stall for up to one call's time: fewer blocks
 * per call and a pause between calls bound that stall. */
struct collapse_pacing {
	unsigned per_call;             /* blocks per call, 1..COLLAPSE_MAX_IOV; 0: COLLAPSE_MAX_IOV */
	unsigned pause_ms;             /* between two calls; 0: none */
	double deadline;               /* no call starts at or after it (now()); 0: none */
	double (*now)(void);           /* monotonic seconds; NULL: calls not timed */
	void (*sleep_ms)(unsigned ms); /* NULL: nanosleep() */
	bool (*interrupted)(void);     /* asked before each call but the first; NULL: never */
	/* Each call's wall time and how many blocks it was given. */
	void (*on_call)(void *ctx, double seconds, size_t nblocks);
	void *ctx;
};

struct collapse_io {
	process_madvise_fn madvise;
	/* Read before each call and after an ENOMEM: ENOMEM while the count
	 * did not move is COLLAPSE_UNMAPPED (that block only), ENOMEM while it
	 * moved is COLLAPSE_ENOMEM. NULL, or a failed read: every ENOMEM is
	 * COLLAPSE_ENOMEM (backing off needlessly is the safe mistake). */
	alloc_failed_fn alloc_failed;
	void *ctx;
	const struct collapse_pacing *pace; /* NULL: as few calls as possible, untimed */
	/* Right before each call, with that call's blocks: ok[k] says whether
	 * addrs[k] may still be collapsed (the others are COLLAPSE_STALE).
	 * Returns 0, or -errno to make no more calls (the rest stays
	 * COLLAPSE_NOT_TRIED). NULL: no re-check. */
	int (*recheck)(void *ctx, const uint64_t *addrs, size_t n, bool *ok);
	void *recheck_ctx;
};

/* Collapses the n 2 MiB-aligned blocks at addrs[] of the process behind
 * pidfd, writing one outcome per block into out[]. Stops early, leaving the
 * rest COLLAPSE_NOT_TRIED, after ENOMEM (no huge pages now), ESRCH (process
 * gone) or EPERM, or when io->pace says so (its deadline passed, or
 * interrupted); those not reached stay COLLAPSE_NOT_TRIED. Other failures,
 * COLLAPSE_UNMAPPED included, are per block and do not stop the batch.
 * Returns the number of blocks collapsed. */
size_t collapse_blocks_io(int pidfd, const uint64_t *addrs, size_t n, const struct collapse_io *io, uint8_t *out);
/* The same without an allocation failure count: every ENOMEM stops. */
size_t collapse_blocks(int pidfd, const uint64_t *addrs, size_t n, process_madvise_fn fn, uint8_t *out);

/* collapse_blocks() with pacing (NULL: all in as few calls as possible,
 * untimed). */
size_t collapse_blocks_paced(int pidfd, const uint64_t *addrs, size_t n, process_madvise_fn fn, uint8_t *out,
			     const struct collapse_pacing *p);
