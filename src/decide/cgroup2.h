/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup2: where the cgroup v2 hierarchy is mounted, whether a cgroup of
 * /proc/PID/cgroup's "0::" line still exists, and forgetting the per-cgroup
 * metric series of those that do not.
 *
 * A cgroup's collapsed bytes are kept per path for the metrics file; cgroups
 * come and go (one per container, per transient unit), so without pruning
 * the file and the daemon's table grow for ever, and a new cgroup that
 * reuses a name would resume the old one's counter. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Bytes collapsed per cgroup, for metrics. */
struct cgroup_bytes {
	char *cgroup;
	uint64_t bytes;
};

#define CGROUP2_ROOT_MAX 256

struct cgroup2_root {
	int fd;                      /* O_PATH directory of the mount; -1: none known */
	char root[CGROUP2_ROOT_MAX]; /* the mount's root in the hierarchy ("/" usually) */
};

/* Finds the first cgroup2 mount in /proc/self/mountinfo text, preferring
 * one of the whole hierarchy (root "/"). Copies its mount point and root,
 * octal escapes (\040 …) decoded. Pure. Returns 0, -ENOENT (no cgroup2
 * mount), -ENAMETOOLONG or -EINVAL (a malformed cgroup2 line).
 *   41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw */
int parse_cgroup2_mount_buf(const char *buf, size_t len, char *mnt, size_t mntlen, char *root, size_t rootlen);

/* Opens the cgroup2 mount named in the mountinfo file at path (the daemon:
 * /proc/self/mountinfo). Returns 0 or -errno; r->fd is -1 on failure. */
int cgroup2_open(struct cgroup2_root *r, const char *mountinfo);
/* The same for a directory given directly (tests: a fixture tree). */
int cgroup2_open_dir(struct cgroup2_root *r, const char *dir, const char *root);
void cgroup2_close(struct cgroup2_root *r);

/* 1 if the cgroup at path ("/a/b", relative to the mount's root) is a
 * directory under the mount, 0 if it is gone (ENOENT, ENOTDIR), -errno if
 * that cannot be told (no mount known, a path outside the mount's root,
 * "?" for an unknown cgroup, EACCES, …). */
int cgroup2_exists(const struct cgroup2_root *r, const char *path);

/* Drops the entries of cg[0..*n) whose cgroup is gone (cgroup2_exists()
 * == 0), freeing their names and keeping the others in order. Entries that
 * cannot be checked are kept. Returns the number dropped. */
size_t cgroup_bytes_prune(struct cgroup_bytes *cg, size_t *n, const struct cgroup2_root *r);
