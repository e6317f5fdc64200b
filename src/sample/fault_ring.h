/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_ring: who faulted, from the records of a perf ring buffer (pure).
 *
 * The fault doorbell's per-CPU events write one PERF_RECORD_SAMPLE per
 * DOORBELL_PERIOD page faults, carrying PERF_SAMPLE_TID (pid, tid). This
 * file turns the bytes between data_tail and data_head of such a ring into
 * the set of faulting PIDs, without trusting them: a record whose size is
 * not a multiple of 8, smaller than a header, or past data_head, a span
 * larger than the ring, or a ring size that is not a power of two is
 * garbage, reported as -EINVAL. PERF_RECORD_LOST and PERF_RECORD_THROTTLE
 * (the kernel dropped samples) set `lost`: the caller must then assume that
 * every process may have faulted. Other record types are skipped. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* More distinct PIDs than this in one drain: treat as lost (sampling every
 * process is then cheaper than tracking them one by one). */
#define FAULT_PIDS_MAX 65536

struct fault_pids {
	pid_t *pid;      /* sorted and unique after fault_pids_finish() */
	uint32_t *count; /* samples naming pid[i] (summed by the finish) */
	size_t n, cap, capcount;
	uint64_t *scratch; /* for the finish */
	size_t capscratch;
	uint64_t samples; /* sample records read */
	bool lost;        /* samples were dropped, or a ring held garbage */
};

/* Appends the PIDs named by the records in data[tail..head) (positions
 * modulo size, which must be a power of two). Returns 0, -EINVAL for
 * garbage (out keeps what came before it), or -ENOMEM. */
int parse_fault_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head, struct fault_pids *out);

/* Appends pid (> 0; more than FAULT_PIDS_MAX distinct ones set lost
 * instead). Returns 0, -EINVAL for pid <= 0, or -ENOMEM. */
int fault_pids_add(struct fault_pids *p, pid_t pid);
/* Sorts, and merges duplicates (adding their counts). Without memory for
 * that, sets lost. */
void fault_pids_finish(struct fault_pids *p);
/* Empties the set, keeping its storage. */
void fault_pids_reset(struct fault_pids *p);
void fault_pids_free(struct fault_pids *p);
/* Binary search: p must be finished. */
bool fault_pids_has(const struct fault_pids *p, pid_t pid);
/* The samples that named pid (0: none); p must be finished. */
uint32_t fault_pids_count(const struct fault_pids *p, pid_t pid);
