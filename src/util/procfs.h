/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procfs: reading whole small kernel files (/proc, sysfs, cgroupfs), and
 * the decimal parser their parsers share. No state. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An unsigned decimal of exactly len bytes (digits only: no sign, no
 * spaces), refusing overflow. 0 or -EINVAL, *v untouched on error. Shared
 * by the parsers of /proc/PID/stat, /proc/vmstat, memory.stat and memcg. */
int parse_dec_u64(const char *s, size_t len, uint64_t *v);

/* Reads a whole small file at dirfd/name into buf (NUL-terminated). Returns
 * the length or -errno; -EFBIG when the file does not fit in bufsize - 1. */
ssize_t read_small_file_at(int dirfd, const char *name, char *buf, size_t bufsize);
/* The same for a file the kernel renders whole at each read from offset 0:
 * a seq_file of one record (/proc/PID/stat, status, cgroup, /proc/meminfo),
 * a sysfs attribute, /proc/PID/auxv; and a regular file (the fixtures).
 * A read shorter than asked has returned all of it, so the read that would
 * return 0 is skipped: one system call in place of two. Not for seq_files
 * of many records (/proc/PID/smaps, cgroup.procs, tracefs formats): those
 * return at most a page per read. */
ssize_t read_one_shot_at(int dirfd, const char *name, char *buf, size_t bufsize);
/* The same from a kept fd of such a file, from offset 0 (pread): the
 * current values without the open's path walk. */
ssize_t pread_one_shot(int fd, char *buf, size_t bufsize);
/* Such a file kept open between reads (a zeroed one is closed): the first
 * read opens path (later reads ignore it), each reads from offset 0 with
 * pread_one_shot(), and a failed read closes it, so the next opens afresh.
 * Saves the open's path walk and the close on every read. */
struct kept_file {
	int fd;
	bool open;
};
ssize_t kept_file_read(struct kept_file *k, const char *path, char *buf, size_t bufsize);
void kept_file_close(struct kept_file *k);
/* Reads the whole file at path into *buf (malloc'ed, NUL-terminated, the
 * caller frees it), growing as it goes: mountinfo on a dense node holds
 * tens of thousands of mounts. Returns the length, -EFBIG past max bytes
 * (*buf NULL), or -errno. */
ssize_t read_file_alloc(const char *path, size_t max, char **buf);
/* The bound safety checks read mountinfo with: beyond it they fail closed. */
#define MOUNTINFO_MAX_BYTES (256u << 20)

/* Extracts the [selected] word of a sysfs choice file ("always [madvise]
 * never" → "madvise"). Returns 0 or -EINVAL. Pure. */
int sysfs_selected(const char *text, char *out, size_t outlen);
