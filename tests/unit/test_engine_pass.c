/* SPDX-License-Identifier: GPL-2.0-or-later */
/* engine_pass(), the whole pass, against a real child process and a scripted fake
 * process_madvise, with an injected clock: what the engine does after the
 * kernel answers ENOMEM (back off for alloc_backoff_ms), EAGAIN (retry
 * eagain_retries times, one of them later in the same pass) and EINVAL
 * (not again while the block's VMA stays the same, up to full_rescan_s);
 * a block that collapsed is not submitted again; a block that went cold or
 * was freed while it waited is not submitted at all; the budget carries
 * over and bursts no more than one interval's share. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "dispatch.h"
#include "engine.h"
#include "rescan.h"
#include "units.h"

#define NBLOCKS  4
#define T0       1000.0
#define BACKOFF  5000 /* ms */
#define MAX_ADDR 64

/* --- The child: NBLOCKS blocks filled with 4 KiB pages, then commands. --- */

struct child {
	pid_t pid;
	int cmd, ack;
	uint64_t base;
};

/* Commands: 'f' faults in one more page of a spare mapping (counters change,
 * maps do not), 'm' maps one more page (the address space grows), 'c' gives
 * the buffer MADV_COLD, 'l' MADV_FREE and reads it (no counter changes),
 * 'P' maps 8 MiB more with MADV_POPULATE_WRITE (filled without a fault),
 * 'r' makes the last block read-only (splits the buffer's VMA: no counter
 * moves),
 * 'v' maps SEPARATE_VMAS more filled blocks, each its own VMA (PROT_NONE
 * blocks between them), 'd' gives the buffer MADV_DONTNEED (emptied, no
 * counter moves), 'C' gives only the first block MADV_COLD, 't' reads the
 * first block again; any other, like 'p', is only answered. */
#define SEPARATE_VMAS 8

static int map_separate(void)
{
	size_t len = (2 * SEPARATE_VMAS + 1) * HPAGE_SIZE;
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (raw == MAP_FAILED)
		return -1;
	char *p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	for (size_t k = 0; k < SEPARATE_VMAS; k++) {
		for (size_t off = 0; off < HPAGE_SIZE; off += PAGE_BYTES)
			p[2 * k * HPAGE_SIZE + off] = 1;
		if (mprotect(p + (2 * k + 1) * HPAGE_SIZE, HPAGE_SIZE, PROT_NONE))
			return -1;
	}
	return 0;
}

static int populate_more(void)
{
	size_t len = 8 * MIB_BYTES;
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (raw == MAP_FAILED)
		return -1;
	char *p = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	return madvise(p, len, MADV_POPULATE_WRITE);
}

static void child_main(int cmd, int ack)
{
	size_t len = NBLOCKS * HPAGE_SIZE, touched = 0;
	char *raw = mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *spare = mmap(NULL, HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cpu_set_t one_cpu;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (raw == MAP_FAILED || spare == MAP_FAILED)
		_exit(2);
	/* On one CPU, so that 'l' can drain its own lazy-free batch (below). */
	CPU_ZERO(&one_cpu);
	CPU_SET(sched_getcpu(), &one_cpu);
	if (sched_setaffinity(0, sizeof(one_cpu), &one_cpu))
		_exit(2);
	char *buf = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	for (size_t off = 0; off < len; off += PAGE_BYTES)
		buf[off] = 1;
	/* Both advices once now, on the untouched spare mapping: the first call
	 * faults (lazy binding writes the GOT, copy-on-write after fork(); a
	 * sanitizer runtime maps pages), which would make 'c' and 'l' change
	 * the counters the engine watches after all. child_start() sends a
	 * no-op command for the same reason. */
	if (madvise(spare, HPAGE_SIZE, MADV_COLD) < 0 || madvise(spare, HPAGE_SIZE, MADV_FREE) < 0)
		_exit(2);
	uint64_t base = (uintptr_t)buf;
	if (write(ack, &base, sizeof(base)) != sizeof(base))
		_exit(2);
	while (read(cmd, &c, 1) == 1) {
		if (c == 'f')
			spare[touched++ * PAGE_BYTES] = 1;
		else if (c == 'm' &&
			 mmap(NULL, PAGE_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			_exit(2);
		else if (c == 'c' && madvise(buf, len, MADV_COLD))
			_exit(2);
		/* Freed pages turn lazy-free through a per-CPU batch; until it
		 * drains, smaps LazyFree and kpageflags can disagree and the
		 * engine would probe. A second MADV_FREE on this CPU drains it
		 * first (madvise_free_single_vma: lru_add_drain()). */
		else if (c == 'l' && (madvise(buf, len, MADV_FREE) || madvise(buf, len, MADV_FREE)))
			_exit(2);
		else if (c == 'q')
			_exit(0);
		else if (c == 'h' && madvise(buf, len, MADV_HUGEPAGE))
			_exit(2);
		else if (c == 'P' && populate_more() < 0)
			_exit(2);
		else if (c == 'r' && mprotect(buf + len - HPAGE_SIZE, HPAGE_SIZE, PROT_READ))
			_exit(2);
		else if (c == 'v' && map_separate() < 0)
			_exit(2);
		else if (c == 'C' && madvise(buf, HPAGE_SIZE, MADV_COLD))
			_exit(2);
		else if (c == 'd' && madvise(buf, len, MADV_DONTNEED))
			_exit(2);
		/* 't': read the first block again (sets the referenced bits it
		 * lost to 'C'; present pages, so no fault, no counter moves). */
		for (size_t off = 0; c == 't' && off < HPAGE_SIZE; off += PAGE_BYTES)
			if (((volatile char *)buf)[off] > 1)
				_exit(2);
		/* Read it back: referenced again, still lazy-free (not written).
		 * Each page holds 1, or 0 if reclaim already dropped it. */
		for (size_t off = 0; c == 'l' && off < len; off += PAGE_BYTES)
			if (((volatile char *)buf)[off] > 1)
				_exit(2);
		if (write(ack, &c, 1) != 1)
			_exit(2);
	}
	_exit(0);
}

static void child_do(struct child *ch, char c)
{
	char a;

	assert_int_equal(write(ch->cmd, &c, 1), 1);
	assert_int_equal(read(ch->ack, &a, 1), 1);
	assert_int_equal(a, c);
}

static void child_start(struct child *ch)
{
	int cmd[2], ack[2];

	assert_int_equal(pipe(cmd), 0);
	assert_int_equal(pipe(ack), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		close(cmd[1]);
		close(ack[0]);
		child_main(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	ch->cmd = cmd[1];
	ch->ack = ack[0];
	assert_int_equal(read(ch->ack, &ch->base, sizeof(ch->base)), sizeof(ch->base));
	child_do(ch, 'p'); /* a no-op: see child_main() */
}

static void child_stop(struct child *ch)
{
	int status;

	assert_int_equal(write(ch->cmd, "q", 1), 1);
	assert_int_equal(waitpid(ch->pid, &status, 0), ch->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ch->cmd);
	close(ch->ack);
}

/* --- The fake syscall and clock. --- */

static struct fake {
	uint64_t addr[MAX_ADDR];
	int err[MAX_ADDR]; /* the answer for addr[i]; 0 = collapses */
	unsigned attempts[MAX_ADDR];
	size_t n;
	unsigned calls;
	int default_err;  /* for addresses not scripted */
	pid_t enomem_pid; /* every block of this process answers ENOMEM (0: none) */
	unsigned pid_attempts[2];
	pid_t counted_pid[2]; /* attempts per process, by the pidfd's PID */
	/* The injected thp_collapse_alloc_failed: each ENOMEM answer moves it
	 * when enomem_is_alloc_failure (no huge page), not otherwise (the
	 * range was unmapped). */
	bool enomem_is_alloc_failure;
	uint64_t alloc_failed;
	unsigned alloc_failed_reads;
	/* The child's command between the first call and the second. */
	struct child *after_first_call;
	char after_first_cmd;
} fk;

static int fake_alloc_failed(void *ctx, uint64_t *count)
{
	assert_ptr_equal(ctx, &fk);
	fk.alloc_failed_reads++;
	*count = fk.alloc_failed;
	return 0;
}

static double fake_time;

/* The injected host memory pressure (the real one is another test's). */
static enum mem_pressure_sign fake_sign;
static unsigned pressure_checks;

static enum mem_pressure_sign fake_pressure(struct engine *e, double now)
{
	(void)e;
	(void)now;
	pressure_checks++;
	return fake_sign;
}

static double fake_clock(void)
{
	return fake_time;
}

/* A clock that moves only with the scan's work: WORK_COST seconds per
 * page-table operation (about one per candidate VMA). */
#define WORK_COST 0.01
static const struct engine *work_engine;
static uint64_t work_ops;

static double work_clock(void)
{
	uint64_t ops = scanner_pagemap_ops(&work_engine->scanner);

	if (ops < work_ops) /* the engine zeroes its stats at each pass */
		work_ops = 0;
	fake_time += (double)(ops - work_ops) * WORK_COST;
	work_ops = ops;
	return fake_time;
}

static size_t slot(uint64_t addr)
{
	for (size_t i = 0; i < fk.n; i++)
		if (fk.addr[i] == addr)
			return i;
	assert_true(fk.n < MAX_ADDR);
	fk.addr[fk.n] = addr;
	fk.err[fk.n] = fk.default_err;
	return fk.n++;
}

static void script(uint64_t addr, int err)
{
	fk.err[slot(addr)] = err;
}

static unsigned attempts(uint64_t addr)
{
	return fk.attempts[slot(addr)];
}

/* The PID behind a pidfd: its fdinfo's "Pid:" line. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], line[256];
	FILE *f;
	int pid = -1;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	fclose(f);
	assert_true(pid > 0);
	return (pid_t)pid;
}

/* Like vector_madvise(): in order, stop at the first failure, return the
 * bytes done if any, else -1 with that failure's errno. A block counts as
 * attempted when the caller learns its outcome: a failure after completed
 * iovecs is only a short count, and collapse_blocks() resubmits from it. */
static ssize_t fake_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	size_t done = 0;

	pid_t pid = pidfd_pid(pidfd);

	assert_int_equal(advice, MADV_COLLAPSE);
	assert_int_equal(flags, 0);
	fk.calls++;
	for (int k = 0; k < 2; k++)
		if (fk.counted_pid[k] == pid)
			fk.pid_attempts[k]++;
	if (fk.enomem_pid == pid) {
		/* No huge page on this process's nodes: the count moves. */
		fk.alloc_failed++;
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < vlen; i++) {
		size_t s = slot((uint64_t)(uintptr_t)iov[i].iov_base);

		if (fk.err[s] && done)
			return (ssize_t)done;
		fk.attempts[s]++;
		if (fk.err[s]) {
			if (fk.err[s] == ENOMEM && fk.enomem_is_alloc_failure)
				fk.alloc_failed++;
			errno = fk.err[s];
			return -1;
		}
		done += iov[i].iov_len;
	}
	return (ssize_t)done;
}

/* fake_madvise(), then the child's command after the first call. */
static ssize_t fake_madvise_then(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	ssize_t r = fake_madvise(pidfd, iov, vlen, advice, flags);
	int err = errno;

	if (fk.after_first_call && fk.calls == 1)
		child_do(fk.after_first_call, fk.after_first_cmd);
	errno = err;
	return r;
}

/* A hugecollapsed daemon running meanwhile would really collapse the
 * child's blocks and change what the passes find. */
static bool other_daemon_running(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool found = false;

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		char path[300], exe[PATH_MAX];
		ssize_t n;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/exe", de->d_name);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = 0;
		const char *base = strrchr(exe, '/');
		found = !strcmp(base ? base + 1 : exe, "hugecollapsed");
	}
	closedir(d);
	return found;
}

/* --- Fixture: one config, one engine, one child. --- */

struct fixture {
	struct config cfg;
	struct hc_paths paths;
	struct engine e;
	struct child ch;
	struct pass_options o;
	struct pass_stats ps;
};

static enum thp_prctl prctl_none(const struct thp_policy *live, bool status_thp_enabled, const struct vma *v, size_t n)
{
	(void)live;
	(void)v;
	(void)n;
	return status_thp_enabled ? THP_PRCTL_NONE : THP_PRCTL_COMPLETELY;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	memset(&fk, 0, sizeof(fk));
	fake_time = T0;
	config_defaults(&f->cfg);
	f->cfg.alloc_backoff_ms = BACKOFF;
	/* The child's plain memory is allowed whatever the host's THP policy
	 * (other tests change the real one): scope = always, a fixed fake
	 * sysfs tree, and a process known not to have opted out by prctl. The
	 * child does not use MADV_HUGEPAGE, which would let khugepaged collapse
	 * its blocks behind the test's back. */
	f->cfg.defaults.scope = THP_SCOPE_ALWAYS;
	hc_paths_default(&f->paths);
	f->paths.thp = HC_FIXTURES "/thp/madvise";
	assert_int_equal(engine_init(&f->e, &f->cfg, &f->paths), 0);
	f->e.scanner.prctl_infer = prctl_none;
	f->e.dispatch.madvise_fn = fake_madvise;
	f->e.dispatch.alloc_failed = fake_alloc_failed;
	f->e.dispatch.alloc_failed_ctx = &fk;
	f->e.now = fake_clock;
	fake_sign = MEM_PRESSURE_NONE;
	pressure_checks = 0;
	f->e.pressure_check = fake_pressure;
	child_start(&f->ch);
	f->o = (struct pass_options){.pids = &f->ch.pid, .npids = 1};
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	child_stop(&f->ch);
	engine_free(&f->e);
	config_free(&f->cfg);
	free(f);
	return 0;
}

/* A pass at T0 + at_s seconds. */
static void pass_at(struct fixture *f, double at_s)
{
	fake_time = T0 + at_s;
	assert_int_equal(engine_pass(&f->e, &f->o, &f->ps), 0);
}

static uint64_t block(const struct fixture *f, unsigned i)
{
	return f->ch.base + (uint64_t)i * HPAGE_SIZE;
}

/* The first pass scans the child and finds its blocks (and only those:
 * everything else it has is shared with us or tiny); every test needs it.
 * Other tests' daemons are confined to their own cgroups or PIDs and never
 * touch the child; a daemon that collapses everything (a system service)
 * would, and is named rather than skipped over. */
static void first_pass(struct fixture *f)
{
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, 1);
	if (f->ps.results[SCAN_CANDIDATE] != NBLOCKS)
		fail_msg("%llu candidate blocks, want %d%s", (unsigned long long)f->ps.results[SCAN_CANDIDATE], NBLOCKS,
			 other_daemon_running() ? " (a hugecollapsed that is not confined may have collapsed them)"
						: "");
}

/* A dry run (mode = observe, --dry-run) calls no process_madvise and counts
 * what it would have collapsed: every candidate past the memcg gate, and its
 * processes; a pass that collapses counts nothing there. */
static void test_dry_run_counts_would_collapse(void **state)
{
	struct fixture *f = *state;

	f->o.dry_run = true;
	first_pass(f);
	assert_int_equal(fk.calls, 0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	assert_true(f->e.selector.ncands > 0);
	assert_int_equal(f->ps.would_collapse_bytes, (uint64_t)f->e.selector.ncands * HPAGE_SIZE);
	assert_int_equal(f->ps.procs_would_collapse, 1);
	assert_int_equal(f->e.last.would_collapse_bytes, f->ps.would_collapse_bytes);
	/* Nothing was collapsed, so the next dry run finds the same. */
	pass_at(f, 1.0);
	assert_int_equal(fk.calls, 0);
	f->o.dry_run = false;
	pass_at(f, 2.0);
	assert_true(fk.calls > 0);
	assert_int_equal(f->ps.would_collapse_bytes, 0);
	assert_int_equal(f->ps.procs_would_collapse, 0);
}

/* The admin's khugepaged/max_ptes_none = 0 bounds the daemon's 255: read
 * with the policy, at the first scan (issue 16). */
static void test_admin_max_ptes_none(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(f->e.scanner.admin_max_ptes_none, UINT_MAX); /* not read yet */
	f->paths.thp = HC_FIXTURES "/thp/ptes0";
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->e.scanner.admin_max_ptes_none, 0);
}

static void test_enomem_backs_off(void **state)
{
	struct fixture *f = *state;
	unsigned calls;

	fk.default_err = ENOMEM;
	fk.enomem_is_alloc_failure = true;
	first_pass(f);
	assert_true(f->ps.backing_off); /* this process, from now on */
	assert_int_equal(f->ps.procs_backing_off, 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 1);
	assert_int_equal(fk.calls, 1); /* ENOMEM stops this process's blocks */
	assert_int_equal(attempts(block(f, 0)) + attempts(block(f, 1)) + attempts(block(f, 2)) + attempts(block(f, 3)),
			 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_NOT_TRIED], NBLOCKS - 1);

	calls = fk.calls;
	pass_at(f, 1);
	assert_true(f->ps.backing_off);
	assert_int_equal(fk.calls, calls);
	pass_at(f, BACKOFF / 1000.0 - 0.1);
	assert_true(f->ps.backing_off);
	assert_int_equal(fk.calls, calls);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 0);

	/* alloc_backoff_ms later: the candidates are still there and tried. */
	fk.default_err = 0;
	for (size_t i = 0; i < fk.n; i++)
		fk.err[i] = 0;
	pass_at(f, BACKOFF / 1000.0 + 0.1);
	assert_false(f->ps.backing_off);
	assert_true(fk.calls > calls);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS);
	assert_int_equal(f->ps.collapsed_bytes, (uint64_t)NBLOCKS * HPAGE_SIZE);
}

/* Issue 16, defect 3: process A never gets a huge page (bound to a full
 * node), process B would. B is collapsed, from the pass after A's first
 * ENOMEM on, although A's blocks are older and past max_wait_s (they would
 * lead every pass); A is tried again after a back-off that doubles per
 * ENOMEM in a row, up to 2^ENOMEM_BACKOFF_MAX_SHIFT times alloc_backoff_ms,
 * and then keeps being tried at that bound. */
static void test_enomem_one_process_not_everyone(void **state)
{
	struct fixture *f = *state;
	struct child b;
	pid_t pids[2];
	double t = 0, bound = BACKOFF / 1000.0 * (1u << ENOMEM_BACKOFF_MAX_SHIFT);
	unsigned a_tries;

	f->cfg.defaults.budget_mb_per_s = HPAGE_SIZE / MIB_BYTES; /* one block per 1 s pass */
	f->cfg.defaults.max_wait_s = 1;
	fk.enomem_pid = f->ch.pid;
	fk.counted_pid[0] = f->ch.pid;
	first_pass(f);
	assert_int_equal(fk.pid_attempts[0], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 1);

	child_start(&b);
	fk.counted_pid[1] = b.pid;
	pids[0] = f->ch.pid;
	pids[1] = b.pid;
	f->o.pids = pids;
	f->o.npids = 2;
	/* A backs off for BACKOFF: meanwhile B gets one block per pass. */
	for (unsigned i = 1; i <= NBLOCKS; i++) {
		pass_at(f, i);
		assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
		assert_int_equal(fk.pid_attempts[1], i);
		assert_int_equal(fk.pid_attempts[0], 1);
		assert_int_equal(f->ps.procs_backing_off, 1);
	}
	/* B is done (the fake collapsed nothing, but B's memos are dropped). */
	pass_at(f, BACKOFF / 1000.0 - 0.1);
	assert_int_equal(fk.pid_attempts[0], 1);

	/* Then A again, with a back-off that doubles, up to the bound. */
	a_tries = 1;
	t = BACKOFF / 1000.0 + 0.1;
	for (unsigned streak = 2; streak <= ENOMEM_BACKOFF_MAX_SHIFT + 3; streak++) {
		double wait = enomem_backoff_s(BACKOFF, streak);

		pass_at(f, t);
		assert_int_equal(fk.pid_attempts[0], ++a_tries);
		assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 1);
		assert_true(wait <= bound);
		pass_at(f, t + wait - 0.1); /* not yet */
		assert_int_equal(fk.pid_attempts[0], a_tries);
		t += wait + 1.0; /* a second after the last pass: a block's budget */
	}
	assert_true(enomem_backoff_s(BACKOFF, 200) == bound);
	child_stop(&b);
}

/* Issue 16, host memory pressure: while it lasts nothing is submitted
 * (the candidates stay), the pause is counted once, and collapsing
 * resumes when it passes. A pass with nothing to collapse does not ask. */
static void test_memory_pressure_pauses(void **state)
{
	struct fixture *f = *state;

	fake_sign = MEM_PRESSURE_PSI_SOME;
	first_pass(f);
	assert_true(f->ps.pressure_paused);
	assert_int_equal(fk.calls, 0);
	assert_int_equal(f->e.pending, NBLOCKS);
	assert_true(f->e.pressure.paused);
	assert_int_equal(f->e.pressure.pauses, 1);
	fake_sign = MEM_PRESSURE_WATERMARK;
	pass_at(f, 1);
	assert_true(f->ps.pressure_paused);
	assert_int_equal(fk.calls, 0);
	assert_int_equal(f->e.pressure.pauses, 1); /* the same pause */

	fake_sign = MEM_PRESSURE_NONE;
	pass_at(f, 2);
	assert_false(f->ps.pressure_paused);
	assert_false(f->e.pressure.paused);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS);
	assert_true(f->e.pressure.paused_s == 2.0);

	/* Nothing left to collapse: not even asked. */
	unsigned checks = pressure_checks;
	fake_sign = MEM_PRESSURE_PSI_FULL;
	pass_at(f, 3);
	assert_int_equal(pressure_checks, checks);
	assert_false(f->ps.pressure_paused);
}

/* ENOMEM for blocks the process unmapped since the scan (the allocation
 * failure count does not move): those blocks are dropped, the rest of the
 * process's blocks are still collapsed, and nobody backs off. */
static void test_enomem_unmapped_no_backoff(void **state)
{
	struct fixture *f = *state;

	fk.enomem_is_alloc_failure = false;
	script(block(f, 1), ENOMEM);
	script(block(f, 2), ENOMEM);
	first_pass(f);
	assert_false(f->ps.backing_off);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_UNMAPPED], 2);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS - 2);
	assert_int_equal(f->ps.outcomes[COLLAPSE_NOT_TRIED], 0);
	assert_int_equal(fk.alloc_failed_reads, 1 + 2); /* once per batch, then after each ENOMEM */
	for (unsigned i = 0; i < NBLOCKS; i++)
		assert_int_equal(attempts(block(f, i)), 1);

	/* The next pass is not backing off. */
	pass_at(f, 1);
	assert_false(f->ps.backing_off);
	assert_int_equal(f->ps.procs_backing_off, 0);

	/* The same answers, now with the count moving: a real shortage. */
	fk.enomem_is_alloc_failure = true;
	pass_at(f, f->cfg.full_rescan_s + 1.0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 1);
	pass_at(f, f->cfg.full_rescan_s + 2.0);
	assert_true(f->ps.backing_off);
}

/* max_seconds is checked between the VMAs of one process, not only between
 * processes: a pass stops at most one VMA's scan past it, and the next pass
 * goes on from that VMA until the whole process has been seen once. */
static void test_deadline_inside_one_process(void **state)
{
	struct fixture *f = *state;
	const struct proc_state *s;
	unsigned passes = 0, stopped = 0;

	first_pass(f);
	child_do(&f->ch, 'v');
	work_engine = &f->e;
	work_ops = 0;
	f->e.now = work_clock;
	f->o.dry_run = true;
	f->o.max_seconds = 3.5 * WORK_COST;
	do {
		assert_int_equal(engine_pass(&f->e, &f->o, &f->ps), 0);
		passes++;
		stopped += f->e.scanner.resume_pid != 0;
		if (f->e.scanner.resume_pid)
			assert_int_equal(f->e.scanner.resume_pid, f->ch.pid);
		/* At most one VMA's scan past the limit: the largest VMA here
		 * (the child's buffer) takes up to one operation per block. */
		if (f->ps.scan_s > f->o.max_seconds + (NBLOCKS + 1) * WORK_COST)
			fail_msg("pass %u: scanned for %.3f s, max_seconds %.3f", passes, f->ps.scan_s,
				 f->o.max_seconds);
	} while (f->e.scanner.resume_pid && passes < 100);
	assert_int_equal(f->e.scanner.resume_pid, 0);
	assert_true(stopped >= 2); /* 9 candidate VMAs at 3-4 per pass */
	s = engine_find(&f->e, f->ch.pid);
	assert_non_null(s);
	/* Every block once, in order: what the stopped passes kept and what
	 * the resumed ones found add up. */
	assert_int_equal(s->nblocks, NBLOCKS + SEPARATE_VMAS);
	for (size_t i = 1; i < s->nblocks; i++)
		assert_true(s->blocks[i - 1].addr < s->blocks[i].addr);
}

/* eagain_retries: "how many times a block that failed with eagain is tried
 * again before it is left alone until the next full rescan". */
static void check_eagain(struct fixture *f, unsigned retries)
{
	uint64_t b0;

	f->cfg.defaults.eagain_retries = retries;
	first_pass(f);
	b0 = block(f, 0);
	script(b0, EAGAIN);
	/* The first pass already tried b0 successfully with the default
	 * script: start over with a full rescan, which forgets nothing but
	 * the memos of collapsed blocks (the fake did not really collapse). */
	memset(fk.attempts, 0, sizeof(fk.attempts));
	pass_at(f, f->cfg.full_rescan_s + 1.0);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b0), retries >= 1 ? 2 : 1); /* once more at the end of the pass */
	for (unsigned i = 1; i < NBLOCKS; i++)
		assert_int_equal(attempts(block(f, i)), 1); /* collapsed at once, not retried */
	for (unsigned p = 2; p <= retries + 3; p++) {
		unsigned calls = fk.calls;

		pass_at(f, f->cfg.full_rescan_s + (double)p);
		/* Nothing changed, so nothing is scanned for that; a collapse
		 * is preceded by one rescan (which, the fake not collapsing
		 * anything, also finds b1..b3 again, but never revives b0). */
		assert_int_equal(f->ps.procs_scanned, fk.calls > calls ? 1 : 0);
		assert_int_equal(f->ps.stale_dropped, 0);
	}
	assert_int_equal(attempts(b0), 1 + retries);
	/* The next full rescan finds it again. */
	pass_at(f, 2.0 * f->cfg.full_rescan_s + 10);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b0), 1 + retries + (retries >= 1 ? 2 : 1));
}

static void test_eagain_retries_0(void **state)
{
	check_eagain(*state, 0);
}

static void test_eagain_retries_1(void **state)
{
	check_eagain(*state, 1);
}

static void test_eagain_retries_2(void **state)
{
	check_eagain(*state, 2);
}

static void test_eagain_retries_3(void **state)
{
	check_eagain(*state, 3);
}

/* EINVAL: the block is not submitted again while its VMA stays the same,
 * whatever else the process maps (issue 11, defect 5: a changed vsize
 * revived every refusal). */
static void test_einval_until_its_vma_changes(void **state)
{
	struct fixture *f = *state;
	uint64_t b1;

	b1 = block(f, 1);
	script(b1, EINVAL);
	first_pass(f);
	for (unsigned i = 0; i < NBLOCKS; i++)
		assert_int_equal(attempts(block(f, i)), 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_EINVAL], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS - 1);

	pass_at(f, 1);
	assert_int_equal(attempts(b1), 1);

	/* A fault: the process is scanned again, b1 stays refused. */
	child_do(&f->ch, 'f');
	pass_at(f, 2);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b1), 1);
	assert_true(attempts(block(f, 0)) >= 2); /* the others were found again */

	/* A new mapping elsewhere (vsize changes): still refused. */
	child_do(&f->ch, 'm');
	pass_at(f, 3);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b1), 1);

	/* Its own VMA changed: the refusal was about the old one. */
	child_do(&f->ch, 'r');
	child_do(&f->ch, 'f');
	pass_at(f, 4);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b1), 2);
	assert_int_equal(f->ps.outcomes[COLLAPSE_EINVAL], 1);
}

/* A refusal expires after full_rescan_s: what the kernel refuses can change
 * without a trace in smaps (sysfs settings). Before, it lasted for ever. */
static void test_einval_expires(void **state)
{
	struct fixture *f = *state;
	uint64_t b1 = block(f, 1);

	script(b1, EINVAL);
	first_pass(f);
	assert_int_equal(attempts(b1), 1);
	pass_at(f, f->cfg.full_rescan_s - 1.0);
	assert_int_equal(attempts(b1), 1);
	pass_at(f, f->cfg.full_rescan_s + 1.0); /* a full rescan is due */
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(attempts(b1), 2);
}

/* A collapsed block is forgotten: the next pass over the unchanged process
 * submits nothing (the kernel would answer "collapsed" again for a block
 * that is already huge, and the budget would go to it). */
/* ESRCH: the process is gone (or not the one scanned): all its blocks go,
 * those after the ESRCH too, and its later outcomes are not counted; it is
 * not asked again until its next scan finds them. */
static void test_esrch_forgets_the_process(void **state)
{
	struct fixture *f = *state;
	unsigned calls;

	script(block(f, 1), ESRCH);
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ESRCH], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_NOT_TRIED], 0);
	assert_int_equal(attempts(block(f, 2)), 0);
	calls = fk.calls;
	pass_at(f, 1);
	assert_int_equal(f->ps.procs_scanned, 0);
	assert_int_equal(fk.calls, calls);
	assert_int_equal(attempts(block(f, 2)) + attempts(block(f, 3)), 0);
}

/* ENOMEM from ENOMEM_PROCS_PER_PASS processes ends the pass: a real
 * shortage, the rest keep their place. */
static void test_enomem_from_many_stops_the_pass(void **state)
{
	struct fixture *f = *state;
	struct child more[ENOMEM_PROCS_PER_PASS];
	pid_t pids[ENOMEM_PROCS_PER_PASS + 1];

	fk.default_err = ENOMEM;
	fk.enomem_is_alloc_failure = true;
	pids[0] = f->ch.pid;
	for (size_t i = 0; i < ENOMEM_PROCS_PER_PASS; i++) {
		child_start(&more[i]);
		pids[i + 1] = more[i].pid;
	}
	f->o.pids = pids;
	f->o.npids = ENOMEM_PROCS_PER_PASS + 1;
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, ENOMEM_PROCS_PER_PASS + 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], ENOMEM_PROCS_PER_PASS);
	assert_int_equal(fk.calls, ENOMEM_PROCS_PER_PASS); /* one call each (ENOMEM ends it), one left */
	for (size_t i = 0; i < ENOMEM_PROCS_PER_PASS; i++)
		child_stop(&more[i]);
}

static void test_collapsed_not_submitted_again(void **state)
{
	struct fixture *f = *state;
	unsigned calls;

	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS);
	calls = fk.calls;
	pass_at(f, 1);
	assert_int_equal(f->ps.procs_scanned, 0);
	assert_int_equal(fk.calls, calls);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	for (unsigned i = 0; i < NBLOCKS; i++)
		assert_int_equal(attempts(block(f, i)), 1);
}

/* Blocks found while hot wait for budget; then the owner gives them
 * MADV_COLD or MADV_FREE, which neither faults nor changes /proc/PID/stat.
 * The rescan before collapse must see it and submit nothing. */
static void check_stale(struct fixture *f, char advice, enum scan_result now_is)
{
	unsigned calls;

	f->cfg.defaults.budget_mb_per_s = HPAGE_SIZE / MIB_BYTES; /* one block per 1 s pass */
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(f->e.pending, NBLOCKS - 1);
	calls = fk.calls;

	child_do(&f->ch, advice);
	pass_at(f, 1);
	assert_int_equal(f->ps.procs_scanned, 1);           /* the rescan before collapse */
	assert_int_equal(f->ps.stale_dropped, NBLOCKS - 1); /* every block that waited */
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], 0);
	assert_true(f->ps.results[now_is] >= NBLOCKS); /* and any block its VMA has beside them */
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	assert_int_equal(fk.calls, calls);
	assert_int_equal(f->e.pending, 0);
}

/* scope = madvise: the plain buffer is thp_policy. A MADV_HUGEPAGE given
 * afterwards changes no counter, yet the process is looked at once more at
 * the next pass (half a second on) after the scan that saw it change, and
 * its blocks are found. */
static void test_advised_after_faults_rescanned(void **state)
{
	struct fixture *f = *state;

	f->cfg.defaults.scope = THP_SCOPE_MADVISE;
	f->o.dry_run = true; /* and khugepaged may take a block: count, do not collapse */
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], 0);
	assert_true(f->ps.results[SCAN_THP_POLICY] >= NBLOCKS);

	child_do(&f->ch, 'h');
	pass_at(f, 0.2); /* too soon: unchanged */
	assert_int_equal(f->ps.procs_scanned, 0);
	pass_at(f, 1.0);
	assert_int_equal(f->ps.procs_scanned, 1);
	/* No longer refused. khugepaged, at its defaults here, may have taken
	 * some or all of the newly advised blocks first: PMD-mapped counts. */
	assert_true(f->ps.results[SCAN_CANDIDATE] + f->ps.results[SCAN_PMD_MAPPED] >= NBLOCKS);
	/* Once: the recheck itself saw no change. */
	pass_at(f, 3);
	assert_int_equal(f->ps.procs_scanned, 0);
}

static enum thp_prctl prctl_unknown(const struct thp_policy *live, bool status_thp_enabled, const struct vma *v,
				    size_t n)
{
	(void)live, (void)v, (void)n;
	return status_thp_enabled ? THP_PRCTL_UNKNOWN : THP_PRCTL_COMPLETELY;
}

static struct {
	enum thp_prctl answer;
	enum thp_prctl later; /* from the second question on, if set */
	int calls;
} exact;

static int fake_exact(void *ctx, pid_t pid, enum thp_prctl *m)
{
	(void)ctx, (void)pid;
	exact.calls++;
	*m = exact.calls > 1 && exact.later ? exact.later : exact.answer;
	return 0;
}

/* The prctl seam (rescan.c prctl_mode): where the inference cannot tell,
 * the plain buffer is prctl_unknown without an exact source, a candidate
 * when the exact source says NONE, and thp_policy when it says
 * except-advised; the source is asked once per scan. */
static void check_prctl_seam(struct fixture *f, bool have_exact, enum thp_prctl answer, enum scan_result want)
{
	memset(&exact, 0, sizeof(exact));
	exact.answer = answer;
	f->o.dry_run = true;
	f->e.scanner.prctl_infer = prctl_unknown;
	f->e.scanner.prctl_exact = have_exact ? fake_exact : NULL;
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(exact.calls, have_exact ? 1 : 0);
	assert_true(f->ps.results[want] >= NBLOCKS);
	if (want != SCAN_CANDIDATE)
		assert_int_equal(f->ps.results[SCAN_CANDIDATE], 0);
	if (want != SCAN_PRCTL_UNKNOWN)
		assert_int_equal(f->ps.results[SCAN_PRCTL_UNKNOWN], 0);
}

static void test_prctl_unknown_without_exact(void **state)
{
	check_prctl_seam(*state, false, THP_PRCTL_NONE, SCAN_PRCTL_UNKNOWN);
}

static void test_prctl_exact_none(void **state)
{
	check_prctl_seam(*state, true, THP_PRCTL_NONE, SCAN_CANDIDATE);
}

static void test_prctl_exact_except_advised(void **state)
{
	check_prctl_seam(*state, true, THP_PRCTL_EXCEPT_ADVISED, SCAN_THP_POLICY);
}

/* The owner sets PR_THP_DISABLE_EXCEPT_ADVISED after the scan that found
 * its plain blocks: the re-check right before the call reads the mode
 * again and nothing is submitted (MADV_COLLAPSE would override the prctl). */
static void test_except_advised_after_scan_not_collapsed(void **state)
{
	struct fixture *f = *state;

	memset(&exact, 0, sizeof(exact));
	exact.answer = THP_PRCTL_NONE;
	exact.later = THP_PRCTL_EXCEPT_ADVISED;
	f->e.scanner.prctl_infer = prctl_unknown;
	f->e.scanner.prctl_exact = fake_exact;
	first_pass(f);
	assert_int_equal(exact.calls, 2); /* the scan's, and the re-check's */
	assert_int_equal(fk.calls, 0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
}

static void test_cold_after_scan_not_collapsed(void **state)
{
	check_stale(*state, 'c', SCAN_COLD);
}

static void test_freed_after_scan_not_collapsed(void **state)
{
	check_stale(*state, 'l', SCAN_PAGE_LAZYFREE);
}

/* Paced calls (one block each, a pause between): between the first call
 * and the second, the owner frees (MADV_FREE) or empties (MADV_DONTNEED)
 * the buffer. Each call's blocks are checked again right before it, so
 * only the first call is made (issue 16, defect 7: all four were). */
static void check_recheck_each_call(struct fixture *f, char advice)
{
	f->cfg.defaults.blocks_per_call = 1;
	f->cfg.defaults.pause_ms = 1;
	fk.after_first_call = &f->ch;
	fk.after_first_cmd = advice;
	f->e.dispatch.madvise_fn = fake_madvise_then;
	first_pass(f);
	assert_int_equal(fk.calls, 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_STALE], NBLOCKS - 1);
	assert_int_equal(f->ps.stale_dropped, NBLOCKS - 1);
	assert_int_equal(f->e.pending, 0); /* dropped: the next scan decides */
}

static void test_freed_between_calls_not_collapsed(void **state)
{
	check_recheck_each_call(*state, 'l');
}

static void test_emptied_between_calls_not_collapsed(void **state)
{
	check_recheck_each_call(*state, 'd');
}

/* A clock that moves STEP_COST seconds at every look. */
#define STEP_COST 0.3
static double step_clock(void)
{
	fake_time += STEP_COST;
	return fake_time;
}

/* The rescan before collapse runs out of time after its first VMA: the
 * blocks it kept from the last scan were not checked again, and are not
 * collapsed, nor even submitted (issue 16, defect 2: with the whole buffer
 * MADV_FREEd, 2 blocks were collapsed). */
static void test_recheck_out_of_time_not_collapsed(void **state)
{
	struct fixture *f = *state;
	const struct proc_state *s;

	f->cfg.defaults.budget_mb_per_s = 2 * (HPAGE_SIZE / MIB_BYTES); /* two blocks per 1 s pass */
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 2);
	assert_int_equal(f->e.pending, NBLOCKS - 2);
	child_do(&f->ch, 'l');
	f->e.now = step_clock;
	f->o.max_seconds = 1;
	fake_time = T0 + 1;
	assert_int_equal(engine_pass(&f->e, &f->o, &f->ps), 0);
	s = engine_find(&f->e, f->ch.pid);
	assert_non_null(s);
	assert_true(s->scan_cursor != 0); /* the rescan stopped midway */
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	assert_int_equal(fk.calls, 1);
}

/* Only the pass's own loop over the processes says where the next pass
 * starts: a rescan before collapse that runs out of time leaves a cursor in
 * its process, not the rotation point (it overwrote the resume_pid, and the
 * next pass skipped the processes between). The clock moves only with the
 * scan's work, so the pass's loop (nothing changed: nothing read) ends in
 * time. */
static void test_recheck_out_of_time_keeps_rotation(void **state)
{
	struct fixture *f = *state;
	const struct proc_state *s;

	f->cfg.defaults.budget_mb_per_s = HPAGE_SIZE / MIB_BYTES; /* one block per 1 s pass: three wait */
	first_pass(f);
	assert_int_equal(f->e.pending, NBLOCKS - 1);
	work_engine = &f->e;
	work_ops = 0;
	f->e.now = work_clock;
	f->o.max_seconds = 0.5 * WORK_COST; /* out of time after one page-table read */
	pass_at(f, 1);
	s = engine_find(&f->e, f->ch.pid);
	assert_non_null(s);
	assert_true(s->scan_cursor != 0); /* the rescan before collapse stopped midway */
	assert_int_equal(f->e.scanner.resume_pid, 0);
}

/* The budget a stale block would have spent goes to the next in line. */
static void test_stale_budget_goes_to_next(void **state)
{
	struct fixture *f = *state;
	struct child other;
	pid_t pids[2];

	f->cfg.defaults.budget_mb_per_s = HPAGE_SIZE / MIB_BYTES; /* one block per 1 s pass */
	f->cfg.defaults.max_wait_s = 1;                           /* the first child's blocks age, so go first */
	first_pass(f);
	assert_int_equal(f->e.pending, NBLOCKS - 1);
	child_do(&f->ch, 'c');

	child_start(&other);
	pids[0] = f->ch.pid;
	pids[1] = other.pid;
	f->o.pids = pids;
	f->o.npids = 2;
	/* Forked alike, the children may have their blocks at the same
	 * addresses: the fake counts by address, so count from here. */
	memset(fk.attempts, 0, sizeof(fk.attempts));
	pass_at(f, 1.5);
	assert_int_equal(f->ps.stale_dropped, NBLOCKS - 1); /* all that waited */
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(attempts(other.base), 1); /* its first block, in the same pass */
	child_stop(&other);
}

static bool never_rang(const struct fault_doorbell *d)
{
	(void)d;
	return false;
}

/* The watch's "system-wide" mapped total is the child's own here
 * (RssAnon + RssFile + RssShmem), so that other processes on the machine
 * neither end the idling nor hide the child's populate. */
static pid_t mapped_child;
static int child_mapped_kb(uint64_t *kb)
{
	static const char *const fields[] = {"RssAnon:", "RssFile:", "RssShmem:"};
	char path[64], line[256];
	unsigned long long v, sum = 0;
	int found = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)mapped_child);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp))
		for (size_t i = 0; i < 3; i++)
			if (!strncmp(line, fields[i], strlen(fields[i])) &&
			    sscanf(line + strlen(fields[i]), "%llu", &v) == 1)
				sum += v, found++;
	fclose(fp);
	*kb = sum;
	return found == 3 ? 0 : -EINVAL;
}

/* And no faults anywhere, which would explain the growth away. */
static int no_faults(struct fault_doorbell *d, struct fault_pids *out)
{
	(void)d;
	(void)out;
	return 0;
}

/* Memory filled without page faults (MADV_POPULATE_WRITE, MAP_POPULATE,
 * mlock) rings no fault doorbell; the mapped total in /proc/meminfo ends
 * the idling, at most MAPPED_CHECK_S (0.5 s) later. The doorbell is
 * silenced here, and the total is the child's, so the rest of the machine
 * can neither ring it for us nor move the total. */
static void test_populate_without_faults_ends_idle(void **state)
{
	struct fixture *f = *state;

	mapped_child = f->ch.pid;
	f->e.sampler.mapped.read_kb = child_mapped_kb;
	f->e.sampler.mapped.read_free_kb = NULL; /* the machine's free memory is not the child's */
	f->e.sampler.doorbell_drain = no_faults;
	first_pass(f);
	f->e.sampler.doorbell_rang = never_rang;
	f->o.allow_idle = true;
	pass_at(f, 0.2);
	assert_true(f->ps.idle);

	child_do(&f->ch, 'P');
	pass_at(f, 0.3); /* /proc/meminfo is not read more often than that */
	assert_true(f->ps.idle);
	pass_at(f, 0.6);
	assert_false(f->ps.idle);
	assert_int_equal(f->ps.procs_scanned, 1);
	/* Its blocks again (the fake collapsed nothing) and the four new ones. */
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], NBLOCKS + 4);
}

/* Without the advice, the same wait ends in a collapse after one rescan. */
static void test_still_hot_collapsed_after_rescan(void **state)
{
	struct fixture *f = *state;

	f->cfg.defaults.budget_mb_per_s = HPAGE_SIZE / MIB_BYTES;
	first_pass(f);
	pass_at(f, 1);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->ps.stale_dropped, 0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], NBLOCKS); /* the fake collapses nothing */
	assert_int_equal(f->e.pending, NBLOCKS - 1);
}

/* A budget below one block per pass (1 MiB/s at 1 s passes) carries over:
 * a block every other pass, not none ever (issue 11, defect 3). */
static void test_budget_below_one_block(void **state)
{
	struct fixture *f = *state;

	f->cfg.defaults.budget_mb_per_s = 1;
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	pass_at(f, 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	pass_at(f, 2);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	pass_at(f, 3);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
	assert_int_equal(f->e.total.outcomes[COLLAPSE_OK], 2);
}

/* Ten seconds without a pass (idle passes, a stall) earn one burst, not
 * ten intervals' worth: at 1 MiB/s, one block. */
static void test_budget_no_spend_after_gap(void **state)
{
	struct fixture *f = *state;

	f->cfg.defaults.budget_mb_per_s = 1;
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 0);
	pass_at(f, 10);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1);
}

/* A block the process gave MADV_COLD inside a VMA that stays mostly hot
 * (the per-VMA rule passes it: Referenced 6 of 8 MiB) is not a candidate
 * while the observer recorded the range (injected here as cold_watch would
 * record it); once the process reads it again, the VMA's Referenced proves
 * a page of it referenced and it is collapsed (issue 16, defect 4: all four
 * blocks were candidates). */
static void test_cold_range_inside_hot_vma(void **state)
{
	struct fixture *f = *state;

	child_do(&f->ch, 'C');
	assert_int_equal(cold_ranges_add(&f->e.cold.ranges, f->ch.pid, block(f, 0), HPAGE_SIZE), 0);
	pass_at(f, 0);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->ps.results[SCAN_LACK_REFERENCED_PAGE], 1);
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], NBLOCKS - 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS - 1);
	assert_int_equal(attempts(block(f, 0)), 0);
	assert_true(cold_ranges_has(&f->e.cold.ranges, f->ch.pid));

	/* Read again: no counter moves, but it is looked at again. */
	child_do(&f->ch, 't');
	pass_at(f, 1); /* too soon for COLD_RECHECK_S */
	assert_int_equal(f->ps.procs_scanned, 0);
	pass_at(f, 1 + COLD_RECHECK_S);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->ps.results[SCAN_LACK_REFERENCED_PAGE], 0);
	/* The fake collapses nothing: the other three are found again too. */
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], NBLOCKS);
	assert_int_equal(attempts(block(f, 0)), 1);
	/* Every resident page of the VMA referenced: the range is forgotten. */
	assert_false(cold_ranges_has(&f->e.cold.ranges, f->ch.pid));
}

/* The same range without the MADV_COLD itself (the pages stay referenced):
 * the VMA's count proves the block warm at once. */
static void test_cold_range_referenced_is_warm(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(cold_ranges_add(&f->e.cold.ranges, f->ch.pid, block(f, 0), HPAGE_SIZE), 0);
	first_pass(f);
	assert_int_equal(f->ps.results[SCAN_LACK_REFERENCED_PAGE], 0);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS);
}

static struct fixture *cold_fixture;

/* After the first call, the process gives MADV_COLD to the next block
 * (recorded by the observer, drained by the re-check before each call). */
static ssize_t fake_madvise_then_cold(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	ssize_t r = fake_madvise(pidfd, iov, vlen, advice, flags);
	int err = errno;

	if (fk.calls == 1)
		assert_int_equal(cold_ranges_add(&cold_fixture->e.cold.ranges, cold_fixture->ch.pid,
						 block(cold_fixture, 1), HPAGE_SIZE),
				 0);
	errno = err;
	return r;
}

/* Paced calls, one block each: a range recorded after the scan keeps its
 * block out of the later call (stale), the others go on. */
static void test_cold_range_between_calls(void **state)
{
	struct fixture *f = *state;

	cold_fixture = f;
	f->cfg.defaults.blocks_per_call = 1;
	f->cfg.defaults.pause_ms = 1;
	f->e.dispatch.madvise_fn = fake_madvise_then_cold;
	first_pass(f);
	assert_int_equal(f->ps.outcomes[COLLAPSE_STALE], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], NBLOCKS - 1);
	assert_int_equal(attempts(block(f, 1)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_collapsed_not_submitted_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cold_after_scan_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_advised_after_faults_rescanned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prctl_unknown_without_exact, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prctl_exact_none, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_prctl_exact_except_advised, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_except_advised_after_scan_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_freed_after_scan_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stale_budget_goes_to_next, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_populate_without_faults_ends_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_still_hot_collapsed_after_rescan, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dry_run_counts_would_collapse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admin_max_ptes_none, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enomem_backs_off, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enomem_unmapped_no_backoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enomem_one_process_not_everyone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_pressure_pauses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deadline_inside_one_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eagain_retries_0, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eagain_retries_1, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eagain_retries_2, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eagain_retries_3, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_einval_until_its_vma_changes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_einval_expires, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_esrch_forgets_the_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enomem_from_many_stops_the_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_budget_below_one_block, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_budget_no_spend_after_gap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_freed_between_calls_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_emptied_between_calls_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recheck_out_of_time_not_collapsed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recheck_out_of_time_keeps_rotation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cold_range_inside_hot_vma, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cold_range_referenced_is_warm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cold_range_between_calls, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
