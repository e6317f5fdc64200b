/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lazyfree: clean lazy-free pages against written-again ones. */
#include "lazyfree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "procfs.h"

enum lazyfree_verdict lazyfree_vma_verdict(uint64_t smaps_pages, uint64_t kpf_pages)
{
	if (smaps_pages == 0 && kpf_pages > 0)
		return LAZYFREE_ALL_REDIRTIED;
	if (kpf_pages <= smaps_pages)
		return LAZYFREE_ALL_CLEAN;
	return LAZYFREE_MIXED;
}

/* Filename				Type		Size		Used		Priority
 * /dev/vda2                               partition	1048572		0		-2 */
int parse_swaps_buf(const char *buf, size_t len)
{
	static const char header[] = "Filename";
	const char *p = buf, *end = buf + len;
	int n = 0;

	if (len < sizeof(header) - 1 || memcmp(buf, header, sizeof(header) - 1))
		return -EINVAL;
	p = memchr(p, '\n', len);
	while (p && ++p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if ((nl ? nl : end) > p)
			n++; /* a non-empty line */
		p = nl;
	}
	return n;
}

bool swap_configured(const char *proc_root)
{
	char path[4096], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/swaps", proc_root);
	/* Unreadable, or too long to be only the header: assume swap. */
	n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
	return n <= 0 || parse_swaps_buf(buf, (size_t)n) != 0;
}
