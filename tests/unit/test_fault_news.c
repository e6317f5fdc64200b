/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_news on the real kernel: the per-process filter on the doorbell's
 * events rings once for a process that faults in 32 MiB (8192 faults: over
 * DOORBELL_WAKEUP_NEWS samples), not for one that faults in 1 MiB, and
 * counts from zero again after a drain. Needs root and a build with BPF:
 * skipped otherwise (a skip fails CI). */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault_doorbell.h"
#include "units.h"

/* Faults in len bytes of new memory, one fault per 4 KiB page. */
static void fault_in(size_t len)
{
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(buf != MAP_FAILED);
	assert_int_equal(madvise(buf, len, MADV_NOHUGEPAGE), 0);
	for (size_t off = 0; off < len; off += 4096)
		buf[off] = 1;
	assert_int_equal(munmap(buf, len), 0);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_rings_for_news_only(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};
	int r;

	(void)state;
	r = fault_doorbell_open(&d, DOORBELL_WAKEUP_NEWS, true);
	if (r == -EACCES || r == -EPERM || (r == 0 && (d.news_err == -ENOSYS || d.news_err == -EPERM))) {
		fault_doorbell_close(&d);
		skip(); /* not root, or built without BPF: CI fails a skip */
	}
	assert_int_equal(r, 0);
	assert_int_equal(d.news_err, 0);
	assert_non_null(d.news);
	assert_int_equal(fault_doorbell_nfds(&d), 1);

	/* Whatever faulted before: a clean start. */
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	fault_pids_reset(&p);
	assert_false(readable(fault_doorbell_fd(&d, 0)));

	fault_in(MIB_BYTES); /* 256 faults: 4 samples, no news */
	assert_false(readable(fault_doorbell_fd(&d, 0)));

	fault_in(32 * MIB_BYTES);
	assert_true(readable(fault_doorbell_fd(&d, 0)));
	assert_true(fault_doorbell_rang(&d));
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_true(fault_pids_has(&p, getpid()));
	assert_false(readable(fault_doorbell_fd(&d, 0))); /* the drain consumed it */

	/* The drain started every count again: 1 MiB more is no news. */
	fault_in(MIB_BYTES);
	assert_false(readable(fault_doorbell_fd(&d, 0)));
	fault_pids_free(&p);
	fault_doorbell_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rings_for_news_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
