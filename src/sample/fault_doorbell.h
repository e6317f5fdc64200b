/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * after `wakeup` samples on one CPU, so an event loop can sleep on the fds
 * (fault_doorbell_fd): DOORBELL_WAKEUP for passes back to back, which run
 * on each; DOORBELL_WAKEUP_NEWS for a timer, where a wake-up only asks
 * whether a pass should come early (each costs the daemon a context switch,
 * ~60 µs in a guest, and a busy machine faults all the time). The cost to the system is one counter
 * increment per fault and one record per DOORBELL_PERIOD faults.
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
 * Births and exits: beside each CPU's fault event, a dummy software event
 * with attr.task writes each fork and exit on that CPU to a ring of its own
 * (task_ring.h), which never wakes anyone and is not part of
 * fault_doorbell_rang(): a shell's /bin/true does not make a pass. The
 * sampler learns the process lifecycle from it (fault_doorbell_tasks())
 * instead of listing /proc every few seconds. Where the dummy event cannot
 * be opened, d->tasks is false and the caller lists /proc as before.
 *
 * Per process (per_process, for a timer): a BPF program on the events
 * (fault_news.h) counts the wakeup's samples per process since the last
 * drain, and one fd (its ring) wakes when a process reaches them: a timer's
 * news look then comes only for news. The perf fds are not polled then.
 * Where the filter cannot be loaded or attached, the doorbell counts per
 * CPU as before and news_err says why.
 *
 * Needs perf_event_open with CAP_PERFMON or CAP_SYS_ADMIN; where it is not
 * available, fault_doorbell_open() fails and the caller samples every pass. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault_news.h"
#include "fault_ring.h"
#include "task_ring.h"

#define DOORBELL_PERIOD      64
#define DOORBELL_WAKEUP      8  /* samples per CPU before poll wakes: 512 faults, one 2 MiB block */
#define DOORBELL_WAKEUP_NEWS 64 /* 4096 faults, 16 MiB: news_gate.h's NEWS_FAULT_SAMPLES */
#define DOORBELL_PAGES       8  /* data pages per CPU: 2048 records */
#define DOORBELL_TASK_PAGES  16 /* per CPU: 2048 fork or exit records between two drains */
/* Per process, the perf fds are not polled: wake (nobody) rarely. */
#define DOORBELL_WAKEUP_UNPOLLED 1024

/* The system calls, injectable for tests. */
struct fault_doorbell_ops {
	/* Opens CPU cpu's event and maps len bytes of it (control page
	 * first). 0, or -errno (-ENODEV or -EINVAL: the CPU is offline or
	 * absent). */
	int (*open_cpu)(void *ctx, int cpu, size_t len, unsigned wakeup, int *fd, void **page);
	void (*close_cpu)(void *ctx, int fd, void *page, size_t len);
	/* The text of /sys/devices/system/cpu/online, NUL-terminated: 0 or
	 * -errno. */
	int (*read_online)(void *ctx, char *buf, size_t size);
	/* Opens CPU cpu's task event (fork and exit records) and maps len
	 * bytes of it; closed by close_cpu. NULL: no task events. */
	int (*open_tasks)(void *ctx, int cpu, size_t len, int *fd, void **page);
	/* The per-process filter (fault_news_sys); NULL: none. */
	const struct fault_news_ops *news;
	void *ctx;
};

#define DOORBELL_ONLINE_MAX 256

struct fault_doorbell {
	int ncpu; /* events open */
	int possible;
	unsigned wakeup;  /* samples per CPU (or process) before poll wakes */
	bool per_process; /* asked for: counted per process */
	int *fd;
	void **page; /* mapped control page + DOORBELL_PAGES data pages per CPU */
	size_t map_len;
	const struct fault_doorbell_ops *ops; /* NULL: never opened */
	char online[DOORBELL_ONLINE_MAX];     /* the online list when last opened */
	unsigned opens;                       /* (re)opens: each changed the fds */
	struct fault_pids kept;               /* drained from rings closed by a refresh */
	struct fault_pids peek;               /* fault_doorbell_peek()'s answer */
	/* The task events, one per open CPU: all or none (tasks). */
	bool tasks;
	int *task_fd;
	void **task_page; /* control page + DOORBELL_TASK_PAGES data pages */
	size_t task_map_len;
	struct task_events kept_tasks; /* drained from task rings closed by a refresh */
	struct fault_news *news;       /* per process: the filter on every event; NULL: per CPU */
	int news_err;                  /* per_process asked, news NULL: why (-errno) */
};

/* Returns 0, or -errno when perf events are unavailable (d is then empty
 * and fault_doorbell_rang() always answers true). */
int fault_doorbell_open(struct fault_doorbell *d, unsigned wakeup, bool per_process);
/* The same with injected ops, for possible CPUs 0..possible-1. */
int fault_doorbell_open_ops(struct fault_doorbell *d, const struct fault_doorbell_ops *ops, int possible,
			    unsigned wakeup, bool per_process);
/* Opens the events again if wakeup or per_process changed
 * (fault_doorbell_refresh()'s answer; 0 if neither did). */
int fault_doorbell_set_wakeup(struct fault_doorbell *d, unsigned wakeup, bool per_process);
void fault_doorbell_close(struct fault_doorbell *d);

/* Opens the events again, for the CPUs online now, if the online list
 * changed since they were opened, or if force. What the old rings held is
 * kept for the next fault_doorbell_drain(). Returns 1 if it did, 0 if not
 * (or d was never opened), -errno if it failed (d then has no events and
 * rings always, so nothing is missed). Either way d->opens counts it: the
 * fds changed, and an event loop must listen to the new ones. */
int fault_doorbell_refresh(struct fault_doorbell *d, bool force);

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

/* Who the rings name since the last drain, with their counts of records
 * (of DOORBELL_PERIOD faults each; finished), read without consuming them:
 * news worth a pass before its time (news_gate.h); valid until the next
 * peek. Lost records are no news (the next pass samples everyone anyway).
 * NULL without events or for an error. */
const struct fault_pids *fault_doorbell_peek(struct fault_doorbell *d);

/* Appends the fork and exit records since the last call (and what task
 * rings closed by a refresh held) to out, and consumes them. A refresh
 * closes the events before it opens new ones, so it sets out->lost: what
 * was born in between is unknown. Returns 0, -ENODEV without task events
 * (out->lost is then set), or -ENOMEM. */
int fault_doorbell_tasks(struct fault_doorbell *d, struct task_events *out);

/* How many fds an event loop sleeps on: one per CPU, or the filter's. */
int fault_doorbell_nfds(const struct fault_doorbell *d);
/* Fd i (0 <= i < nfds), readable (POLLIN) after d->wakeup samples, of one
 * CPU or, per process, of one process. */
int fault_doorbell_fd(const struct fault_doorbell *d, int i);
