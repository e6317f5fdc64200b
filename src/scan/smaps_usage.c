/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process's THP usage from its smaps. */
#include "smaps_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"
#include "smaps_scan.h"

#define KIB 1024u

void thp_usage_from_vmas(const struct vma_list *l, struct thp_usage *u)
{
	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < l->n; i++) {
		const struct vma *v = &l->v[i];

		/* Anonymous: counts the private anon pages of file VMAs too
		 * (COW), as smaps does; AnonHugePages is their PMD-mapped part. */
		u->anon += v->anon_kb * KIB;
		u->anon_huge += v->anon_huge_kb * KIB;
		if (v->kind == VMA_SHMEM) {
			u->shmem += v->rss_kb * KIB;
			u->shmem_huge += v->shmem_pmd_kb * KIB;
		}
	}
}

int thp_usage_refresh(const char *proc_root, pid_t pid, uint64_t start_ticks, char **buf, size_t *cap,
		      struct vma_list *scratch, struct thp_usage *u)
{
	struct proc_sample st;
	char path[64];
	int dirfd, r;

	snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	r = read_proc_stat(dirfd, &st);
	if (r == 0 && st.start_ticks != start_ticks)
		r = -ESRCH;
	vma_list_clear(scratch);
	if (r == 0)
		r = read_smaps(dirfd, buf, cap, scratch);
	close(dirfd);
	if (r == 0)
		thp_usage_from_vmas(scratch, u);
	return r;
}
