/* A page-fault doorbell from per-CPU perf software events; see the header. */
#include "fault_doorbell.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int fault_doorbell_open(struct fault_doorbell *d)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct perf_event_attr attr;
	int err = 0;

	memset(d, 0, sizeof(*d));
	if (ncpu < 1)
		return -EINVAL;
	d->fd = calloc((size_t)ncpu, sizeof(*d->fd));
	d->page = calloc((size_t)ncpu, sizeof(*d->page));
	if (!d->fd || !d->page) {
		fault_doorbell_close(d);
		return -ENOMEM;
	}
	d->map_len = (1 + DOORBELL_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = DOORBELL_PERIOD;
	attr.sample_type = PERF_SAMPLE_TID; /* who faulted */
	attr.wakeup_events = DOORBELL_WAKEUP;
	attr.exclude_hv = 1;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = perf_event_open(&attr, cpu);
		void *p;

		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL) /* CPU not present */
				continue;
			err = -errno;
			break;
		}
		/* Writable: we consume records by moving data_tail, so the
		 * kernel reports what it had to drop (PERF_RECORD_LOST)
		 * instead of overwriting records silently. */
		p = mmap(NULL, d->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
			close(fd);
			break;
		}
		d->fd[d->ncpu] = fd;
		d->page[d->ncpu] = p;
		d->ncpu++;
	}
	if (!err && d->ncpu == 0)
		err = -ENODEV;
	if (err) {
		fault_doorbell_close(d);
		return err;
	}
	fault_doorbell_arm(d);
	return 0;
}

void fault_doorbell_close(struct fault_doorbell *d)
{
	/* clang-analyzer misses that init's memset() zeroed ncpu before a
	 * failed calloc() can bring us here with NULL arrays. */
	// NOLINTBEGIN(clang-analyzer-core.NullDereference)
	for (int i = 0; i < d->ncpu; i++) {
		munmap(d->page[i], d->map_len);
		close(d->fd[i]);
	}
	// NOLINTEND(clang-analyzer-core.NullDereference)
	free(d->fd);
	free(d->page);
	memset(d, 0, sizeof(*d));
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

void fault_doorbell_arm(struct fault_doorbell *d)
{
	for (int i = 0; i < d->ncpu; i++)
		consume(d->page[i], head_of(d->page[i]));
}

bool fault_doorbell_rang(const struct fault_doorbell *d)
{
	if (d->ncpu == 0)
		return true;
	for (int i = 0; i < d->ncpu; i++) {
		const struct perf_event_mmap_page *pg = d->page[i];

		if (head_of(pg) != pg->data_tail)
			return true;
	}
	return false;
}

int fault_doorbell_drain(struct fault_doorbell *d, struct fault_pids *out)
{
	size_t pagesz = d->map_len / (1 + DOORBELL_PAGES);

	if (d->ncpu == 0) {
		out->lost = true;
		return -ENODEV;
	}
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
		consume(d->page[i], head);
		if (r == -EINVAL)
			out->lost = true;
		else if (r < 0)
			return r;
	}
	fault_pids_finish(out);
	return 0;
}

int fault_doorbell_fd(const struct fault_doorbell *d, int i)
{
	return d->fd[i];
}
