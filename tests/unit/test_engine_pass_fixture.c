/* SPDX-License-Identifier: GPL-2.0-or-later */
/* engine_pass(), several whole passes, on a fixture /proc and nothing else:
 * no fork, no madvise, no root. The "kernel" is a model of three processes
 * that the test writes as files under a temporary proc root (stat, status,
 * cgroup, smaps and pagemap per process, one kpageflags); the engine runs
 * with its seams set: the enumerator (the fixture's stat files), the clock,
 * the fault doorbell (who faulted), pidfd_open, process_madvise (which
 * "collapses" a block by rewriting the model's files),
 * thp_collapse_alloc_failed, host memory pressure and the mapped-memory
 * watch. The range scanner is the real one on its read path: pagemap and
 * kpageflags are plain files here, which the PAGEMAP_SCAN ioctl does not
 * answer. (engine_init() still opens the real doorbell's perf events where
 * it may, and probes its own pagemap; the test closes the events at once
 * and nothing it checks depends on either.)
 *
 * Checked: new processes are scanned; their candidates are collapsed
 * hottest first and within the budget; the next pass leaves a process whose
 * counters did not move alone; blocks of an MADV_NOHUGEPAGE VMA (VmFlags nh)
 * or of a VMA the kernel calls THPeligible 0 are never submitted; ENOMEM
 * backs off that process only, for alloc_backoff_ms; a news pass scans only
 * the news, and reads an advised process the table did not hold yet. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "block_classify.h"
#include "config.h"
#include "engine.h"
#include "memcg_gate.h"
#include "units.h"

#define T0       1000.0
#define BACKOFF  5000 /* ms */
#define MAX_VMAS 3
#define MAX_FDS  1024
#define MAX_CALL 16

/* Above PID_MAX_LIMIT (2^22): no real process has these PIDs, so nothing
 * the engine does can reach one. */
#define WARM   4194305
#define HOT    4194306
#define NOHUGE 4194307
#define NPROC  3
/* Written by the test that wants it, after the first pass. */
#define NEWCOMER 4194308
#define NALL     (NPROC + 1)

/* --- The model: what the kernel would show of each process. --- */

struct fvma {
	uint64_t start;
	unsigned nblocks;
	const char *flags; /* smaps VmFlags */
	bool eligible;     /* smaps THPeligible */
	uint32_t huge;     /* bit b: block b is PMD-mapped (collapsed) */
};

struct fproc {
	pid_t pid;
	uint64_t minflt, ticks;
	unsigned first_block; /* its blocks' place in the PFN space */
	struct fvma v[MAX_VMAS];
	size_t nv;
	int err; /* process_madvise's answer for it: 0 collapses */
};

static char root[64];
static struct fproc procs[NALL];

static struct fproc *proc_of(pid_t pid)
{
	for (size_t i = 0; i < NALL; i++)
		if (procs[i].pid && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

static void path_of(char *buf, size_t len, pid_t pid, const char *name)
{
	if (pid)
		snprintf(buf, len, "%s/%d/%s", root, (int)pid, name);
	else
		snprintf(buf, len, "%s/%s", root, name);
}

static void write_text(pid_t pid, const char *name, const char *text)
{
	char path[128];
	FILE *f;

	path_of(path, sizeof(path), pid, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void write_stat(const struct fproc *p)
{
	uint64_t pages = 0;
	char buf[1024];

	for (size_t i = 0; i < p->nv; i++)
		pages += (uint64_t)p->v[i].nblocks * HPAGE_PAGES;
	/* As the kernel prints it: minflt is field 10, utime 14, starttime
	 * 22, vsize 23, rss 24 (pages). */
	snprintf(buf, sizeof(buf),
		 "%d (fixture) S 1 %d %d 0 -1 4194560 %llu 0 0 0 %llu 0 0 0 20 0 1 0 %d %llu %llu "
		 "18446744073709551615 94000000000000 94000000100000 140000000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 "
		 "0 94000000200000 94000000300000 94000000400000 140000000001000 140000000002000 140000000002000 "
		 "140000000003000 0\n",
		 (int)p->pid, (int)p->pid, (int)p->pid, (unsigned long long)p->minflt, (unsigned long long)p->ticks,
		 (int)(p->pid % 1000) * 10, (unsigned long long)pages * PAGE_BYTES, (unsigned long long)pages);
	write_text(p->pid, "stat", buf);
}

static void write_smaps(const struct fproc *p)
{
	char buf[8192];
	size_t off = 0;

	for (size_t i = 0; i < p->nv; i++) {
		const struct fvma *v = &p->v[i];
		uint64_t kb = (uint64_t)v->nblocks * (HPAGE_SIZE / 1024);
		unsigned huge = (unsigned)__builtin_popcount(v->huge);

		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
					"%llx-%llx rw-p 00000000 00:00 0 \n"
					"Size: %llu kB\nKernelPageSize: 4 kB\nMMUPageSize: 4 kB\nRss: %llu kB\n"
					"Pss: %llu kB\nReferenced: %llu kB\nAnonymous: %llu kB\nLazyFree: 0 kB\n"
					"AnonHugePages: %llu kB\nShmemPmdMapped: 0 kB\nFilePmdMapped: 0 kB\n"
					"Swap: 0 kB\nSwapPss: 0 kB\nLocked: 0 kB\nTHPeligible: %d\nVmFlags: %s \n",
					(unsigned long long)v->start, (unsigned long long)(v->start + kb * 1024),
					(unsigned long long)kb, (unsigned long long)kb, (unsigned long long)kb,
					(unsigned long long)kb, (unsigned long long)kb,
					(unsigned long long)huge * (HPAGE_SIZE / 1024), v->eligible ? 1 : 0, v->flags);
		assert_true(off < sizeof(buf));
	}
	write_text(p->pid, "smaps", buf);
}

/* Every page present and exclusive, with its PFN (as root sees it): a
 * collapsed block's 512 PFNs run up from an aligned one, a THP head in
 * kpageflags; a block of small pages has them scattered. */
static void write_pages(const struct fproc *p)
{
	uint64_t pm[HPAGE_PAGES], kpf[HPAGE_PAGES];
	char path[128];
	int pmfd, kfd;
	unsigned b = p->first_block;

	path_of(path, sizeof(path), p->pid, "pagemap");
	pmfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(pmfd >= 0);
	path_of(path, sizeof(path), 0, "kpageflags");
	kfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(kfd >= 0);
	for (size_t i = 0; i < p->nv; i++)
		for (unsigned k = 0; k < p->v[i].nblocks; k++, b++) {
			const uint64_t pfn0 = (uint64_t)(b + 1) * HPAGE_PAGES;
			bool huge = p->v[i].huge & (1u << k);

			for (unsigned j = 0; j < HPAGE_PAGES; j++) {
				pm[j] = PM_PRESENT | PM_MMAP_EXCLUSIVE | (pfn0 + (huge ? j : j * 5 % HPAGE_PAGES));
				kpf[j] = UINT64_C(1) << KPF_ANON | UINT64_C(1) << KPF_SWAPBACKED;
				if (huge)
					kpf[j] |= UINT64_C(1) << KPF_THP | UINT64_C(1)
									       << (j ? 16 /* KPF_COMPOUND_TAIL */
										     : KPF_COMPOUND_HEAD);
			}
			uint64_t addr = p->v[i].start + (uint64_t)k * HPAGE_SIZE;
			assert_int_equal(pwrite(pmfd, pm, sizeof(pm), (off_t)(addr / PAGE_BYTES * 8)),
					 (ssize_t)sizeof(pm));
			assert_int_equal(pwrite(kfd, kpf, sizeof(kpf), (off_t)(pfn0 * 8)), (ssize_t)sizeof(kpf));
		}
	close(pmfd);
	close(kfd);
}

static void write_proc(const struct fproc *p)
{
	char dir[128];

	path_of(dir, sizeof(dir), p->pid, "");
	assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
	write_stat(p);
	write_text(p->pid, "status", "Name:\tfixture\nState:\tS (sleeping)\nTHP_enabled:\t1\n");
	write_text(p->pid, "cgroup", "0::/nolimit\n"); /* tests/fixtures/cgroup2: no memory limit */
	write_smaps(p);
	write_pages(p);
}

/* The model's processes: "warm" and "hot" each have three blocks in an
 * MADV_HUGEPAGE VMA; "hot" also has an MADV_NOHUGEPAGE VMA and an
 * MADV_HUGEPAGE one the kernel calls ineligible (as after a prctl), and
 * "nohuge" has only an nh VMA. Hot has the higher PID, so a tie in the
 * order (process, then address) would put warm first. */
static void model_init(void)
{
	memset(procs, 0, sizeof(procs));
	procs[0] = (struct fproc){.pid = WARM, .minflt = 1000, .ticks = 10, .first_block = 0, .nv = 1};
	procs[0].v[0] =
	    (struct fvma){.start = 0x40000000, .nblocks = 3, .flags = "rd wr mr mw me ac hg", .eligible = 1};
	procs[1] = (struct fproc){.pid = HOT, .minflt = 1000, .ticks = 10, .first_block = 3, .nv = 3};
	procs[1].v[0] =
	    (struct fvma){.start = 0x40000000, .nblocks = 3, .flags = "rd wr mr mw me ac hg", .eligible = 1};
	procs[1].v[1] =
	    (struct fvma){.start = 0x50000000, .nblocks = 2, .flags = "rd wr mr mw me ac nh", .eligible = 0};
	procs[1].v[2] =
	    (struct fvma){.start = 0x60000000, .nblocks = 2, .flags = "rd wr mr mw me ac hg", .eligible = 0};
	procs[2] = (struct fproc){.pid = NOHUGE, .minflt = 1000, .ticks = 10, .first_block = 10, .nv = 1};
	procs[2].v[0] =
	    (struct fvma){.start = 0x40000000, .nblocks = 4, .flags = "rd wr mr mw me ac nh", .eligible = 0};
	for (size_t i = 0; i < NPROC; i++)
		write_proc(&procs[i]);
	/* No process's mapped memory moves: the engine's watch reads this. */
	write_text(0, "meminfo", "MemTotal: 4000000 kB\nAnonPages: 100000 kB\nMapped: 50000 kB\n");
}

/* --- The seams. --- */

static double fake_time;
static double fake_clock(void)
{
	return fake_time;
}

/* The enumerator of a full sample: every process of the fixture. */
static int fixture_enumerate(void *ctx, struct proc_table *out)
{
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	int r;

	(void)ctx;
	r = procs_list_pids(root, &pids, &n, &cap);
	if (r == 0)
		r = procs_sample_pids(root, pids, n, out);
	free(pids);
	return r;
}

/* The doorbell: the processes the test says faulted since the last pass. */
static pid_t faulted[NALL];
static size_t nfaulted;

static int fake_drain(struct fault_doorbell *d, struct fault_pids *out)
{
	(void)d;
	for (size_t i = 0; i < nfaulted; i++)
		assert_int_equal(fault_pids_add(out, faulted[i]), 0);
	fault_pids_finish(out);
	nfaulted = 0;
	return 0;
}

static bool fake_rang(const struct fault_doorbell *d)
{
	(void)d;
	return nfaulted > 0;
}

/* Faults n minor faults and ticks CPU ticks into p since the last pass. */
static void fault(pid_t pid, uint64_t n, uint64_t ticks)
{
	struct fproc *p = proc_of(pid);

	p->minflt += n;
	p->ticks += ticks;
	write_stat(p);
	faulted[nfaulted++] = pid;
}

static int fake_mapped(uint64_t *kb)
{
	*kb = 150000;
	return 0;
}

static enum mem_pressure_sign fake_pressure(struct engine *e, double now)
{
	(void)e;
	(void)now;
	return MEM_PRESSURE_NONE;
}

/* pidfd_open: /dev/null stands for the pidfd, remembered by fd number. */
static pid_t fd_pid[MAX_FDS];
static unsigned pidfd_opens[NALL];

static int fake_pidfd_open(pid_t pid)
{
	int fd;

	if (!proc_of(pid)) {
		errno = ESRCH;
		return -1;
	}
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fd < MAX_FDS);
	fd_pid[fd] = pid;
	pidfd_opens[proc_of(pid) - procs]++;
	return fd;
}

/* process_madvise(MADV_COLLAPSE): in order, stopping at the first failure
 * (like vector_madvise()); a block collapses into a PMD-mapped THP, which
 * the model's files then show. Every call is recorded. */
static struct call {
	pid_t pid;
	size_t n;
	uint64_t addr[MAX_CALL];
} calls[64];
static size_t ncalls;
static unsigned forbidden; /* blocks submitted from an nh or ineligible VMA */
static uint64_t alloc_failed;

static struct fvma *vma_of(struct fproc *p, uint64_t addr, unsigned *block)
{
	for (size_t i = 0; i < p->nv; i++) {
		struct fvma *v = &p->v[i];

		if (addr >= v->start && addr < v->start + (uint64_t)v->nblocks * HPAGE_SIZE) {
			*block = (unsigned)((addr - v->start) / HPAGE_SIZE);
			return v;
		}
	}
	return NULL;
}

static ssize_t fake_madvise(int pidfd, const struct iovec *iov, size_t vlen, int advice, unsigned int flags)
{
	struct fproc *p;
	struct call *c;
	size_t done = 0;

	assert_true(pidfd >= 0 && pidfd < MAX_FDS);
	assert_int_equal(advice, MADV_COLLAPSE);
	assert_int_equal(flags, 0);
	p = proc_of(fd_pid[pidfd]);
	assert_non_null(p);
	assert_true(ncalls < sizeof(calls) / sizeof(calls[0]));
	c = &calls[ncalls++];
	*c = (struct call){.pid = p->pid};
	for (size_t i = 0; i < vlen; i++) {
		uint64_t addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		unsigned b = 0;
		struct fvma *v = vma_of(p, addr, &b);

		assert_non_null(v);
		assert_int_equal(iov[i].iov_len, HPAGE_SIZE);
		if (c->n < MAX_CALL)
			c->addr[c->n++] = addr;
		if (strstr(v->flags, "nh") || !v->eligible)
			forbidden++;
		if (p->err) {
			if (p->err == ENOMEM)
				alloc_failed++; /* no huge page: the count moves */
			if (done)
				return (ssize_t)done;
			errno = p->err;
			return -1;
		}
		v->huge |= 1u << b;
		done += HPAGE_SIZE;
	}
	write_smaps(p);
	write_pages(p);
	return (ssize_t)done;
}

static int fake_alloc_failed(void *ctx, uint64_t *count)
{
	(void)ctx;
	*count = alloc_failed;
	return 0;
}

/* --- Fixture: the model, one config, one engine. --- */

struct fixture {
	struct config cfg;
	struct hc_paths paths;
	struct engine e;
	struct pass_options o;
	struct pass_stats ps;
	int kpageflags_fd;
};

/* A range scanner reading the fixture's pagemap files and kpageflags_fd
 * (its own: closed with the scanner). */
static void fixture_range(struct range_scanner *r, int kpageflags_fd)
{
	if (r->kpageflags_fd >= 0)
		close(r->kpageflags_fd);
	r->kpageflags_fd = kpageflags_fd;
	r->have_pfns = true;
	r->use_scan_ioctl = false;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct memcg_roots roots = {.mode = MEMCG_V2};
	char path[128];

	assert_non_null(f);
	*state = f;
	snprintf(root, sizeof(root), "/tmp/hc-pass-fixture-XXXXXX");
	assert_non_null(mkdtemp(root));
	model_init();
	memset(fd_pid, 0, sizeof(fd_pid));
	memset(pidfd_opens, 0, sizeof(pidfd_opens));
	ncalls = nfaulted = 0;
	forbidden = 0;
	alloc_failed = 0;
	fake_time = T0;

	config_defaults(&f->cfg);
	/* Back to back: a new budget bucket starts empty, so the first pass
	 * only scans and the second, a second later, may spend 4 blocks. */
	f->cfg.scan_interval_ms = 0;
	f->cfg.defaults.budget_mb_per_s = 8;
	f->cfg.alloc_backoff_ms = BACKOFF;
	hc_paths_default(&f->paths);
	assert_int_equal(engine_init(&f->e, &f->cfg, &f->paths), 0);
	struct engine *e = &f->e;
	f->paths.proc = root; /* after engine_init(): what it opened stays real */
	e->sampler.enumerate = fixture_enumerate;
	e->sampler.doorbell_drain = fake_drain;
	e->sampler.doorbell_rang = fake_rang;
	fault_doorbell_close(&e->sampler.doorbell); /* whatever engine_init opened: the fake rings */
	e->now = fake_clock;
	e->dispatch.pidfd_open = fake_pidfd_open;
	e->dispatch.madvise_fn = fake_madvise;
	e->dispatch.alloc_failed = fake_alloc_failed;
	e->dispatch.alloc_failed_ctx = NULL;
	e->pressure_check = fake_pressure;
	e->sampler.mapped.read_kb = fake_mapped;
	e->sampler.mapped.read_free_kb = NULL;
	f->paths.thp = HC_FIXTURES "/thp/madvise"; /* enabled=madvise */
	snprintf(roots.mount, sizeof(roots.mount), "%s", HC_FIXTURES "/cgroup2");
	snprintf(roots.root, sizeof(roots.root), "/");
	e->memcg = memcg_gate_new(f->paths.mountinfo); /* freed by engine_free */
	assert_non_null(e->memcg);
	assert_int_equal(memcg_gate_set_roots(e->memcg, &roots), 0);
	/* The page-table readers' seam is their files: the fixture's
	 * kpageflags, PFNs shown (as to root), and the read path (a file
	 * answers no PAGEMAP_SCAN ioctl), for the scanner's and for the
	 * dispatcher's re-check alike. */
	path_of(path, sizeof(path), 0, "kpageflags");
	f->kpageflags_fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(f->kpageflags_fd >= 0);
	fixture_range(&e->scanner.range, f->kpageflags_fd); /* closed by engine_free */
	fixture_range(&e->dispatch.range, dup(f->kpageflags_fd));
	assert_true(e->dispatch.range.kpageflags_fd >= 0);
	return 0;
}

static int remove_entry(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return unlink(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	static const char *const files[] = {"stat", "status", "cgroup", "smaps", "pagemap"};
	char dir[128];

	engine_free(&f->e);
	config_free(&f->cfg);
	for (size_t i = 0; i < NALL && procs[i].pid; i++) {
		path_of(dir, sizeof(dir), procs[i].pid, "");
		for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++)
			remove_entry(dir, files[k]);
		rmdir(dir);
	}
	remove_entry(root, "kpageflags");
	remove_entry(root, "meminfo");
	rmdir(root);
	free(f);
	return 0;
}

/* A pass at T0 + at_s seconds. */
static void pass_at(struct fixture *f, double at_s)
{
	fake_time = T0 + at_s;
	assert_int_equal(engine_pass(&f->e, &f->o, &f->ps), 0);
}

static const struct proc_state *state_of(const struct fixture *f, pid_t pid)
{
	const struct proc_state *s = engine_find(&f->e, pid);

	assert_non_null(s);
	return s;
}

static unsigned calls_for(pid_t pid)
{
	unsigned n = 0;

	for (size_t i = 0; i < ncalls; i++)
		n += calls[i].pid == pid;
	return n;
}

/* The first pass: every process is new and read in full; the candidates
 * are the six blocks of the two hg VMAs that the kernel calls eligible. */
static void first_pass(struct fixture *f)
{
	pass_at(f, 0);
	assert_true(f->ps.full_sample);
	assert_int_equal(f->ps.procs_sampled, NPROC);
	assert_int_equal(f->ps.procs_scanned, NPROC);
	assert_int_equal(f->ps.smaps_reads, NPROC);
	assert_int_equal(f->ps.results[SCAN_CANDIDATE], 6);
	assert_int_equal(state_of(f, WARM)->results[SCAN_CANDIDATE], 3);
	assert_int_equal(state_of(f, HOT)->results[SCAN_CANDIDATE], 3);
	/* The nh VMAs: ineligible; THPeligible 0 under MADV_HUGEPAGE: the
	 * kernel's policy says no (or, where nothing shows whether the
	 * process set a prctl, that is the reason given). */
	assert_int_equal(state_of(f, HOT)->results[SCAN_INELIGIBLE], 2);
	assert_int_equal(state_of(f, HOT)->results[SCAN_THP_POLICY] + state_of(f, HOT)->results[SCAN_PRCTL_UNKNOWN], 2);
	assert_int_equal(state_of(f, NOHUGE)->results[SCAN_INELIGIBLE], 4);
	assert_int_equal(state_of(f, NOHUGE)->results[SCAN_CANDIDATE], 0);
	assert_int_equal(f->e.selector.ncands, 6);
	/* No budget yet (a new bucket starts empty back to back). */
	assert_int_equal(ncalls, 0);
}

static void test_passes(void **state)
{
	struct fixture *f = *state;

	first_pass(f);

	/* A second later both faulted: hot 25600 faults/s and half a CPU,
	 * warm 256 faults/s. The doorbell names them. */
	fault(HOT, 25600, 50);
	fault(WARM, 256, 0);
	pass_at(f, 1);
	assert_false(f->ps.full_sample);
	assert_int_equal(f->ps.procs_sampled, 2);
	assert_int_equal(f->ps.procs_scanned, 2);
	assert_int_equal(f->ps.procs_unchanged, 1); /* nohuge: no fault */
	/* Hottest first, within the budget (8 MiB/s, one second: 4 blocks):
	 * the first call is hot's three blocks, in address order, then one
	 * of warm's. (Ties would have put warm, the lower PID, first.) */
	assert_int_equal(f->e.selector.ncands, 6);
	assert_int_equal(ncalls, 2);
	assert_int_equal(calls[0].pid, HOT);
	assert_int_equal(calls[0].n, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(calls[0].addr[i], 0x40000000 + (uint64_t)i * HPAGE_SIZE);
	assert_int_equal(calls[1].pid, WARM);
	assert_int_equal(calls[1].n, 1);
	assert_int_equal(calls[1].addr[0], 0x40000000);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 4);
	assert_int_equal(f->ps.collapsed_bytes, 4 * HPAGE_SIZE);
	assert_int_equal(state_of(f, HOT)->nblocks, 0);
	assert_int_equal(state_of(f, WARM)->nblocks, 2);

	/* Nobody faulted. Warm still holds two candidates: rescanned before
	 * its call, its first block now shows PMD-mapped. Hot is looked at
	 * once more, for the policy recheck (its MADV_HUGEPAGE VMA that the
	 * kernel refused was populated when it faulted: an opt-in may
	 * follow), and finds its three blocks PMD-mapped. */
	pass_at(f, 2);
	assert_int_equal(f->ps.procs_scanned, 2);
	assert_int_equal(f->ps.smaps_reads, 2);
	assert_int_equal(state_of(f, WARM)->results[SCAN_PMD_MAPPED], 1);
	assert_int_equal(state_of(f, HOT)->results[SCAN_PMD_MAPPED], 3);
	assert_int_equal(state_of(f, HOT)->results[SCAN_CANDIDATE], 0);
	assert_int_equal(ncalls, 3);
	assert_int_equal(calls[2].pid, WARM);
	assert_int_equal(calls[2].n, 2);
	assert_int_equal(calls[2].addr[0], 0x40000000 + HPAGE_SIZE);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 2);

	/* Everything collapsed, and no counter moved: no process is read
	 * again, nothing is called; with the doorbell silent and nothing
	 * pending, a daemon's pass is skipped altogether. */
	double hot_scan = state_of(f, HOT)->last_scan, warm_scan = state_of(f, WARM)->last_scan;
	pass_at(f, 3);
	assert_int_equal(f->ps.procs_unchanged, NPROC);
	assert_int_equal(f->ps.procs_scanned, 0);
	assert_int_equal(f->ps.smaps_reads, 0);
	assert_int_equal(f->ps.pagemap_ops, 0);
	assert_true(state_of(f, HOT)->last_scan == hot_scan);
	assert_true(state_of(f, WARM)->last_scan == warm_scan);
	assert_int_equal(ncalls, 3);
	f->o.allow_idle = true;
	pass_at(f, 4);
	assert_true(f->ps.idle);
	assert_int_equal(ncalls, 3);

	/* Never a block of an nh or THPeligible 0 VMA, never a call for the
	 * process that has only those. */
	assert_int_equal(forbidden, 0);
	assert_int_equal(calls_for(NOHUGE), 0);
	assert_int_equal(pidfd_opens[2], 0);
}

/* A news pass (pass_options.scan_only): both faulted, the sample reads
 * both as always, but only the news (hot) is scanned; warm's faults are
 * remembered, and the next pass scans it. Dry runs: no call, so no
 * recheck before one reads warm either. */
static void test_news_pass_scans_only_news(void **state)
{
	struct fixture *f = *state;
	const pid_t news[] = {HOT};
	double warm_scan, hot_scan;

	first_pass(f);
	warm_scan = state_of(f, WARM)->last_scan;
	hot_scan = state_of(f, HOT)->last_scan;
	fault(HOT, 25600, 50);
	fault(WARM, 256, 0);
	f->o.dry_run = true;
	f->o.scan_only = news;
	f->o.nscan_only = 1;
	pass_at(f, 1);
	assert_int_equal(f->ps.procs_sampled, 2);
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(f->ps.smaps_reads, 1);
	assert_true(state_of(f, HOT)->last_scan > hot_scan);
	assert_true(state_of(f, WARM)->last_scan == warm_scan);
	f->o.scan_only = NULL;
	f->o.nscan_only = 0;
	pass_at(f, 2);
	assert_true(state_of(f, WARM)->last_scan > warm_scan);
	assert_int_equal(ncalls, 0);
}

/* A news pass for a process that called madvise(MADV_HUGEPAGE) but is not
 * in the table yet: it filled its memory without faults (MAP_POPULATE), so
 * no doorbell record named it, and no listing is due. The pass's sample
 * reads it first (sample_input.read_now), so the pass scans it. */
static void test_news_pass_reads_an_advised_newcomer(void **state)
{
	struct fixture *f = *state;
	const pid_t news[] = {NEWCOMER};

	first_pass(f);
	procs[NPROC] = (struct fproc){.pid = NEWCOMER, .minflt = 10, .ticks = 1, .first_block = 14, .nv = 1};
	procs[NPROC].v[0] =
	    (struct fvma){.start = 0x40000000, .nblocks = 2, .flags = "rd wr mr mw me ac hg", .eligible = 1};
	write_proc(&procs[NPROC]);
	assert_null(engine_find(&f->e, NEWCOMER));
	assert_int_equal(fault_pids_add(&f->e.cold.advised, NEWCOMER), 0);
	fault_pids_finish(&f->e.cold.advised);
	f->o.dry_run = true;
	f->o.scan_only = news;
	f->o.nscan_only = 1;
	pass_at(f, 1);
	assert_false(f->ps.full_sample);
	assert_non_null(engine_find(&f->e, NEWCOMER));
	assert_int_equal(f->ps.procs_scanned, 1);
	assert_int_equal(state_of(f, NEWCOMER)->results[SCAN_CANDIDATE], 2);
	assert_int_equal(f->e.cold.advised.n, 0); /* the news was this pass's */
}

/* No huge page for hot (ENOMEM, and thp_collapse_alloc_failed moved): hot
 * waits alloc_backoff_ms, warm goes on; then hot is submitted again. */
static void test_enomem_backs_off(void **state)
{
	struct fixture *f = *state;

	proc_of(HOT)->err = ENOMEM;
	first_pass(f);
	fault(HOT, 25600, 50);
	fault(WARM, 256, 0);
	pass_at(f, 1);
	assert_int_equal(ncalls, 2);
	assert_int_equal(calls[0].pid, HOT);
	assert_int_equal(f->ps.outcomes[COLLAPSE_ENOMEM], 1);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 1); /* warm's first */
	assert_true(f->ps.backing_off);
	assert_int_equal(f->ps.procs_backing_off, 1);
	assert_true(state_of(f, HOT)->backoff_until == T0 + 1 + BACKOFF / 1000.0);
	assert_int_equal(state_of(f, HOT)->nblocks, 3); /* its blocks stay */

	/* Within the back-off: warm's two others, nothing for hot. */
	pass_at(f, 2);
	assert_int_equal(calls_for(HOT), 1);
	assert_int_equal(ncalls, 3);
	assert_int_equal(calls[2].pid, WARM);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 2);
	assert_int_equal(f->ps.procs_backing_off, 1);
	pass_at(f, 1 + BACKOFF / 1000.0 - 0.5);
	assert_int_equal(calls_for(HOT), 1);

	/* After it: hot again, and now the kernel has huge pages. */
	proc_of(HOT)->err = 0;
	pass_at(f, 1 + BACKOFF / 1000.0 + 0.5);
	assert_int_equal(calls_for(HOT), 2);
	assert_int_equal(f->ps.outcomes[COLLAPSE_OK], 3);
	assert_false(f->ps.backing_off);
	assert_int_equal(state_of(f, HOT)->nblocks, 0);
	assert_int_equal(forbidden, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_passes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_news_pass_scans_only_news, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_news_pass_reads_an_advised_newcomer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enomem_backs_off, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
