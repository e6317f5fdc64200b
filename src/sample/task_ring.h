/* SPDX-License-Identifier: GPL-2.0-or-later */
/* task_ring: which processes were born and which exited, from the
 * PERF_RECORD_FORK and PERF_RECORD_EXIT records of a perf ring (pure).
 *
 * A system-wide event with attr.task writes one record per fork and exit
 * of any task on its CPU: {pid, ppid, tid, ptid, time}. A record whose pid
 * equals its tid is a thread group's leader: a process born, or its main
 * thread gone (a process whose other threads outlive it is named again by
 * its faults). Threads are skipped. Records from several rings come in no
 * common order: task_events_reduce() orders each PID's records by their
 * time and keeps the last, so that a PID that exited and was reused counts
 * as born, and a process that was born and exited between two drains (a
 * shell's /bin/true) as gone, costing nothing. Garbage (a record whose size
 * is not a multiple of 8, smaller than a header or past head, a span
 * larger than the ring, a ring size that is not a power of two) is
 * -EINVAL; PERF_RECORD_LOST sets lost: the caller must then list /proc. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* More records than this in one drain: treat as lost (a listing is then
 * cheaper than sorting them). */
#define TASK_EVENTS_MAX 65536

struct task_event {
	uint64_t time;
	pid_t pid;
	bool exit;
};

struct task_events {
	struct task_event *ev;
	size_t n, cap;
	bool lost; /* records were dropped, or a ring held garbage */
};

/* Appends the leaders' fork and exit records in data[tail..head)
 * (positions modulo size, a power of two). Returns 0, -EINVAL for garbage
 * (out keeps what came before it), or -ENOMEM. */
int parse_task_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head, struct task_events *out);

/* Appends one record (tests, and what a closed ring held). 0 or -ENOMEM. */
int task_events_add(struct task_events *t, pid_t pid, uint64_t time, bool exit);

/* Each PID's last record decides: born (sorted, unique) if a fork, gone
 * (sorted, unique) if an exit. Sorts t->ev. 0 or -ENOMEM. */
int task_events_reduce(struct task_events *t, pid_t **born, size_t *nborn, size_t *capborn, pid_t **gone, size_t *ngone,
		       size_t *capgone);

void task_events_reset(struct task_events *t);
void task_events_free(struct task_events *t);
