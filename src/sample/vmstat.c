/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/vmstat thp_collapse_alloc_failed: see the header for why. */
#include "vmstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

#define KEY "thp_collapse_alloc_failed "

/* A line reads "thp_collapse_alloc_failed 0". */
int parse_vmstat_buf(const char *buf, size_t len, uint64_t *alloc_failed)
{
	const size_t klen = sizeof(KEY) - 1;
	const char *end = buf + len;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - line) >= klen && memcmp(line, KEY, klen) == 0) {
			uint64_t v;

			if (parse_dec_u64(line + klen, (size_t)(eol - line) - klen, &v) < 0)
				return -EINVAL;
			*alloc_failed = v;
			return 0;
		}
		line = eol + 1;
	}
	return -ENOENT;
}

int vmstat_reader_open(struct vmstat_reader *r, const char *proc_root)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/vmstat", proc_root);
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	return r->fd < 0 ? -errno : 0;
}

void vmstat_reader_close(struct vmstat_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

int vmstat_read_alloc_failed(struct vmstat_reader *r, uint64_t *alloc_failed)
{
	char buf[16384]; /* 6.18: about 4 KiB */
	ssize_t n;

	if (r->fd < 0)
		return -EBADF;
	do
		n = pread(r->fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n == sizeof(buf))
		return -EFBIG;
	return parse_vmstat_buf(buf, (size_t)n, alloc_failed);
}
