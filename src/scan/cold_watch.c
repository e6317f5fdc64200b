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

#define FORMAT_MAX 8192

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

int parse_cold_ring_buf(const uint8_t *data, size_t size, uint64_t tail, uint64_t head, const struct trace_fields *madv,
			const struct trace_fields *pmadv, cold_call_fn fn, void *ctx, bool *lost)
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
				const struct trace_fields *tf = NULL;
				struct cold_call c = {.pid = (pid_t)pid};
				bool ok = true;

				memcpy(&type, raw, 2);
				if (type == madv->id)
					tf = madv;
				else if (type == pmadv->id)
					tf = pmadv, c.process = true;
				for (int i = 0; tf && i < (c.process ? 2 : 3); i++)
					c.a[i] = field(raw, rawlen, tf->off[i], tf->size[i], &ok);
				if (tf && ok && (int32_t)pid > 0)
					fn(ctx, &c);
			}
		}
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
	uint64_t behavior = c->process ? c->a[1] : c->a[2];
	pid_t target;

	if (c->pid == w->self)
		return 0;
	/* process_madvise() refuses MADV_HUGEPAGE (EINVAL): only madvise(). */
	if (behavior == MADV_HUGEPAGE)
		return !c->process && fault_pids_add(&w->advised, c->pid) < 0;
	if (behavior != MADV_COLD && behavior != MADV_PAGEOUT)
		return 0;
	w->calls++;
	if (!c->process)
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

	for (int i = 0; i < w->ncpu; i++) {
		struct perf_event_mmap_page *pg = w->page[i];
		uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;

		if (parse_cold_ring_buf((const uint8_t *)w->page[i] + pagesz, w->map_len - pagesz, tail, head, &w->madv,
					&w->pmadv, on_call, &d, &d.lost) < 0)
			d.lost = true;
		__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	}
	fault_pids_finish(&w->advised);
	if (d.lost)
		w->losses++;
	return d.lost;
}

bool cold_watch_active(const struct cold_watch *w)
{
	return w->ncpu > 0;
}

int cold_watch_fd(const struct cold_watch *w, int i)
{
	return w->fd[i];
}

bool cold_watch_advised(const struct cold_watch *w, pid_t pid)
{
	return fault_pids_has(&w->advised, pid);
}

/* The two format files, read where tracefs is mounted. */
struct formats {
	char madv[FORMAT_MAX], pmadv[FORMAT_MAX];
};

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

/* The two format files under dirfd, a tracefs root. */
static int read_formats_at(int dirfd, struct formats *f)
{
	if (read_small_file_at(dirfd, "events/syscalls/sys_enter_madvise/format", f->madv, sizeof(f->madv)) <= 0)
		return -ENOENT;
	if (read_small_file_at(dirfd, "events/syscalls/sys_enter_process_madvise/format", f->pmadv, sizeof(f->pmadv)) <=
	    0)
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

static int open_event(const struct trace_fields *tf, int cpu, int group)
{
	/* Only the advice that clears referenced bits, and the opt-in,
	 * reach the ring. */
	const char *filter = "behavior == 20 || behavior == 21 || behavior == 14";
	/* Each recorded call is news the service may wake for. */
	int fd = open_attr(tf, cpu, 1);

	if (fd < 0)
		return fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		/* Without a filter every madvise() is recorded and the drain
		 * filters; a wake-up for each (malloc's MADV_DONTNEED) would
		 * cost more than the news: never polled then. */
		close(fd);
		fd = open_attr(tf, cpu, 1u << 30);
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

void cold_watch_close(struct cold_watch *w)
{
	for (int i = 0; w->page && w->fd && w->fd2 && i < w->ncpu; i++) {
		munmap(w->page[i], w->map_len);
		close(w->fd2[i]);
		close(w->fd[i]);
	}
	free(w->fd);
	free(w->fd2);
	free(w->page);
	cold_ranges_free(&w->ranges);
	fault_pids_free(&w->advised);
	memset(w, 0, sizeof(*w));
}

int cold_watch_open(struct cold_watch *w, const char *proc_root, char *why, size_t whylen)
{
	static const char *const madv_names[] = {"start", "len_in", "behavior"};
	static const char *const pmadv_names[] = {"pidfd", "behavior"};
	struct formats *f = calloc(1, sizeof(*f));
	long possible = sysconf(_SC_NPROCESSORS_CONF);
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
	r = parse_trace_format_buf(f->madv, strlen(f->madv), madv_names, 3, &w->madv);
	if (r == 0)
		r = parse_trace_format_buf(f->pmadv, strlen(f->pmadv), pmadv_names, 2, &w->pmadv);
	free(f);
	if (r < 0) {
		snprintf(why, whylen, "unexpected tracepoint format");
		return r;
	}
	w->map_len = (1 + COLD_WATCH_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	w->fd = calloc((size_t)possible, sizeof(*w->fd));
	w->fd2 = calloc((size_t)possible, sizeof(*w->fd2));
	w->page = calloc((size_t)possible, sizeof(*w->page));
	if (!w->fd || !w->fd2 || !w->page) {
		cold_watch_close(w);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < possible; cpu++) {
		int fd = open_event(&w->madv, cpu, -1), fd2;
		void *p;

		if (fd == -ENODEV || fd == -EINVAL) /* offline */
			continue;
		if (fd < 0) {
			r = fd;
			break;
		}
		p = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		fd2 = p == MAP_FAILED ? -errno : open_event(&w->pmadv, cpu, fd);
		if (fd2 < 0) {
			r = fd2;
			if (p != MAP_FAILED)
				munmap(p, w->map_len);
			close(fd);
			break;
		}
		w->fd[w->ncpu] = fd;
		w->fd2[w->ncpu] = fd2;
		w->page[w->ncpu++] = p;
		r = 0;
	}
	if (r < 0 || w->ncpu == 0) {
		snprintf(why, whylen, "perf tracepoint events: %s", strerror(r < 0 ? -r : ENODEV));
		cold_watch_close(w);
		w->self = getpid();
		w->proc_root = proc_root;
		return r < 0 ? r : -ENODEV;
	}
	return 0;
}
