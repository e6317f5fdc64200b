/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_cgroup2_mount_buf(): any bytes, in a buffer of exactly their
 * size (so ASan sees a read past the end), into output buffers that are
 * sometimes tiny. On success both outputs are NUL-terminated, non-empty and
 * fit; the input holds a " - cgroup2 " separator. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), mnt[4096], root[CGROUP2_ROOT_MAX];
	/* The first byte picks the output size: the full one or a small one. */
	size_t mntlen = size && (data[0] & 1) ? 1 + data[0] % 16 : sizeof(mnt);

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	memset(mnt, 'x', sizeof(mnt));
	memset(root, 'x', sizeof(root));
	if (parse_cgroup2_mount_buf(buf, size, mnt, mntlen, root, sizeof(root)) == 0) {
		size_t m = strnlen(mnt, mntlen), r = strnlen(root, sizeof(root));

		if (m == 0 || m >= mntlen || r == 0 || r >= sizeof(root))
			abort();
		if (!memmem(buf, size, " - cgroup2 ", 11))
			abort();
	}
	free(buf);
	return 0;
}
