/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_workload: a process with one 2 MiB-aligned buffer in a known state, for
 * integration tests and benchmarks.
 *
 *   hc_workload --role ROLE --mb N [--hot-interval-ms MS] [--advise hg|none]
 *               [--prctl none|completely|except] [--advise-huge] [--file PATH]
 *               [--launch completely|except] [--populate]
 *
 * After set-up it prints "ready <pid> 0x<start> <length>" and then keeps the
 * buffer in the state its role describes until SIGTERM/SIGINT.
 *
 * The buffer is filled as 4 KiB pages (THP is disabled by prctl while it is
 * filled, whatever the sysfs policy), then given MADV_HUGEPAGE (--advise hg,
 * the default; huge and nohuge keep their own advice): it opts in to THP as
 * a program that wants khugepaged's huge pages must, yet is not huge yet.
 * --prctl then sets PR_SET_THP_DISABLE: completely, or except for advised
 * memory (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18).
 *
 * --populate fills the buffer by MADV_POPULATE_WRITE before writing it, as
 * MAP_POPULATE or mlock() would: no page fault, so no perf fault event and
 * no doorbell record names the process.
 *
 * --file PATH makes the shmem role map PATH (created, sized to the buffer)
 * MAP_SHARED instead of shared anonymous memory: a file on a tmpfs mount.
 * --launch MODE makes it a launcher: it sets the prctl MODE, forks, and
 * the child execs this program with the other arguments, so the workload
 * has the mode by inheritance only (fork and exec keep it). A process that
 * inherited a mode fills its buffer under that mode and keeps it. The
 * launcher waits for the child and exits with its status; SIGTERM to the
 * launcher is passed on.
 *
 * The matrix role maps six VMAs of N MiB each, in this order: anonymous
 * plain, hg and nh, then shared anonymous (shmem) plain, hg and nh; after
 * the ready line it prints one "vma <name> 0x<start> <length>" line for
 * each (names anon-plain … shmem-nh) and then idles. Every 64-bit
 * word i of the buffer holds pattern_word(i), so a page moved to the wrong
 * place or replaced by zeroes during a collapse is caught:
 *   SIGUSR1          verify, print "pattern ok" or "pattern bad at OFF"
 *   SIGUSR2          idle role: fault in TOUCH_BURST more pages of a spare
 *                    mapping in a burst, enough for the fault doorbell (one
 *                    sample per 64 faults on a CPU) to name the process
 *                    (minflt and RSS change, the address space does not)
 *   SIGHUP           idle role: map one more, untouched page (only the
 *                    address space changes); prints "grew" or "touched"
 *   SIGRTMIN         hot role: MADV_COLD the buffer and stop touching it
 *                    (becomes the cold role); prints "cold"
 *   SIGRTMIN+1       hot role: MADV_FREE the buffer and only read it from
 *                    then on (becomes the lazyfree role); prints "freed"
 *   SIGRTMIN+2       matrix role: clear the prctl mode again
 *                    (PR_SET_THP_DISABLE 0); prints "prctl cleared"
 *   SIGRTMIN+3       unmap the buffer and go on without it (nothing left
 *                    to verify); prints "unmapped" (tests/unmap_shim.c)
 *   SIGRTMIN+4       partcold role: read the first block again (its
 *                    pages are present: no fault); prints "rewarmed"
 *                    Neither changes a fault counter, RSS or the maps.
 *   SIGTERM/SIGINT   verify, exit 0 if intact, 3 if not (offset on stderr)
 * The lazymix role lays its blocks out in groups of four, all in one VMA
 * that is faulted in as 4 KiB pages and then MADV_HUGEPAGE'd: block 4k is
 * MADV_FREE'd and only read (clean lazy-free), 4k+1 is MADV_FREE'd and
 * written again in full, 4k+2 is never freed, and 4k+3 is MADV_FREE'd and
 * three quarters of it written again; written pages stay written (hot).
 * The churn role maps a new buffer every interval, fills it and unmaps the
 * old one (what allocators do); each buffer is advised as the others are
 * (--advise-huge is kept as another name for --advise hg).
 * The manyvmas role fills its buffer, then makes every other page
 * read-only: one VMA per page (--mb 250 is 64000 VMAs), with the resident
 * memory that makes the daemon look at it.
 * The partcold role fills its buffer like idle, gives only its first 2 MiB
 * block MADV_COLD, then MADV_HUGEPAGE, and touches nothing more: one mostly
 * hot VMA (Referenced N-2 of N MiB) with a cold block in it.
 * The reserve role maps N MiB with MAP_NORESERVE and MADV_HUGEPAGE (64 TiB
 * costs no memory) and fills two blocks of it as 4 KiB pages: the first,
 * whose first 64 pages it then MADV_FREEs, and the one RESERVE_FAR_MB
 * further (if the range reaches); "ready" names the first, a "far 0x<addr>"
 * line the second. Any unprivileged process can do this.
 * Exit 2 means bad usage or a set-up failure. */
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
#include <sys/wait.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

#define WORDS_PER_PG  (PAGE_BYTES / sizeof(uint64_t))
#define PATTERN_SEED  UINT64_C(0x9e3779b97f4a7c15)
#define SPARSE_STRIDE 16u /* the sparse role touches one page in 16 */
#define TOUCH_BURST   128u

/* idle: filled (so referenced) and then never touched, unlike cold no
 * MADV_COLD. churn: every interval maps a fresh buffer, fills it with 4 KiB
 * pages and unmaps the old one, so it always has new candidates. */
/* partial: hot, 3 of every 4 pages filled as 4 KiB pages, then
 * MADV_HUGEPAGE (eligible under enabled=madvise whatever the scope or --advise). */
enum role {
	HOT,
	COLD,
	LAZYFREE,
	SPARSE,
	HUGE,
	SHMEM,
	NOHUGE,
	THPOFF,
	IDLE,
	CHURN,
	MATRIX,
	LAZYMIX,
	MANYVMAS,
	PARTIAL,
	RESERVE,
	PARTCOLD
};

static const char *const role_names[] = {"hot",      "cold",    "lazyfree", "sparse",  "huge",   "shmem",
					 "nohuge",   "thpoff",  "idle",     "churn",   "matrix", "lazymix",
					 "manyvmas", "partial", "reserve",  "partcold"};

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1) /* include/uapi/linux/prctl.h, Linux 6.18 */
#endif

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t verify_requested;
static volatile sig_atomic_t touch_requested, grow_requested;
static volatile sig_atomic_t advice_requested; /* 0, or the MADV_* for SIGRTMIN(+1) */
static volatile sig_atomic_t clear_requested;  /* SIGRTMIN+2 */
static volatile sig_atomic_t unmap_requested;  /* SIGRTMIN+3 */
static volatile sig_atomic_t rewarm_requested; /* SIGRTMIN+4 */
static int inherited_prctl;                    /* PR_GET_THP_DISABLE at start */
static volatile uint64_t read_sink;            /* keeps the reads from being optimised away */

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_verify(int sig)
{
	(void)sig;
	verify_requested = 1;
}

static void on_touch(int sig)
{
	(void)sig;
	touch_requested = 1;
}

static void on_grow(int sig)
{
	(void)sig;
	grow_requested = 1;
}

static void on_clear(int sig)
{
	(void)sig;
	clear_requested = 1;
}

static void on_unmap(int sig)
{
	(void)sig;
	unmap_requested = 1;
}

static void on_rewarm(int sig)
{
	(void)sig;
	rewarm_requested = 1;
}

static void on_advice(int sig)
{
	advice_requested = sig == SIGRTMIN ? MADV_COLD : MADV_FREE;
}

/* splitmix64 finaliser: every word differs from its neighbours, from other
 * pages and from zero, so both a misplaced and a zero-filled page show. */
static uint64_t pattern_word(uint64_t i)
{
	uint64_t z = i + PATTERN_SEED;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void die(const char *what)
{
	fprintf(stderr, "hc_workload: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Over-allocate and trim head and tail: fine for private anon memory, whose
 * pgoff follows the address. */
static char *map_aligned_anon(size_t len)
{
	size_t span = len + HPAGE_SIZE;
	char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	uintptr_t start = ((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1);
	size_t head = start - (uintptr_t)raw;
	if (head)
		munmap(raw, head);
	if (span - head - len)
		munmap((char *)start + len, span - head - len);
	return (char *)start;
}

/* A shared mapping's pgoff does not follow its address, so trimming its head
 * would break the (vm_start - pgoff) alignment collapse needs. Reserve an
 * aligned hole instead and map the shmem at offset 0 right into it. */
static const char *shm_file; /* --file */

static char *map_aligned_shmem(size_t len)
{
	size_t span = len + HPAGE_SIZE;
	int fd = -1, flags = MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED;

	if (shm_file) {
		fd = open(shm_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
			die("open --file");
		flags = MAP_SHARED | MAP_FIXED;
	}
	char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap reserve");
	uintptr_t start = ((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1);
	char *buf = mmap((void *)start, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (buf == MAP_FAILED)
		die("mmap shmem");
	if (fd >= 0)
		close(fd);
	size_t head = start - (uintptr_t)raw;
	if (head)
		munmap(raw, head);
	if (span - head - len)
		munmap(buf + len, span - head - len);
	return buf;
}

static void fill_page(char *buf, size_t page)
{
	uint64_t *w = (uint64_t *)(buf + page * PAGE_BYTES);
	uint64_t first = page * WORDS_PER_PG;
	for (size_t j = 0; j < WORDS_PER_PG; j++)
		w[j] = pattern_word(first + j);
}

static bool page_touched(enum role r, size_t page)
{
	if (r == PARTIAL)
		return page % 4 != 3;
	return r != SPARSE || page % SPARSE_STRIDE == 0;
}

static bool advise_hg = true; /* --advise */
static bool populate;         /* --populate */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Faults the buffer in as 4 KiB pages: THP is off for the process while it
 * does (enabled=always or an advised VMA would get huge pages at fault),
 * and back on afterwards, unless the role is thpoff. The huge role wants
 * its huge pages at fault. */
static void fill_pages(enum role r, char *buf, size_t len)
{
	if (populate && madvise(buf, len, MADV_POPULATE_WRITE))
		die("madvise(MADV_POPULATE_WRITE)");
	for (size_t p = 0; p < len / PAGE_BYTES; p++)
		if (page_touched(r, p))
			fill_page(buf, p);
}

static void fill(enum role r, char *buf, size_t len)
{
	if (inherited_prctl) { /* its launcher's mode already keeps plain memory small */
		fill_pages(r, buf, len);
		return;
	}
	if (r != HUGE && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		die("prctl(PR_SET_THP_DISABLE)");
	fill_pages(r, buf, len);
	if (r != THPOFF && prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0))
		die("prctl(PR_SET_THP_DISABLE, 0)");
}

/* The opt-in that khugepaged's default policy (enabled=madvise) asks for. */
static void advise(enum role r, char *buf, size_t len)
{
	if ((advise_hg || r == PARTIAL) && r != HUGE && r != NOHUGE && madvise(buf, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
}

/* lazymix: whether the page was MADV_FREE'd and never written again. */
static bool page_clean_lazyfree(enum role r, size_t page)
{
	size_t kind = page / HPAGE_PAGES % 4, in = page % HPAGE_PAGES;

	return r == LAZYMIX && (kind == 0 || (kind == 3 && in >= HPAGE_PAGES * 3 / 4));
}

/* lazymix: MADV_FREE blocks 4k, 4k+1 and 4k+3, then write 4k+1 and three
 * quarters of 4k+3 again (the same pattern: only the dirty bit changes). */
static void lazymix(char *buf, size_t len)
{
	for (size_t b = 0; b < len / HPAGE_SIZE; b++)
		if (b % 4 != 2 && madvise(buf + b * HPAGE_SIZE, HPAGE_SIZE, MADV_FREE))
			die("madvise(MADV_FREE)");
	for (size_t p = 0; p < len / PAGE_BYTES; p++)
		if (p / HPAGE_PAGES % 4 != 2 && !page_clean_lazyfree(LAZYMIX, p))
			fill_page(buf, p);
}

/* Byte offset of the page's first wrong word, or -1. */
static long page_mismatch(const char *buf, size_t page)
{
	const uint64_t *w = (const uint64_t *)(buf + page * PAGE_BYTES);
	uint64_t first = page * WORDS_PER_PG;
	for (size_t j = 0; j < WORDS_PER_PG; j++)
		if (w[j] != pattern_word(first + j))
			return (long)(page * PAGE_BYTES + j * sizeof(uint64_t));
	return -1;
}

static bool page_all_zero(const char *buf, size_t page)
{
	const uint64_t *w = (const uint64_t *)(buf + page * PAGE_BYTES);
	for (size_t j = 0; j < WORDS_PER_PG; j++)
		if (w[j])
			return false;
	return true;
}

/* Offset of the first bad word, or -1 if the buffer is intact. The kernel may
 * discard lazy-free pages, so for that role an all-zero page is fine too.
 * The sparse role only checks the pages it wrote (reading the others would
 * map the zero page into them and change what a scanner sees). */
static long verify(enum role r, const char *buf, size_t len)
{
	for (size_t p = 0; p < len / PAGE_BYTES; p++) {
		if (!page_touched(r, p))
			continue;
		long off = page_mismatch(buf, p);
		if (off >= 0 && !((r == LAZYFREE || page_clean_lazyfree(r, p)) && page_all_zero(buf, p)))
			return off;
	}
	return -1;
}

/* The idle role's answers to SIGUSR2 and SIGHUP. */
static void touch_or_grow(char *spare)
{
	static size_t touched;

	if (touch_requested && spare && touched + TOUCH_BURST <= HPAGE_PAGES) {
		for (size_t i = 0; i < TOUCH_BURST; i++)
			spare[touched++ * PAGE_BYTES] = 1;
		printf("touched\n");
	}
	if (grow_requested) {
		if (mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			die("mmap grow");
		printf("grew\n");
	}
	touch_requested = grow_requested = 0;
	fflush(stdout);
}

/* One round of access. Hot roles write the same value back into each page
 * (dirty + young) and read another word; lazyfree only reads (a write would
 * make the page non-lazy-free again); sparse reads the pages it touched. */
static void access_round(enum role r, char *buf, size_t len)
{
	uint64_t sum = 0;
	for (size_t p = 0; p < len / PAGE_BYTES; p++) {
		if (!page_touched(r, p))
			continue;
		volatile uint64_t *w = (volatile uint64_t *)(buf + p * PAGE_BYTES);
		if (r != LAZYFREE && r != SPARSE && !page_clean_lazyfree(r, p))
			w[0] = pattern_word(p * WORDS_PER_PG);
		sum += w[WORDS_PER_PG / 2];
	}
	read_sink = sum;
}

/* Sum of one "Name: N kB" smaps field over the VMAs inside [buf, buf+len). */
static unsigned long smaps_kb(const char *buf, size_t len, const char *field)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		die("open /proc/self/smaps");
	char line[512];
	size_t flen = strlen(field);
	bool inside = false;
	unsigned long total = 0;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		/* Only VMA header lines start with "hex-hex". */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
			inside = lo < (uintptr_t)buf + len && hi > (uintptr_t)buf;
			continue;
		}
		if (inside && !strncmp(line, field, flen) && line[flen] == ':')
			total += strtoul(line + flen + 1, NULL, 10);
	}
	fclose(f);
	return total;
}

/* Every role but huge must start out as 4 KiB pages, or the test it serves
 * would measure nothing; THP enabled=always would break that. */
static void check_small_pages(enum role r, const char *buf, size_t len)
{
	const char *field = r == SHMEM ? "ShmemPmdMapped" : "AnonHugePages";
	unsigned long kb = smaps_kb(buf, len, field);
	if (r != HUGE && kb) {
		fprintf(stderr, "hc_workload: %s role got %s: %lu kB after fill (THP enabled=always?)\n", role_names[r],
			field, kb);
		exit(2);
	}
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL); /* a signal cuts it short: that is what we want */
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hc_workload --role "
		"hot|cold|lazyfree|sparse|huge|shmem|nohuge|thpoff|idle|churn|matrix|lazymix|manyvmas|partial|reserve|"
		"partcold "
		"--mb N [--hot-interval-ms MS] [--advise hg|none] [--prctl none|completely|except] [--advise-huge] "
		"[--file PATH] [--launch completely|except] [--populate]\n");
	exit(2);
}

static enum role parse_role(const char *s)
{
	for (size_t i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++)
		if (!strcmp(s, role_names[i]))
			return (enum role)i;
	usage();
	return HOT;
}

static unsigned long parse_num(const char *s)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s ? s : "", &end, 10);
	if (!s || !*s || *end || errno || v == 0)
		usage();
	return v;
}

static void install_handlers(void)
{
	struct sigaction sa = {0};
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop; /* no SA_RESTART: interrupt the sleep */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_verify;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_touch;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_grow;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_advice;
	sigaction(SIGRTMIN, &sa, NULL);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sa.sa_handler = on_clear;
	sigaction(SIGRTMIN + 2, &sa, NULL);
	sa.sa_handler = on_unmap;
	sigaction(SIGRTMIN + 3, &sa, NULL);
	sa.sa_handler = on_rewarm;
	sigaction(SIGRTMIN + 4, &sa, NULL);
	/* If the test script dies, do not outlive it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* The matrix role: six VMAs, each filled as 4 KiB pages, then advised. */
static char *map_matrix(size_t len)
{
	static const char *const names[6] = {"anon-plain", "anon-hg", "anon-nh", "shmem-plain", "shmem-hg", "shmem-nh"};
	static const int advice[3] = {-1, MADV_HUGEPAGE, MADV_NOHUGEPAGE};
	char *v[6];

	for (int i = 0; i < 6; i++) {
		v[i] = i < 3 ? map_aligned_anon(len) : map_aligned_shmem(len);
		fill(MATRIX, v[i], len);
		if (advice[i % 3] >= 0 && madvise(v[i], len, advice[i % 3]))
			die("madvise(matrix)");
	}
	printf("ready %ld 0x%" PRIxPTR " %zu\n", (long)getpid(), (uintptr_t)v[0], len);
	for (int i = 0; i < 6; i++)
		printf("vma %s 0x%" PRIxPTR " %zu\n", names[i], (uintptr_t)v[i], len);
	fflush(stdout);
	return v[0];
}

#define RESERVE_FAR_MB (100u << 10) /* 100 GiB */

static int reserve(size_t len)
{
	char *raw =
	    mmap(NULL, len + HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t far = (size_t)RESERVE_FAR_MB * MIB_BYTES;

	if (raw == MAP_FAILED)
		die("mmap(MAP_NORESERVE)");
	char *buf = (char *)(((uintptr_t)raw + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
	if (madvise(buf, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	fill(HOT, buf, HPAGE_SIZE);
	if (far + HPAGE_SIZE <= len)
		fill(HOT, buf + far, HPAGE_SIZE);
	if (madvise(buf, 64 * PAGE_BYTES, MADV_FREE))
		die("madvise(MADV_FREE)");
	printf("ready %ld 0x%" PRIxPTR " %zu\n", (long)getpid(), (uintptr_t)buf, len);
	if (far + HPAGE_SIZE <= len)
		printf("far 0x%" PRIxPTR "\n", (uintptr_t)(buf + far));
	fflush(stdout);
	while (!stop_requested)
		sleep_ms(1000);
	return 0;
}

static void set_prctl(const char *mode)
{
	int r = 0;

	if (!strcmp(mode, "completely"))
		r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	else if (!strcmp(mode, "except"))
		r = prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
	else if (strcmp(mode, "none"))
		usage();
	if (r)
		die("prctl(PR_SET_THP_DISABLE, --prctl)");
}

static pid_t launched;

static void on_launcher_stop(int sig)
{
	if (launched > 0)
		kill(launched, sig);
}

/* --launch MODE: set MODE, fork, exec ourselves without --launch MODE. */
static int launch(const char *mode, int argc, char **argv)
{
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	struct sigaction sa = {0};
	int n = 0, status;

	if (!args)
		die("calloc");
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--launch") && i + 1 < argc) {
			i++;
			continue;
		}
		args[n++] = argv[i];
	}
	set_prctl(mode);
	sa.sa_handler = on_launcher_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	launched = fork();
	if (launched < 0)
		die("fork");
	if (launched == 0) {
		execv("/proc/self/exe", args);
		die("execv");
	}
	while (waitpid(launched, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	free(args);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	enum role r = HOT;
	bool have_role = false;
	const char *prctl_mode = "none";
	unsigned long mb = 0, interval_ms = 50;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--launch"))
			return launch(argv[i + 1], argc, argv);
	inherited_prctl = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (inherited_prctl < 0)
		inherited_prctl = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--role") && i + 1 < argc) {
			r = parse_role(argv[++i]);
			have_role = true;
		} else if (!strcmp(argv[i], "--mb")) {
			mb = parse_num(argv[++i]);
		} else if (!strcmp(argv[i], "--hot-interval-ms")) {
			interval_ms = parse_num(argv[++i]);
		} else if (!strcmp(argv[i], "--advise") && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "hg") && strcmp(argv[i], "none"))
				usage();
			advise_hg = !strcmp(argv[i], "hg");
		} else if (!strcmp(argv[i], "--advise-huge")) {
			advise_hg = true;
		} else if (!strcmp(argv[i], "--populate")) {
			populate = true;
		} else if (!strcmp(argv[i], "--prctl") && i + 1 < argc) {
			prctl_mode = argv[++i];
		} else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			shm_file = argv[++i];
		} else {
			usage();
		}
	}
	if (!have_role || !mb)
		usage();
	/* Round up to whole 2 MiB blocks. */
	size_t len = ((size_t)mb * MIB_BYTES) + HPAGE_SIZE - 1;
	len &= ~(size_t)(HPAGE_SIZE - 1);

	install_handlers();
	if (r == MATRIX) {
		char *first = map_matrix(len);

		set_prctl(prctl_mode);
		while (!stop_requested) {
			if (clear_requested) {
				clear_requested = 0;
				if (prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0))
					die("prctl(PR_SET_THP_DISABLE, 0)");
				printf("prctl cleared\n");
				fflush(stdout);
			}
			sleep_ms((unsigned)interval_ms);
		}
		return verify(IDLE, first, len) < 0 ? 0 : 3;
	}

	if (r == RESERVE)
		return reserve(len);

	char *buf = r == SHMEM ? map_aligned_shmem(len) : map_aligned_anon(len);
	/* Flags go on before the first touch so the faults already obey them. */
	if (r == HUGE && madvise(buf, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	if ((r == NOHUGE || r == LAZYMIX) && madvise(buf, len, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	fill(r, buf, len);
	check_small_pages(r, buf, len);
	if (r == LAZYMIX) {
		/* Still 4 KiB pages: free and rewrite, then opt in. */
		lazymix(buf, len);
		if (madvise(buf, len, MADV_HUGEPAGE))
			die("madvise(MADV_HUGEPAGE)");
	}
	/* Before the advice: nothing may collapse the block first. */
	if (r == PARTCOLD && madvise(buf, HPAGE_SIZE, MADV_COLD))
		die("madvise(MADV_COLD) of the first block");
	advise(r, buf, len);
	for (size_t p = 1; r == MANYVMAS && p < len / PAGE_BYTES; p += 2)
		if (mprotect(buf + p * PAGE_BYTES, PAGE_BYTES, PROT_READ))
			die("mprotect (vm.max_map_count?)");
	set_prctl(prctl_mode);
	if (r == COLD && madvise(buf, len, MADV_COLD))
		die("madvise(MADV_COLD)");
	if (r == LAZYFREE && madvise(buf, len, MADV_FREE))
		die("madvise(MADV_FREE)");

	/* Untouched until SIGUSR2: faults there change no existing mapping. */
	char *spare = NULL;
	if (r == IDLE) {
		spare = mmap(NULL, HPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (spare == MAP_FAILED)
			die("mmap spare");
	}

	printf("ready %ld 0x%" PRIxPTR " %zu\n", (long)getpid(), (uintptr_t)buf, len);
	fflush(stdout);

	while (!stop_requested) {
		if (verify_requested) {
			verify_requested = 0;
			long off = buf ? verify(r, buf, len) : -1;
			if (off < 0)
				printf("pattern ok\n");
			else
				printf("pattern bad at %ld\n", off);
			fflush(stdout);
		}
		if (touch_requested || grow_requested)
			touch_or_grow(spare);
		if (advice_requested && r == HOT) {
			if (madvise(buf, len, advice_requested))
				die("madvise(SIGRTMIN)");
			r = advice_requested == MADV_COLD ? COLD : LAZYFREE;
			printf("%s\n", r == COLD ? "cold" : "freed");
			fflush(stdout);
		}
		advice_requested = 0;
		if (unmap_requested && buf) {
			if (munmap(buf, len))
				die("munmap(SIGRTMIN+3)");
			buf = NULL;
			printf("unmapped\n");
			fflush(stdout);
		}
		unmap_requested = 0;
		if (rewarm_requested && r == PARTCOLD && buf) {
			for (size_t off = 0; off < HPAGE_SIZE; off += PAGE_BYTES)
				read_sink += ((volatile uint64_t *)(buf + off))[0];
			printf("rewarmed\n");
			fflush(stdout);
		}
		rewarm_requested = 0;
		if (!buf) {
			/* unmapped: nothing to touch */
		} else if (r == CHURN) {
			/* Map the new one first, so it gets another address. */
			char *next = map_aligned_anon(len);
			/* Without the prctl: a daemon reading status meanwhile
			 * would see THP disabled for the whole process. Not yet
			 * advised, the new buffer faults as 4 KiB pages anyway
			 * (unless enabled=always). */
			fill_pages(r, next, len);
			advise(r, next, len);
			munmap(buf, len);
			buf = next;
		} else if (r != COLD && r != IDLE && r != MANYVMAS && r != PARTCOLD) {
			access_round(r, buf, len);
		}
		sleep_ms((unsigned)interval_ms);
	}

	long off = buf ? verify(r, buf, len) : -1;
	if (off >= 0) {
		fprintf(stderr, "hc_workload: %s: pattern bad at offset %ld\n", role_names[r], off);
		return 3;
	}
	return 0;
}
