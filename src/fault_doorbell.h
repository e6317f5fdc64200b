/* fault_doorbell: a near-free answer to "has any process page-faulted
 * since I last looked?", so that a pass over an unchanged system costs a few
 * memory loads instead of one /proc/PID/stat read per process.
 *
 * One system-wide software event per CPU counts page faults and writes a
 * tiny sample record every DOORBELL_PERIOD faults into a read-only
 * (overwriting) ring buffer. Checking the doorbell reads each buffer's
 * data_head from the mapped control page: no system call. Fewer than
 * DOORBELL_PERIOD faults on a CPU may go unseen until more follow (or the
 * next full rescan); a new 2 MiB candidate takes 512. The cost to the
 * system is one counter increment per fault and one 8-byte record per
 * DOORBELL_PERIOD faults.
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

#define DOORBELL_PERIOD 64

struct fault_doorbell {
	int ncpu;
	int *fd;
	void **page; /* mapped control page + one data page per CPU */
	uint64_t *armed_head;
	size_t map_len;
};

/* Returns 0, or -errno when perf events are unavailable (d is then empty
 * and fault_doorbell_rang() always answers true). */
int fault_doorbell_open(struct fault_doorbell *d);
void fault_doorbell_close(struct fault_doorbell *d);

/* Remembers the current position: faults from now on ring the bell. */
void fault_doorbell_arm(struct fault_doorbell *d);

/* True if any CPU recorded faults since the last arm, or if there is no
 * doorbell. */
bool fault_doorbell_rang(const struct fault_doorbell *d);
