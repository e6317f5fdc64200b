/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_doorbell with injected system calls: CPUs that are offline at open
 * (ENODEV, as 6.18 answers) are opened once the online list changes; a
 * forced refresh opens every event again (a CPU that went offline and came
 * back in between has a silent event); the old events are closed; a fault
 * on a CPU that came online rings the bell; the PIDs in rings closed by a
 * refresh reach the next drain; per process, a filter rides on every
 * event, one fd (its ring) is polled, and a filter that cannot be loaded or
 * attached leaves the doorbell counting per CPU. Then the real thing. */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault_doorbell.h"

#define NCPU 4

static struct fake {
	bool online[NCPU];
	int open_err; /* every open fails with this, if set */
	int opens, closes, live;
	unsigned wakeup;                         /* the last open's */
	struct perf_event_mmap_page *page[NCPU]; /* the last one opened per CPU */
} fk;

static int fake_open(void *ctx, int cpu, size_t len, unsigned wakeup, int *fd, void **page)
{
	assert_ptr_equal(ctx, &fk);
	assert_true(cpu >= 0 && cpu < NCPU);
	if (fk.open_err)
		return -fk.open_err;
	if (!fk.online[cpu])
		return -ENODEV;
	fk.wakeup = wakeup;
	fk.page[cpu] = calloc(1, len);
	assert_non_null(fk.page[cpu]);
	*page = fk.page[cpu];
	*fd = 100 + cpu;
	fk.opens++;
	fk.live++;
	return 0;
}

static void fake_close(void *ctx, int fd, void *page, size_t len)
{
	(void)ctx;
	(void)len;
	assert_true(fd >= 100 && fd < 100 + NCPU);
	free(page);
	fk.closes++;
	fk.live--;
}

/* The online list, as the kernel prints it ("0-1,3\n" style is not needed:
 * only a change matters). */
static int fake_online(void *ctx, char *buf, size_t size)
{
	size_t n = 0;

	(void)ctx;
	for (int c = 0; c < NCPU && n + 3 < size; c++)
		if (fk.online[c])
			n += (size_t)snprintf(buf + n, size - n, "%d,", c);
	snprintf(buf + n, size - n, "\n");
	return 0;
}

static const struct fault_doorbell_ops ops = {
    .open_cpu = fake_open, .close_cpu = fake_close, .read_online = fake_online, .ctx = &fk};

/* The filter, faked: a struct of our own behind fault_news's name. */
static struct fake_news {
	int open_err, attach_err; /* fail with these, if set */
	unsigned samples;         /* the last open's */
	int opens, closes, attaches, consumes, resets;
	int attached_fd; /* the last */
} fn;

static struct fault_news *as_news(void)
{
	return (struct fault_news *)(void *)&fn;
}

static int fn_open(struct fault_news **out, unsigned samples)
{
	if (fn.open_err)
		return -fn.open_err;
	fn.samples = samples;
	fn.opens++;
	*out = as_news();
	return 0;
}

static void fn_close(struct fault_news *n)
{
	assert_ptr_equal(n, as_news());
	fn.closes++;
}

static int fn_attach(struct fault_news *n, int fd)
{
	assert_ptr_equal(n, as_news());
	if (fn.attach_err)
		return -fn.attach_err;
	fn.attaches++;
	fn.attached_fd = fd;
	return 0;
}

static int fn_fd(const struct fault_news *n)
{
	assert_ptr_equal(n, as_news());
	return 77;
}

static int fn_consume(struct fault_news *n)
{
	assert_ptr_equal(n, as_news());
	fn.consumes++;
	return 0;
}

static void fn_reset(struct fault_news *n)
{
	assert_ptr_equal(n, as_news());
	fn.resets++;
}

static const struct fault_news_ops fake_news_ops = {
    .open = fn_open, .close = fn_close, .attach = fn_attach, .fd = fn_fd, .consume = fn_consume, .reset = fn_reset};
static const struct fault_doorbell_ops news_ops = {
    .open_cpu = fake_open, .close_cpu = fake_close, .read_online = fake_online, .news = &fake_news_ops, .ctx = &fk};

static void fault_on(int cpu)
{
	fk.page[cpu]->data_head += 32;
}

static int setup(void **state)
{
	(void)state;
	memset(&fk, 0, sizeof(fk));
	memset(&fn, 0, sizeof(fn));
	return 0;
}

static void test_cpu_comes_online(void **state)
{
	struct fault_doorbell d;

	(void)state;
	fk.online[0] = true; /* 1..3 offline at start */
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), 0);
	assert_int_equal(d.ncpu, 1);
	assert_false(fault_doorbell_rang(&d));
	assert_int_equal(fault_doorbell_refresh(&d, false), 0); /* nothing changed */
	assert_int_equal(fk.opens, 1);

	fk.online[2] = true;
	assert_int_equal(fault_doorbell_refresh(&d, false), 1);
	assert_int_equal(d.ncpu, 2);
	assert_int_equal(fk.live, 2); /* the old event was closed */
	fault_doorbell_arm(&d);
	assert_false(fault_doorbell_rang(&d));
	fault_on(2);
	assert_true(fault_doorbell_rang(&d));
	fault_doorbell_arm(&d);
	assert_false(fault_doorbell_rang(&d));

	/* An offline-online cycle between two looks: same list, dead event;
	 * only a forced refresh gets a live one. */
	assert_int_equal(fault_doorbell_refresh(&d, false), 0);
	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	assert_int_equal(fk.live, 2);
	assert_int_equal(fk.opens, 5);

	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
	assert_int_equal(fault_doorbell_refresh(&d, true), 0); /* closed: nothing */
}

static void test_refresh_failure_rings(void **state)
{
	struct fault_doorbell d;

	(void)state;
	fk.online[0] = fk.online[1] = true;
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), 0);
	fk.open_err = EMFILE;
	assert_int_equal(fault_doorbell_refresh(&d, true), -EMFILE);
	assert_int_equal(fk.live, 0);
	assert_true(fault_doorbell_rang(&d)); /* no events: never idle */
	fk.open_err = 0;
	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	assert_int_equal(d.ncpu, 2);
	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
}

/* Writes one PERF_SAMPLE_TID record for pid at CPU cpu's data_head. */
static void sample_on(int cpu, uint32_t pid)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
	} rec = {{PERF_RECORD_SAMPLE, 0, sizeof(rec)}, pid, pid};
	struct perf_event_mmap_page *pg = fk.page[cpu];
	size_t pagesz = (size_t)sysconf(_SC_PAGESIZE), size = DOORBELL_PAGES * pagesz;
	uint8_t *data = (uint8_t *)pg + pagesz;

	memcpy(data + (pg->data_head & (size - 1)), &rec, sizeof(rec));
	pg->data_head += sizeof(rec);
}

/* A refresh closes the rings: who faulted in them is kept for the next
 * drain, and opens counts the new fds (an event loop listens again). */
static void test_refresh_keeps_faulted(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};

	(void)state;
	fk.online[0] = fk.online[1] = true;
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), 0);
	assert_int_equal(d.opens, 1);
	sample_on(0, 42);
	sample_on(1, 7);
	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	assert_int_equal(d.opens, 2);
	assert_true(fault_doorbell_rang(&d)); /* the new rings are empty, the kept set is not */
	sample_on(1, 42);
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_false(p.lost);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.pid[0], 7);
	assert_int_equal(p.pid[1], 42);
	assert_int_equal(p.samples, 3);
	assert_false(fault_doorbell_rang(&d));
	fault_pids_reset(&p);
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_int_equal(p.n, 0);

	/* Arm discards the kept set too. */
	sample_on(0, 9);
	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	fault_doorbell_arm(&d);
	assert_false(fault_doorbell_rang(&d));
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_int_equal(p.n, 0);

	/* A failed refresh: no events, every drain says lost. */
	fk.open_err = EMFILE;
	assert_int_equal(fault_doorbell_refresh(&d, true), -EMFILE);
	assert_int_equal(d.opens, 4); /* the fds changed: to none */
	assert_int_equal(fault_doorbell_drain(&d, &p), -ENODEV);
	assert_true(p.lost);
	fault_pids_free(&p);
	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
}

/* peek: who the rings name, with counts summed over any mix of CPUs,
 * read without consuming them: the drain after it still sees every one. */
static void test_peek_keeps_records(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};

	(void)state;
	fk.online[0] = fk.online[1] = true;
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), 0);
	assert_int_equal(fault_doorbell_peek(&d)->n, 0);
	sample_on(0, 42);
	sample_on(1, 7);
	sample_on(1, 42);
	assert_int_equal(fault_pids_count(fault_doorbell_peek(&d), 42), 2);
	assert_int_equal(fault_pids_count(fault_doorbell_peek(&d), 7), 1);
	sample_on(0, 42);
	assert_int_equal(fault_pids_count(fault_doorbell_peek(&d), 42), 3);
	assert_int_equal(fault_pids_count(fault_doorbell_peek(&d), 42), 3); /* asking again changes nothing */
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.samples, 4);
	assert_int_equal(fault_pids_count(&p, 42), 3);
	assert_int_equal(fault_doorbell_peek(&d)->n, 0); /* drained */
	fault_pids_free(&p);
	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
}

/* A new wake-up count opens the events again, keeping who faulted; the
 * same count changes nothing. */
static void test_set_wakeup(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};

	(void)state;
	fk.online[0] = true;
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), 0);
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP);
	sample_on(0, 42);
	assert_int_equal(fault_doorbell_set_wakeup(&d, DOORBELL_WAKEUP, false), 0);
	assert_int_equal(d.opens, 1);
	assert_int_equal(fault_doorbell_set_wakeup(&d, DOORBELL_WAKEUP_NEWS, false), 1);
	assert_int_equal(d.opens, 2);
	assert_int_equal(d.wakeup, DOORBELL_WAKEUP_NEWS);
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP_NEWS);
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.pid[0], 42);
	fault_pids_free(&p);
	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
}

/* Per process: the filter counts to the wakeup on every event, the perf
 * fds wake (nobody) rarely, the loop polls the filter's one fd, and a drain
 * or an arm starts every count again; a refresh attaches it to the new
 * events. */
static void test_per_process(void **state)
{
	struct fault_doorbell d;
	struct fault_pids p = {0};

	(void)state;
	fk.online[0] = fk.online[1] = true;
	assert_int_equal(fault_doorbell_open_ops(&d, &news_ops, NCPU, DOORBELL_WAKEUP_NEWS, true), 0);
	assert_non_null(d.news);
	assert_int_equal(d.news_err, 0);
	assert_int_equal(fn.samples, DOORBELL_WAKEUP_NEWS);
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP_UNPOLLED);
	assert_int_equal(fn.attaches, 2);
	assert_int_equal(fault_doorbell_nfds(&d), 1);
	assert_int_equal(fault_doorbell_fd(&d, 0), 77);
	assert_int_equal(fn.resets, 1); /* the open's arm */

	sample_on(1, 42);
	assert_int_equal(fault_pids_count(fault_doorbell_peek(&d), 42), 1);
	assert_int_equal(fn.consumes, 2); /* the arm's, the peek's: the ring's news is read from the rings */
	assert_int_equal(fault_doorbell_drain(&d, &p), 0);
	assert_true(fault_pids_has(&p, 42));
	assert_int_equal(fn.resets, 2);

	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	assert_int_equal(fn.attaches, 4);
	assert_int_equal(fn.attached_fd, 101);
	assert_int_equal(fn.opens, 1); /* the same program */

	/* Asked again, nothing changes; back to back, per CPU again. */
	assert_int_equal(fault_doorbell_set_wakeup(&d, DOORBELL_WAKEUP_NEWS, true), 0);
	assert_int_equal(fault_doorbell_set_wakeup(&d, DOORBELL_WAKEUP, false), 1);
	assert_null(d.news);
	assert_int_equal(fn.closes, 1);
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP);
	assert_int_equal(fault_doorbell_nfds(&d), 2);
	assert_int_equal(fault_doorbell_fd(&d, 1), 101);
	/* And per process once more: a new program, for the new count. */
	assert_int_equal(fault_doorbell_set_wakeup(&d, DOORBELL_WAKEUP_NEWS, true), 1);
	assert_int_equal(fn.opens, 2);
	assert_int_equal(fault_doorbell_nfds(&d), 1);
	fault_pids_free(&p);
	fault_doorbell_close(&d);
	assert_int_equal(fn.closes, 2);
	assert_int_equal(fk.live, 0);
}

/* A filter that cannot be loaded, or attached to an event: the doorbell
 * counts per CPU, with every event open and polled, and says why. */
static void test_per_process_fallback(void **state)
{
	struct fault_doorbell d;

	(void)state;
	fk.online[0] = fk.online[1] = true;
	fn.open_err = EPERM;
	assert_int_equal(fault_doorbell_open_ops(&d, &news_ops, NCPU, DOORBELL_WAKEUP_NEWS, true), 0);
	assert_null(d.news);
	assert_int_equal(d.news_err, -EPERM);
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP_NEWS);
	assert_int_equal(fault_doorbell_nfds(&d), 2);
	fault_doorbell_close(&d);

	fn.open_err = 0;
	fn.attach_err = EINVAL;
	assert_int_equal(fault_doorbell_open_ops(&d, &news_ops, NCPU, DOORBELL_WAKEUP_NEWS, true), 0);
	assert_null(d.news);
	assert_int_equal(d.news_err, -EINVAL);
	assert_int_equal(fn.closes, 1);
	assert_int_equal(fk.live, 2); /* opened again, without it */
	assert_int_equal(fk.wakeup, DOORBELL_WAKEUP_NEWS);
	assert_int_equal(fault_doorbell_nfds(&d), 2);
	assert_int_equal(fault_doorbell_fd(&d, 0), 100);
	fault_doorbell_close(&d);

	/* No filter at all (ops without one). */
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP_NEWS, true), 0);
	assert_int_equal(d.news_err, -ENOSYS);
	assert_int_equal(fault_doorbell_nfds(&d), 2);
	fault_doorbell_close(&d);
	assert_int_equal(fk.live, 0);
}

static void test_no_cpu_at_all(void **state)
{
	struct fault_doorbell d;

	(void)state;
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, NCPU, DOORBELL_WAKEUP, false), -ENODEV);
	assert_true(fault_doorbell_rang(&d));
	assert_int_equal(fault_doorbell_open_ops(&d, &ops, 0, DOORBELL_WAKEUP, false), -EINVAL);
}

/* The real perf events: open on every online CPU, and a refresh with
 * nothing changed does nothing. */
static void test_real(void **state)
{
	struct fault_doorbell d;
	int r;

	(void)state;
	r = fault_doorbell_open(&d, DOORBELL_WAKEUP, false);
	if (r == -EACCES || r == -EPERM) /* unit tests may run unprivileged */
		return;
	assert_int_equal(r, 0);
	assert_true(d.ncpu >= 1);
	assert_true(strlen(d.online) > 0);
	assert_int_equal(fault_doorbell_refresh(&d, false), 0);
	assert_int_equal(fault_doorbell_refresh(&d, true), 1);
	fault_doorbell_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_cpu_comes_online, setup),
	    cmocka_unit_test_setup(test_refresh_failure_rings, setup),
	    cmocka_unit_test_setup(test_refresh_keeps_faulted, setup),
	    cmocka_unit_test_setup(test_peek_keeps_records, setup),
	    cmocka_unit_test_setup(test_set_wakeup, setup),
	    cmocka_unit_test_setup(test_per_process, setup),
	    cmocka_unit_test_setup(test_per_process_fallback, setup),
	    cmocka_unit_test_setup(test_no_cpu_at_all, setup),
	    cmocka_unit_test(test_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
