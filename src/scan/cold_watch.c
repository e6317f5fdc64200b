/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The MADV_COLD/MADV_PAGEOUT observer; see the header. */
#include "cold_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procfs.h"

#define FORMAT_MAX      8192
#define CPU_ONLINE_PATH "/sys/devices/system/cpu/online"

/* The decimal after key in s, up to the next ';'. 0 or -EINVAL. */
static int number_after(const char *s, const char *key, uint64_t *v)
{
	const char *p = strstr(s, key), *end;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	end = strchr(p, ';');
	return end ? parse_dec_u64(p, (size_t)(end - p), v) : -EINVAL;
}

int parse_trace_format_buf(const char *buf, size_t len, const char *const *names, size_t n, struct trace_fields *out)
{
	bool found[3] = {false, false, false}, have_id = false;
	const char *p = buf, *end = buf + len;

	if (n > 3)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		char line[512];
		size_t ll = (size_t)(le - p);

		if (ll < sizeof(line)) {
			char *f, *semi, *name;
			uint64_t id, off, size;

			memcpy(line, p, ll);
			line[ll] = '\0';
			/* "ID: 640" */
			if (!strncmp(line, "ID: ", 4) && parse_dec_u64(line + 4, strlen(line + 4), &id) == 0 &&
			    id <= UINT32_MAX) {
				out->id = (uint32_t)id;
				have_id = true;
			}
			/* "\tfield:unsigned long start;\toffset:16;\tsize:8;\tsigned:0;" */
			f = strstr(line, "field:");
			semi = f ? strchr(f, ';') : NULL;
			if (semi && number_after(semi + 1, "offset:", &off) == 0 &&
			    number_after(semi + 1, "size:", &size) == 0 && off < 4096 && size <= 8) {
				*semi = '\0';
				name = strrchr(f, ' ');
				name = name ? name + 1 : f + 6;
				for (size_t i = 0; i < n; i++)
					if (!strcmp(name, names[i])) {
						out->off[i] = (uint32_t)off;
						out->size[i] = (uint32_t)size;
						found[i] = true;
					}
			}
		}
		p = le + 1;
	}
	if (!have_id)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!found[i] || (out->size[i] != 4 && out->size[i] != 8))
			return -ENOENT;
	return 0;
}

/* Copies len bytes from ring position pos, which may wrap at the end. */
static void ring_copy(void *dst, const uint8_t *data, size_t size, uint64_t pos, size_t len)
{
	size_t off = (size_t)(pos & (size - 1)), first = size - off < len ? size - off : len;

	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

static uint64_t field(const uint8_t *raw, size_t rawlen, uint32_t off, uint32_t size, bool *ok)
{
	uint64_t v8 = 0;
	uint32_t v4 = 0;

	if (off > rawlen || size > rawlen - off) {
		*ok = false;
		return 0;
	}
	if (size == 4) {
		memcpy(&v4, raw + off, 4);
		return v4;
	}
	memcpy(&v8, raw + off, 8);
	return v8;
}

/* How many fields of each event a call carries. */
static const int event_fields[COLD_NR_EVENTS] = {3, 2, 1};

int parse_cold_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head,
			const struct trace_fields ev[COLD_NR_EVENTS], cold_call_fn fn, void *ctx, bool *lost)
{
	uint8_t rec[512];

	if (size == 0 || (size & (size - 1)) || head - tail > size)
		return -EINVAL;
	while (tail < head) {
		struct perf_event_header h;

		if (head - tail < sizeof(h))
			return -EINVAL;
		ring_copy(&h, data, size, tail, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > head - tail)
			return -EINVAL;
		if (h.type == PERF_RECORD_LOST || h.type == PERF_RECORD_THROTTLE) {
			*lost = true;
		} else if (h.type == PERF_RECORD_SAMPLE && h.size <= sizeof(rec)) {
			/* pid, tid (u32 each), then u32 raw size and the raw bytes */
			uint32_t pid, rawlen;
			uint16_t type;

			ring_copy(rec, data, size, tail, h.size);
			if (h.size < sizeof(h) + 12)
				return -EINVAL;
			memcpy(&pid, rec + sizeof(h), 4);
			memcpy(&rawlen, rec + sizeof(h) + 8, 4);
			if (rawlen > h.size - sizeof(h) - 12)
				return -EINVAL;
			const uint8_t *raw = rec + sizeof(h) + 12;
			if (rawlen >= 2) {
				struct cold_call c = {.pid = (pid_t)pid, .event = COLD_NR_EVENTS};
				bool ok = true;

				memcpy(&type, raw, 2);
				for (int e = 0; e < COLD_NR_EVENTS && c.event == COLD_NR_EVENTS; e++)
					if (type == ev[e].id)
						c.event = (enum cold_event)e;
				if (c.event == COLD_NR_EVENTS)
					goto next; /* another event's: not ours */
				for (int i = 0; i < event_fields[c.event]; i++)
					c.a[i] = field(raw, rawlen, ev[c.event].off[i], ev[c.event].size[i], &ok);
				if (ok && (int32_t)pid > 0)
					fn(ctx, &c);
			}
		}
	next:
		tail += h.size;
	}
	return 0;
}

/* The target of a caller's pidfd, from /proc/CALLER/fdinfo/FD ("Pid:\t123").
 * 0 when it cannot be read (closed, exited). */
static pid_t pidfd_target(const char *proc_root, pid_t caller, uint64_t fd)
{
	char path[128], buf[1024];
	const char *p;
	long v;

	if (fd > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/fdinfo/%d", proc_root, (int)caller, (int)fd);
	if (read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nPid:");
	if (!p)
		return 0;
	v = strtol(p + 5, NULL, 10);
	return v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

int cold_watch_apply(struct cold_watch *w, const struct cold_call *c)
{
	bool process = c->event == COLD_EV_PROCESS_MADVISE;
	uint64_t behavior = process ? c->a[1] : c->a[2];
	pid_t target;

	if (c->pid == w->self)
		return 0;
	/* Either way its THP policy changed: news, not advice. */
	if (c->event == COLD_EV_PRCTL)
		return c->a[0] == COLD_WATCH_PR_SET_THP_DISABLE && fault_pids_add(&w->advised, c->pid) < 0;
	/* process_madvise() refuses MADV_HUGEPAGE (EINVAL): only madvise(). */
	if (behavior == MADV_HUGEPAGE)
		return !process && fault_pids_add(&w->advised, c->pid) < 0;
	if (behavior != MADV_COLD && behavior != MADV_PAGEOUT)
		return 0;
	w->calls++;
	if (!process)
		return cold_ranges_add(&w->ranges, c->pid, c->a[0], c->a[1]) < 0 &&
		       cold_ranges_whole(&w->ranges, c->pid) < 0;
	target = pidfd_target(w->proc_root, c->pid, c->a[0]);
	if (target == w->self)
		return 0;
	if (!target) {
		w->unresolved++;
		return 1;
	}
	return cold_ranges_whole(&w->ranges, target) < 0;
}

struct drain_ctx {
	struct cold_watch *w;
	bool lost;
};

static void on_call(void *opaque, const struct cold_call *c)
{
	struct drain_ctx *d = opaque;

	if (cold_watch_apply(d->w, c))
		d->lost = true;
}

int cold_watch_drain(struct cold_watch *w)
{
	struct drain_ctx d = {.w = w};
	size_t pagesz = w->map_len / (1 + COLD_WATCH_PAGES);
	bool pending = w->lost_pending;

	for (int i = 0; i < w->ncpu; i++) {
		struct perf_event_mmap_page *pg = w->cpu[i].page;
		uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;

		if (parse_cold_ring_buf((const uint8_t *)pg + pagesz, w->map_len - pagesz, tail, head, w->ev, on_call,
					&d, &d.lost) < 0)
			d.lost = true;
		__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	}
	fault_pids_finish(&w->advised);
	if (d.lost)
		w->losses++;
	w->lost_pending = false;
	return d.lost || pending;
}

bool cold_watch_active(const struct cold_watch *w)
{
	return w->ncpu > 0;
}

int cold_watch_fd(const struct cold_watch *w, int i)
{
	return w->cpu[i].fd[COLD_EV_MADVISE];
}

bool cold_watch_advised(const struct cold_watch *w, pid_t pid)
{
	return fault_pids_has(&w->advised, pid);
}

/* Per event: its tracepoint, the fields a call carries, and the filter
 * that lets only the calls we want into the ring. */
static const struct {
	const char *format;
	const char *fields[3];
	const char *filter;
} events[COLD_NR_EVENTS] = {
    [COLD_EV_MADVISE] = {"events/syscalls/sys_enter_madvise/format",
			 {"start", "len_in", "behavior"},
			 "behavior == 20 || behavior == 21 || behavior == 14"},
    [COLD_EV_PROCESS_MADVISE] = {"events/syscalls/sys_enter_process_madvise/format",
				 {"pidfd", "behavior"},
				 "behavior == 20 || behavior == 21 || behavior == 14"},
    [COLD_EV_PRCTL] = {"events/syscalls/sys_enter_prctl/format", {"option"}, "option == 41"},
};

/* The format files, read where tracefs is mounted. */
struct formats {
	char text[COLD_NR_EVENTS][FORMAT_MAX];
};

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

/* The format files under dirfd, a tracefs root. */
static int read_formats_at(int dirfd, struct formats *f)
{
	for (int e = 0; e < COLD_NR_EVENTS; e++)
		if (read_small_file_at(dirfd, events[e].format, f->text[e], sizeof(f->text[e])) <= 0)
			return -ENOENT;
	return 0;
}

static int read_formats(const char *dir, struct formats *f)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = read_formats_at(fd, f);
	close(fd);
	return r;
}

/* Where no tracefs is mounted: a tracefs instance of our own, created with
 * the new mount API and never attached to any tree (fsmount() without
 * move_mount()), so nothing changes for anyone else and it goes with the
 * fd. This works in a chroot too, where "/" is no mount point and a private
 * mount namespace cannot be made a slave of it. The unit's SystemCallFilter
 * refuses fsopen() (@mount is not in @system-service): there the unit asks
 * for sys-kernel-tracing.mount instead. */
static int read_formats_detached(struct formats *f)
{
	int fs = (int)syscall(SYS_fsopen, "tracefs", FSOPEN_CLOEXEC), mnt, r;

	if (fs < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		r = -errno;
		close(fs);
		return r;
	}
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	r = mnt < 0 ? -errno : read_formats_at(mnt, f);
	if (mnt >= 0)
		close(mnt);
	close(fs);
	return r;
}

static int open_attr(const struct trace_fields *tf, int cpu, uint32_t wakeup)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = tf->id;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
	attr.wakeup_events = wakeup;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Event e on cpu; its records go to the ring of group (-1: its own). */
static int open_event(const struct cold_watch *w, enum cold_event e, int cpu, int group)
{
	/* Each recorded call is news the service may wake for. */
	int fd = open_attr(&w->ev[e], cpu, 1);

	if (fd < 0)
		return fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, events[e].filter) < 0) {
		/* Without a filter every call is recorded and the drain
		 * filters; a wake-up for each (malloc's MADV_DONTNEED) would
		 * cost more than the news: never polled then. */
		close(fd);
		fd = open_attr(&w->ev[e], cpu, 1u << 30);
		if (fd < 0)
			return fd;
	}
	if (group >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, group) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void close_cpus(struct cold_cpu *cpu, int n, size_t map_len)
{
	for (int i = 0; cpu && i < n; i++) {
		munmap(cpu[i].page, map_len);
		for (int e = COLD_NR_EVENTS - 1; e >= 0; e--)
			close(cpu[i].fd[e]);
	}
}

/* One CPU's events and ring into *c: 0, -ENODEV if it is offline, or -errno. */
static int open_cpu(const struct cold_watch *w, int cpu, struct cold_cpu *c)
{
	int fd = open_event(w, COLD_EV_MADVISE, cpu, -1), r = 0, e;

	if (fd == -ENODEV || fd == -EINVAL) /* offline */
		return -ENODEV;
	if (fd < 0)
		return fd;
	c->fd[COLD_EV_MADVISE] = fd;
	c->page = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c->page == MAP_FAILED) {
		r = -errno;
		close(fd);
		return r;
	}
	for (e = COLD_EV_MADVISE + 1; e < COLD_NR_EVENTS && r == 0; e++) {
		c->fd[e] = open_event(w, (enum cold_event)e, cpu, fd);
		r = c->fd[e] < 0 ? c->fd[e] : 0;
	}
	if (r < 0) {
		for (e -= 2; e >= 0; e--) /* the one that failed has no fd */
			close(c->fd[e]);
		munmap(c->page, w->map_len);
	}
	return r;
}

/* Events on every CPU online now, into cpu[] (w->possible slots), their
 * count into *n. Reads the online list first: a CPU that comes online
 * while we open shows as a change at the next refresh. 0 or -errno. */
static int open_cpus(struct cold_watch *w, struct cold_cpu *cpu, int *n)
{
	int r = 0;

	if (kept_file_read(&w->online_file, CPU_ONLINE_PATH, w->online, sizeof(w->online)) <= 0)
		w->online[0] = '\0';
	*n = 0;
	for (int i = 0; i < w->possible; i++) {
		r = open_cpu(w, i, &cpu[*n]);
		if (r == -ENODEV) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		(*n)++;
	}
	if (r == 0 && *n == 0)
		r = -ENODEV;
	if (r < 0) {
		close_cpus(cpu, *n, w->map_len);
		*n = 0;
	}
	return r;
}

void cold_watch_close(struct cold_watch *w)
{
	close_cpus(w->cpu, w->ncpu, w->map_len);
	free(w->cpu);
	kept_file_close(&w->online_file);
	cold_ranges_free(&w->ranges);
	fault_pids_free(&w->advised);
	memset(w, 0, sizeof(*w));
}

int cold_watch_open(struct cold_watch *w, const char *proc_root, char *why, size_t whylen)
{
	struct formats *f = calloc(1, sizeof(*f));
	int r = -ENOENT;

	memset(w, 0, sizeof(*w));
	w->self = getpid();
	w->proc_root = proc_root;
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]) && r < 0; i++)
		r = read_formats(tracefs_dirs[i], f);
	if (r < 0)
		r = read_formats_detached(f);
	if (r < 0) {
		snprintf(why, whylen, "no tracefs with syscall events");
		free(f);
		return r;
	}
	for (int e = 0; e < COLD_NR_EVENTS && r == 0; e++)
		r = parse_trace_format_buf(f->text[e], strlen(f->text[e]), events[e].fields, (size_t)event_fields[e],
					   &w->ev[e]);
	free(f);
	if (r < 0) {
		snprintf(why, whylen, "unexpected tracepoint format");
		return r;
	}
	w->map_len = (1 + COLD_WATCH_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	/* Every CPU that can ever come online, not only those online now. */
	w->possible = (int)sysconf(_SC_NPROCESSORS_CONF);
	w->cpu = calloc((size_t)(w->possible > 0 ? w->possible : 1), sizeof(*w->cpu));
	r = w->cpu ? open_cpus(w, w->cpu, &w->ncpu) : -ENOMEM;
	if (r < 0) {
		snprintf(why, whylen, "perf tracepoint events: %s", strerror(-r));
		cold_watch_close(w);
		w->self = getpid();
		w->proc_root = proc_root;
		return r;
	}
	w->opens = 1;
	return 0;
}

#define ONLINE_CHECK_S 1.0 /* the online list costs a sysfs read: once a second */

int cold_watch_refresh(struct cold_watch *w, double now, double force_after)
{
	char online[COLD_WATCH_ONLINE_MAX];
	bool force, changed;
	struct cold_cpu *cpu;
	int n, r;

	if (!cold_watch_active(w) || now - w->checked_at < ONLINE_CHECK_S)
		return 0;
	if (!w->opened_at)
		w->opened_at = now; /* the open itself had no clock */
	w->checked_at = now;
	force = now - w->opened_at >= force_after;
	if (kept_file_read(&w->online_file, CPU_ONLINE_PATH, online, sizeof(online)) <= 0)
		return 0;
	changed = strcmp(online, w->online) != 0;
	if (!changed && !force)
		return 0;
	cpu = calloc((size_t)w->possible, sizeof(*cpu));
	if (!cpu)
		return -ENOMEM;
	/* New first, then the old drained and closed: a call between the two
	 * is in one ring or both (recorded twice, which changes nothing). */
	r = open_cpus(w, cpu, &n);
	if (r < 0) {
		free(cpu);
		snprintf(w->online, sizeof(w->online), "%s", online); /* not again every second */
		return r;
	}
	/* What the old rings lost is told by the caller's next drain. */
	w->lost_pending = cold_watch_drain(w) || w->lost_pending;
	close_cpus(w->cpu, w->ncpu, w->map_len);
	free(w->cpu);
	w->cpu = cpu;
	w->ncpu = n;
	w->opened_at = now;
	w->opens++;
	return changed ? 2 : 1;
}
