/* SPDX-License-Identifier: GPL-2.0-or-later */
/* smaps_usage: a process's THP usage (thp_usage.h) from its smaps, as its
 * scan sees it (rescan.c) and again after a collapse (dispatch.c);
 * coverage.h sums it per cgroup. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "thp_usage.h"

struct vma_list;

/* Sums a process's smaps into u (overwritten). Pure. */
void thp_usage_from_vmas(const struct vma_list *l, struct thp_usage *u);

/* Reads the smaps of proc_root/pid again into u, after a collapse made its last
 * scan's numbers stale (an unchanged process is not scanned again for
 * full_rescan_s). Checks that pid still has start_ticks first. buf/cap and
 * scratch are the caller's reused buffers. Returns 0 or -errno (u is then
 * unchanged). */
int thp_usage_refresh(const char *proc_root, pid_t pid, uint64_t start_ticks, char **buf, size_t *cap,
		      struct vma_list *scratch, struct thp_usage *u);
