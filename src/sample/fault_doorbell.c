/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A page-fault doorbell from per-CPU perf software events; see the header. */
#include "fault_doorbell.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procfs.h"

#define CPU_ONLINE_PATH "/sys/devices/system/cpu/online"

static int sys_open_cpu(void *ctx, int cpu, size_t len, unsigned wakeup, int *fd, void **page)
{
	struct perf_event_attr attr;
	void *p;

	(void)ctx;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = DOORBELL_PERIOD;
	attr.sample_type = PERF_SAMPLE_TID; /* who faulted */
	attr.wakeup_events = wakeup;
	attr.exclude_hv = 1;
	*fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	/* Writable: we consume records by moving data_tail, so the kernel
	 * reports what it had to drop (PERF_RECORD_LOST) instead of
	 * overwriting records silently. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		close(*fd);
		return err;
	}
	*page = p;
	return 0;
}

static void sys_close_cpu(void *ctx, int fd, void *page, size_t len)
{
	(void)ctx;
	munmap(page, len);
	close(fd);
}

/* Read every pass: one fd kept for the daemon's life, read with pread (a
 * sysfs attribute is rendered again at offset 0), saves the open's walk of
 * five path components and two system calls. */
static int sys_read_online(void *ctx, char *buf, size_t size)
{
	static struct kept_file online;
	ssize_t n = kept_file_read(&online, CPU_ONLINE_PATH, buf, size);

	(void)ctx;
	return n < 0 ? (int)n : 0;
}

/* Side-band only: a dummy event counts nothing and never samples, but with
 * attr.task the kernel writes every fork and exit on its CPU to its ring.
 * No wake-up (watermark past the ring): the sampler drains it each pass. */
static int sys_open_tasks(void *ctx, int cpu, size_t len, int *fd, void **page)
{
	struct perf_event_attr attr;
	void *p;

	(void)ctx;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.task = 1;
	attr.watermark = 1;
	attr.wakeup_watermark = (uint32_t)len;
	*fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		close(*fd);
		return err;
	}
	*page = p;
	return 0;
}

static const struct fault_doorbell_ops sys_ops = {.open_cpu = sys_open_cpu,
						  .close_cpu = sys_close_cpu,
						  .read_online = sys_read_online,
						  .open_tasks = sys_open_tasks,
						  .news = &fault_news_sys};

static void close_filter(struct fault_doorbell *d)
{
	if (d->news)
		d->ops->news->close(d->news);
	d->news = NULL;
}

/* Closes every event, keeping the arrays. */
static void close_events(struct fault_doorbell *d)
{
	/* clang-analyzer misses that open's memset() zeroed ncpu before a
	 * failed calloc() can bring us here with NULL arrays. */
	// NOLINTBEGIN(clang-analyzer-core.NullDereference)
	for (int i = 0; i < d->ncpu; i++) {
		d->ops->close_cpu(d->ops->ctx, d->fd[i], d->page[i], d->map_len);
		if (d->tasks)
			d->ops->close_cpu(d->ops->ctx, d->task_fd[i], d->task_page[i], d->task_map_len);
	}
	// NOLINTEND(clang-analyzer-core.NullDereference)
	d->ncpu = 0;
	d->tasks = false;
}

/* The task events of the open CPUs (d->cpu_of[i]): all, or none. */
static void open_task_events(struct fault_doorbell *d, const int *cpu_of)
{
	int i;

	if (!d->ops->open_tasks || !d->task_fd || !d->task_page)
		return;
	for (i = 0; i < d->ncpu; i++)
		if (d->ops->open_tasks(d->ops->ctx, cpu_of[i], d->task_map_len, &d->task_fd[i], &d->task_page[i]) < 0)
			break;
	if (i == d->ncpu) {
		d->tasks = true;
		return;
	}
	while (i-- > 0)
		d->ops->close_cpu(d->ops->ctx, d->task_fd[i], d->task_page[i], d->task_map_len);
}

/* Opens one event per CPU that is online now (into empty arrays), with
 * the filter if d->news; *filter_err: attaching it failed (nothing open). */
static int open_events_once(struct fault_doorbell *d, int *filter_err)
{
	int err = 0;

	/* Read first: a CPU that comes online while we open shows as a change
	 * next time, and is opened then. */
	int *cpu_of = calloc((size_t)d->possible, sizeof(*cpu_of));

	if (!cpu_of)
		return -ENOMEM;
	if (d->ops->read_online(d->ops->ctx, d->online, sizeof(d->online)) < 0)
		d->online[0] = '\0';
	for (int cpu = 0; cpu < d->possible; cpu++) {
		unsigned wakeup = d->news ? DOORBELL_WAKEUP_UNPOLLED : d->wakeup;
		int fd, r = d->ops->open_cpu(d->ops->ctx, cpu, d->map_len, wakeup, &fd, &d->page[d->ncpu]);

		if (r == -ENODEV || r == -EINVAL) /* offline or not present */
			continue;
		if (r < 0) {
			err = r;
			break;
		}
		cpu_of[d->ncpu] = cpu;
		d->fd[d->ncpu++] = fd;
		if (d->news && (r = d->ops->news->attach(d->news, fd)) < 0) {
			err = *filter_err = r;
			break;
		}
	}
	if (!err && d->ncpu == 0)
		err = -ENODEV;
	if (err)
		close_events(d);
	else
		open_task_events(d, cpu_of);
	free(cpu_of);
	return err;
}

/* As open_events_once(); a filter that cannot be attached is dropped
 * (d->news_err), and the events opened without it. */
static int open_events(struct fault_doorbell *d)
{
	int ferr = 0, r = open_events_once(d, &ferr);

	if (ferr) {
		close_filter(d);
		d->news_err = ferr;
		r = open_events_once(d, &ferr);
	}
	return r;
}

/* Loads the filter if d->per_process (d->news_err: why not). */
static void load_filter(struct fault_doorbell *d)
{
	d->news_err = 0;
	if (!d->per_process)
		return;
	if (!d->ops->news)
		d->news_err = -ENOSYS;
	else
		d->news_err = d->ops->news->open(&d->news, d->wakeup);
	if (d->news_err)
		d->news = NULL;
}

int fault_doorbell_open_ops(struct fault_doorbell *d, const struct fault_doorbell_ops *ops, int possible,
			    unsigned wakeup, bool per_process)
{
	int err;

	memset(d, 0, sizeof(*d));
	if (possible < 1 || wakeup < 1)
		return -EINVAL;
	d->wakeup = wakeup;
	d->per_process = per_process;
	d->possible = possible;
	d->ops = ops;
	d->fd = calloc((size_t)possible, sizeof(*d->fd));
	d->page = calloc((size_t)possible, sizeof(*d->page));
	d->task_fd = calloc((size_t)possible, sizeof(*d->task_fd));
	d->task_page = calloc((size_t)possible, sizeof(*d->task_page));
	d->task_map_len = (1 + DOORBELL_TASK_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	if (!d->fd || !d->page) {
		fault_doorbell_close(d);
		return -ENOMEM;
	}
	d->map_len = (1 + DOORBELL_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	load_filter(d);
	err = open_events(d);
	if (err) {
		fault_doorbell_close(d);
		return err;
	}
	d->opens = 1;
	fault_doorbell_arm(d);
	return 0;
}

int fault_doorbell_open(struct fault_doorbell *d, unsigned wakeup, bool per_process)
{
	/* Every CPU that can ever come online, not only those online now. */
	return fault_doorbell_open_ops(d, &sys_ops, (int)sysconf(_SC_NPROCESSORS_CONF), wakeup, per_process);
}

void fault_doorbell_close(struct fault_doorbell *d)
{
	if (d->ops)
		close_events(d);
	free(d->fd);
	free(d->page);
	free(d->task_fd);
	free(d->task_page);
	fault_pids_free(&d->kept);
	fault_pids_free(&d->peek);
	task_events_free(&d->kept_tasks);
	close_filter(d);
	memset(d, 0, sizeof(*d));
}

static int drain_rings(struct fault_doorbell *d, struct fault_pids *out);
static int drain_task_rings(struct fault_doorbell *d, struct task_events *out);

/* Closes the events and opens them again (open_events()). */
static int reopen(struct fault_doorbell *d)
{
	int r;

	/* Who faulted since the last drain is still wanted; who was born
	 * between the close and the open is not known. */
	if (drain_rings(d, &d->kept) < 0)
		d->kept.lost = true;
	if (d->tasks && drain_task_rings(d, &d->kept_tasks) < 0)
		d->kept_tasks.lost = true;
	d->kept_tasks.lost = true;
	close_events(d);
	r = open_events(d);
	d->opens++; /* the fds changed, even to none */
	return r;
}

int fault_doorbell_refresh(struct fault_doorbell *d, bool force)
{
	char now[DOORBELL_ONLINE_MAX];
	int r;

	if (!d->ops || !d->fd)
		return 0;
	if (!force) {
		if (d->ops->read_online(d->ops->ctx, now, sizeof(now)) < 0 || !strcmp(now, d->online))
			return 0;
	}
	r = reopen(d);
	return r < 0 ? r : 1;
}

static uint64_t head_of(const void *page)
{
	const struct perf_event_mmap_page *pg = page;

	return __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
}

/* The records up to here are read: the kernel may overwrite them. */
static void consume(void *page, uint64_t head)
{
	struct perf_event_mmap_page *pg = page;

	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
}

/* The rings were consumed: the filter counts from zero again. */
static void filter_drained(struct fault_doorbell *d)
{
	if (d->news) {
		d->ops->news->reset(d->news);
		d->ops->news->consume(d->news);
	}
}

void fault_doorbell_arm(struct fault_doorbell *d)
{
	fault_pids_reset(&d->kept);
	for (int i = 0; i < d->ncpu; i++)
		consume(d->page[i], head_of(d->page[i]));
	filter_drained(d);
}

bool fault_doorbell_rang(const struct fault_doorbell *d)
{
	if (d->ncpu == 0 || d->kept.n || d->kept.lost)
		return true;
	for (int i = 0; i < d->ncpu; i++) {
		const struct perf_event_mmap_page *pg = d->page[i];

		if (head_of(pg) != pg->data_tail)
			return true;
	}
	return false;
}

/* Consumes every ring into out (unfinished). 0 or -ENOMEM. */
/* Appends who the rings name to out; consumes the records if drain (else
 * the next look sees them again). */
static int read_rings(struct fault_doorbell *d, struct fault_pids *out, bool drain)
{
	size_t pagesz = d->map_len / (1 + DOORBELL_PAGES);

	for (int i = 0; i < d->ncpu; i++) {
		const struct perf_event_mmap_page *pg = d->page[i];
		uint64_t head = head_of(pg), tail = pg->data_tail;
		/* data_offset/data_size exist since Linux 4.1; 0 before. */
		size_t off = pg->data_offset ? (size_t)pg->data_offset : pagesz;
		size_t size = pg->data_size ? (size_t)pg->data_size : d->map_len - pagesz;
		int r;

		if (off > d->map_len || size > d->map_len - off) {
			out->lost = true;
			r = 0;
		} else {
			r = parse_fault_ring_buf((const uint8_t *)d->page[i] + off, size, tail, head, out);
		}
		if (drain)
			consume(d->page[i], head);
		if (r == -EINVAL)
			out->lost = true;
		else if (r < 0)
			return r;
	}
	return 0;
}

static int drain_rings(struct fault_doorbell *d, struct fault_pids *out)
{
	return read_rings(d, out, true);
}

const struct fault_pids *fault_doorbell_peek(struct fault_doorbell *d)
{
	fault_pids_reset(&d->peek);
	if (d->news) /* what rang is read from the rings themselves */
		d->ops->news->consume(d->news);
	if (d->ncpu == 0 || read_rings(d, &d->peek, false) < 0)
		return NULL;
	fault_pids_finish(&d->peek);
	return &d->peek;
}

int fault_doorbell_drain(struct fault_doorbell *d, struct fault_pids *out)
{
	int r = 0;

	if (d->ncpu == 0) {
		fault_pids_reset(&d->kept);
		out->lost = true;
		return -ENODEV;
	}
	/* What rings closed by a refresh held comes first. */
	out->lost |= d->kept.lost;
	out->samples += d->kept.samples;
	for (size_t i = 0; i < d->kept.n && r == 0; i++) {
		r = fault_pids_add(out, d->kept.pid[i]);
		if (r == 0 && out->n)
			out->count[out->n - 1] = d->kept.count[i];
	}
	fault_pids_reset(&d->kept);
	if (r == 0)
		r = drain_rings(d, out);
	filter_drained(d);
	if (r < 0)
		return r;
	fault_pids_finish(out);
	return 0;
}

/* The data area of a mapped ring of len bytes, or false if the control
 * page says something impossible. data_offset/data_size exist since Linux
 * 4.1; 0 before. */
static bool ring_data(const void *page, size_t len, size_t pagesz, size_t *off, size_t *size)
{
	const struct perf_event_mmap_page *pg = page;

	*off = pg->data_offset ? (size_t)pg->data_offset : pagesz;
	*size = pg->data_size ? (size_t)pg->data_size : len - pagesz;
	return *off <= len && *size <= len - *off;
}

static int drain_task_rings(struct fault_doorbell *d, struct task_events *out)
{
	size_t pagesz = d->task_map_len / (1 + DOORBELL_TASK_PAGES);

	for (int i = 0; i < d->ncpu; i++) {
		uint64_t head = head_of(d->task_page[i]),
			 tail = ((struct perf_event_mmap_page *)d->task_page[i])->data_tail;
		size_t off, size;
		int r = 0;

		if (!ring_data(d->task_page[i], d->task_map_len, pagesz, &off, &size))
			out->lost = true;
		else
			r = parse_task_ring_buf((const uint8_t *)d->task_page[i] + off, size, tail, head, out);
		consume(d->task_page[i], head);
		if (r == -EINVAL)
			out->lost = true;
		else if (r < 0)
			return r;
	}
	return 0;
}

int fault_doorbell_tasks(struct fault_doorbell *d, struct task_events *out)
{
	int r = 0;

	out->lost |= d->kept_tasks.lost;
	for (size_t i = 0; i < d->kept_tasks.n && r == 0; i++)
		r = task_events_add(out, d->kept_tasks.ev[i].pid, d->kept_tasks.ev[i].time, d->kept_tasks.ev[i].exit);
	task_events_reset(&d->kept_tasks);
	if (r < 0)
		return r;
	if (!d->tasks) {
		out->lost = true;
		return -ENODEV;
	}
	return drain_task_rings(d, out);
}

int fault_doorbell_set_wakeup(struct fault_doorbell *d, unsigned wakeup, bool per_process)
{
	int r;

	if (!d->ops || !d->fd || wakeup < 1 || (wakeup == d->wakeup && per_process == d->per_process))
		return 0;
	d->wakeup = wakeup;
	d->per_process = per_process;
	close_filter(d); /* it counts to the old wakeup */
	load_filter(d);
	r = reopen(d);
	return r < 0 ? r : 1;
}

int fault_doorbell_nfds(const struct fault_doorbell *d)
{
	return d->news && d->ncpu ? 1 : d->ncpu;
}

int fault_doorbell_fd(const struct fault_doorbell *d, int i)
{
	return d->news ? d->ops->news->fd(d->news) : d->fd[i];
}
