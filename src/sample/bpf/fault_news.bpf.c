// SPDX-License-Identifier: GPL-2.0-only
/* fault_news.bpf.c: runs on each sample of the page-fault doorbell's
 * events (one per DOORBELL_PERIOD faults on a CPU) and rings only when one
 * process has been sampled `samples` times since the daemon last drained
 * the doorbell (gen): news, not the sum of a shell's short commands over
 * every process on the CPU, which is what the event's own wakeup_events
 * counts. The sample itself still goes to the perf ring (return 1), where
 * the daemon reads who faulted as before.
 *
 * Races between CPUs counting the same process may lose an increment or
 * ring twice: a missed ring waits for the timer, a second costs one look. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct count {
	__u64 gen;
	__u32 n;
	__u32 rang;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* preallocated: perf_event programs need that */
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct count);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} news SEC(".maps");

const volatile __u32 samples = 64; /* set before load: NEWS_FAULT_SAMPLES */
volatile __u64 gen;                /* written by the daemon after each drain */

char LICENSE[] SEC("license") = "GPL";

SEC("perf_event")
int fault_news(void *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 g = gen;
	struct count *c, fresh = {.gen = g, .n = 1};

	(void)ctx;
	if (!tgid)
		return 1;
	c = bpf_map_lookup_elem(&counts, &tgid);
	if (!c) {
		bpf_map_update_elem(&counts, &tgid, &fresh, BPF_ANY);
		c = &fresh;
	} else if (c->gen != g) {
		c->gen = g;
		c->n = 1;
		c->rang = 0;
	} else {
		c->n++;
	}
	if (c->n >= samples && !c->rang) {
		c->rang = 1;
		if (c == &fresh)
			bpf_map_update_elem(&counts, &tgid, &fresh, BPF_ANY);
		bpf_ringbuf_output(&news, &tgid, sizeof(tgid), 0);
	}
	return 1;
}
