/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parses fork and exit records of a perf ring; see the header. */
#include "task_ring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* PERF_RECORD_FORK and PERF_RECORD_EXIT without sample_id_all. */
struct task_record {
	struct perf_event_header h;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

static void ring_copy(const uint8_t *data, size_t size, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & (size - 1));
	size_t first = size - off < len ? size - off : len;

	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

int task_events_add(struct task_events *t, pid_t pid, uint64_t time, bool exit)
{
	if (t->n >= TASK_EVENTS_MAX) {
		t->lost = true;
		return 0;
	}
	if (GROW(t->ev, t->cap, t->n + 1) < 0)
		return -ENOMEM;
	t->ev[t->n++] = (struct task_event){.time = time, .pid = pid, .exit = exit};
	return 0;
}

int parse_task_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head, struct task_events *out)
{
	if (size < sizeof(struct task_record) || (size & (size - 1)) || head < tail || head - tail > size)
		return -EINVAL;
	while (tail < head) {
		struct perf_event_header h;
		struct task_record rec;
		int r;

		if (head - tail < sizeof(h))
			return -EINVAL;
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > head - tail)
			return -EINVAL;
		switch (h.type) {
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			if (h.size < sizeof(rec))
				return -EINVAL;
			ring_copy(data, size, tail, &rec, sizeof(rec));
			/* A leader only; a u32 past INT32_MAX is garbage. */
			if (rec.pid != rec.tid || rec.pid == 0 || rec.pid > INT32_MAX)
				break;
			r = task_events_add(out, (pid_t)rec.pid, rec.time, h.type == PERF_RECORD_EXIT);
			if (r < 0)
				return r;
			break;
		case PERF_RECORD_LOST:
			out->lost = true;
			break;
		default:
			break;
		}
		tail += h.size;
	}
	return 0;
}

static int by_pid_then_time(const void *a, const void *b)
{
	const struct task_event *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	if (x->time != y->time)
		return (x->time > y->time) - (x->time < y->time);
	return (int)x->exit - (int)y->exit; /* the same tick: the exit last */
}

int task_events_reduce(struct task_events *t, pid_t **born, size_t *nborn, size_t *capborn, pid_t **gone, size_t *ngone,
		       size_t *capgone)
{
	*nborn = *ngone = 0;
	if (t->n > 1) /* qsort() of NULL, 0 is undefined */
		qsort(t->ev, t->n, sizeof(*t->ev), by_pid_then_time);
	for (size_t i = 0; i < t->n; i++) {
		const struct task_event *e = &t->ev[i];

		if (i + 1 < t->n && t->ev[i + 1].pid == e->pid)
			continue; /* not its last */
		if (e->exit) {
			if (GROW(*gone, *capgone, *ngone + 1) < 0)
				return -ENOMEM;
			(*gone)[(*ngone)++] = e->pid;
		} else {
			if (GROW(*born, *capborn, *nborn + 1) < 0)
				return -ENOMEM;
			(*born)[(*nborn)++] = e->pid;
		}
	}
	return 0;
}

void task_events_reset(struct task_events *t)
{
	t->n = 0;
	t->lost = false;
}

void task_events_free(struct task_events *t)
{
	free(t->ev);
	memset(t, 0, sizeof(*t));
}
