/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thp_usage: a process's or a cgroup's THP usage, as its last scan or its
 * memory.stat saw it: kept per process (proc_state.h), summed and read
 * by coverage (coverage.h, which computes it). */
#pragma once
#include <stdint.h>

/* Bytes of anonymous and shmem memory, and how much of each is PMD-mapped. */
struct thp_usage {
	uint64_t anon, anon_huge;   /* smaps Anonymous, AnonHugePages */
	uint64_t shmem, shmem_huge; /* Rss and ShmemPmdMapped of shmem VMAs */
};
