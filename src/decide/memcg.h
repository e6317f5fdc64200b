/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg: how much a process's memory cgroup can still be charged before the
 * tightest limit on its path, so that collapsing never makes the kernel
 * reclaim a container's own memory (or fail the charge) to pay for it.
 *
 * Collapsing a block charges a whole new 2 MiB huge page to the cgroup
 * *before* the block's old 4 KiB pages are freed (mm/khugepaged.c,
 * alloc_charge_folio() then the copy): the charge peaks at + 2 MiB and
 * settles at + (512 - present) pages. memcg_take() checks the peak and
 * spends what stays.
 *
 * Where the limits are:
 *   cgroup v2: memory.max and memory.high of the cgroup and of each ancestor
 *              below the root, each against that level's memory.current;
 *   cgroup v1: memory.limit_in_bytes (and memory.memsw.*) of each level we
 *              can see against its usage_in_bytes, plus the leaf's
 *              hierarchical_memory_limit / hierarchical_memsw_limit from
 *              memory.stat against its own usage, which also covers the
 *              ancestors above a container's mount root that we cannot see.
 * The roots come from /proc/self/mountinfo once; they are a struct so unit
 * tests can point them at fixture trees. Pure parsers are parse_*_buf(). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMCG_UNLIMITED UINT64_MAX

enum memcg_mode {
	MEMCG_NONE, /* no memory controller mounted: no limits to respect */
	MEMCG_V1,   /* a cgroup v1 hierarchy with the memory controller */
	MEMCG_V2,   /* the unified hierarchy, with memory in cgroup.controllers */
};

struct memcg_roots {
	enum memcg_mode mode;
	char mount[PATH_MAX]; /* where the memory hierarchy is mounted */
	char root[PATH_MAX];  /* that mount's root inside the hierarchy: "/" on a host */
};

/* memory.max, memory.high, memory.current, memory.limit_in_bytes, …: one
 * number, or "max" (MEMCG_UNLIMITED), then an optional newline.
 * 0 or -EINVAL. */
int parse_memcg_value_buf(const char *buf, size_t len, uint64_t *out);

/* memory.stat: the value of the line "key N". 0, -ENOENT (no such key) or
 * -EINVAL (the line is malformed). */
int parse_memcg_stat_buf(const char *buf, size_t len, const char *key, uint64_t *out);

/* Copies the mountinfo field s[0..n) into out (NUL-terminated), turning
 * \ooo escapes back into bytes. 0, -EINVAL (a NUL, raw or \000) or
 * -ENAMETOOLONG. Shared with cgroup2.c's mountinfo parser. */
int mountinfo_unescape(const char *s, size_t n, char *out, size_t outlen);

/* /proc/self/mountinfo: fills out with the v1 memory hierarchy if there is
 * one (the memory controller can be bound to one hierarchy only), else with
 * the cgroup2 mount (mode MEMCG_V2, to be confirmed by memcg_roots_find()),
 * else MEMCG_NONE. Mount points are unescaped (\040 for a space). 0 or
 * -EINVAL (a malformed line among the cgroup ones) or -ENAMETOOLONG. */
int parse_mountinfo_memcg_buf(const char *buf, size_t len, struct memcg_roots *out);

/* True if the cgroup.controllers text (space-separated names) lists name.
 * Pure.  "cpuset cpu io memory hugetlb pids rdma misc" */
bool cgroup_controllers_have(const char *buf, size_t len, const char *name);

/* Reads mountinfo_path and, for cgroup v2, checks that "memory" is in the
 * root's cgroup.controllers (else MEMCG_NONE). 0 or -errno. */
int memcg_roots_find(const char *mountinfo_path, struct memcg_roots *out);

/* The directory of a cgroup (its path in the hierarchy, as /proc/PID/cgroup
 * shows it) under the mount: -ENOENT if the path is outside the mount's
 * root (another container's cgroup), -EINVAL for ".." components. */
int memcg_dir(const struct memcg_roots *r, const char *cgpath, char *dir, size_t dirlen);

/* The room of the cgroup at cgpath: min over the limits on its path of
 * limit - usage (0 when usage is above a limit); MEMCG_UNLIMITED if none.
 * A missing limit file means no limit at that level (the v2 root, a kernel
 * without swap accounting); a present but unreadable or malformed one is an
 * error: the caller should not collapse blind. 0 or -errno. */
int memcg_room(const struct memcg_roots *r, const char *cgpath, uint64_t *room);

/* The headroom kept free below every limit: headroom_mb plus one per-CPU
 * charge batch (MEMCG_CHARGE_BATCH, 64 pages) per CPU, which the workload's
 * own next faults may charge at once. */
uint64_t memcg_headroom_bytes(unsigned headroom_mb, unsigned ncpus);

/* Whether one block with present pages fits in *room above headroom: its
 * peak charge (a whole 2 MiB) must fit; then *room shrinks by what stays
 * ((512 - present) pages). Pure. */
bool memcg_take(uint64_t *room, uint64_t headroom, unsigned present);
