/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stat_fds: /proc/PID/stat kept open for the processes read pass after
 * pass (the doorbell names a busy shell or server every pass). A pread()
 * of a kept fd costs the read alone, 3-6 us here; open + read + close of
 * the path costs 12-20 us, most of it the path walk and the dentry of a
 * file opened once.
 *
 * A kept fd cannot be misread after the PID is reused: it holds the old
 * process's struct pid, whose files read -ESRCH once it has exited. Any
 * failed read drops the fd; the next read opens the path again.
 *
 * At most STAT_FDS_MAX fds, least recently read evicted first, so the
 * rolling rescan's one-off reads pass through without pushing out the
 * processes read every pass. Not thread-safe; one per proc root fd. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STAT_FDS_MAX 16

struct stat_fds {
	struct stat_fd {
		pid_t pid;
		int fd;
		uint64_t used; /* the clock at its last read; 0: slot free */
	} e[STAT_FDS_MAX];
	uint64_t clock;
	uint64_t opens, hits; /* reads that opened the path, and that did not */
};

void stat_fds_init(struct stat_fds *c);
/* Reads rootfd's "PID/stat" into buf (NUL-terminated), through a kept fd
 * when there is one. Returns the length, or -errno: -ESRCH or -ENOENT for a
 * process gone, -EFBIG when it does not fit. */
ssize_t stat_fds_read(struct stat_fds *c, int rootfd, pid_t pid, char *buf, size_t bufsize);
/* Closes every kept fd (the proc root changed, or at exit). */
void stat_fds_close(struct stat_fds *c);
