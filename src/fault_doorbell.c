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
	d->armed_head = calloc((size_t)ncpu, sizeof(*d->armed_head));
	if (!d->fd || !d->page || !d->armed_head) {
		fault_doorbell_close(d);
		return -ENOMEM;
	}
	d->map_len = 2 * (size_t)sysconf(_SC_PAGESIZE);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = DOORBELL_PERIOD;
	attr.sample_type = 0; /* a bare header: all we look at is that it was written */
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
		/* PROT_READ only: the kernel overwrites old records and we never
		 * need to consume them; data_head just keeps moving. */
		p = mmap(NULL, d->map_len, PROT_READ, MAP_SHARED, fd, 0);
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
	free(d->armed_head);
	memset(d, 0, sizeof(*d));
}

static uint64_t head_of(const void *page)
{
	const struct perf_event_mmap_page *pg = page;

	return __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
}

void fault_doorbell_arm(struct fault_doorbell *d)
{
	for (int i = 0; i < d->ncpu; i++)
		d->armed_head[i] = head_of(d->page[i]);
}

bool fault_doorbell_rang(const struct fault_doorbell *d)
{
	if (d->ncpu == 0)
		return true;
	for (int i = 0; i < d->ncpu; i++)
		if (head_of(d->page[i]) != d->armed_head[i])
			return true;
	return false;
}
