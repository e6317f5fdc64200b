/* SPDX-License-Identifier: GPL-2.0-or-later */
/* collapse: batched process_madvise(MADV_COLLAPSE), one 2 MiB block per iovec.
 *
 * The kernel (mm/madvise.c, vector_madvise()) walks the iovecs in order and
 * stops at the first one that fails. It returns the bytes of the iovecs it
 * completed, or -1 with that first failure's errno when none completed. So a
 * short count tells us which block failed but not why: we resubmit starting
 * from that block, which retries it once and reports its errno if it fails
 * again.
 *
 * ENOMEM is ambiguous: "no huge page" or "this range is not mapped (any
 * more)". The process being collapsed may well have unmapped a block since
 * we scanned it (allocators do it all the time), and that must not pause
 * collapsing for everyone. The kernel's thp_collapse_alloc_failed count
 * moves only for the first, so it is read before a batch and after each
 * ENOMEM. The count is global; as this daemon makes one call at a time, a
 * move is ours or khugepaged's (or another MADV_COLLAPSE caller's): a
 * shortage either way. A call that failed outright attempted exactly one
 * block, the first, so the attribution to a block is exact. */
#include "collapse.h"

#include "units.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

/* The kernel restarts interrupted iovecs itself; EINTR only reaches us on a
 * fatal signal, so a few retries are plenty and keep a broken fn from
 * spinning forever. */
#define MAX_EINTR_RETRIES 8

const char *collapse_outcome_name(enum collapse_outcome o)
{
	static const char *const names[COLLAPSE_NR_OUTCOMES] = {
	    [COLLAPSE_OK] = "collapsed",      [COLLAPSE_EAGAIN] = "eagain", [COLLAPSE_ENOMEM] = "enomem",
	    [COLLAPSE_EBUSY] = "ebusy",       [COLLAPSE_EINVAL] = "einval", [COLLAPSE_ESRCH] = "esrch",
	    [COLLAPSE_EPERM] = "eperm",       [COLLAPSE_OTHER] = "other",   [COLLAPSE_NOT_TRIED] = "not_tried",
	    [COLLAPSE_UNMAPPED] = "unmapped", [COLLAPSE_STALE] = "stale",
	};
	return (unsigned)o < COLLAPSE_NR_OUTCOMES ? names[o] : "unknown";
}

enum collapse_outcome collapse_outcome_from_errno(int err)
{
	switch (err) {
	case 0:
		return COLLAPSE_OK;
	case EAGAIN:
		return COLLAPSE_EAGAIN;
	case ENOMEM:
		return COLLAPSE_ENOMEM;
	case EBUSY:
		return COLLAPSE_EBUSY;
	case EINVAL:
		return COLLAPSE_EINVAL;
	case ESRCH:
		return COLLAPSE_ESRCH;
	case EPERM:
	case EACCES:
		return COLLAPSE_EPERM;
	default:
		return COLLAPSE_OTHER;
	}
}

/* Failures after which no further block can succeed now. */
static int stops_everything(enum collapse_outcome o)
{
	return o == COLLAPSE_ENOMEM || o == COLLAPSE_ESRCH || o == COLLAPSE_EPERM;
}

/* One call, retried on EINTR a bounded number of times. */
static ssize_t submit(process_madvise_fn fn, int pidfd, const struct iovec *iov, size_t vlen)
{
	ssize_t r;
	int tries = 0;

	do {
		errno = 0;
		r = fn(pidfd, iov, vlen, MADV_COLLAPSE, 0);
	} while (r < 0 && errno == EINTR && ++tries <= MAX_EINTR_RETRIES);
	return r;
}

/* ENOMEM: unmapped if both reads worked and the count stayed put. The
 * count read after becomes the next "before" (*have_before says whether
 * *before holds one). */
static enum collapse_outcome enomem_outcome(const struct collapse_io *io, int *have_before, uint64_t *before)
{
	uint64_t after;
	int had = *have_before;

	*have_before = io->alloc_failed(io->ctx, &after) == 0;
	if (!had || !*have_before || after != *before) {
		*before = after;
		return COLLAPSE_ENOMEM;
	}
	return COLLAPSE_UNMAPPED;
}

static void sleep_ms_real(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Before every call but the first: the pause, then whether there is still
 * time for another call (and no SIGTERM waiting: a paced process can take
 * long). */
static bool pace_next(const struct collapse_pacing *p)
{
	if (p->pause_ms)
		(p->sleep_ms ? p->sleep_ms : sleep_ms_real)(p->pause_ms);
	if (p->interrupted && p->interrupted())
		return false;
	return !(p->deadline > 0 && p->now && p->now() >= p->deadline);
}

/* One call, timed. */
static ssize_t paced_submit(process_madvise_fn fn, int pidfd, const struct iovec *iov, size_t vlen,
			    const struct collapse_pacing *p)
{
	double t0 = 0;
	ssize_t r;
	int err;

	if (p->now)
		t0 = p->now();
	r = submit(fn, pidfd, iov, vlen);
	err = errno;
	if (p->now && p->on_call)
		p->on_call(p->ctx, p->now() - t0, vlen);
	errno = err;
	return r;
}

size_t collapse_blocks(int pidfd, const uint64_t *addrs, size_t n, process_madvise_fn fn, uint8_t *out)
{
	const struct collapse_io io = {.madvise = fn};

	return collapse_blocks_io(pidfd, addrs, n, &io, out);
}

size_t collapse_blocks_paced(int pidfd, const uint64_t *addrs, size_t n, process_madvise_fn fn, uint8_t *out,
			     const struct collapse_pacing *p)
{
	const struct collapse_io io = {.madvise = fn, .pace = p};

	return collapse_blocks_io(pidfd, addrs, n, &io, out);
}

size_t collapse_blocks_io(int pidfd, const uint64_t *addrs, size_t n, const struct collapse_io *io, uint8_t *out)
{
	static const struct collapse_pacing unpaced = {0};
	const struct collapse_pacing *p = io->pace ? io->pace : &unpaced;
	struct iovec iov[COLLAPSE_MAX_IOV];
	size_t collapsed = 0, cap;
	size_t i = 0;
	bool called = false; /* pace only between calls */
	/* Read once for the whole batch (about 44 us: the kernel sums every
	 * vmstat item over every CPU), then again only after an ENOMEM. A
	 * move in between from someone else's collapse can only make us back
	 * off needlessly, never miss a real failure of ours. */
	uint64_t before = 0;
	int have_before = io->alloc_failed && io->alloc_failed(io->ctx, &before) == 0;

	cap = p->per_call && p->per_call < COLLAPSE_MAX_IOV ? p->per_call : COLLAPSE_MAX_IOV;
	for (size_t k = 0; k < n; k++)
		out[k] = COLLAPSE_NOT_TRIED;

	while (i < n) {
		size_t vlen = n - i < cap ? n - i : cap, nio = 0;
		bool ok[COLLAPSE_MAX_IOV];
		size_t at[COLLAPSE_MAX_IOV]; /* iov[k] is addrs[at[k]] */

		if (called && !pace_next(p))
			return collapsed;
		for (size_t k = 0; k < vlen; k++)
			ok[k] = true;
		if (io->recheck && io->recheck(io->recheck_ctx, addrs + i, vlen, ok) < 0)
			return collapsed;
		for (size_t k = 0; k < vlen; k++) {
			if (!ok[k]) {
				out[i + k] = COLLAPSE_STALE;
				continue;
			}
			iov[nio].iov_base = (void *)(uintptr_t)addrs[i + k];
			iov[nio].iov_len = (size_t)HPAGE_SIZE;
			at[nio++] = i + k;
		}
		if (nio == 0) {
			i += vlen;
			continue;
		}
		called = true;

		ssize_t r = paced_submit(io->madvise, pidfd, iov, nio, p);
		if (r < 0) {
			/* Nothing completed: the first block failed with errno. */
			int err = errno ? errno : EIO;
			size_t b = at[0];
			out[b] = collapse_outcome_from_errno(err);
			if (out[b] == COLLAPSE_ENOMEM && io->alloc_failed)
				out[b] = enomem_outcome(io, &have_before, &before);
			if (stops_everything(out[b]))
				return collapsed;
			i = b + 1;
			continue;
		}

		/* The kernel never returns 0 for a non-empty vector, nor a partial
		 * iovec, nor more than asked. Trusting any of those could loop
		 * forever or claim collapses that did not happen: give up on this
		 * batch (outcome unknown) and on the rest (not tried). */
		size_t done = (size_t)r / (size_t)HPAGE_SIZE;
		if (r == 0 || (size_t)r % (size_t)HPAGE_SIZE != 0 || done > nio) {
			for (size_t k = 0; k < nio; k++)
				out[at[k]] = COLLAPSE_OTHER;
			return collapsed;
		}

		for (size_t k = 0; k < done; k++)
			out[at[k]] = COLLAPSE_OK;
		collapsed += done;
		/* A short count: the block after the last done failed; the next
		 * round starts from it, learning its errno (or collapsing it
		 * after all), re-checked again first. */
		i = done < nio ? at[done] : i + vlen;
	}
	return collapsed;
}
