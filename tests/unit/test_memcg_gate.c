/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg_gate: which candidates of a pass fit in their cgroup's room, on a
 * fixture /proc and the cgroup v2 fixture tree. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "engine_stats.h"
#include "memcg_gate.h"
#include "units.h"

#define NPROC 5

/* The gate's inputs, as the engine passes them (engine.c). */
static struct memcg_gate *g;
static struct memcg_gate_input in;
static struct proc_state st[NPROC];
static struct candidate cands[64];
static size_t ncands;
static struct policy pol;
static struct pass_stats ps;

static void add(uint32_t proc, unsigned present)
{
	cands[ncands] =
	    (struct candidate){.addr = 0x40000000ull + ncands * HPAGE_SIZE, .proc = proc, .present = (uint16_t)present};
	ncands++;
}

/* One call, and each process's results after it, as engine.c does. */
static int hold_back(struct pass_stats *p)
{
	int r = memcg_gate_hold_back(g, &in, cands, ncands, p);
	const struct candidate *passed = memcg_gate_passed(g, &ncands);

	/* The fixture's array holds what passed, as the engine reads it. */
	memmove(cands, passed, ncands * sizeof(*cands));
	if (r >= 0 && memcg_gate_counted(g))
		for (size_t i = 0; i < NPROC; i++)
			proc_state_memcg_held(&st[i], memcg_gate_held(g, i));
	return r;
}

static int setup(void **state)
{
	struct memcg_roots r = {.mode = MEMCG_V2};

	(void)state;
	g = memcg_gate_new("/proc/self/mountinfo");
	assert_non_null(g);
	ncands = 0;
	memset(st, 0, sizeof(st));
	memset(&ps, 0, sizeof(ps));
	pol = (struct policy){.enable = true, .memcg_headroom_mb = 0};
	for (int i = 0; i < NPROC; i++) {
		st[i].pid = 100 + i;
		st[i].policy = &pol;
	}
	in = (struct memcg_gate_input){
	    .st = st, .nst = NPROC, .proc_root = HC_FIXTURES "/memcg_proc", .pass = 1, .sample_time = 50};
	snprintf(r.mount, sizeof(r.mount), "%s", HC_FIXTURES "/cgroup2");
	snprintf(r.root, sizeof(r.root), "/");
	assert_int_equal(memcg_gate_set_roots(g, &r), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	memcg_gate_free(g);
	return 0;
}

/* How many empty-ish blocks (present 0: each keeps 2 MiB) fit in room. */
static unsigned expected_fit(uint64_t room, unsigned headroom_mb)
{
	uint64_t h = memcg_headroom_bytes(headroom_mb, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	unsigned n = 0;

	while (memcg_take(&room, h, 0))
		n++;
	return n;
}

static void test_room_spent_in_order(void **state)
{
	unsigned fit = expected_fit(524288000 - 500000000, 0);
	int held;

	(void)state;
	assert_true(fit > 0 && fit < 12); /* 12 × 2 MiB > 23 MiB of room */
	for (int i = 0; i < 12; i++)
		add(0, 0);
	st[0].results[SCAN_CANDIDATE] = 12;
	st[0].last_scan = 50; /* scanned in this pass */
	ps.results[SCAN_CANDIDATE] = 12;
	held = hold_back(&ps);
	assert_int_equal(held, 12 - (int)fit);
	assert_int_equal(ncands, fit);
	for (size_t i = 0; i < ncands; i++) /* the best ones, in order */
		assert_true(cands[i].addr == 0x40000000ull + i * HPAGE_SIZE);
	assert_int_equal(ps.results[SCAN_MEMCG_LIMIT], 12 - fit);
	assert_int_equal(ps.results[SCAN_CANDIDATE], fit);
	assert_int_equal(st[0].results[SCAN_MEMCG_LIMIT], 12 - fit);
	assert_int_equal(st[0].results[SCAN_CANDIDATE], fit);
}

/* Full blocks keep nothing: all fit while their 2 MiB peak does. */
static void test_full_blocks(void **state)
{
	(void)state;
	for (int i = 0; i < 40; i++)
		add(0, 512);
	assert_int_equal(hold_back(NULL), 0);
	assert_int_equal(ncands, 40);
	/* ...but not where there is no room at all. */
	ncands = 0;
	add(4, 512);
	assert_int_equal(hold_back(NULL), 1);
	assert_int_equal(ncands, 0);
}

/* No limit, unreadable limits (fail closed), a process gone (left to
 * dispatch), and the headroom of each process's own policy. */
static void test_each_cgroup_on_its_own(void **state)
{
	struct policy big = pol;

	(void)state;
	add(1, 0); /* /nolimit */
	add(2, 0); /* /garbage */
	add(3, 0); /* gone */
	add(1, 0);
	add(2, 400);
	assert_int_equal(hold_back(&ps), 2);
	assert_int_equal(ncands, 3);
	assert_int_equal(cands[0].proc, 1);
	assert_int_equal(cands[1].proc, 3);
	assert_int_equal(cands[2].proc, 1);
	assert_int_equal(st[2].results[SCAN_MEMCG_LIMIT], 2);

	/* A policy whose headroom exceeds the room holds everything back. */
	big.memcg_headroom_mb = 64;
	st[0].policy = &big;
	ncands = 0;
	add(0, 256);
	assert_int_equal(hold_back(NULL), 1);
}

/* Limits are read once per pass; each call spends the room afresh, and
 * the counts of a pass replace those of the last one. */
static void test_per_pass_cache(void **state)
{
	unsigned fit = expected_fit(524288000 - 500000000, 0);

	(void)state;
	for (int i = 0; i < 12; i++)
		add(0, 0);
	st[0].results[SCAN_CANDIDATE] = 12;
	assert_int_equal(hold_back(&ps), 12 - (int)fit);
	/* A rebuild in the same pass (after a recheck) gets the same room. */
	ncands = 0;
	for (int i = 0; i < 12; i++)
		add(0, 0);
	assert_int_equal(hold_back(NULL), 12 - (int)fit);
	/* The next pass, with fewer blocks: the old count is undone. */
	in.pass = 2;
	ncands = 0;
	add(0, 0);
	memset(&ps, 0, sizeof(ps));
	assert_int_equal(hold_back(&ps), 0);
	assert_int_equal(st[0].results[SCAN_MEMCG_LIMIT], 0);
	assert_int_equal(st[0].results[SCAN_CANDIDATE], 12);
	assert_int_equal(ps.results[SCAN_MEMCG_LIMIT], 0);
}

static void test_no_controller(void **state)
{
	struct memcg_roots none = {.mode = MEMCG_NONE};

	(void)state;
	assert_int_equal(memcg_gate_set_roots(g, &none), 0);
	add(4, 0); /* /over, but nothing to read it with */
	assert_int_equal(hold_back(&ps), 0);
	assert_int_equal(ncands, 1);
}

/* Issue 16, defect 6: mounts that cannot be found never turn the gate off:
 * every block is held back (and the error is kept for the metric); a
 * mountinfo past 4 MiB is read whole and its limits apply. */
static void test_mountinfo_fails_closed(void **state)
{
	char path[] = "/tmp/hc-test-gate-mountinfo.XXXXXX";
	char last[PATH_MAX + 128];
	FILE *f;
	long size;
	int fd;

	(void)state;
	assert_int_equal(memcg_gate_set_mountinfo(g, "/nonexistent/mountinfo"), 0);
	add(0, 0);
	add(1, 0);
	add(2, 0);
	assert_int_equal(hold_back(&ps), 3);
	assert_int_equal(ncands, 0);
	assert_int_equal(memcg_gate_error(g), -ENOENT);
	assert_int_equal(ps.results[SCAN_MEMCG_LIMIT], 3);

	/* 17,000 overlay mounts (4.4 MB), the cgroup2 fixture tree last. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (unsigned i = 0; i < 17000; i++)
		fprintf(
		    f,
		    "%u 29 0:%u / /var/lib/containerd/io.containerd.runtime.v2.task/k8s.io/%064x/rootfs rw,relatime "
		    "- overlay overlay rw,lowerdir=/var/lib/l/%u,upperdir=/var/lib/u/%u,workdir=/w/%u\n",
		    1000 + i, 100 + i, i, i, i, i);
	snprintf(last, sizeof(last), "41 31 0:38 / %s/cgroup2 rw - cgroup2 cgroup2 rw", HC_FIXTURES);
	fprintf(f, "%s\n", last);
	size = ftell(f);
	fclose(f);
	assert_true(size > 4l << 20);
	assert_int_equal(memcg_gate_set_mountinfo(g, path), 0);
	in.pass++;
	ncands = 0;
	memset(&ps, 0, sizeof(ps));
	add(0, 0); /* no limit */
	add(4, 0); /* /over: no room */
	assert_int_equal(hold_back(&ps), 1);
	assert_int_equal(memcg_gate_error(g), 0);
	assert_int_equal(ncands, 1);
	assert_int_equal(cands[0].proc, 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_room_spent_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_each_cgroup_on_its_own, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_per_pass_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_controller, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mountinfo_fails_closed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
