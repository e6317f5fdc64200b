/* tmpfs_mounts: which devices are tmpfs, and their huge= option.
 *
 * smaps names a file but not its filesystem: a file on a tmpfs mounted at
 * /tmp looks like any other file, yet the kernel decides its huge pages by
 * the mount's huge= option (mm/shmem.c shmem_huge_global_enabled()), and
 * MADV_COLLAPSE collapses it whatever that option says. The device number
 * in the smaps header is the superblock's (sb->s_dev), the same number
 * mountinfo prints, and unique across mount namespaces; so a table of the
 * anonymous-device (major 0) filesystems from mountinfo tells tmpfs from
 * the rest:
 *
 *   36 25 0:32 / /tmp rw,nosuid,nodev shared:17 - tmpfs tmpfs rw,size=8G,huge=within_size
 *
 * shmem_show_options() prints huge= only when it is not never. The table
 * comes from the daemon's /proc/self/mountinfo, read again when the kernel
 * flags it changed (POLLPRI); a device it does not hold (a mount in another
 * namespace) is looked up once in that process's own mountinfo. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smaps_scan.h"

struct tmpfs_dev {
	uint64_t dev;  /* major << 32 | minor */
	uint8_t tmpfs; /* 1 tmpfs, 0 another filesystem */
	uint8_t huge;  /* tmpfs: enum shmem_mode (never, advise, within_size, always) */
};

struct tmpfs_mounts {
	struct tmpfs_dev *d; /* sorted by dev, unique */
	size_t n, cap;
	int fd;                /* /proc/self/mountinfo, polled; -1 */
	const char *proc_root; /* "/proc" */
	unsigned long lookups; /* per-process mountinfo reads (tests) */
};

/* Adds every major-0 mount of a mountinfo text to t (tmpfs or not), then
 * sorts. Lines that do not parse are skipped. Returns 0 or -ENOMEM. Pure. */
int parse_tmpfs_mountinfo_buf(const char *buf, size_t len, struct tmpfs_mounts *t);

/* The entry of dev, or NULL. Pure. */
const struct tmpfs_dev *tmpfs_mounts_find(const struct tmpfs_mounts *t, uint32_t major, uint32_t minor);

/* Marks the VMAs of l on a tmpfs device VMA_SHMEM / SHMEM_SRC_MOUNT with
 * the mount's huge=, and /dev/shm ones whose device is known likewise.
 * Returns how many file VMAs have a major-0 device t does not know. Pure. */
size_t tmpfs_mounts_apply(const struct tmpfs_mounts *t, struct vma_list *l);

/* Reads proc_root/self/mountinfo (proc_root NULL: "/proc"). Returns 0 or
 * -errno; t is then empty but usable. */
int tmpfs_mounts_open(struct tmpfs_mounts *t, const char *proc_root);
void tmpfs_mounts_close(struct tmpfs_mounts *t);

/* tmpfs_mounts_apply(), after reading the mountinfo again if it changed,
 * and that of the process (proc_pid_dirfd) for devices still unknown, which
 * are then remembered as not tmpfs when that does not name them either. */
void tmpfs_mounts_classify(struct tmpfs_mounts *t, int proc_pid_dirfd, struct vma_list *l);
