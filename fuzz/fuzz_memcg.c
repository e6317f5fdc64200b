/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes the memory cgroup parsers: parse_memcg_value_buf(),
 * parse_memcg_stat_buf(), parse_mountinfo_memcg_buf() and
 * parse_cgroup_v1_buf(), each on the same bytes in a buffer of exactly their
 * size (so ASan sees a read past the end). What they return must hold:
 * a value is "max" or digits only, a found stat key stands at the start of a
 * line, roots are absolute and NUL-terminated, a v1 path is absolute. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memcg.h"
#include "procs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const char *buf, size_t size)
{
	uint64_t v = 0;

	if (parse_memcg_value_buf(buf, size, &v) != 0)
		return;
	if (v == MEMCG_UNLIMITED && size >= 3 && !memcmp(buf, "max", 3))
		return;
	for (size_t i = 0; i < size; i++)
		if ((buf[i] < '0' || buf[i] > '9') && !(i == size - 1 && buf[i] == '\n'))
			abort();
}

static void check_stat(const char *buf, size_t size)
{
	uint64_t v = 0;
	static const char key[] = "hierarchical_memory_limit";

	if (parse_memcg_stat_buf(buf, size, key, &v) != 0)
		return;
	for (size_t i = 0; i + sizeof(key) <= size; i++)
		if ((i == 0 || buf[i - 1] == '\n') && !memcmp(buf + i, key, sizeof(key) - 1) &&
		    buf[i + sizeof(key) - 1] == ' ')
			return;
	abort();
}

static void check_roots(const char *buf, size_t size)
{
	struct memcg_roots r;

	if (parse_mountinfo_memcg_buf(buf, size, &r) != 0 || r.mode == MEMCG_NONE)
		return;
	if (r.mount[0] != '/' || r.root[0] != '/' || !memchr(r.mount, '\0', sizeof(r.mount)) ||
	    !memchr(r.root, '\0', sizeof(r.root)))
		abort();
}

static void check_v1_line(const char *buf, size_t size)
{
	char path[256];

	if (parse_cgroup_v1_buf(buf, size, "memory", path, sizeof(path)) != 0)
		return;
	if (path[0] != '/' || strlen(path) >= sizeof(path))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	check_value(buf, size);
	check_stat(buf, size);
	check_roots(buf, size);
	check_v1_line(buf, size);
	free(buf);
	return 0;
}
