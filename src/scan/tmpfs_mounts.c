/* tmpfs devices and their huge= option, from mountinfo. */
#include "tmpfs_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "thp_policy.h"

#define MOUNTINFO_LIMIT ((size_t)256 << 20) /* far above any real table: 5,000 mounts are 1.3 MB */

static uint64_t dev_key(uint32_t major, uint32_t minor)
{
	return (uint64_t)major << 32 | minor;
}

static int cmp_dev(const void *a, const void *b)
{
	const struct tmpfs_dev *x = a, *y = b;

	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* Sorts and drops duplicates; a tmpfs entry wins over another one. */
static void sort_unique(struct tmpfs_mounts *t)
{
	size_t w = 0;

	if (t->n)
		qsort(t->d, t->n, sizeof(*t->d), cmp_dev);
	for (size_t i = 0; i < t->n; i++) {
		if (w && t->d[w - 1].dev == t->d[i].dev) {
			if (t->d[i].tmpfs)
				t->d[w - 1] = t->d[i];
			continue;
		}
		t->d[w++] = t->d[i];
	}
	t->n = w;
}

static int add(struct tmpfs_mounts *t, uint64_t dev, bool tmpfs, uint8_t huge)
{
	if (GROW(t->d, t->cap, t->n + 1) < 0)
		return -ENOMEM;
	t->d[t->n++] = (struct tmpfs_dev){.dev = dev, .tmpfs = tmpfs, .huge = huge};
	return 0;
}

/* The n-th space-separated field of [s, e) (from 0), or NULL. */
static const char *field(const char *s, const char *e, int n, size_t *len)
{
	for (;;) {
		const char *sp = memchr(s, ' ', (size_t)(e - s));
		const char *end = sp ? sp : e;

		if (n-- == 0) {
			*len = (size_t)(end - s);
			return s;
		}
		if (!sp)
			return NULL;
		s = sp + 1;
	}
}

/* huge=WORD in a comma-separated super-option list; never when absent. */
static uint8_t huge_option(const char *s, size_t len)
{
	static const struct {
		const char *word;
		uint8_t mode;
	} words[] = {{"always", SHMEM_ALWAYS}, {"within_size", SHMEM_WITHIN_SIZE}, {"advise", SHMEM_ADVISE}};
	const char *e = s + len;

	while (s < e) {
		const char *c = memchr(s, ',', (size_t)(e - s));
		size_t n = (size_t)((c ? c : e) - s);

		if (n > 5 && !memcmp(s, "huge=", 5))
			for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
				if (n - 5 == strlen(words[i].word) && !memcmp(s + 5, words[i].word, n - 5))
					return words[i].mode;
		s = c ? c + 1 : e;
	}
	return SHMEM_NEVER;
}

/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - FSTYPE SOURCE SUPEROPTS" */
static int parse_line(const char *s, const char *e, struct tmpfs_mounts *t)
{
	const char *dev, *sep, *fs, *opts;
	unsigned long major, minor;
	size_t dlen, fslen, olen = 0;
	char num[32], *end;

	dev = field(s, e, 2, &dlen);
	if (!dev || dlen >= sizeof(num))
		return 0;
	memcpy(num, dev, dlen);
	num[dlen] = '\0';
	major = strtoul(num, &end, 10);
	if (end == num || *end != ':' || major > UINT32_MAX)
		return 0;
	minor = strtoul(end + 1, &end, 10);
	if (*end || minor > UINT32_MAX || major != 0)
		return 0; /* tmpfs always has an anonymous (major 0) device */
	for (sep = s; (sep = memchr(sep, ' ', (size_t)(e - sep))) && (e - sep < 3 || memcmp(sep, " - ", 3));)
		sep++;
	if (!sep)
		return 0;
	fs = field(sep + 3, e, 0, &fslen);
	opts = fs ? field(sep + 3, e, 2, &olen) : NULL;
	if (!fs)
		return 0;
	if (fslen == 5 && !memcmp(fs, "tmpfs", 5))
		return add(t, dev_key((uint32_t)major, (uint32_t)minor), true, opts ? huge_option(opts, olen) : 0);
	return add(t, dev_key((uint32_t)major, (uint32_t)minor), false, 0);
}

int parse_tmpfs_mountinfo_buf(const char *buf, size_t len, struct tmpfs_mounts *t)
{
	const char *p = buf, *end = buf + len;
	int r = 0;

	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		r = parse_line(p, eol, t);
		p = eol + 1;
	}
	sort_unique(t);
	return r;
}

const struct tmpfs_dev *tmpfs_mounts_find(const struct tmpfs_mounts *t, uint32_t major, uint32_t minor)
{
	struct tmpfs_dev key = {.dev = dev_key(major, minor)};

	return t->n ? bsearch(&key, t->d, t->n, sizeof(*t->d), cmp_dev) : NULL;
}

size_t tmpfs_mounts_apply(const struct tmpfs_mounts *t, struct vma_list *l)
{
	size_t unknown = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct vma *v = &l->v[i];
		bool on_mount = v->kind == VMA_FILE || (v->kind == VMA_SHMEM && v->shmem_src == SHMEM_SRC_MOUNT);
		const struct tmpfs_dev *d;

		if (!on_mount || v->dev_major != 0)
			continue;
		d = tmpfs_mounts_find(t, v->dev_major, v->dev_minor);
		if (!d) {
			unknown += v->kind == VMA_FILE;
			continue;
		}
		if (!d->tmpfs)
			continue;
		v->kind = VMA_SHMEM;
		v->shmem_src = SHMEM_SRC_MOUNT;
		v->mount_huge = d->huge;
	}
	return unknown;
}

/* The whole file at fd, from its start, into *buf. Returns the length or -errno. */
static ssize_t read_all(int fd, char **buf, size_t *cap)
{
	size_t used = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		if (used + 4096 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 65536;
			char *nb;

			if (ncap > MOUNTINFO_LIMIT)
				return -EFBIG;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		ssize_t n = read(fd, *buf + used, *cap - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return (ssize_t)used;
		used += (size_t)n;
	}
}

static int load_fd(struct tmpfs_mounts *t, int fd)
{
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = read_all(fd, &buf, &cap);
	int r = n < 0 ? (int)n : parse_tmpfs_mountinfo_buf(buf, (size_t)n, t);

	free(buf);
	return r;
}

int tmpfs_mounts_open(struct tmpfs_mounts *t, const char *proc_root)
{
	char path[4096];

	memset(t, 0, sizeof(*t));
	t->proc_root = proc_root ? proc_root : "/proc";
	snprintf(path, sizeof(path), "%s/self/mountinfo", t->proc_root);
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	return load_fd(t, t->fd);
}

void tmpfs_mounts_close(struct tmpfs_mounts *t)
{
	if (t->fd >= 0)
		close(t->fd);
	free(t->d);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

/* The kernel flags a mount table change with POLLPRI|POLLERR on an open
 * mountinfo: read it again, and forget what other namespaces told. */
static void refresh(struct tmpfs_mounts *t)
{
	struct pollfd p = {.fd = t->fd, .events = POLLPRI};

	if (t->fd < 0 || poll(&p, 1, 0) <= 0 || !(p.revents & (POLLPRI | POLLERR)))
		return;
	t->n = 0;
	load_fd(t, t->fd);
}

void tmpfs_mounts_classify(struct tmpfs_mounts *t, int proc_pid_dirfd, struct vma_list *l)
{
	int fd;

	refresh(t);
	if (tmpfs_mounts_apply(t, l) == 0)
		return;
	/* A mount of another namespace: that process's own table names it. */
	fd = openat(proc_pid_dirfd, "mountinfo", O_RDONLY | O_CLOEXEC);
	t->lookups++;
	if (fd >= 0) {
		load_fd(t, fd);
		close(fd);
	}
	/* What it does not name either is remembered as not tmpfs. */
	for (size_t i = 0; i < l->n; i++) {
		const struct vma *v = &l->v[i];

		if (v->kind == VMA_FILE && v->dev_major == 0 && !tmpfs_mounts_find(t, 0, v->dev_minor) &&
		    add(t, dev_key(0, v->dev_minor), false, 0) == 0)
			sort_unique(t);
	}
	tmpfs_mounts_apply(t, l);
}
