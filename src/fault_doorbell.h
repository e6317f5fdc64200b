/* fault_doorbell: a near-free answer to "which processes page-faulted
 * since I last looked?", so that a pass costs what changed: a few memory
 * loads on an unchanged system, and one /proc/PID/stat read per process
 * that faulted otherwise.
 *
 * One system-wide software event per CPU counts page faults and writes a
 * 16-byte sample record (PERF_SAMPLE_TID: pid, tid) every DOORBELL_PERIOD
 * faults into a ring buffer that we consume (data_tail). Checking the
 * doorbell reads each ring's data_head from the mapped control page: no
 * system call. Of any DOORBELL_PERIOD consecutive faults on one CPU exactly
 * one is sampled, so a process that faults that many times in a row is
 * named; fewer may go unseen until more follow (or the rolling rescan). A
 * new 2 MiB candidate takes 512 faults. When a ring fills up, or the kernel
 * throttles the event, records are lost: the drain says so, and the caller
 * must assume that every process may have faulted. The poll wake-up comes
 * after DOORBELL_WAKEUP samples on one CPU, so an event loop can sleep on
 * the fds (fault_doorbell_fd). The cost to the system is one counter
 * increment per fault and one record per DOORBELL_PERIOD faults.
 *
 * Memory filled without a fault (get_user_pages: MAP_POPULATE, mlock) raises
 * no event at all; mapped_memory.h covers that.
 *
 * Needs perf_event_open with CAP_PERFMON or CAP_SYS_ADMIN; where it is not
 * available, fault_doorbell_open() fails and the caller samples every pass. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault_ring.h"

#define DOORBELL_PERIOD 64
#define DOORBELL_WAKEUP 8 /* samples per CPU before poll wakes: 512 faults, one 2 MiB block */
#define DOORBELL_PAGES  8 /* data pages per CPU: 2048 records */

struct fault_doorbell {
	int ncpu;
	int *fd;
	void **page; /* mapped control page + DOORBELL_PAGES data pages per CPU */
	size_t map_len;
};

/* Returns 0, or -errno when perf events are unavailable (d is then empty
 * and fault_doorbell_rang() always answers true). */
int fault_doorbell_open(struct fault_doorbell *d);
void fault_doorbell_close(struct fault_doorbell *d);

/* Discards what was recorded: faults from now on ring the bell. */
void fault_doorbell_arm(struct fault_doorbell *d);

/* True if any CPU recorded faults since the last arm or drain, or if there
 * is no doorbell. */
bool fault_doorbell_rang(const struct fault_doorbell *d);

/* Consumes every ring: appends the PIDs that faulted to out (finished:
 * sorted, unique) and sets out->lost if records were lost or garbled.
 * Returns 0, -ENODEV when there is no doorbell (out->lost is then set), or
 * -ENOMEM. */
int fault_doorbell_drain(struct fault_doorbell *d, struct fault_pids *out);

/* The event fd of CPU slot i (0 <= i < d->ncpu), readable (POLLIN) after
 * DOORBELL_WAKEUP samples; for an event loop to sleep on. */
int fault_doorbell_fd(const struct fault_doorbell *d, int i);
