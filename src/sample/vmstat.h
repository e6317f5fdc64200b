/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vmstat: the kernel's THP collapse allocation failure counter,
 * /proc/vmstat thp_collapse_alloc_failed.
 *
 * Why: MADV_COLLAPSE answers ENOMEM both when no huge page could be
 * allocated and when the range is no longer mapped (mm/madvise.c: the VMA
 * walk finds a hole; mm/khugepaged.c: the VMA is gone on revalidation).
 * Only the first is a reason to stop collapsing for everyone. The kernel
 * counts THP_COLLAPSE_ALLOC_FAILED in alloc_charge_folio() when the huge
 * page allocation fails, for khugepaged and MADV_COLLAPSE alike, and never
 * for an unmapped range or a memcg charge failure (that one is EBUSY).
 *
 * The counter is global: between our two reads it also counts khugepaged's
 * failures and other processes' MADV_COLLAPSE. Either one means huge pages
 * are short right now too, so backing off is still right; what the counter
 * never does is move because a range was unmapped. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Pure: the value of "thp_collapse_alloc_failed N" in a /proc/vmstat
 * buffer. Returns 0, -ENOENT if the line is absent (kernel without THP), or
 * -EINVAL if it is malformed. */
int parse_vmstat_buf(const char *buf, size_t len, uint64_t *alloc_failed);

/* A kept fd on proc_root/vmstat, read with pread (vmstat is about 4 KiB
 * on 6.18; a read costs about 44 us here, the kernel summing every item over
 * every CPU: read it per batch, not per block). fd < 0: not open (then every
 * read fails with -EBADF). */
struct vmstat_reader {
	int fd;
};

/* Returns 0 or -errno; r->fd is -1 on failure. */
int vmstat_reader_open(struct vmstat_reader *r, const char *proc_root);
void vmstat_reader_close(struct vmstat_reader *r);
/* Returns 0 or -errno. */
int vmstat_read_alloc_failed(struct vmstat_reader *r, uint64_t *alloc_failed);
