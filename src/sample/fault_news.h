/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_news: a BPF filter on the page-fault doorbell's samples
 * (src/sample/bpf/fault_news.bpf.c) that rings only when one process was
 * sampled `samples` times since the last drain, instead of after so many
 * samples from anyone on a CPU.
 *
 * Why: with a timer, a doorbell wake-up only asks whether news came
 * (news_gate.h). Counted per CPU, a shell's short commands (a ticker
 * starting /bin/true ten times a second: ~2,000 faults a second) wake the
 * daemon about once a second for nothing, each look a context switch and a
 * few hundred µs in a guest, most of what an idle daemon costs. Counted per
 * process, they never ring, and a process that faults in 16 MiB still does
 * within the same few milliseconds. The program runs once per sample (one
 * in DOORBELL_PERIOD faults): a hash lookup, a few ns per fault.
 *
 * Needs bpf() with CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), BPF ring
 * buffers (5.8) and a build with libbpf (HC_HAVE_BPF); where any is
 * missing, fault_news_open() fails and the doorbell counts per CPU. */
#pragma once

struct fault_news;

/* The calls below, injectable for the doorbell's tests. */
struct fault_news_ops {
	int (*open)(struct fault_news **out, unsigned samples);
	void (*close)(struct fault_news *n);
	int (*attach)(struct fault_news *n, int perf_fd);
	int (*fd)(const struct fault_news *n);
	int (*consume)(struct fault_news *n);
	void (*reset)(struct fault_news *n);
};
extern const struct fault_news_ops fault_news_sys;

/* Loads the program: 0, or -errno (-ENOSYS: built without BPF). */
int fault_news_open(struct fault_news **out, unsigned samples);
void fault_news_close(struct fault_news *n);
/* Attaches the program to a sampling perf event: 0 or -errno. Closing
 * the event detaches it. */
int fault_news_attach(struct fault_news *n, int perf_fd);
/* Readable (POLLIN) while notifications wait: for an event loop. */
int fault_news_fd(const struct fault_news *n);
/* Discards the waiting notifications (the caller looks at the rings
 * itself); returns how many there were. */
int fault_news_consume(struct fault_news *n);
/* The doorbell was drained: every process counts from zero again. */
void fault_news_reset(struct fault_news *n);
