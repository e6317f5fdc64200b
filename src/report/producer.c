/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The identity of a metrics file's writer, and whether it still runs. */
#include "producer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "procs.h"

int parse_boot_id_buf(const char *buf, size_t len, char *out)
{
	if (len && buf[len - 1] == '\n')
		len--;
	if (len != PRODUCER_BOOT_ID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
	}
	memcpy(out, buf, len);
	out[len] = 0;
	return 0;
}

static int read_boot_id(const char *proc_root, char *out)
{
	char path[4096], buf[64];
	ssize_t n;

	if ((size_t)snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", proc_root) >= sizeof(path))
		return -ENAMETOOLONG;
	n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
	return n < 0 ? (int)n : parse_boot_id_buf(buf, (size_t)n, out);
}

/* The start time of proc_root/pid; -ESRCH if there is none. */
static int start_ticks_of(const char *proc_root, pid_t pid, uint64_t *ticks)
{
	struct proc_sample st;
	char path[4096];
	int dirfd, r;

	if (pid <= 0)
		return -ESRCH;
	if ((size_t)snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid) >= sizeof(path))
		return -ENAMETOOLONG;
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	r = read_proc_stat(dirfd, &st);
	close(dirfd);
	if (r == 0)
		*ticks = st.start_ticks;
	return r;
}

int producer_self(const char *proc_root, struct producer *out)
{
	char path[4096];
	int r;

	memset(out, 0, sizeof(*out));
	r = read_boot_id(proc_root, out->boot_id);
	if (r < 0)
		return r;
	/* /proc/self, not getpid(): the pid as proc_root numbers it. */
	if ((size_t)snprintf(path, sizeof(path), "%s/self", proc_root) >= sizeof(path))
		return -ENAMETOOLONG;
	char link[32];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	link[n] = 0;
	errno = 0;
	char *end;
	long pid = strtol(link, &end, 10);

	if (errno || *end || pid <= 0 || pid > INT_MAX)
		return -EINVAL;
	out->pid = (pid_t)pid;
	return start_ticks_of(proc_root, out->pid, &out->start_ticks);
}

enum producer_state producer_check(const char *proc_root, const struct producer *p)
{
	char boot[PRODUCER_BOOT_ID_LEN + 1];
	uint64_t ticks = 0;
	int r;

	if (!p->boot_id[0] || p->pid <= 0)
		return PRODUCER_UNKNOWN;
	if (read_boot_id(proc_root, boot) < 0)
		return PRODUCER_UNKNOWN;
	if (strcmp(boot, p->boot_id) != 0)
		return PRODUCER_OTHER_BOOT;
	r = start_ticks_of(proc_root, p->pid, &ticks);
	if (r == -ESRCH || r == -ENOENT)
		return PRODUCER_GONE;
	if (r < 0)
		return PRODUCER_UNKNOWN;
	return ticks == p->start_ticks ? PRODUCER_RUNNING : PRODUCER_GONE; /* a reused pid */
}

const char *producer_state_name(enum producer_state s)
{
	switch (s) {
	case PRODUCER_RUNNING:
		return "running";
	case PRODUCER_GONE:
	case PRODUCER_OTHER_BOOT:
		return "stopped";
	default:
		return "unknown";
	}
}
