/* SPDX-License-Identifier: GPL-2.0-or-later */
/* coverage: parse_memory_stat_buf() on v1 and v2 files (a real v1 capture,
 * v2 in the kernel's format, hostile ones); read_memory_stat_at() through a
 * fixture tree; thp_usage_from_vmas() on a real smaps capture; and
 * coverage_build() on a hand-filled engine: groups by policy file, the
 * top N, "other", UTF-8 merging, pending and skipped bytes, the top
 * processes; and the metrics text of it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "coverage.h"
#include "series_keep.h"
#include "coverage_metrics.h"
#include "engine_stats.h"
#include "procs.h"
#include "smaps_scan.h"
#include "smaps_usage.h"
#include "units.h"

#define FIX HC_FIXTURES "/cgroup"

static int stat_file(const char *path, struct thp_usage *u)
{
	char buf[16384];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return parse_memory_stat_buf(buf, n, u);
}

static void test_v1_real_capture(void **state)
{
	struct thp_usage u;

	(void)state;
	/* total_rss 111394816, total_rss_huge 4194304, total_shmem 9068544;
	 * the non-hierarchical rss/shmem lines above them are not read. */
	assert_int_equal(stat_file(FIX "/v1/memory.stat", &u), 0);
	assert_int_equal(u.anon, 111394816);
	assert_int_equal(u.anon_huge, 4194304);
	assert_int_equal(u.shmem, 9068544);
	assert_int_equal(u.shmem_huge, 0);
}

static void test_v2_format(void **state)
{
	struct thp_usage u;

	(void)state;
	assert_int_equal(stat_file(FIX "/v2/web.slice/app.service/memory.stat", &u), 0);
	assert_int_equal(u.anon, 104857600);
	assert_int_equal(u.anon_huge, 62914560);
	assert_int_equal(u.shmem, 33554432);
	assert_int_equal(u.shmem_huge, 16777216);
	assert_true(thp_usage_ratio(&u) > 0.57 && thp_usage_ratio(&u) < 0.58);
}

static void test_hostile(void **state)
{
	struct thp_usage u = {.anon = 77};

	(void)state;
	assert_int_equal(stat_file(FIX "/hostile/overflow", &u), -EINVAL);
	assert_int_equal(u.anon, 77); /* untouched on failure */
	assert_int_equal(stat_file(FIX "/hostile/negative", &u), -EINVAL);
	assert_int_equal(stat_file(FIX "/hostile/trailing_garbage", &u), -EINVAL);
	assert_int_equal(stat_file(FIX "/hostile/lookalikes", &u), -ENOENT);
	assert_int_equal(stat_file(FIX "/hostile/empty", &u), -ENOENT);
	assert_int_equal(u.anon, 77);
	assert_int_equal(stat_file(FIX "/hostile/no_newline", &u), 0);
	assert_int_equal(u.anon, 4096);
	assert_int_equal(u.anon_huge, 2097152);
	/* Counters read at different moments: huge may pass the total, the
	 * ratio stays 1. */
	assert_int_equal(stat_file(FIX "/hostile/huge_above_total", &u), 0);
	assert_true(thp_usage_ratio(&u) == 1.0);
	assert_int_equal(parse_memory_stat_buf("anon 5", 3, &u), -ENOENT); /* "ano": cut short */
	assert_int_equal(parse_memory_stat_buf("anon 18446744073709551615\n", 26, &u), 0);
	assert_true(u.anon == UINT64_MAX);
}

static void test_read_at(void **state)
{
	struct thp_usage u;
	int v1 = open(FIX "/v1", O_RDONLY | O_DIRECTORY), v2 = open(FIX "/v2", O_RDONLY | O_DIRECTORY);

	(void)state;
	assert_true(v1 >= 0 && v2 >= 0);
	assert_int_equal(read_memory_stat_at(v2, "/web.slice/app.service", &u), 0);
	assert_int_equal(u.anon_huge, 62914560);
	assert_int_equal(read_memory_stat_at(v2, "/web.slice", &u), 0);
	assert_int_equal(u.anon, 1048576);
	assert_int_equal(read_memory_stat_at(v1, "/", &u), 0);
	assert_int_equal(u.anon, 111394816);
	assert_int_equal(read_memory_stat_at(v1, "/web.slice", &u), 0);
	assert_int_equal(u.anon, 0);
	assert_int_equal(read_memory_stat_at(v2, "/nope", &u), -ENOENT);
	assert_int_equal(read_memory_stat_at(v2, "/../v1", &u), -EINVAL);
	assert_int_equal(read_memory_stat_at(v2, "/web.slice/..", &u), -EINVAL);
	assert_int_equal(read_memory_stat_at(v2, "/a/../../v1", &u), -EINVAL);
	close(v1);
	close(v2);
}

static void test_controllers(void **state)
{
	int v1 = open(FIX "/v1", O_RDONLY | O_DIRECTORY), v2 = open(FIX "/v2", O_RDONLY | O_DIRECTORY);

	(void)state;
	assert_true(cgroup_controllers_have("memory", 6, "memory"));
	assert_true(cgroup_controllers_have("cpu memory\n", 11, "memory"));
	assert_false(cgroup_controllers_have("memoryx cpu", 11, "memory"));
	assert_false(cgroup_controllers_have("memor", 5, "memory"));
	assert_false(cgroup_controllers_have("", 0, "memory"));
	/* The fixture trees: v2 lists memory, the other does not; a mount of
	 * a subtree never uses memory.stat. */
	assert_true(coverage_metrics_memory_stat(v2, "/"));
	assert_false(coverage_metrics_memory_stat(v2, "/sub"));
	assert_false(coverage_metrics_memory_stat(v1, "/"));
	assert_false(coverage_metrics_memory_stat(-1, "/"));
	close(v1);
	close(v2);
}

static void test_usage_from_smaps(void **state)
{
	struct vma_list l;
	struct vma v[3] = {
	    {.kind = VMA_ANON, .anon_kb = 4096, .anon_huge_kb = 2048, .rss_kb = 4096},
	    {.kind = VMA_SHMEM, .rss_kb = 8192, .shmem_pmd_kb = 6144},
	    {.kind = VMA_FILE, .rss_kb = 1000, .anon_kb = 8}, /* COW pages of a file mapping */
	};

	(void)state;
	vma_list_init(&l);
	l.v = v;
	l.n = 3;
	struct thp_usage u;
	thp_usage_from_vmas(&l, &u);
	assert_int_equal(u.anon, (4096 + 8) * 1024);
	assert_int_equal(u.anon_huge, 2048 * 1024);
	assert_int_equal(u.shmem, 8192 * 1024);
	assert_int_equal(u.shmem_huge, 6144 * 1024);
	l.n = 0;
	thp_usage_from_vmas(&l, &u);
	assert_true(thp_usage_ratio(&u) == 0);
}

/* thp_usage_refresh() on this very process: its fresh 8 MiB of anonymous
 * memory show; a wrong start time (a recycled PID) reads nothing. */
static void test_refresh_live(void **state)
{
	struct thp_usage u = {0}, before;
	struct proc_sample self;
	struct vma_list l;
	char *buf = NULL, path[64];
	size_t cap = 0, len = 8 * MIB_BYTES;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int dirfd;

	(void)state;
	assert_true(m != MAP_FAILED);
	memset(m, 1, len);
	snprintf(path, sizeof(path), "/proc/%d", (int)getpid());
	dirfd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(dirfd >= 0);
	assert_int_equal(read_proc_stat(dirfd, &self), 0);
	close(dirfd);
	vma_list_init(&l);
	assert_int_equal(thp_usage_refresh("/proc", getpid(), self.start_ticks, &buf, &cap, &l, &u), 0);
	assert_true(u.anon >= len);
	before = u;
	assert_int_equal(thp_usage_refresh("/proc", getpid(), self.start_ticks + 1, &buf, &cap, &l, &u), -ESRCH);
	assert_memory_equal(&u, &before, sizeof(u));
	assert_true(thp_usage_refresh(HC_FIXTURES "/nonexistent", getpid(), 0, &buf, &cap, &l, &u) < 0);
	vma_list_free(&l);
	free(buf);
	munmap(m, len);
}

/* An engine of 6 processes: two under the policy file /web (one in a
 * child cgroup), the others in cgroups of their own sizes; one with an
 * invalid UTF-8 name that prints like another's. */
static struct config cfg;
static struct cgroup_rule rules[1];
static struct proc_state st[6];
static struct engine_stats eng;
static struct block_memo memos[3];
static struct cgroup_bytes cgb[1];

static void fill(void)
{
	static const char *const cgs[6] = {"/web", "/web/worker", "/big", "/small", "/a\xff", "/a\xfe"};
	static const uint64_t anon[6] = {10, 20, 100, 1, 5, 6};

	memset(&cfg, 0, sizeof(cfg));
	config_defaults(&cfg);
	rules[0] = (struct cgroup_rule){.path = "/web", .policy = cfg.defaults};
	rules[0].policy.coverage_target_pct = 80;
	cfg.rules = rules;
	cfg.nrules = 1;
	memset(st, 0, sizeof(st));
	for (int i = 0; i < 6; i++) {
		st[i].pid = 100 + i;
		st[i].scanned = true;
		st[i].cgroup = (char *)cgs[i];
		st[i].usage.anon = anon[i] * HPAGE_SIZE;
		snprintf(st[i].prev.comm, sizeof(st[i].prev.comm), "p%d", i);
	}
	st[0].usage.anon_huge = 5 * HPAGE_SIZE;
	st[1].blocks = memos;
	st[1].nblocks = 3;
	st[1].results[SCAN_COLD] = 4;
	st[1].results[SCAN_CANDIDATE] = 3;
	st[1].results[SCAN_PMD_MAPPED] = 9;
	st[3].blocks = memos;
	st[3].nblocks = 1;
	cgb[0] = (struct cgroup_bytes){.cgroup = "/web/worker", .bytes = 7 * HPAGE_SIZE};
	memset(&eng, 0, sizeof(eng));
	eng.cfg = &cfg;
	eng.view.procs = st;
	eng.view.nprocs = 6;
	eng.cg_bytes = cgb;
	eng.ncg_bytes = 1;
}

/* The rules are static: detach them before config_free(). */
static void done(void)
{
	cfg.rules = NULL;
	cfg.nrules = 0;
	config_free(&cfg);
}

static const struct cgroup_coverage *find(const struct coverage *c, const char *name)
{
	for (size_t i = 0; i < c->ncg; i++)
		if (!strcmp(c->cg[i].cgroup, name))
			return &c->cg[i];
	return NULL;
}

static void test_build_groups(void **state)
{
	struct coverage c;
	const struct cgroup_coverage *web, *other, *big, *a;

	(void)state;
	fill();
	assert_int_equal(coverage_build(&eng, 2, NULL, &c), 0);
	/* /web (policy) + the 2 largest others (/big, "/a?" merged = 11) + other */
	assert_int_equal(c.ncg, 4);
	web = find(&c, "/web");
	assert_non_null(web);
	assert_true(web->policy);
	assert_int_equal(web->target_pct, 80);
	assert_int_equal(web->usage.anon, 30 * HPAGE_SIZE);
	assert_int_equal(web->usage.anon_huge, 5 * HPAGE_SIZE);
	assert_int_equal(web->pending, 3 * HPAGE_SIZE);
	assert_int_equal(web->skipped[SCAN_COLD], 4 * HPAGE_SIZE);
	assert_int_equal(web->skipped[SCAN_CANDIDATE], 0);
	assert_int_equal(web->skipped[SCAN_PMD_MAPPED], 0);
	assert_int_equal(web->collapsed, 7 * HPAGE_SIZE);
	assert_int_equal(web->processes, 2);
	assert_ptr_equal(&c.cg[0], web); /* policy groups first */
	big = find(&c, "/big");
	assert_non_null(big);
	assert_false(big->policy);
	a = find(&c, "/a\xef\xbf\xbd");
	assert_non_null(a);
	assert_int_equal(a->usage.anon, 11 * HPAGE_SIZE);
	assert_int_equal(a->processes, 2);
	other = find(&c, "other");
	assert_non_null(other);
	assert_int_equal(other->usage.anon, 1 * HPAGE_SIZE);
	assert_int_equal(other->pending, HPAGE_SIZE);
	/* Top processes by pending: pid 101 (3 blocks), then 103 (1). */
	assert_int_equal(c.ntop, 2);
	assert_int_equal(c.top[0].pid, 101);
	/* Labelled by the group they count for, bounded like the groups. */
	assert_string_equal(c.top[0].cgroup, "/web");
	assert_int_equal(c.top[0].pending, 3 * HPAGE_SIZE);
	assert_int_equal(c.top[1].pid, 103);
	assert_string_equal(c.top[1].cgroup, "other"); /* /small is in other */
	coverage_free(&c);

	/* top_n 0: the policy group and everything else in "other". */
	assert_int_equal(coverage_build(&eng, 0, NULL, &c), 0);
	assert_int_equal(c.ncg, 2);
	assert_int_equal(find(&c, "other")->usage.anon, (100 + 1 + 5 + 6) * HPAGE_SIZE);
	coverage_free(&c);
	done();
}

static void test_policy_group_without_processes(void **state)
{
	struct coverage c;

	(void)state;
	fill();
	eng.view.nprocs = 0;
	eng.ncg_bytes = 0;
	assert_int_equal(coverage_build(&eng, 10, NULL, &c), 0);
	assert_int_equal(c.ncg, 1);
	assert_string_equal(c.cg[0].cgroup, "/web");
	assert_int_equal(c.ntop, 0);
	coverage_free(&c);
	done();
}

/* The coverage series as metrics_format() writes them. */
static void coverage_text(FILE *f, const struct engine_stats *e)
{
	struct coverage c;

	assert_int_equal(coverage_metrics_build(e, NULL, &c), 0);
	coverage_metrics_write(f, &c);
	coverage_free(&c);
}

static void test_memory_stat_replaces_sums(void **state)
{
	struct coverage c;
	static struct cgroup_rule r2[1];
	int v2 = open(FIX "/v2", O_RDONLY | O_DIRECTORY);

	(void)state;
	fill();
	r2[0] = rules[0];
	r2[0].path = "/web.slice/app.service";
	cfg.rules = r2;
	assert_int_equal(coverage_build(&eng, 10, NULL, &c), 0);
	assert_int_equal(coverage_use_memory_stat(&c, v2), 1);
	assert_int_equal(find(&c, "/web.slice/app.service")->source, COVERAGE_MEMORY_STAT);
	assert_int_equal(find(&c, "/web.slice/app.service")->usage.anon_huge, 62914560);
	assert_int_equal(find(&c, "/big")->source, COVERAGE_SMAPS);
	coverage_free(&c);

	/* The same through the metrics text, as the daemon does it. */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_true(coverage_metrics_memory_stat(v2, "/"));
		coverage_text(f, &eng);
		fclose(f);
		assert_non_null(
		    strstr(buf, "hugecollapsed_cgroup_anon_huge_bytes{cgroup=\"/web.slice/app.service\"} 62914560\n"));
		assert_false(coverage_metrics_memory_stat(-1, "/"));
		free(buf);
	}
	close(v2);
	done();
}

/* Blocks the memcg gate held back wait for room, not for the budget: they
 * are skipped (memcg_limit), not pending, and a process whose every block
 * waits for room is not a top pending process. */
static void test_memcg_held_not_pending(void **state)
{
	struct coverage c;
	const struct cgroup_coverage *web;

	(void)state;
	fill();
	st[1].results[SCAN_MEMCG_LIMIT] = 2;
	st[1].results[SCAN_CANDIDATE] = 1;
	st[3].results[SCAN_MEMCG_LIMIT] = 1;
	assert_int_equal(coverage_build(&eng, 2, NULL, &c), 0);
	web = find(&c, "/web");
	assert_non_null(web);
	assert_int_equal(web->pending, 1 * HPAGE_SIZE);
	assert_int_equal(web->skipped[SCAN_MEMCG_LIMIT], 2 * HPAGE_SIZE);
	assert_int_equal(find(&c, "other")->pending, 0);
	assert_int_equal(c.ntop, 1);
	assert_int_equal(c.top[0].pid, 101);
	assert_int_equal(c.top[0].pending, 1 * HPAGE_SIZE);
	coverage_free(&c);
	done();
}

/* With a memory (series_keep.h) the groups of one build stay in the next
 * while sizes move a little; an outsider takes a place only when it is
 * SERIES_KEEP_FACTOR times larger; "other" once there stays. */
static void test_build_stable(void **state)
{
	struct series_keep keep = {0};
	struct coverage c;

	(void)state;
	fill();
	assert_int_equal(coverage_build(&eng, 2, &keep, &c), 0);
	assert_non_null(find(&c, "/big"));
	assert_non_null(find(&c, "/a\xef\xbf\xbd")); /* 11 */
	assert_null(find(&c, "/small"));
	coverage_free(&c);
	/* /small grows past "/a?" (11) but not twice: nothing changes. */
	st[3].usage.anon = 20 * HPAGE_SIZE;
	assert_int_equal(coverage_build(&eng, 2, &keep, &c), 0);
	assert_non_null(find(&c, "/a\xef\xbf\xbd"));
	assert_null(find(&c, "/small"));
	coverage_free(&c);
	/* Without a memory it would have its place now. */
	assert_int_equal(coverage_build(&eng, 2, NULL, &c), 0);
	assert_non_null(find(&c, "/small"));
	assert_null(find(&c, "/a\xef\xbf\xbd"));
	coverage_free(&c);
	/* Twice as large and more: it takes the smallest member's place. */
	st[3].usage.anon = 23 * HPAGE_SIZE;
	assert_int_equal(coverage_build(&eng, 2, &keep, &c), 0);
	assert_non_null(find(&c, "/small"));
	assert_non_null(find(&c, "/big"));
	assert_null(find(&c, "/a\xef\xbf\xbd"));
	coverage_free(&c);
	/* Everything fits (top_n 10): "other" stays, empty. */
	assert_int_equal(coverage_build(&eng, 10, &keep, &c), 0);
	assert_non_null(find(&c, "other"));
	assert_int_equal(find(&c, "other")->usage.anon, 0);
	coverage_free(&c);
	series_keep_free(&keep);
	done();
}

static void test_metrics_text(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	fill();
	assert_non_null(f);
	coverage_text(f, &eng);
	fclose(f);
	assert_non_null(strstr(buf, "hugecollapsed_cgroup_thp_coverage_ratio{cgroup=\"/web\"} 0.166667\n"));
	assert_non_null(strstr(buf, "hugecollapsed_cgroup_coverage_target_ratio{cgroup=\"/web\"} 0.80\n"));
	assert_non_null(strstr(buf, "hugecollapsed_cgroup_skipped_bytes{cgroup=\"/web\",result=\"cold\"} 8388608\n"));
	assert_non_null(strstr(buf, "hugecollapsed_cgroup_anon_bytes{cgroup=\"/a\xef\xbf\xbd\"} 23068672\n"));
	/* Labelled by rank and group (/web/worker counts for /web's policy
	 * file): no pid or comm label, the pid is a value. */
	assert_non_null(strstr(buf, "hugecollapsed_top_process_pending_bytes{rank=\"1\",cgroup=\"/web\"} 6291456\n"));
	assert_non_null(strstr(buf, "hugecollapsed_top_process_pid{rank=\"1\",cgroup=\"/web\"} 101\n"));
	assert_null(strstr(buf, "pid=\""));
	assert_null(strstr(buf, "comm=\""));
	/* Only groups with a target say so. */
	assert_null(strstr(buf, "hugecollapsed_cgroup_coverage_target_ratio{cgroup=\"/big\"}"));
	free(buf);
	done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1_real_capture),
	    cmocka_unit_test(test_v2_format),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_read_at),
	    cmocka_unit_test(test_controllers),
	    cmocka_unit_test(test_usage_from_smaps),
	    cmocka_unit_test(test_refresh_live),
	    cmocka_unit_test(test_build_groups),
	    cmocka_unit_test(test_policy_group_without_processes),
	    cmocka_unit_test(test_memory_stat_replaces_sums),
	    cmocka_unit_test(test_memcg_held_not_pending),
	    cmocka_unit_test(test_build_stable),
	    cmocka_unit_test(test_metrics_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
