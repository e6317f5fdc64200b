/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The doorbell's per-process BPF filter; see the header. */
#include "fault_news.h"

#include <errno.h>
#include <stdlib.h>

#ifdef HC_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "bpf_embedded.h"
#include "fault_news.skel.h"

struct fault_news {
	struct bpf_object *obj;
	int prog_fd;
	struct ring_buffer *rb;
	volatile uint64_t *gen; /* the program's .bss, mapped */
	int ring_fd;
	int consumed; /* by the last fault_news_consume() */
};

static int count_one(void *ctx, void *data, size_t size)
{
	(void)data, (void)size;
	(*(int *)ctx)++;
	return 0;
}

int fault_news_open(struct fault_news **out, unsigned samples)
{
	struct fault_news *n = calloc(1, sizeof(*n));
	struct bpf_program *prog;
	struct bpf_map *rodata, *bss, *ring;
	size_t len, size;
	const void *elf;
	uint32_t want = samples;
	int r = -EIO;

	if (!n)
		return -ENOMEM;
	elf = fault_news_bpf__elf_bytes(&len);
	r = bpf_embedded_open(elf, len, "fault_news", &n->obj, &prog);
	if (r < 0)
		goto fail;
	rodata = bpf_embedded_map(n->obj, ".rodata");
	/* .rodata holds samples alone; set before load, the verifier sees it
	 * as a constant. */
	if (!rodata || !bpf_map__initial_value(rodata, &size) || size != sizeof(want) ||
	    bpf_map__set_initial_value(rodata, &want, sizeof(want)))
		goto fail;
	r = bpf_object__load(n->obj);
	if (r < 0)
		goto fail;
	bss = bpf_embedded_map(n->obj, ".bss");
	/* After the load, the live mapping of the map: writable, though
	 * libbpf 1.1 returns it const. */
	n->gen = bss ? (volatile uint64_t *)(uintptr_t)bpf_map__initial_value(bss, &size) : NULL;
	ring = bpf_object__find_map_by_name(n->obj, "news");
	if (!n->gen || size < sizeof(*n->gen) || !ring) {
		r = -EIO;
		goto fail;
	}
	n->prog_fd = bpf_program__fd(prog);
	n->ring_fd = bpf_map__fd(ring);
	n->rb = ring_buffer__new(n->ring_fd, count_one, &n->consumed, NULL);
	if (!n->rb) {
		r = -errno;
		goto fail;
	}
	*out = n;
	return 0;
fail:
	fault_news_close(n);
	return r < 0 ? r : -EIO;
}

void fault_news_close(struct fault_news *n)
{
	if (!n)
		return;
	ring_buffer__free(n->rb);
	bpf_object__close(n->obj);
	free(n);
}

int fault_news_attach(struct fault_news *n, int perf_fd)
{
	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, n->prog_fd) < 0 ? -errno : 0;
}

int fault_news_fd(const struct fault_news *n)
{
	return n->ring_fd;
}

int fault_news_consume(struct fault_news *n)
{
	n->consumed = 0;
	ring_buffer__consume(n->rb);
	return n->consumed;
}

void fault_news_reset(struct fault_news *n)
{
	/* Read by the program on every sample: a plain store, seen at once
	 * on this CPU and soon on the others. */
	n->gen[0]++;
}
#else
struct fault_news {
	int unused;
};

int fault_news_open(struct fault_news **out, unsigned samples)
{
	(void)out, (void)samples;
	return -ENOSYS;
}

void fault_news_close(struct fault_news *n)
{
	(void)n;
}

int fault_news_attach(struct fault_news *n, int perf_fd)
{
	(void)n, (void)perf_fd;
	return -ENOSYS;
}

int fault_news_fd(const struct fault_news *n)
{
	(void)n;
	return -1;
}

int fault_news_consume(struct fault_news *n)
{
	(void)n;
	return 0;
}

void fault_news_reset(struct fault_news *n)
{
	(void)n;
}
#endif

const struct fault_news_ops fault_news_sys = {
    .open = fault_news_open,
    .close = fault_news_close,
    .attach = fault_news_attach,
    .fd = fault_news_fd,
    .consume = fault_news_consume,
    .reset = fault_news_reset,
};
