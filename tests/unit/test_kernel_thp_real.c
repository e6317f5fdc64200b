/* The running kernel's prctl and THPeligible semantics that the daemon
 * builds on (tests/fixtures/kernels/README.md), checked in a child process
 * on VMAs it never touches, so that no page is faulted and no sysfs knob
 * matters:
 *   - /proc/PID/status THP_enabled is 0 only for PR_SET_THP_DISABLE without
 *     flags (6.18 fs/proc/array.c task_thp_status(): MMF_DISABLE_THP_COMPLETELY);
 *   - PR_THP_DISABLE_EXCEPT_ADVISED (6.18 kernel/sys.c) shows in
 *     PR_GET_THP_DISABLE (3) and, in /proc, only as THPeligible 0 on VMAs
 *     without MADV_HUGEPAGE (include/linux/huge_mm.h vma_thp_disabled());
 *   - before 6.18 the flag is EINVAL;
 *   - MADV_NOHUGEPAGE reads 0 whatever the policy. */
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
#include <sys/utsname.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernel_features.h"
#include "procfs.h"
#include "procs.h"
#include "smaps_scan.h"
#include "units.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

static char big[1 << 20];

static int self_thp_enabled(void)
{
	ssize_t n = read_small_file_at(AT_FDCWD, "/proc/self/status", big, sizeof(big));

	return n < 0 ? -1 : parse_status_thp_enabled(big, (size_t)n);
}

/* THPeligible of the VMA that starts at addr, or -1. */
static int eligible_at(uint64_t addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	struct vma_list l;
	size_t n;
	int r = -1;

	if (!f)
		return -1;
	n = fread(big, 1, sizeof(big) - 1, f);
	fclose(f);
	vma_list_init(&l);
	if (parse_smaps_buf(big, n, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (l.v[i].start == addr && l.v[i].has_thpeligible)
				r = l.v[i].thp_eligible;
	vma_list_free(&l);
	return r;
}

/* An untouched anonymous VMA holding a whole aligned 2 MiB block, with
 * advice; its PROT_EXEC keeps it from merging with its neighbours. */
static uint64_t map_vma(int advice)
{
	char *p = mmap(NULL, 6 * MIB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t a;

	if (p == MAP_FAILED)
		return 0;
	a = ((uint64_t)(uintptr_t)p + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1);
	if ((a != (uint64_t)(uintptr_t)p && munmap(p, (size_t)(a - (uint64_t)(uintptr_t)p))) ||
	    munmap((char *)(uintptr_t)(a + HPAGE_SIZE),
		   (size_t)((uint64_t)(uintptr_t)p + 6 * MIB_BYTES - a - HPAGE_SIZE)) ||
	    (advice >= 0 && madvise((void *)(uintptr_t)a, HPAGE_SIZE, advice)))
		return 0;
	return a;
}

#define CHECK(c)                                                                                                       \
	do {                                                                                                           \
		if (!(c)) {                                                                                            \
			fprintf(stderr, "child: %s (line %d)\n", #c, __LINE__);                                        \
			_exit(1);                                                                                      \
		}                                                                                                      \
	} while (0)

static void child(bool except_advised)
{
	uint64_t plain = map_vma(-1), nh = map_vma(MADV_NOHUGEPAGE);

	CHECK(plain && nh);
	CHECK(self_thp_enabled() == 1);
	CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0);
	CHECK(eligible_at(nh) == 0);
	if (!except_advised) {
		errno = 0;
		CHECK(prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == -1 && errno == EINVAL);
	} else {
		CHECK(prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0);
		CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == (1 | PR_THP_DISABLE_EXCEPT_ADVISED));
		CHECK(self_thp_enabled() == 1); /* status does not show it */
		CHECK(eligible_at(plain) == 0); /* THPeligible does, on plain memory */
		/* Flags only when disabling. */
		CHECK(prctl(PR_SET_THP_DISABLE, 0, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == -1 && errno == EINVAL);
	}
	CHECK(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1);
	CHECK(self_thp_enabled() == 0);
	CHECK(eligible_at(plain) == 0);
	CHECK(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) == 0);
	CHECK(self_thp_enabled() == 1);
	CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0);
	_exit(0);
}

static void test_prctl_semantics(void **state)
{
	(void)state;
	int ea = kernel_probe_real(KPROBE_EXCEPT_ADVISED, NULL), status;
	pid_t pid;

	assert_true(ea == 0 || ea == 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(ea == 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The real probes on this kernel agree with its release: everything from
 * 6.18 on is there (asserted only where the release says so). */
static void test_real_probes(void **state)
{
	(void)state;
	struct utsname u;
	unsigned major = 0, minor = 0;

	assert_int_equal(uname(&u), 0);
	assert_int_equal(sscanf(u.release, "%u.%u", &major, &minor), 2);
	for (int w = KPROBE_PROCESS_MADVISE; w <= KPROBE_EXCEPT_ADVISED; w++) {
		int r = kernel_probe_real((enum kernel_probe_what)w, NULL);

		assert_true(r == 0 || r == 1);
		if (major > 6 || (major == 6 && minor >= 18))
			assert_int_equal(r, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prctl_semantics),
	    cmocka_unit_test(test_real_probes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
