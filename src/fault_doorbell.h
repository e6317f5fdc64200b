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
 * CPU hotplug (measured on 6.18): perf_event_open() on an offline CPU fails
 * with ENODEV, and an event opened before its CPU went offline stays silent
 * after the CPU comes back. fault_doorbell_refresh() opens the events again
 * when /sys/devices/system/cpu/online changed (or when asked to, for an
 * offline-online cycle between two looks).
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

/* The system calls, injectable for tests. */
struct fault_doorbell_ops {
	/* Opens CPU cpu's event and maps len bytes of it (control page
	 * first). 0, or -errno (-ENODEV or -EINVAL: the CPU is offline or
	 * absent). */
	int (*open_cpu)(void *ctx, int cpu, size_t len, int *fd, void **page);
	void (*close_cpu)(void *ctx, int fd, void *page, size_t len);
	/* The text of /sys/devices/system/cpu/online, NUL-terminated: 0 or
	 * -errno. */
	int (*read_online)(void *ctx, char *buf, size_t size);
	void *ctx;
};

#define DOORBELL_ONLINE_MAX 256

struct fault_doorbell {
	int ncpu; /* events open */
	int possible;
	int *fd;
	void **page; /* mapped control page + one data page per CPU */
	uint64_t *armed_head;
	size_t map_len;
	const struct fault_doorbell_ops *ops; /* NULL: never opened */
	char online[DOORBELL_ONLINE_MAX];     /* the online list when last opened */
};

/* Returns 0, or -errno when perf events are unavailable (d is then empty
 * and fault_doorbell_rang() always answers true). */
int fault_doorbell_open(struct fault_doorbell *d);
/* The same with injected ops, for possible CPUs 0..possible-1. */
int fault_doorbell_open_ops(struct fault_doorbell *d, const struct fault_doorbell_ops *ops, int possible);
void fault_doorbell_close(struct fault_doorbell *d);

/* Opens the events again, for the CPUs online now, if the online list
 * changed since they were opened, or if force. Returns 1 if it did, 0 if
 * not (or d was never opened), -errno if it failed (d then has no events
 * and rings always, so nothing is missed). Call fault_doorbell_arm() after
 * it. */
int fault_doorbell_refresh(struct fault_doorbell *d, bool force);

/* Remembers the current position: faults from now on ring the bell. */
void fault_doorbell_arm(struct fault_doorbell *d);

/* True if any CPU recorded faults since the last arm, or if there is no
 * doorbell. */
bool fault_doorbell_rang(const struct fault_doorbell *d);
