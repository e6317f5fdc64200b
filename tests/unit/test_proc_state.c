/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc_state: the table of known processes updated from samples, pure
 * (proc_states_update) and through engine_sample() with an injected
 * enumerator and clock. A PID whose start time changed is a different
 * process: its state is forgotten, never merged. Recycled PIDs with the table
 * at capacity once wrote past its end (run under ASan to see it). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "engine.h"
#include "proc_state.h"

#define MAXP 64

struct fake_procs {
	struct proc_sample p[MAXP];
	size_t n;
	int err;
};

static void put(struct fake_procs *fp, pid_t pid, uint64_t start, uint64_t minflt)
{
	assert_true(fp->n < MAXP);
	fp->p[fp->n++] = (struct proc_sample){.pid = pid, .start_ticks = start, .minflt = minflt};
}

/* The injected enumerator: a copy of fp, sorted by pid (callers put them in
 * order), as procs_sample() returns it. */
static int fake_enumerate(void *ctx, struct proc_table *out)
{
	const struct fake_procs *fp = ctx;

	if (fp->err)
		return fp->err;
	if (out->cap < fp->n) {
		struct proc_sample *np = realloc(out->p, fp->n * sizeof(*np));

		assert_non_null(np);
		out->p = np;
		out->cap = fp->n;
	}
	if (fp->n)
		memcpy(out->p, fp->p, fp->n * sizeof(*fp->p));
	out->n = fp->n;
	return 0;
}

static double fake_time;
static double fake_clock(void)
{
	return fake_time;
}

/* An engine with default config whose processes come from fp and whose
 * clock is fake_time. */
static struct hc_paths real_paths;

static void fake_engine(struct engine *e, struct config *cfg, struct fake_procs *fp)
{
	config_defaults(cfg);
	hc_paths_default(&real_paths);
	assert_int_equal(engine_init(e, cfg, &real_paths), 0);
	e->sampler.enumerate = fake_enumerate;
	e->sampler.enumerate_ctx = fp;
	e->now = fake_clock;
}

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

static void update(struct table *t, const struct fake_procs *fp, double dt, double now)
{
	struct proc_table s = {.p = (struct proc_sample *)fp->p, .n = fp->n, .cap = fp->n};

	assert_int_equal(proc_states_update(&t->st, &t->n, &t->cap, &s, dt, 100, now), 0);
	for (size_t i = 1; i < t->n; i++)
		assert_true(t->st[i - 1].pid < t->st[i].pid);
}

/* New processes are added, known ones updated, exited ones swept. */
static void test_update_sweep(void **state)
{
	struct fake_procs fp = {0};
	struct table t = {0};

	(void)state;
	put(&fp, 10, 1, 0);
	put(&fp, 20, 2, 0);
	put(&fp, 30, 3, 0);
	update(&t, &fp, 0, 1.0);
	assert_int_equal(t.n, 3);
	assert_true(t.st[0].last_active < 0); /* unknown until a delta */

	fp.n = 0;
	put(&fp, 10, 1, 5); /* faulted: active */
	put(&fp, 30, 3, 0);
	put(&fp, 40, 4, 0); /* new */
	update(&t, &fp, 1.0, 2.0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.st[0].pid, 10);
	assert_true(t.st[0].last_active == 2.0);
	assert_int_equal(t.st[1].pid, 30);
	assert_true(t.st[1].last_active < 0);
	assert_int_equal(t.st[2].pid, 40);
	assert_null(proc_state_find(t.st, t.n, 20));
	table_free(&t);
}

/* A recycled PID (same pid, other start time) loses what was known about
 * the process that held it before: its blocks, its refused set. */
/* The task records' exits: the named ones go, the rest keep their order
 * and what they hold; names not in the table change nothing. */
static void test_forget_gone(void **state)
{
	struct proc_state st[4] = {{.pid = 10, .start_ticks = 1},
				   {.pid = 20, .start_ticks = 2},
				   {.pid = 30, .start_ticks = 3},
				   {.pid = 40, .start_ticks = 4}};
	const pid_t gone[] = {5, 20, 35, 40};
	size_t n = 4;

	(void)state;
	st[2].cgroup = strdup("/kept");
	st[3].cgroup = strdup("/freed"); /* freed by the forget: ASan checks */
	proc_states_forget(st, &n, gone, 4);
	assert_int_equal(n, 2);
	assert_int_equal(st[0].pid, 10);
	assert_int_equal(st[1].pid, 30);
	assert_int_equal(st[1].start_ticks, 3);
	assert_string_equal(st[1].cgroup, "/kept");
	proc_states_forget(st, &n, NULL, 0);
	assert_int_equal(n, 2);
	proc_state_clear(&st[0]);
	proc_state_clear(&st[1]);
}

static void test_recycled_forgets(void **state)
{
	struct fake_procs fp = {0};
	struct table t = {0};
	struct proc_state *s;

	(void)state;
	put(&fp, 10, 1, 0);
	update(&t, &fp, 0, 1.0);
	s = proc_state_find(t.st, t.n, 10);
	assert_non_null(s);
	s->scanned = true;
	addr_set_add(&s->refused, 0x200000, 1, 1.0);
	fp.n = 0;
	put(&fp, 10, 7, 0);
	update(&t, &fp, 1.0, 2.0);
	assert_int_equal(t.n, 1);
	s = proc_state_find(t.st, t.n, 10);
	assert_int_equal(s->start_ticks, 7);
	assert_false(s->scanned);
	assert_int_equal(s->refused.n, 0);
	table_free(&t);
}

/* Fills the engine's table to exactly its capacity (GROW starts at 16: 15
 * processes reserve 16 slots), then recycles 3 of those PIDs and adds 3
 * new ones in one interval: 18 processes. engine_sample() must grow the
 * table for the recycled ones too. */
static void test_recycled_at_capacity(void **state)
{
	struct fake_procs fp = {0};
	struct config cfg;
	struct engine e;

	(void)state;
	fake_engine(&e, &cfg, &fp);
	fake_time = 100;
	for (pid_t pid = 1; pid <= 15; pid++)
		put(&fp, pid * 10, 1, 0);
	assert_int_equal(engine_sample(&e), 0);
	assert_int_equal(e.nst, 15);
	assert_int_equal(e.capst, 16);

	fp.n = 0;
	for (pid_t pid = 1; pid <= 18; pid++) /* 10..150 known, 160..180 new */
		put(&fp, pid * 10, pid <= 3 ? 2 : 1, 0);
	fake_time = 101;
	assert_int_equal(engine_sample(&e), 0);
	assert_int_equal(e.nst, 18);
	assert_true(e.capst >= e.nst);
	for (pid_t pid = 1; pid <= 18; pid++) {
		const struct proc_state *s = engine_find(&e, pid * 10);

		assert_non_null(s);
		assert_int_equal(s->start_ticks, pid <= 3 ? 2 : 1);
	}
	/* All of them recycled at once, twice over. */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < fp.n; i++)
			fp.p[i].start_ticks += 10;
		fake_time += 1;
		assert_int_equal(engine_sample(&e), 0);
		assert_int_equal(e.nst, 18);
		assert_true(e.capst >= e.nst);
	}
	engine_free(&e);
	config_free(&cfg);
}

/* An enumerator error leaves the table as it was. */
static void test_enumerate_error(void **state)
{
	struct fake_procs fp = {0};
	struct config cfg;
	struct engine e;

	(void)state;
	fake_engine(&e, &cfg, &fp);
	put(&fp, 10, 1, 0);
	assert_int_equal(engine_sample(&e), 0);
	fp.err = -EIO;
	assert_int_equal(engine_sample(&e), -EIO);
	assert_int_equal(e.nst, 1);
	engine_free(&e);
	config_free(&cfg);
}

/* Whole passes on fixture processes: the injected enumerator lists
 * processes that the (empty) fixture proc root does not have, as if each
 * exited right after the sample. Every pass samples them all, recycles
 * some PIDs and adds others; nothing is scanned or collapsed, and the
 * table follows the samples. */
static void test_pass_on_fixture(void **state)
{
	char root[] = "/tmp/hc-test-proc.XXXXXX";
	struct fake_procs fp = {0};
	struct pass_options o = {0};
	struct pass_stats ps;
	struct config cfg;
	struct hc_paths at;
	struct engine e;

	(void)state;
	assert_non_null(mkdtemp(root));
	fake_engine(&e, &cfg, &fp);
	at = real_paths; /* the engine's later reads of /proc: the fixture */
	at.proc = root;
	e.paths = &at;
	fake_time = 100;
	for (int pass = 0; pass < 8; pass++) {
		fp.n = 0;
		/* 31 + pass processes; a third of them recycled each pass. */
		for (pid_t pid = 1; pid <= 31 + pass; pid++)
			put(&fp, pid, pid % 3 ? 1 : (uint64_t)pass + 10, (uint64_t)pass);
		fake_time += 1;
		assert_int_equal(engine_pass(&e, &o, &ps), 0);
		assert_int_equal(ps.procs_total, 31 + pass);
		assert_int_equal(ps.procs_scanned, 0);
		assert_int_equal(ps.outcomes[COLLAPSE_OK], 0);
		assert_int_equal(e.nst, 31 + pass);
		assert_true(e.capst >= e.nst);
	}
	assert_int_equal(e.passes, 8);
	engine_free(&e);
	config_free(&cfg);
	assert_int_equal(rmdir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_update_sweep),     cmocka_unit_test(test_forget_gone),
	    cmocka_unit_test(test_recycled_forgets), cmocka_unit_test(test_recycled_at_capacity),
	    cmocka_unit_test(test_enumerate_error),  cmocka_unit_test(test_pass_on_fixture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
