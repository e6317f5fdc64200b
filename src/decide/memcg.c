/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory cgroup limits: parsers, the roots from mountinfo, and the room
 * left under the tightest limit on a cgroup's path. */
#include "memcg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

#define MEMCG_CHARGE_BATCH_BYTES (64u * 4096u) /* mm/memcontrol.c: MEMCG_CHARGE_BATCH pages */
#define SMALL_FILE               4096
#define STAT_FILE                16384 /* memory.stat: ~60 lines on v1, ~70 on v2 */

/* "536870912\n" or "max\n" */
int parse_memcg_value_buf(const char *buf, size_t len, uint64_t *out)
{
	if (len && buf[len - 1] == '\n')
		len--;
	if (len == 3 && !memcmp(buf, "max", 3)) {
		*out = MEMCG_UNLIMITED;
		return 0;
	}
	return len > 20 ? -EINVAL : parse_dec_u64(buf, len, out);
}

/* "hierarchical_memory_limit 9223372036854771712\n" */
int parse_memcg_stat_buf(const char *buf, size_t len, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	const char *end = buf + len;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - line) > klen && !memcmp(line, key, klen) && line[klen] == ' ')
			return parse_memcg_value_buf(line + klen + 1, (size_t)(eol - line) - klen - 1, out);
		line = eol + 1;
	}
	return -ENOENT;
}

int mountinfo_unescape(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (c == '\0')
			return -EINVAL; /* raw or \000: never from the kernel, and it would cut the path */
		if (o + 1 >= outlen)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* Whether the comma-separated list s[0..n) holds the word w. */
static bool has_option(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);

	for (size_t i = 0; i < n;) {
		const char *comma = memchr(s + i, ',', n - i);
		size_t e = comma ? (size_t)(comma - s) : n;

		if (e - i == wl && !memcmp(s + i, w, wl))
			return true;
		i = e + 1;
	}
	return false;
}

/* Splits a line into up to max space-separated fields. */
static size_t split_fields(const char *line, size_t len, const char **f, size_t *fl, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len && n < max) {
		while (i < len && line[i] == ' ')
			i++;
		if (i == len)
			break;
		f[n] = line + i;
		while (i < len && line[i] != ' ')
			i++;
		fl[n] = (size_t)(line + i - f[n]);
		n++;
	}
	return n;
}

/* One mountinfo line:
 * "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
 * The fields after "-" are fstype, source, super options. */
static int mountinfo_line(const char *line, size_t len, struct memcg_roots *v1, struct memcg_roots *v2)
{
	const char *f[32];
	size_t fl[32], n = split_fields(line, len, f, fl, 32), dash;
	struct memcg_roots *dst;
	int r;

	for (dash = 6; dash < n && !(fl[dash] == 1 && f[dash][0] == '-'); dash++)
		;
	if (dash + 1 >= n)
		return 0; /* not a line we can read; only cgroup lines matter */
	if (fl[dash + 1] == 7 && !memcmp(f[dash + 1], "cgroup2", 7))
		dst = v2;
	else if (fl[dash + 1] == 6 && !memcmp(f[dash + 1], "cgroup", 6) && dash + 3 < n &&
		 has_option(f[dash + 3], fl[dash + 3], "memory"))
		dst = v1;
	else
		return 0;
	if (dst->mode != MEMCG_NONE)
		return 0; /* the first mount of a hierarchy wins */
	r = mountinfo_unescape(f[3], fl[3], dst->root, sizeof(dst->root));
	if (r == 0)
		r = mountinfo_unescape(f[4], fl[4], dst->mount, sizeof(dst->mount));
	if (r < 0)
		return r;
	if (dst->root[0] != '/' || dst->mount[0] != '/')
		return -EINVAL;
	dst->mode = dst == v1 ? MEMCG_V1 : MEMCG_V2;
	return 0;
}

int parse_mountinfo_memcg_buf(const char *buf, size_t len, struct memcg_roots *out)
{
	struct memcg_roots v1 = {.mode = MEMCG_NONE}, v2 = {.mode = MEMCG_NONE};
	const char *end = buf + len;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		int r = mountinfo_line(line, (size_t)(eol - line), &v1, &v2);

		if (r < 0)
			return r;
		line = eol + 1;
	}
	*out = v1.mode != MEMCG_NONE ? v1 : v2;
	return 0;
}

/* Reads dir/name whole into buf (NUL-terminated); length or -errno. */
static ssize_t read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX + 64];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	return read_one_shot_at(AT_FDCWD, path, buf, size);
}

bool cgroup_controllers_have(const char *buf, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && buf[j] != ' ' && buf[j] != '\n')
			j++;
		if (j - i == nl && !memcmp(buf + i, name, nl))
			return true;
		i = j + 1;
	}
	return false;
}

int memcg_roots_find(const char *mountinfo_path, struct memcg_roots *out)
{
	char *buf, ctl[SMALL_FILE] = {0};
	ssize_t n;
	int r;

	/* Whole, however long (issue 16: a 1 MiB buffer failed on 5,000
	 * overlay mounts and turned the gate off); past the bound, an error
	 * the caller fails closed on. */
	n = read_file_alloc(mountinfo_path, MOUNTINFO_MAX_BYTES, &buf);
	r = n < 0 ? (int)n : parse_mountinfo_memcg_buf(buf, (size_t)n, out);
	free(buf);
	if (r < 0)
		return r;
	/* A cgroup2 mount has a memory controller only if the root offers it. */
	if (out->mode == MEMCG_V2) {
		n = read_file(out->mount, "cgroup.controllers", ctl, sizeof(ctl));
		if (n < 0 || !cgroup_controllers_have(ctl, (size_t)n, "memory"))
			out->mode = MEMCG_NONE;
	}
	return 0;
}

int memcg_dir(const struct memcg_roots *r, const char *cgpath, char *dir, size_t dirlen)
{
	size_t rl = strlen(r->root);
	const char *rest = cgpath;

	if (cgpath[0] != '/')
		return -EINVAL;
	for (const char *p = cgpath; (p = strstr(p, "/..")); p += 3)
		if (p[3] == '/' || p[3] == '\0')
			return -EINVAL;
	/* A container's mount shows only its own subtree (root "/docker/x"). */
	if (strcmp(r->root, "/")) {
		if (strncmp(cgpath, r->root, rl) || (cgpath[rl] != '/' && cgpath[rl] != '\0'))
			return -ENOENT;
		rest = cgpath + rl;
	}
	if ((size_t)snprintf(dir, dirlen, "%s%s", r->mount, rest) >= dirlen)
		return -ENAMETOOLONG;
	return 0;
}

/* One file holding a limit or a usage. -ENOENT passes through. */
static int read_value(const char *dir, const char *name, uint64_t *v)
{
	char buf[SMALL_FILE] = {0}; /* defined even where read() is not modelled */
	ssize_t n = read_file(dir, name, buf, sizeof(buf));

	return n < 0 ? (int)n : parse_memcg_value_buf(buf, (size_t)n, v);
}

/* room = min(room, limit - usage) when dir has the limit file. */
static int limit_at(const char *dir, const char *limit_name, const char *usage_name, uint64_t *room)
{
	uint64_t limit, usage;
	int r = read_value(dir, limit_name, &limit);

	if (r == -ENOENT)
		return 0;
	if (r < 0 || limit == MEMCG_UNLIMITED)
		return r;
	r = read_value(dir, usage_name, &usage);
	if (r < 0)
		return r;
	limit = usage >= limit ? 0 : limit - usage;
	if (limit < *room)
		*room = limit;
	return 0;
}

/* v1: the leaf's hierarchical limits (which include ancestors we cannot
 * see) against its own usage. */
static int v1_hierarchical(const char *dir, uint64_t *room)
{
	char buf[STAT_FILE] = {0};
	ssize_t n = read_file(dir, "memory.stat", buf, sizeof(buf));
	static const char *const keys[2][2] = {
	    {"hierarchical_memory_limit", "memory.usage_in_bytes"},
	    {"hierarchical_memsw_limit", "memory.memsw.usage_in_bytes"},
	};

	if (n < 0)
		return n == -ENOENT ? 0 : (int)n;
	for (int k = 0; k < 2; k++) {
		uint64_t limit, usage;
		int r = parse_memcg_stat_buf(buf, (size_t)n, keys[k][0], &limit);

		if (r == -ENOENT)
			continue; /* no swap accounting: no memsw */
		if (r < 0)
			return r;
		r = read_value(dir, keys[k][1], &usage);
		if (r == -ENOENT && k == 1)
			continue;
		if (r < 0)
			return r;
		limit = usage >= limit ? 0 : limit - usage;
		if (limit < *room)
			*room = limit;
	}
	return 0;
}

static int level_room(enum memcg_mode mode, const char *dir, uint64_t *room)
{
	int r;

	if (mode == MEMCG_V2) {
		r = limit_at(dir, "memory.max", "memory.current", room);
		return r < 0 ? r : limit_at(dir, "memory.high", "memory.current", room);
	}
	r = limit_at(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", room);
	return r < 0 ? r : limit_at(dir, "memory.memsw.limit_in_bytes", "memory.memsw.usage_in_bytes", room);
}

int memcg_room(const struct memcg_roots *rt, const char *cgpath, uint64_t *room)
{
	char dir[PATH_MAX];
	size_t mlen = strlen(rt->mount);
	int r;

	*room = MEMCG_UNLIMITED;
	if (rt->mode == MEMCG_NONE)
		return 0;
	r = memcg_dir(rt, cgpath, dir, sizeof(dir));
	if (r < 0)
		return r;
	if (access(dir, F_OK) != 0)
		return -errno;
	if (rt->mode == MEMCG_V1) {
		r = v1_hierarchical(dir, room);
		if (r < 0)
			return r;
	}
	/* Each level below the mount (the root cannot be limited). */
	while (strlen(dir) > mlen) {
		char *slash;

		r = level_room(rt->mode, dir, room);
		if (r < 0)
			return r;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < mlen)
			break;
		*slash = '\0';
	}
	return 0;
}

uint64_t memcg_headroom_bytes(unsigned headroom_mb, unsigned ncpus)
{
	return ((uint64_t)headroom_mb << 20) + (uint64_t)ncpus * MEMCG_CHARGE_BATCH_BYTES;
}

bool memcg_take(uint64_t *room, uint64_t headroom, unsigned present)
{
	const uint64_t peak = UINT64_C(2) << 20;

	if (*room == MEMCG_UNLIMITED)
		return true;
	if (*room < headroom || *room - headroom < peak)
		return false;
	if (present < 512)
		*room -= (uint64_t)(512 - present) * 4096;
	return true;
}
