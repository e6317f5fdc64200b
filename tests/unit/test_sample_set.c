/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampling what changed: which PIDs a pass reads (sample_set_build, pure),
 * the sorted-set helpers, merging a partial sample and sweeping against a
 * /proc listing (proc_table), and engine_sample_pass() on a fixture /proc
 * with an injected doorbell and clock: only the processes that faulted,
 * the new ones and the rolling slice have their stat read; new ones named
 * by few samples wait for growth of mapped memory or the listing; lost
 * records and --once take a full sample; exited processes are swept. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "engine.h"
#include "grow.h"
#include "sample_set.h"
#include "units.h"

/* ---- pure: sample_set_build and the PID sets ---------------------------- */

static void state(struct proc_state *s, pid_t pid, uint64_t rss, bool scanned, size_t nblocks)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->prev.rss_pages = rss;
	s->scanned = scanned;
	s->nblocks = nblocks;
}

static void test_build(void **unused)
{
	struct proc_state st[6];
	pid_t faulted_pids[] = {20, 99, 500}, fresh[] = {77}, *out = NULL;
	struct fault_pids faulted = {.pid = faulted_pids, .n = 3};
	struct sample_request rq = {.faulted = &faulted, .fresh = fresh, .nfresh = 1, .self = 99, .roll = 2};
	size_t nout = 0, cap = 0;
	pid_t roll = 35;

	(void)unused;
	state(&st[0], 10, 10000, true, 0);
	state(&st[1], 20, 10000, true, 0);
	state(&st[2], 30, 10000, true, 3); /* holds candidates */
	state(&st[3], 40, 10, true, 0);    /* small: skipped by the slice */
	state(&st[4], 50, 10000, true, 0);
	state(&st[5], 60, 10000, true, 0);
	assert_int_equal(sample_set_build(st, 6, &rq, &roll, &out, &nout, &cap), 0);
	/* faulted 20, 500 (new), not 99 (self); fresh 77; 30 (candidates);
	 * slice from 40: 40 (small: a stat read is all it costs), 50. */
	pid_t want[] = {20, 30, 40, 50, 77, 500};
	assert_int_equal(nout, 6);
	for (size_t i = 0; i < nout; i++)
		assert_int_equal(out[i], want[i]);
	assert_int_equal(roll, 60);
	/* The slice wraps around the end of the table. */
	faulted.n = 0;
	rq.nfresh = 0;
	rq.roll = 3;
	assert_int_equal(sample_set_build(st, 6, &rq, &roll, &out, &nout, &cap), 0);
	pid_t want2[] = {10, 20, 30, 60};
	assert_int_equal(nout, 4);
	for (size_t i = 0; i < nout; i++)
		assert_int_equal(out[i], want2[i]);
	assert_int_equal(roll, 30);
	/* A cursor past the last PID starts over; a slice larger than the
	 * table covers it once. */
	roll = 1000;
	rq.roll = 100;
	assert_int_equal(sample_set_build(st, 6, &rq, &roll, &out, &nout, &cap), 0);
	assert_int_equal(nout, 6);
	free(out);
}

/* Faults that cannot have made a candidate yet cost no stat read: a
 * process under 2 MiB or a closed one (its last scan found nothing the
 * policy allows) until SAMPLES_PER_BLOCK samples named it since its last
 * read; a new PID with fewer samples in this drain waits for the listing.
 * An open process is read for one sample, a disabled one never. */
static void test_build_counts(void **unused)
{
	struct proc_state st[4];
	struct fault_pids faulted = {0};
	struct sample_request rq = {.faulted = &faulted, .self = 1, .policy_gen = 3};
	pid_t *out = NULL;
	size_t nout = 0, cap = 0;
	pid_t roll = 0;

	(void)unused;
	state(&st[0], 10, 10000, true, 0); /* closed: scanned, nothing open */
	st[0].scan_policy_gen = 3;
	state(&st[1], 20, 100, true, 0); /* small */
	state(&st[2], 30, 10000, true, 0);
	st[2].open_blocks = 4; /* open */
	st[2].scan_policy_gen = 3;
	state(&st[3], 40, 10000, true, 0); /* closed under an older policy: open */
	st[3].scan_policy_gen = 2;
	for (pid_t pid = 10; pid <= 40; pid += 10)
		assert_int_equal(fault_pids_add(&faulted, pid), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fault_pids_add(&faulted, 500), 0); /* new, 3 samples */
	assert_int_equal(fault_pids_add(&faulted, 10), 0);
	fault_pids_finish(&faulted);
	assert_int_equal(faulted.n, 5);
	assert_int_equal(fault_pids_count(&faulted, 10), 2);
	assert_int_equal(fault_pids_count(&faulted, 500), 3);
	assert_int_equal(fault_pids_count(&faulted, 501), 0);
	st[0].unread_samples = 2; /* counted by the engine */
	st[1].unread_samples = 1;
	assert_int_equal(sample_set_build(st, 4, &rq, &roll, &out, &nout, &cap), 0);
	pid_t want[] = {30, 40};
	assert_int_equal(nout, 2);
	for (size_t i = 0; i < nout; i++)
		assert_int_equal(out[i], want[i]);

	/* Enough samples since the last read: read. A new PID with a block's
	 * worth of samples in one drain: read now. */
	st[0].unread_samples = SAMPLES_PER_BLOCK;
	st[1].unread_samples = SAMPLES_PER_BLOCK;
	assert_int_equal(fault_pids_add(&faulted, 500), 0);
	fault_pids_finish(&faulted);
	assert_int_equal(fault_pids_count(&faulted, 500), SAMPLES_PER_BLOCK);
	assert_int_equal(sample_set_build(st, 4, &rq, &roll, &out, &nout, &cap), 0);
	pid_t want2[] = {10, 20, 30, 40, 500};
	assert_int_equal(nout, 5);
	for (size_t i = 0; i < nout; i++)
		assert_int_equal(out[i], want2[i]);

	/* A disabled policy: never read for faults, however many; under a
	 * newer config (a reload) read again. */
	struct policy off = {.enable = false};
	st[2].policy = &off;
	st[2].unread_samples = 1000;
	assert_int_equal(sample_set_build(st, 4, &rq, &roll, &out, &nout, &cap), 0);
	assert_int_equal(nout, 4);
	assert_int_not_equal(out[2], 30);
	rq.policy_gen = 4;
	assert_int_equal(sample_set_build(st, 4, &rq, &roll, &out, &nout, &cap), 0);
	assert_int_equal(nout, 5);
	fault_pids_free(&faulted);
	free(out);
}

static void test_pid_sets(void **unused)
{
	pid_t a[] = {1, 3, 5, 7, 9}, b[] = {3, 4, 9, 11}, out[8], *set = NULL;
	size_t n = 0, cap = 0;
	pid_t add1[] = {5, 2}, add2[] = {2, 8};

	(void)unused;
	assert_int_equal(pids_diff(a, 5, b, 4, out), 3);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 5);
	assert_int_equal(out[2], 7);
	assert_int_equal(pids_intersect(a, 5, b, 4, out), 2);
	assert_int_equal(out[0], 3);
	assert_int_equal(out[1], 9);
	assert_int_equal(pids_diff(a, 5, b, 0, a), 5); /* in place */
	assert_int_equal(pids_add(&set, &n, &cap, add1, 2), 0);
	assert_int_equal(pids_add(&set, &n, &cap, add2, 2), 0);
	assert_int_equal(n, 3);
	assert_int_equal(set[0], 2);
	assert_int_equal(set[1], 5);
	assert_int_equal(set[2], 8);
	free(set);
}

/* ---- proc_table: merge and sweep --------------------------------------- */

struct table {
	struct proc_state *st;
	size_t n, cap;
};

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		proc_state_clear(&t->st[i]);
	free(t->st);
}

static void merge(struct table *t, struct proc_sample *p, size_t n, double now)
{
	struct proc_table s = {.p = p, .n = n, .cap = n};

	assert_int_equal(proc_states_merge(&t->st, &t->n, &t->cap, &s, 100, now), 0);
	for (size_t i = 1; i < t->n; i++)
		assert_true(t->st[i - 1].pid < t->st[i].pid);
}

static void test_merge_and_sweep(void **unused)
{
	struct table t = {0};
	struct proc_sample first[] = {{.pid = 10, .start_ticks = 1}, {.pid = 30, .start_ticks = 3}};
	struct proc_sample second[] = {{.pid = 20, .start_ticks = 2},
				       {.pid = 30, .start_ticks = 3, .minflt = 100, .cpu_ticks = 50}};
	struct proc_sample recycled[] = {{.pid = 10, .start_ticks = 9}};
	pid_t alive[] = {5, 20, 30, 40}, *fresh = NULL;
	size_t nfresh = 0, capfresh = 0;
	struct proc_state *s;

	(void)unused;
	merge(&t, first, 2, 1.0);
	merge(&t, second, 2, 3.0); /* 10 not sampled: untouched, kept */
	assert_int_equal(t.n, 3);
	s = proc_state_find(t.st, t.n, 30);
	/* 50 ticks at 100 Hz over its own 2 s since its last sample. */
	assert_true(s->activity.cpu > 0.24 && s->activity.cpu < 0.26);
	assert_true(s->last_active == 3.0);
	s = proc_state_find(t.st, t.n, 10);
	s->scanned = true;
	merge(&t, recycled, 1, 4.0);
	s = proc_state_find(t.st, t.n, 10);
	assert_int_equal(s->start_ticks, 9);
	assert_false(s->scanned);
	assert_int_equal(proc_states_sweep(t.st, &t.n, alive, 4, &fresh, &nfresh, &capfresh), 0);
	assert_int_equal(t.n, 2); /* 10 exited */
	assert_int_equal(t.st[0].pid, 20);
	assert_int_equal(t.st[1].pid, 30);
	assert_int_equal(nfresh, 2);
	assert_int_equal(fresh[0], 5);
	assert_int_equal(fresh[1], 40);
	free(fresh);
	table_free(&t);
}

/* ---- engine_sample_pass on a fixture /proc ----------------------------- */

#define L LISTING_PERIOD_S

static char root[64];
static double fake_time;
static double fake_clock(void)
{
	return fake_time;
}

/* Writes root/PID/stat with the given minor faults (vsize 0: a kernel
 * thread), as the kernel prints it. */
static void write_stat(pid_t pid, uint64_t minflt, uint64_t vsize)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, (int)pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"%d (task %d) S 1 %d %d 0 -1 4194560 %llu 0 0 0 1 1 0 0 20 0 1 0 %d %llu 3000 "
		"18446744073709551615 94000000000000 94000000100000 140000000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 "
		"0 94000000200000 94000000300000 94000000400000 140000000001000 140000000002000 140000000002000 "
		"140000000003000 0\n",
		(int)pid, (int)pid, (int)pid, (int)pid, (unsigned long long)minflt, (int)pid * 10,
		(unsigned long long)vsize);
	fclose(f);
}

static void remove_proc(pid_t pid)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", root, (int)pid);
	rmdir(path);
}

static pid_t drain_pids[16];
static size_t ndrain;
static bool drain_lost;
static int fake_drain(struct fault_doorbell *d, struct fault_pids *out)
{
	(void)d;
	for (size_t i = 0; i < ndrain; i++)
		assert_int_equal(fault_pids_add(out, drain_pids[i]), 0);
	out->lost = drain_lost;
	fault_pids_finish(out);
	ndrain = 0;
	drain_lost = false;
	return 0;
}

/* The full sample's enumerator: every process of the fixture, read as a
 * partial sample of the listing would. */
static unsigned full_samples_taken;
static int fixture_enumerate(void *ctx, struct proc_table *out)
{
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	int r;

	(void)ctx;
	full_samples_taken++;
	r = procs_list_pids(root, &pids, &n, &cap);
	if (r == 0)
		r = procs_sample_pids(root, pids, n, out);
	free(pids);
	return r;
}

static uint64_t minflt_of(const struct engine *e, pid_t pid)
{
	const struct proc_state *s = engine_find(e, pid);

	assert_non_null(s);
	return s->prev.minflt;
}

static struct proc_state *engine_find_mut(struct engine *e, pid_t pid)
{
	struct proc_state *s = proc_state_find(e->st, e->nst, pid);

	assert_non_null(s);
	return s;
}

/* An engine whose reads of /proc after engine_init() (what it opened stays
 * real) go to the fixture root, sampling through the fixture enumerator and
 * the fake drain on the fake clock. */
static void engine_at_fixture(struct engine *e, const struct config *cfg, struct hc_paths *paths, struct hc_paths *at,
			      pid_t self)
{
	hc_paths_default(paths);
	assert_int_equal(engine_init(e, cfg, paths), 0);
	*at = *paths;
	at->proc = root;
	e->paths = at;
	e->sampler.enumerate = fixture_enumerate;
	e->sampler.doorbell_drain = fake_drain;
	e->now = fake_clock;
	e->self = self;
	e->sampler.mapped.known = false; /* this machine's meminfo must not ask for listings */
}

static void test_sample_pass(void **unused)
{
	struct pass_options o = {0};
	struct pass_stats ps;
	struct hc_paths paths, at;
	struct config cfg;
	struct engine e;

	(void)unused;
	snprintf(root, sizeof(root), "/tmp/hc-sample-XXXXXX");
	assert_non_null(mkdtemp(root));
	for (pid_t pid = 100; pid <= 600; pid += 100)
		write_stat(pid, 1, 64 * MIB_BYTES);
	write_stat(2, 0, 0); /* a kernel thread */
	config_defaults(&cfg);
	cfg.full_rescan_s = 6 * L; /* the rolling slice: one process per L */
	engine_at_fixture(&e, &cfg, &paths, &at, 600);
	fake_time = 100;

	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0); /* the first: full */
	assert_true(ps.full_sample);
	assert_int_equal(full_samples_taken, 1);
	assert_int_equal(e.nst, 6);
	/* Before its first look a process is sampled every pass (its score
	 * needs fresh activity): 400 stays so, the others had theirs. */
	for (size_t i = 0; i < e.nst; i++)
		e.st[i].scanned = e.st[i].pid != 400;

	/* Every process faulted in the fixture; the doorbell names 200 and
	 * 600 (ourselves), and a new process 700. L of 6 L: the rolling slice
	 * is one process, from the start of the table. The listing is due. */
	for (pid_t pid = 100; pid <= 700; pid += 100)
		write_stat(pid, 5, 64 * MIB_BYTES);
	drain_pids[0] = 200;
	drain_pids[1] = 600;
	drain_pids[2] = 700;
	ndrain = 3;
	fake_time = 100 + L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_false(ps.full_sample);
	assert_int_equal(full_samples_taken, 1);
	assert_int_equal(minflt_of(&e, 200), 5);
	assert_int_equal(minflt_of(&e, 700), 5); /* new */
	assert_int_equal(minflt_of(&e, 300), 1); /* not read */
	assert_int_equal(minflt_of(&e, 400), 5); /* no first look yet */
	engine_find_mut(&e, 400)->scanned = true;
	engine_find_mut(&e, 700)->scanned = true;
	assert_int_equal(minflt_of(&e, 500), 1);
	assert_int_equal(minflt_of(&e, 600), 1); /* our own faults mean nothing */
	assert_int_equal(minflt_of(&e, 100), 5); /* the slice */
	/* The listing found kernel thread 2 (read once, remembered). */
	assert_int_equal(ps.procs_sampled, 5);
	assert_int_equal(e.sampler.nnomm, 1);

	/* Nothing faulted, L / 2 later: no listing, and the slice owes
	 * 7 * 0.5 / 6 = 0.58 of a process: none read, the fraction carries
	 * over; L / 2 later it owes 1.17: one, 200 (and the listing finds
	 * nothing new: the kernel thread is remembered). */
	fake_time = 100 + 1.5 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_int_equal(ps.procs_sampled, 0);
	fake_time = 100 + 2 * L;
	write_stat(200, 7, 64 * MIB_BYTES);
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_int_equal(ps.procs_sampled, 1);
	assert_int_equal(minflt_of(&e, 200), 7);

	/* A new process named by one sample (exec faults), and one already
	 * gone: not read (newcomers). Memory grows without faults: the
	 * newcomers are read instead of listing /proc, and the gone one is
	 * not taken for a process without memory. */
	write_stat(800, 1, 64 * MIB_BYTES);
	drain_pids[0] = 800;
	drain_pids[1] = 900;
	ndrain = 2;
	size_t nomm0 = e.sampler.nnomm;
	double listed = e.sampler.last_listing;
	fake_time = 100 + 2.25 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_null(engine_find(&e, 800));
	assert_int_equal(e.sampler.nnewcomers, 2);
	e.sampler.mapped_unlisted = true; /* what the meminfo watch sets */
	fake_time = 100 + 2.5 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_int_equal(minflt_of(&e, 800), 1);
	assert_int_equal(e.sampler.nnewcomers, 0);
	assert_int_equal(e.sampler.nnomm, nomm0);
	assert_true(e.sampler.last_listing == listed); /* no listing */
	remove_proc(800);

	/* 500 exits; L later the listing sweeps it and does not read the
	 * kernel thread again. */
	remove_proc(500);
	fake_time = 100 + 3 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_null(engine_find(&e, 500));
	assert_int_equal(e.nst, 6);
	assert_int_equal(e.sampler.nfresh, 0);

	/* Lost records: everyone. */
	write_stat(400, 9, 64 * MIB_BYTES);
	drain_lost = true;
	fake_time = 100 + 3.5 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_true(ps.full_sample);
	assert_int_equal(full_samples_taken, 2);
	assert_int_equal(minflt_of(&e, 400), 9);
	/* --once: everyone. */
	o.unlimited = true;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_true(ps.full_sample);

	engine_free(&e);
	config_free(&cfg);
	for (pid_t pid = 100; pid <= 700; pid += 100)
		remove_proc(pid);
	remove_proc(2);
	assert_int_equal(rmdir(root), 0);
}

/* A zombie: no memory, state Z (what a dead child shows until its parent
 * reaps it). */
static void write_zombie(pid_t pid)
{
	char path[128], text[2048];
	FILE *f;
	size_t n;

	write_stat(pid, 0, 0);
	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	char *st = strstr(text, ") S ");
	assert_non_null(st);
	st[2] = 'Z';
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Issue 16: a zombie's PID, reaped and reused before the next listing, is
 * read again at that listing; before, it stayed in the "no memory" set
 * (with the kernel threads) until the next full sample. */
static void test_zombie_pid_reused(void **unused)
{
	struct pass_options o = {0};
	struct pass_stats ps;
	struct hc_paths paths, at;
	struct config cfg;
	struct engine e;

	(void)unused;
	snprintf(root, sizeof(root), "/tmp/hc-sample-XXXXXX");
	assert_non_null(mkdtemp(root));
	write_stat(100, 1, 64 * MIB_BYTES);
	write_stat(2, 0, 0); /* a kernel thread */
	config_defaults(&cfg);
	engine_at_fixture(&e, &cfg, &paths, &at, 1);
	ndrain = 0;
	drain_lost = false;
	fake_time = 100;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0); /* full */
	assert_true(ps.full_sample);

	write_zombie(400); /* a child that died since */
	fake_time = 100 + L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0); /* the listing */
	assert_false(ps.full_sample);
	assert_null(engine_find(&e, 400));
	assert_int_equal(e.sampler.nnomm, 1); /* the kernel thread only */

	write_stat(400, 3, 64 * MIB_BYTES); /* reaped; the PID is a new process now */
	fake_time = 100 + 2 * L;
	assert_int_equal(engine_sample_pass(&e, &o, &ps), 0);
	assert_false(ps.full_sample);
	assert_non_null(engine_find(&e, 400));
	assert_int_equal(minflt_of(&e, 400), 3);

	engine_free(&e);
	config_free(&cfg);
	remove_proc(100);
	remove_proc(400);
	remove_proc(2);
	assert_int_equal(rmdir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build),       cmocka_unit_test(test_build_counts),
	    cmocka_unit_test(test_pid_sets),    cmocka_unit_test(test_merge_and_sweep),
	    cmocka_unit_test(test_sample_pass), cmocka_unit_test(test_zombie_pid_reused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
