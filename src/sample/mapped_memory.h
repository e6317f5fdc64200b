/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mapped_memory: how much user memory is mapped system-wide, from
 * /proc/meminfo (AnonPages + Mapped: private anonymous pages, plus file and
 * shmem pages that some process maps).
 *
 * Why: memory populated without a page fault raises no perf fault event, so
 * the fault doorbell cannot see it: MAP_POPULATE, MADV_POPULATE_READ/WRITE,
 * mlock() and mlockall(MCL_FUTURE) fill page tables through get_user_pages.
 * A process that does so and then computes without faulting would wait for
 * the next full rescan. This total moves when that happens, and reading it
 * costs about 3 us. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procfs.h"

/* Pure: AnonPages + Mapped in kB from a /proc/meminfo buffer. Returns 0, or
 * -EINVAL if either line is missing or malformed. */
int parse_meminfo_buf(const char *buf, size_t len, uint64_t *mapped_kb);

/* Reads proc_root/meminfo. Returns 0 or -errno. */
int read_mapped_memory_kb(const char *proc_root, uint64_t *mapped_kb);

/* A watch on that total, for passes that would otherwise idle or sample
 * only the processes that faulted: note() takes it, moved() says whether
 * it has grown by more than the faults seen meanwhile explain
 * (mapped_watch_faulted()) plus MAPPED_SLACK_KB (the kernel folds per-CPU
 * counts about once a second, so smaller moves are noise). moved() reads
 * /proc/meminfo at most every MAPPED_CHECK_S seconds, and each read starts
 * the next window. Shrinking never counts: freed memory holds no candidate.
 * Faults of huge pages and heavy faulting elsewhere blur it: it errs
 * towards "moved" for the first, and may hide a populate during the second
 * until the rolling rescan; `grew` says the total grew at all, which is
 * enough to look for new processes.
 *
 * With read_free_kb set (the daemon: sysinfo(), ~10 us where a first read
 * of meminfo costs ~35), a check reads meminfo only when free memory fell
 * by more than MAPPED_SLACK_KB since the last read, and at least every
 * MAPPED_FORCE_S: memory mapped without being allocated then (page cache
 * mapped with MAP_POPULATE, a populate that reclaim paid for, or one that
 * others' frees hid) is seen within that. */
#define MAPPED_CHECK_S  0.5
#define MAPPED_FORCE_S  5.0
#define MAPPED_SLACK_KB 2048

struct mapped_watch {
	uint64_t kb;
	bool known; /* kb was read; an unreadable meminfo never moves */
	double next_check;
	uint64_t faulted_kb;               /* memory the faults seen in this window may have filled */
	bool grew;                         /* a check saw growth beyond the slack, explained or not;
					    * the caller clears it */
	int (*read_kb)(uint64_t *kb);      /* injectable; NULL: read_mapped_memory_kb */
	int (*read_free_kb)(uint64_t *kb); /* the prefilter; NULL: none */
	uint64_t free_kb;                  /* free memory at the last meminfo read */
	bool free_known;
	double read_at;           /* when meminfo was last read */
	const char *proc_root;    /* … of proc_root (paths->proc) */
	struct kept_file meminfo; /* proc_root/meminfo */
};

/* sysinfo()'s free memory in kB: the daemon's read_free_kb. 0 or -errno. */
int mapped_free_kb_sysinfo(uint64_t *kb);

void mapped_watch_note(struct mapped_watch *w, double now);
void mapped_watch_faulted(struct mapped_watch *w, uint64_t kb);
bool mapped_watch_moved(struct mapped_watch *w, double now);
void mapped_watch_close(struct mapped_watch *w);
