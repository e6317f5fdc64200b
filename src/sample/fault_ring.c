/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parses the fault doorbell's perf ring records; see the header. */
#include "fault_ring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "lower_bound.h"

/* A sample with PERF_SAMPLE_TID only: header, then u32 pid, u32 tid. */
struct tid_sample {
	struct perf_event_header h;
	uint32_t pid, tid;
};

/* Copies len bytes from ring position pos, which may wrap at the end. */
static void ring_copy(const uint8_t *data, size_t size, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & (size - 1));
	size_t first = size - off < len ? size - off : len;

	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

int fault_pids_add(struct fault_pids *out, pid_t pid)
{
	/* pid 0 is the idle task; negative values are garbage. */
	if (pid <= 0)
		return -EINVAL;
	if (out->n >= FAULT_PIDS_MAX) {
		fault_pids_finish(out);
		if (out->n >= FAULT_PIDS_MAX / 2) {
			out->lost = true;
			return 0;
		}
	}
	if (GROW(out->pid, out->cap, out->n + 1) < 0 || GROW(out->count, out->capcount, out->n + 1) < 0)
		return -ENOMEM;
	out->pid[out->n] = pid;
	out->count[out->n++] = 1;
	return 0;
}

int parse_fault_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head, struct fault_pids *out)
{
	if (size < sizeof(struct tid_sample) || (size & (size - 1)) || head - tail > size || head < tail)
		return -EINVAL;
	while (tail < head) {
		struct perf_event_header h;
		struct tid_sample s;
		int r;

		if (head - tail < sizeof(h))
			return -EINVAL;
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > head - tail)
			return -EINVAL;
		switch (h.type) {
		case PERF_RECORD_SAMPLE:
			if (h.size != sizeof(s))
				return -EINVAL;
			ring_copy(data, size, tail, &s, sizeof(s));
			out->samples++;
			/* A u32 past INT32_MAX turns negative: garbage. */
			r = fault_pids_add(out, (pid_t)s.pid);
			if (r < 0)
				return r;
			break;
		case PERF_RECORD_LOST:
		case PERF_RECORD_THROTTLE:
			out->lost = true;
			break;
		default: /* UNTHROTTLE and the like: nothing about who faulted */
			break;
		}
		tail += h.size;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void fault_pids_finish(struct fault_pids *p)
{
	size_t w = 0;

	if (p->n < 2)
		return;
	if (GROW(p->scratch, p->capscratch, p->n) < 0) {
		p->lost = true; /* the caller then samples everyone */
		return;
	}
	/* pid (positive) in the high half, count in the low: sorts by pid. */
	for (size_t i = 0; i < p->n; i++)
		p->scratch[i] = (uint64_t)(uint32_t)p->pid[i] << 32 | p->count[i];
	qsort(p->scratch, p->n, sizeof(*p->scratch), cmp_u64);
	for (size_t i = 0; i < p->n; i++) {
		pid_t pid = (pid_t)(p->scratch[i] >> 32);
		uint32_t c = (uint32_t)p->scratch[i];

		if (w > 0 && p->pid[w - 1] == pid) {
			p->count[w - 1] = p->count[w - 1] > UINT32_MAX - c ? UINT32_MAX : p->count[w - 1] + c;
			continue;
		}
		p->pid[w] = pid;
		p->count[w++] = c;
	}
	p->n = w;
}

void fault_pids_reset(struct fault_pids *p)
{
	p->n = 0;
	p->samples = 0;
	p->lost = false;
}

void fault_pids_free(struct fault_pids *p)
{
	free(p->pid);
	free(p->count);
	free(p->scratch);
	memset(p, 0, sizeof(*p));
}

static size_t find(const struct fault_pids *p, pid_t pid)
{
	return lower_bound_pid(p->pid, p->n, sizeof(*p->pid), 0, pid);
}

bool fault_pids_has(const struct fault_pids *p, pid_t pid)
{
	size_t i = find(p, pid);

	return i < p->n && p->pid[i] == pid;
}

uint32_t fault_pids_count(const struct fault_pids *p, pid_t pid)
{
	size_t i = find(p, pid);

	return i < p->n && p->pid[i] == pid ? p->count[i] : 0;
}
