/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cold_watch: the ranges processes give MADV_COLD and MADV_PAGEOUT, from
 * the syscall tracepoints syscalls:sys_enter_madvise and
 * sys_enter_process_madvise, into cold_ranges.h; and who changed its own
 * THP policy with madvise(MADV_HUGEPAGE) or prctl(PR_SET_THP_DISABLE)
 * (sys_enter_prctl), news that no counter shows (advised): the scanner
 * reads such a process again at the next pass (rescan_reason.h), and the
 * ring's poll wakes the service for that pass at once.
 *
 * One perf tracepoint event per CPU and syscall, system-wide, with a filter
 * (behavior == MADV_COLD || behavior == MADV_PAGEOUT || behavior ==
 * MADV_HUGEPAGE; option == PR_SET_THP_DISABLE), so only those calls reach
 * the per-CPU rings (PERF_SAMPLE_TID | PERF_SAMPLE_RAW: caller, and the
 * call's arguments as the tracepoint's format file lays them out); each
 * record makes the ring's fd readable. The rings are drained by reading
 * memory, no system call, before each pass and before each collapse call.
 * The events follow CPU hotplug (cold_watch_refresh()).
 *
 * What it cannot see, each failing toward "cold" where it can tell:
 * - process_madvise(): its ranges sit in the caller's memory (vec), which a
 *   later read could not trust; the target is read from the caller's
 *   fdinfo for the pidfd (Pid:), and its whole address space counts as
 *   cold. A pidfd no longer open is lost (below).
 * - Lost records (a ring that filled up, the kernel throttling the event):
 *   every known process counts as cold in its whole address space
 *   (cold_ranges_whole), until its VMAs are seen warm again.
 * - Calls made before the daemon opened its events (processes older than
 *   it, and all of them for --once), and io_uring's IORING_OP_MADVISE,
 *   which does not enter the system call: only the per-VMA rule
 *   (min_referenced_pct) judges those.
 * - Calls on a CPU that came online before the events there were opened:
 *   cold_watch_refresh() reports them as blind, and the caller treats
 *   every process as after lost records, and reads every one again.
 *
 * Cost: enabling any syscall tracepoint sets the syscall-tracepoint work
 * flag on every task, so every system call of every process takes the slow
 * entry path and calls the tracepoint (measured in BENCHMARKS.md); a
 * filtered-out call writes nothing.
 *
 * Needs the event IDs and formats from tracefs (/sys/kernel/tracing or
 * /sys/kernel/debug/tracing; where neither is mounted, from a tracefs
 * instance made with fsmount() and never attached to any tree) and
 * perf_event_open with CAP_PERFMON or CAP_SYS_ADMIN. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cold_ranges.h"
#include "fault_ring.h"
#include "procfs.h"

#define COLD_WATCH_PAGES 16 /* data pages per CPU: about 1000 records */

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define COLD_WATCH_PR_SET_THP_DISABLE 41  /* <sys/prctl.h>'s, without the header's other names */
#define COLD_WATCH_ONLINE_MAX         256 /* /sys/devices/system/cpu/online, as read */

/* The tracepoints, in the order of cold_watch's per-CPU fds. */
enum cold_event {
	COLD_EV_MADVISE,         /* start, len_in, behavior */
	COLD_EV_PROCESS_MADVISE, /* pidfd, behavior */
	COLD_EV_PRCTL,           /* option */
	COLD_NR_EVENTS,
};

/* Where a tracepoint's fields sit in its raw record (its format file). */
struct trace_fields {
	uint32_t id;              /* the event ID (common_type) */
	uint32_t off[3], size[3]; /* the fields asked for, in order */
};

/* Finds the fields named names[0..n) (n <= 3) in the text of a tracepoint
 * format file ("\tfield:unsigned long start;\toffset:16;\tsize:8;...").
 * Returns 0, -ENOENT if one is missing, -EINVAL for garbage. Pure. */
int parse_trace_format_buf(const char *buf, size_t len, const char *const *names, size_t n, struct trace_fields *out);

/* One call as the ring recorded it. */
struct cold_call {
	pid_t pid;             /* the caller (PERF_SAMPLE_TID) */
	enum cold_event event; /* which call */
	uint64_t a[3];         /* its fields, in the order of enum cold_event */
};

typedef void (*cold_call_fn)(void *ctx, const struct cold_call *c);

/* Reads the records in data[tail..head) (positions modulo size, a power of
 * two): samples whose raw data is one of the events ev[] (by common_type)
 * reach fn; PERF_RECORD_LOST and PERF_RECORD_THROTTLE set *lost. Returns 0,
 * or -EINVAL for garbage (a record too short or past head). Pure. */
int parse_cold_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head,
			const struct trace_fields ev[COLD_NR_EVENTS], cold_call_fn fn, void *ctx, bool *lost);

/* One CPU's events: the first owns the ring, the others write into it. */
struct cold_cpu {
	int fd[COLD_NR_EVENTS];
	void *page; /* control page + COLD_WATCH_PAGES data pages */
};

struct cold_watch {
	int ncpu;
	struct cold_cpu *cpu; /* ncpu of possible, for the CPUs online at the last open */
	int possible;
	size_t map_len;
	struct trace_fields ev[COLD_NR_EVENTS];
	char online[COLD_WATCH_ONLINE_MAX]; /* the online list at the last open */
	struct kept_file online_file;       /* CPU_ONLINE_PATH */
	double checked_at, opened_at;       /* cold_watch_refresh()'s clock */
	unsigned opens;                     /* (re)opens: each changed the fds */
	bool lost_pending;                  /* a refresh's drain lost records: the next drain says so */
	pid_t self;                         /* our own calls (the lazy-free probe) are not advice */
	const char *proc_root;              /* for the fdinfo of a process_madvise caller */
	struct cold_ranges ranges;
	/* Callers of madvise(MADV_HUGEPAGE) and prctl(PR_SET_THP_DISABLE)
	 * since the engine last reset it (finished: sorted, unique). A lost
	 * one is news missed, not a wrong decision: a prctl(…, 1) is checked
	 * before each collapse anyway, and the policy recheck and the full
	 * rescan (rescan_reason.h) find the opt-ins later. */
	struct fault_pids advised;
	uint64_t calls;      /* MADV_COLD/MADV_PAGEOUT calls recorded */
	uint64_t losses;     /* drains that lost records (or a target) */
	uint64_t unresolved; /* process_madvise calls whose target could not be read */
	/* When the first process holding lack_referenced_page blocks is due
	 * for its next look (rescan.h: COLD_RECHECK_S); 0: none. A pass is
	 * not idle from then on. (Set by the engine.) */
	double recheck_at;
};

/* Opens the events on every online CPU. 0, or -errno (w is then empty and
 * cold_watch_drain() does nothing); why says what failed. */
int cold_watch_open(struct cold_watch *w, const char *proc_root, char *why, size_t whylen);
/* CPU hotplug: an event cannot be opened on an offline CPU, and one opened
 * before its CPU went offline stays silent after it comes back. At most
 * once a second (at now), reads the online list; if it changed since the
 * last open, or force_after seconds passed since then, opens the events
 * again on the CPUs online now, before the old ones are drained and
 * closed, so that no call between the two is missed. Returns 0 if nothing
 * was done or w is not active; 1 if the events were opened again; 2 if
 * so and the online list had changed: calls on a CPU that came online
 * before now were not seen (blind), and the caller must act as after lost
 * records and read every process again; -errno if the open failed (the
 * old events stay). */
int cold_watch_refresh(struct cold_watch *w, double now, double force_after);
bool cold_watch_active(const struct cold_watch *w);
/* Closes the events; the ranges are freed too. */
void cold_watch_close(struct cold_watch *w);

/* The event fd of CPU slot i (0 <= i < w->ncpu), readable after a
 * record: for an event loop to sleep on. */
int cold_watch_fd(const struct cold_watch *w, int i);
/* Whether pid called madvise(MADV_HUGEPAGE) since advised was reset. */
bool cold_watch_advised(const struct cold_watch *w, pid_t pid);

/* Moves what the rings hold into w->ranges and w->advised. Returns 1 if records (or a
 * process_madvise target) were lost: the caller must then make every
 * process it knows whole (cold_ranges_whole); 0 otherwise. */
int cold_watch_drain(struct cold_watch *w);

/* Applies one call to w->ranges (used by the drain; exposed for tests).
 * Returns 1 if its effect could not be recorded (lost), else 0. */
int cold_watch_apply(struct cold_watch *w, const struct cold_call *c);
