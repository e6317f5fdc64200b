/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_churn_worker: short-lived processes that churn under a running daemon,
 * for tests/integration/churn.sh, hostile.sh and bench/soak.sh.
 *
 *   hc_churn_worker driver --count N [--parallel P] [--seed S] [--max-ms MS]
 *       forks N workers, at most P at a time, with random roles and random
 *       lifetimes of 50..MS ms (default 500); reaps them and ends with
 *       "summary spawned=N ok=N corrupt=N pmd=N setup=N signalled=N" plus
 *       one "role NAME spawned=N ok=N ..." line per role. Exit 0 if every
 *       worker exited 0.
 *   hc_churn_worker ROLE --ms MS          one worker, as the driver forks it
 *   hc_churn_worker mapfile PATH [COMM]   map PATH (read, exec), touch it,
 *       give it MADV_HUGEPAGE, set comm to COMM, print "ready PID 0xADDR LEN", wait for SIGTERM
 *
 * Roles (all of them map their buffer at the same fixed address, so a block
 * the daemon remembers for one process lands on another's memory if it ever
 * applies a stale decision to a recycled PID or a new image after execve):
 *   candidate  2..6 MiB of 4 KiB pages, all written: a collapse candidate
 *   exec       a candidate that then execs /bin/true or itself as "sparse"
 *   remap      mmap, fill, mprotect, MADV_DONTNEED, munmap, again, in a loop
 *   sparse     one page in 16 touched: never a candidate (max_ptes_none <=
 *              255), so it must never show PMD-mapped memory
 *
 * Every buffer is filled as 4 KiB pages and then given MADV_HUGEPAGE: the
 * opt-in that khugepaged's default policy (and so the daemon's) asks for.
 *
 * Worker exit status: 0 intact, 2 set-up failure, 3 pattern corrupt (the
 * offset on stderr), 4 a non-candidate was PMD-mapped. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

#define WORDS_PER_PG  (PAGE_BYTES / sizeof(uint64_t))
#define SPARSE_STRIDE 16u
/* 2 MiB aligned, far below the mmap base and above any heap. */
#define FIXED_ADDR ((uintptr_t)0x200000000000ULL)

enum role { CANDIDATE, EXEC, REMAP, SPARSE, NR_ROLES };
static const char *const role_names[NR_ROLES] = {"candidate", "exec", "remap", "sparse"};

enum { EXIT_INTACT = 0, EXIT_SETUP = 2, EXIT_CORRUPT = 3, EXIT_PMD = 4 };

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t pattern_word(uint64_t i)
{
	uint64_t z = i + UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void fail_setup(const char *what)
{
	fprintf(stderr, "hc_churn_worker[%d]: %s: %s\n", (int)getpid(), what, strerror(errno));
	exit(EXIT_SETUP);
}

/* The pattern differs per process (seed), so a page that ends up in the
 * wrong process is caught as well as a misplaced or zeroed one. */
static uint64_t seed_word(uint64_t seed, size_t page, size_t j)
{
	return pattern_word(seed * 0x100000001b3ULL + page * WORDS_PER_PG + j);
}

static void fill(char *buf, size_t len, uint64_t seed, unsigned stride)
{
	for (size_t p = 0; p < len / PAGE_BYTES; p += stride) {
		uint64_t *w = (uint64_t *)(buf + p * PAGE_BYTES);
		for (size_t j = 0; j < WORDS_PER_PG; j++)
			w[j] = seed_word(seed, p, j);
	}
	/* After the fill, so the pages are 4 KiB: opt in to collapse. */
	if (madvise(buf, len, MADV_HUGEPAGE))
		fail_setup("madvise(MADV_HUGEPAGE)");
}

/* Exits EXIT_CORRUPT at the first wrong word of the pages it checks. */
static void verify_or_exit(const char *buf, size_t len, uint64_t seed, unsigned stride, const char *when)
{
	for (size_t p = 0; p < len / PAGE_BYTES; p += stride) {
		const uint64_t *w = (const uint64_t *)(buf + p * PAGE_BYTES);
		for (size_t j = 0; j < WORDS_PER_PG; j++)
			if (w[j] != seed_word(seed, p, j)) {
				fprintf(stderr, "hc_churn_worker[%d]: pattern bad at offset %zu (%s)\n", (int)getpid(),
					p * PAGE_BYTES + j * 8, when);
				exit(EXIT_CORRUPT);
			}
	}
}

static void zero_or_exit(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i += 8)
		if (*(const uint64_t *)(buf + i)) {
			fprintf(stderr, "hc_churn_worker[%d]: MADV_DONTNEED range not zero at %zu\n", (int)getpid(), i);
			exit(EXIT_CORRUPT);
		}
}

/* Hot access: write each page's first word back (dirty + young). */
static void touch(char *buf, size_t len, uint64_t seed, unsigned stride)
{
	for (size_t p = 0; p < len / PAGE_BYTES; p += stride)
		*(volatile uint64_t *)(buf + p * PAGE_BYTES) = seed_word(seed, p, 0);
}

static char *map_fixed(size_t len)
{
	char *b = mmap((void *)FIXED_ADDR, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (b == MAP_FAILED)
		fail_setup("mmap at the fixed address");
	if ((uintptr_t)b != FIXED_ADDR) /* kernels before 4.17 treat it as a hint */
		fail_setup("mmap ignored the fixed address");
	return b;
}

/* AnonHugePages kB over the VMAs intersecting [buf, buf+len). */
static unsigned long anon_huge_kb(const char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool inside = false;
	unsigned long kb = 0;

	if (!f)
		fail_setup("open /proc/self/smaps");
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
			inside = lo < (uintptr_t)buf + len && hi > (uintptr_t)buf;
			continue;
		}
		if (inside && !strncmp(line, "AnonHugePages:", 14))
			kb += strtoul(line + 14, NULL, 10);
	}
	fclose(f);
	return kb;
}

static void run_until(double deadline, char *buf, size_t len, uint64_t seed, unsigned stride)
{
	while (!stop_requested && now_ms() < deadline) {
		touch(buf, len, seed, stride);
		sleep_ms(10);
	}
}

static int role_candidate(unsigned ms, uint64_t seed)
{
	size_t len = (size_t)(1 + seed % 3) * HPAGE_SIZE;
	char *buf = map_fixed(len);

	fill(buf, len, seed, 1);
	run_until(now_ms() + ms, buf, len, seed, 1);
	verify_or_exit(buf, len, seed, 1, "candidate at exit");
	return EXIT_INTACT;
}

static int role_sparse(unsigned ms, uint64_t seed)
{
	size_t len = 2 * HPAGE_SIZE;
	char *buf = map_fixed(len);
	unsigned long kb;

	fill(buf, len, seed, SPARSE_STRIDE);
	run_until(now_ms() + ms, buf, len, seed, SPARSE_STRIDE);
	verify_or_exit(buf, len, seed, SPARSE_STRIDE, "sparse at exit");
	kb = anon_huge_kb(buf, len);
	if (kb) {
		fprintf(stderr, "hc_churn_worker[%d]: sparse buffer has %lu kB AnonHugePages\n", (int)getpid(), kb);
		return EXIT_PMD;
	}
	return EXIT_INTACT;
}

/* A candidate first; then the same PID, with the same start time, becomes
 * a new image whose memory at the same address is sparse (or /bin/true). */
static int role_exec(unsigned ms, uint64_t seed)
{
	size_t len = 2 * HPAGE_SIZE;
	char *buf = map_fixed(len);
	char ms_arg[16], seed_arg[32];

	fill(buf, len, seed, 1);
	run_until(now_ms() + ms / 2, buf, len, seed, 1);
	verify_or_exit(buf, len, seed, 1, "before execve");
	if (seed & 1) {
		execl("/bin/true", "true", (char *)NULL);
		fail_setup("execve /bin/true");
	}
	snprintf(ms_arg, sizeof(ms_arg), "%u", ms / 2 + 1);
	snprintf(seed_arg, sizeof(seed_arg), "%" PRIu64, seed + 1);
	execl("/proc/self/exe", "hc_churn_worker", "sparse", "--ms", ms_arg, "--seed", seed_arg, (char *)NULL);
	fail_setup("execve /proc/self/exe");
	return EXIT_SETUP;
}

/* Changes its maps all the time: each step checks what must still hold. */
static int role_remap(unsigned ms, uint64_t seed)
{
	double deadline = now_ms() + ms;
	size_t len = 2 * HPAGE_SIZE, half = len / 2;

	do {
		char *buf = map_fixed(len);

		fill(buf, len, seed, 1);
		sleep_ms(5 + (unsigned)(seed % 15));
		verify_or_exit(buf, len, seed, 1, "after fill");
		if (mprotect(buf, half, PROT_READ))
			fail_setup("mprotect read-only");
		sleep_ms(5);
		verify_or_exit(buf, len, seed, 1, "after mprotect");
		if (mprotect(buf, half, PROT_READ | PROT_WRITE))
			fail_setup("mprotect read-write");
		if (madvise(buf + half, half, MADV_DONTNEED))
			fail_setup("madvise(MADV_DONTNEED)");
		sleep_ms(5);
		verify_or_exit(buf, half, seed, 1, "after MADV_DONTNEED");
		zero_or_exit(buf + half, half);
		if (munmap(buf, len))
			fail_setup("munmap");
		seed++;
	} while (!stop_requested && now_ms() < deadline);
	return EXIT_INTACT;
}

static int run_role(enum role r, unsigned ms, uint64_t seed)
{
	switch (r) {
	case CANDIDATE:
		return role_candidate(ms, seed);
	case EXEC:
		return role_exec(ms, seed);
	case REMAP:
		return role_remap(ms, seed);
	default:
		return role_sparse(ms, seed);
	}
}

static void install_handlers(void)
{
	struct sigaction sa = {0};

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the test */
}

/* mapfile: a file mapping like program text, for the smaps name tests;
 * comm (if given) is set with PR_SET_NAME, which takes any bytes. */
static int map_file(const char *path, const char *comm)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	volatile char sink = 0;
	char *b;

	if (fd < 0 || fstat(fd, &st) < 0)
		fail_setup("open the file to map");
	b = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (b == MAP_FAILED)
		fail_setup("mmap the file");
	close(fd);
	if (comm && prctl(PR_SET_NAME, comm))
		fail_setup("prctl(PR_SET_NAME)");
	for (off_t i = 0; i < st.st_size; i += PAGE_BYTES)
		sink += b[i];
	/* Opt in, as text that wants huge pages under enabled=madvise must. */
	if (madvise(b, (size_t)st.st_size, MADV_HUGEPAGE))
		fail_setup("madvise(MADV_HUGEPAGE) the file");
	printf("ready %d 0x%" PRIxPTR " %lld\n", (int)getpid(), (uintptr_t)b, (long long)st.st_size);
	fflush(stdout);
	while (!stop_requested)
		sleep_ms(100);
	(void)sink;
	return 0;
}

struct tally {
	unsigned spawned, ok, corrupt, pmd, setup, signalled, other;
};

static void tally_add(struct tally *t, int status)
{
	if (WIFSIGNALED(status))
		t->signalled++;
	else if (WEXITSTATUS(status) == EXIT_INTACT)
		t->ok++;
	else if (WEXITSTATUS(status) == EXIT_CORRUPT)
		t->corrupt++;
	else if (WEXITSTATUS(status) == EXIT_PMD)
		t->pmd++;
	else if (WEXITSTATUS(status) == EXIT_SETUP)
		t->setup++;
	else
		t->other++;
}

static void tally_print(const char *prefix, const struct tally *t)
{
	printf("%s spawned=%u ok=%u corrupt=%u pmd=%u setup=%u signalled=%u other=%u\n", prefix, t->spawned, t->ok,
	       t->corrupt, t->pmd, t->setup, t->signalled, t->other);
}

static int driver(unsigned count, unsigned parallel, unsigned max_ms, uint64_t seed)
{
	struct {
		pid_t pid;
		enum role role;
	} slot[256] = {{0}};
	struct tally all = {0}, by_role[NR_ROLES] = {{0}};
	unsigned running = 0, started = 0;

	srand48((long)seed);
	if (parallel > 256)
		parallel = 256;
	while (started < count || running) {
		while (started < count && running < parallel) {
			/* exec twice as often: its race (execve between a scan and the
			 * collapse of that scan's blocks) is the rarest to hit. */
			static const enum role mix[] = {CANDIDATE, EXEC, EXEC, REMAP, SPARSE};
			enum role r = mix[lrand48() % (sizeof(mix) / sizeof(mix[0]))];
			unsigned ms = 50 + (unsigned)(lrand48() % (max_ms > 50 ? max_ms - 49 : 1));
			uint64_t s = (uint64_t)lrand48();
			pid_t pid = fork();

			if (pid < 0)
				fail_setup("fork");
			if (pid == 0) {
				prctl(PR_SET_PDEATHSIG, SIGTERM);
				_exit(run_role(r, ms, s));
			}
			for (unsigned i = 0; i < parallel; i++)
				if (!slot[i].pid) {
					slot[i].pid = pid;
					slot[i].role = r;
					break;
				}
			started++;
			running++;
		}
		int status;
		pid_t pid = wait(&status);

		if (pid < 0) {
			if (errno == EINTR && !stop_requested)
				continue;
			break;
		}
		for (unsigned i = 0; i < parallel; i++)
			if (slot[i].pid == pid) {
				all.spawned++;
				by_role[slot[i].role].spawned++;
				tally_add(&all, status);
				tally_add(&by_role[slot[i].role], status);
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					printf("worker %d (%s) ended with status 0x%x\n", (int)pid,
					       role_names[slot[i].role], status);
				slot[i].pid = 0;
				running--;
				break;
			}
		if (stop_requested)
			count = started; /* let the running ones finish */
	}
	for (int r = 0; r < NR_ROLES; r++) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "role %s", role_names[r]);
		tally_print(prefix, &by_role[r]);
	}
	tally_print("summary", &all);
	fflush(stdout);
	return all.ok == all.spawned ? 0 : 1;
}

static unsigned long num_arg(int argc, char **argv, const char *name, unsigned long def)
{
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) {
			char *e;
			unsigned long v = strtoul(argv[i + 1], &e, 10);
			if (*e || !*argv[i + 1]) {
				fprintf(stderr, "hc_churn_worker: %s: not a number\n", name);
				exit(EXIT_SETUP);
			}
			return v;
		}
	return def;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: hc_churn_worker driver --count N [--parallel P] [--seed S] [--max-ms MS]\n"
				"       hc_churn_worker candidate|exec|remap|sparse --ms MS [--seed S]\n"
				"       hc_churn_worker mapfile PATH [COMM]\n");
		return EXIT_SETUP;
	}
	install_handlers();
	if (!strcmp(argv[1], "driver"))
		return driver((unsigned)num_arg(argc, argv, "--count", 500),
			      (unsigned)num_arg(argc, argv, "--parallel", 8),
			      (unsigned)num_arg(argc, argv, "--max-ms", 500),
			      num_arg(argc, argv, "--seed", (unsigned long)getpid()));
	if (!strcmp(argv[1], "mapfile") && (argc == 3 || argc == 4))
		return map_file(argv[2], argc == 4 ? argv[3] : NULL);
	for (int r = 0; r < NR_ROLES; r++)
		if (!strcmp(argv[1], role_names[r]))
			return run_role((enum role)r, (unsigned)num_arg(argc, argv, "--ms", 200),
					num_arg(argc, argv, "--seed", (unsigned long)getpid()));
	fprintf(stderr, "hc_churn_worker: unknown mode '%s'\n", argv[1]);
	return EXIT_SETUP;
}
