/* SPDX-License-Identifier: GPL-2.0-or-later */
/* madvise_call: process_madvise(2) and pidfd_open(2), and the vocabulary of
 * a MADV_COLLAPSE call, for the stages below the one that makes it
 * (collapse.h): the call's injectable type, which the scanner's lazy-free
 * probe takes too, and what an answer means, which each pass counts
 * (pass.h). */
#pragma once
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

enum collapse_outcome {
	COLLAPSE_OK,        /* now PMD-mapped */
	COLLAPSE_EAGAIN,    /* transient: retry later */
	COLLAPSE_ENOMEM,    /* no huge page (the kernel's failure count moved): back off */
	COLLAPSE_EBUSY,     /* memcg charge failed */
	COLLAPSE_EINVAL,    /* ineligible: remember it */
	COLLAPSE_ESRCH,     /* the process is gone */
	COLLAPSE_EPERM,     /* EPERM/EACCES: missing capability */
	COLLAPSE_OTHER,     /* any other errno */
	COLLAPSE_NOT_TRIED, /* not reached: the batch stopped first */
	COLLAPSE_UNMAPPED,  /* ENOMEM with no allocation failure: the range is
			     * no longer mapped (a stale candidate) */
	COLLAPSE_STALE,     /* not submitted: the re-check right before its
			     * call found it no longer a candidate */
	COLLAPSE_NR_OUTCOMES,
};

/* The syscall, injectable for tests: same contract as process_madvise(2)
 * (returns bytes or -1 with errno set). */
typedef ssize_t (*process_madvise_fn)(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags);
/* The real one. */
ssize_t sys_process_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags);

/* pidfd_open(2); -1 with errno on failure. */
int pidfd_open_pid(pid_t pid);
