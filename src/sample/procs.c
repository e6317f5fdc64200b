/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procs: process sampling through libproc2, and parsers for /proc/PID files.
 *
 * Every item asked from libproc2 comes from /proc/PID/stat, so one reap
 * reads one file per process. */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libproc2/pids.h>

#include "grow.h"
#include "lower_bound.h"
#include "procfs.h"
#include "stat_fds.h"

/* ---- sampling ---------------------------------------------------------- */

static enum pids_item sample_items[] = {
    PIDS_ID_PID, PIDS_TICS_BEGAN,  PIDS_TICS_ALL, PIDS_FLT_MIN, PIDS_FLT_MAJ,
    PIDS_RSS,    PIDS_VSIZE_BYTES, PIDS_CMD,      PIDS_STATE,
};
/* Indexes into a result stack, in the order of sample_items. */
enum { I_PID, I_BEGAN, I_TICS, I_MINFLT, I_MAJFLT, I_RSS, I_VSIZE, I_CMD, I_STATE };

struct procs {
	struct pids_info *info; /* kept open: libproc2 caches per-reap state */
};

struct procs *procs_open(void)
{
	struct procs *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	int rc = procps_pids_new(&p->info, sample_items, sizeof(sample_items) / sizeof(sample_items[0]));
	if (rc < 0) {
		free(p);
		errno = -rc;
		return NULL;
	}
	return p;
}

void procs_close(struct procs *p)
{
	if (!p)
		return;
	procps_pids_unref(&p->info);
	free(p);
}

static int table_reserve(struct proc_table *t, size_t want)
{
	return GROW(t->p, t->cap, want);
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc_sample *)a)->pid, y = ((const struct proc_sample *)b)->pid;
	return (x > y) - (x < y);
}

int procs_sample(struct procs *p, struct proc_table *out)
{
	errno = 0;
	struct pids_fetch *f = procps_pids_reap(p->info, PIDS_FETCH_TASKS_ONLY);
	if (!f)
		return errno ? -errno : -EIO;

	int total = f->counts->total;
	out->n = 0;
	if (table_reserve(out, (size_t)(total > 0 ? total : 0)) < 0)
		return -ENOMEM;

	int sorted = 1;
	for (int k = 0; k < total; k++) {
		struct pids_stack *s = f->stacks[k];
		char state = PIDS_VAL(I_STATE, s_ch, s, p->info);
		unsigned long vsize = PIDS_VAL(I_VSIZE, ul_int, s, p->info);

		/* No mm: kernel threads (vsize 0) and zombies. */
		if (vsize == 0 || state == 'Z')
			continue;

		struct proc_sample *ps = &out->p[out->n];
		ps->pid = PIDS_VAL(I_PID, s_int, s, p->info);
		ps->start_ticks = PIDS_VAL(I_BEGAN, ull_int, s, p->info);
		ps->cpu_ticks = PIDS_VAL(I_TICS, ull_int, s, p->info);
		ps->minflt = PIDS_VAL(I_MINFLT, ul_int, s, p->info);
		ps->majflt = PIDS_VAL(I_MAJFLT, ul_int, s, p->info);
		ps->rss_pages = PIDS_VAL(I_RSS, ul_int, s, p->info);
		ps->vsize = vsize;
		const char *cmd = PIDS_VAL(I_CMD, str, s, p->info);
		snprintf(ps->comm, sizeof(ps->comm), "%s", cmd ? cmd : "");

		if (out->n > 0 && out->p[out->n - 1].pid > ps->pid)
			sorted = 0;
		out->n++;
	}
	/* readdir(/proc) order is ascending by pid, so this rarely runs. */
	if (!sorted)
		qsort(out->p, out->n, sizeof(*out->p), by_pid);
	return 0;
}

void proc_table_free(struct proc_table *t)
{
	free(t->p);
	free(t->zombies);
	t->p = NULL;
	t->zombies = NULL;
	t->n = t->cap = 0;
	t->nzombies = t->capzombies = 0;
}

int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* A /proc entry name that is a PID: digits only, no leading zero. */
static pid_t name_pid(const char *name)
{
	long v = 0;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	for (const char *c = name; *c; c++) {
		if (*c < '0' || *c > '9' || v > INT32_MAX / 10)
			return 0;
		v = v * 10 + (*c - '0');
	}
	return v <= INT32_MAX ? (pid_t)v : 0;
}

int procs_list_pids(const char *root, pid_t **pids, size_t *n, size_t *cap)
{
	DIR *d = opendir(root);
	struct dirent *de;
	int sorted = 1, r = 0;

	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = name_pid(de->d_name);

		if (!pid)
			continue;
		if (GROW(*pids, *cap, *n + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		if (*n > 0 && (*pids)[*n - 1] > pid)
			sorted = 0;
		(*pids)[(*n)++] = pid;
	}
	closedir(d);
	/* /proc lists in ascending PID order, so this rarely runs. */
	if (!sorted)
		qsort(*pids, *n, sizeof(**pids), pid_cmp);
	return r;
}

int procs_sample_pids_at(int rootfd, const pid_t *pids, size_t n, struct proc_table *out)
{
	return procs_sample_pids_kept(rootfd, NULL, pids, n, out);
}

int procs_sample_pids_kept(int rootfd, struct stat_fds *kept, const pid_t *pids, size_t n, struct proc_table *out)
{
	out->n = 0;
	out->nzombies = 0;
	if (n && table_reserve(out, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char name[32], buf[2048];
		struct proc_sample ps;
		ssize_t len;

		if (kept) {
			len = stat_fds_read(kept, rootfd, pids[i], buf, sizeof(buf));
		} else {
			snprintf(name, sizeof(name), "%d/stat", (int)pids[i]);
			len = read_one_shot_at(rootfd, name, buf, sizeof(buf));
		}
		if (len < 0 || parse_stat_buf(buf, (size_t)len, &ps) < 0 || ps.pid != pids[i])
			continue;
		if (ps.vsize == 0 && (ps.state == 'Z' || ps.state == 'X')) {
			if (GROW(out->zombies, out->capzombies, out->nzombies + 1) < 0)
				return -ENOMEM;
			out->zombies[out->nzombies++] = ps.pid; /* pids[] is sorted */
		}
		if (ps.vsize == 0)
			continue;
		out->p[out->n++] = ps;
	}
	return 0;
}

int procs_sample_pids(const char *root, const pid_t *pids, size_t n, struct proc_table *out)
{
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (rootfd < 0)
		return -errno;
	r = procs_sample_pids_at(rootfd, pids, n, out);
	close(rootfd);
	return r;
}

const struct proc_sample *proc_table_find(const struct proc_table *t, pid_t pid)
{
	size_t lo = lower_bound_pid(t->p, t->n, sizeof(*t->p), offsetof(struct proc_sample, pid), pid);

	return lo < t->n && t->p[lo].pid == pid ? &t->p[lo] : NULL;
}

/* ---- parsers ----------------------------------------------------------- */

/* Field numbers as in proc(5) /proc/pid/stat, counting from 1. */
enum {
	F_STATE = 3,
	F_MINFLT = 10,
	F_MAJFLT = 12,
	F_UTIME = 14,
	F_STIME = 15,
	F_STARTTIME = 22,
	F_VSIZE = 23,
	F_RSS = 24,
};

/* A fingerprint of the running image: FNV-1a over the code, stack and
 * data/brk/arg/env addresses (fields 26-28 and 45-51). execve() keeps the
 * PID and the start time but sets all of these anew, so a decision made
 * about the old image is never applied to the new one. c points at the
 * space before field+1. */
static uint64_t exec_fingerprint(const char *c, const char *end, int field)
{
	uint64_t h = 1469598103934665603ULL;

	for (; c < end && *c != '\n'; c++) {
		field += *c == ' ';
		if ((field >= 26 && field <= 28) || (field >= 45 && field <= 51))
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	}
	return h;
}

int parse_stat_buf(const char *buf, size_t len, struct proc_sample *out)
{
	const char *end = buf + len;
	const char *open = memchr(buf, '(', len);
	const char *close = NULL;
	uint64_t pid, utime = 0, stime = 0;

	/* comm may hold spaces and ')': it ends at the LAST ')'. */
	for (const char *c = end; c > buf; c--) {
		if (c[-1] == ')') {
			close = c - 1;
			break;
		}
	}
	if (!open || !close || close < open || open < buf + 2 || open[-1] != ' ')
		return -EINVAL;
	if (parse_dec_u64(buf, (size_t)(open - 1 - buf), &pid) < 0 || pid == 0 || pid > INT32_MAX)
		return -EINVAL;

	struct proc_sample s = {.pid = (pid_t)pid};
	size_t comm_len = (size_t)(close - open - 1);
	if (comm_len >= sizeof(s.comm))
		comm_len = sizeof(s.comm) - 1;
	memcpy(s.comm, open + 1, comm_len);
	s.comm[comm_len] = '\0';

	const char *c = close + 1;
	int field = 3;
	for (; field <= F_RSS; field++) {
		if (c >= end || *c != ' ')
			return -EINVAL;
		const char *tok = ++c;
		while (c < end && *c != ' ' && *c != '\n')
			c++;
		size_t tlen = (size_t)(c - tok);
		uint64_t v;

		switch (field) {
		case F_STATE:
			if (tlen != 1)
				return -EINVAL;
			s.state = *tok;
			continue;
		case F_MINFLT:
		case F_MAJFLT:
		case F_UTIME:
		case F_STIME:
		case F_STARTTIME:
		case F_VSIZE:
		case F_RSS:
			if (parse_dec_u64(tok, tlen, &v) < 0)
				return -EINVAL;
			break;
		default:
			if (tlen == 0)
				return -EINVAL;
			continue;
		}
		switch (field) {
		case F_MINFLT:
			s.minflt = v;
			break;
		case F_MAJFLT:
			s.majflt = v;
			break;
		case F_UTIME:
			utime = v;
			break;
		case F_STIME:
			stime = v;
			break;
		case F_STARTTIME:
			s.start_ticks = v;
			break;
		case F_VSIZE:
			s.vsize = v;
			break;
		case F_RSS:
			s.rss_pages = v;
			break;
		}
	}
	/* The kernel prints more fields after rss: without them, rss itself
	 * may have been cut short. */
	if (c >= end || *c != ' ')
		return -EINVAL;
	s.cpu_ticks = utime + stime;
	s.exec_id = exec_fingerprint(c, end, field - 1);
	*out = s;
	return 0;
}

/* Finds the line starting with prefix; returns its rest and length. */
static const char *find_line(const char *buf, size_t len, const char *prefix, size_t *rest_len)
{
	size_t plen = strlen(prefix);
	const char *end = buf + len;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		if ((size_t)(eol - line) >= plen && memcmp(line, prefix, plen) == 0) {
			*rest_len = (size_t)(eol - line) - plen;
			return line + plen;
		}
		line = eol + 1;
	}
	return NULL;
}

/* "4:memory:/process_api/78b8e3ec6b5ed338c0283048d1a9b356": the path of the
 * v1 hierarchy whose controller list (comma-separated) holds controller. */
int parse_cgroup_v1_buf(const char *buf, size_t len, const char *controller, char *path, size_t pathlen)
{
	size_t clen = strlen(controller);
	const char *end = buf + len;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		line = eol + 1;
		if (!c2)
			continue;
		for (const char *w = c1 + 1; w < c2;) {
			const char *comma = memchr(w, ',', (size_t)(c2 - w));
			const char *we = comma ? comma : c2;

			if ((size_t)(we - w) == clen && !memcmp(w, controller, clen)) {
				size_t plen = (size_t)(eol - c2 - 1);

				if (plen == 0 || c2[1] != '/' || memchr(c2 + 1, '\0', plen))
					return -EINVAL;
				if (plen >= pathlen)
					return -ENAMETOOLONG;
				memcpy(path, c2 + 1, plen);
				path[plen] = '\0';
				return 0;
			}
			w = we + 1;
		}
	}
	return -ENOENT;
}

int parse_cgroup_buf(const char *buf, size_t len, char *path, size_t pathlen)
{
	size_t plen;
	/* Hybrid hosts also list v1 hierarchies as "N:controllers:/path". */
	const char *p = find_line(buf, len, "0::", &plen);

	if (!p)
		return -ENOENT;
	if (plen == 0 || p[0] != '/' || memchr(p, '\0', plen))
		return -EINVAL;
	/* Measured on 6.18: a path longer than that is cut to exactly
	 * CGROUP_PATH_CUT bytes, silently (the read succeeds). A cut path names
	 * an ancestor, or a sibling whose name is a prefix of the real one: it
	 * must never be looked up as if it were the process's cgroup. */
	if (plen >= CGROUP_PATH_CUT || plen >= pathlen)
		return -ENAMETOOLONG;
	memcpy(path, p, plen);
	path[plen] = '\0';
	return 0;
}

const char *cgroup_hier_name(enum cgroup_hier h)
{
	switch (h) {
	case CGROUP_HIER_V2:
		return "cgroup v2";
	case CGROUP_HIER_V1_MEMORY:
		return "the cgroup v1 memory hierarchy";
	case CGROUP_HIER_V1_SYSTEMD:
		return "the cgroup v1 name=systemd hierarchy";
	default:
		return "no cgroup hierarchy";
	}
}

int parse_cgroup_policy_buf(const char *buf, size_t len, char *path, size_t pathlen, enum cgroup_hier *hier)
{
	static const char *const v1[] = {"memory", "name=systemd"};
	int r = parse_cgroup_buf(buf, len, path, pathlen);

	*hier = CGROUP_HIER_V2;
	if (r != -ENOENT)
		return r;
	for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++) {
		r = parse_cgroup_v1_buf(buf, len, v1[i], path, pathlen);
		if (r == -ENOENT)
			continue;
		*hier = i ? CGROUP_HIER_V1_SYSTEMD : CGROUP_HIER_V1_MEMORY;
		/* Cut the same way as v2 paths: a cut one names someone else. */
		if (r == 0 && strlen(path) >= CGROUP_PATH_CUT)
			r = -ENAMETOOLONG;
		return r;
	}
	*hier = CGROUP_HIER_NONE;
	if (pathlen < 2)
		return -ENAMETOOLONG;
	memcpy(path, "/", 2);
	return 0;
}

int parse_status_thp_enabled(const char *buf, size_t len)
{
	size_t vlen;
	const char *v = find_line(buf, len, "THP_enabled:", &vlen);

	if (!v)
		return 1; /* older kernels: no prctl to worry about */
	/* clang-analyzer assumes a failed openat() may leave errno 0, so that
	 * read_one_shot_at() "succeeds" without filling buf; it cannot. */
	// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
	while (vlen > 0 && (*v == '\t' || *v == ' ')) {
		v++;
		vlen--;
	}
	/* Only an explicit 0 means disabled; anything else keeps the default. */
	return vlen == 1 && *v == '0' ? 0 : 1;
}

/* ---- readers ----------------------------------------------------------- */

int read_proc_stat(int proc_pid_dirfd, struct proc_sample *out)
{
	char buf[2048]; /* 52 numbers and a 64-byte comm fit easily */
	ssize_t n = read_one_shot_at(proc_pid_dirfd, "stat", buf, sizeof(buf));
	return n < 0 ? (int)n : parse_stat_buf(buf, (size_t)n, out);
}

/* cgroup and status can exceed a page (v1 hierarchies, long Groups:). */
#define BIG_PROC_FILE 32768

int read_proc_cgroup(int proc_pid_dirfd, char *path, size_t pathlen)
{
	char *buf = malloc(BIG_PROC_FILE);
	if (!buf)
		return -ENOMEM;
	ssize_t n = read_one_shot_at(proc_pid_dirfd, "cgroup", buf, BIG_PROC_FILE);
	enum cgroup_hier h;
	int rc = n < 0 ? (int)n : parse_cgroup_policy_buf(buf, (size_t)n, path, pathlen, &h);

	free(buf);
	return rc;
}

int read_proc_thp_enabled(int proc_pid_dirfd)
{
	char *buf = malloc(BIG_PROC_FILE);
	if (!buf)
		return -ENOMEM;
	ssize_t n = read_one_shot_at(proc_pid_dirfd, "status", buf, BIG_PROC_FILE);
	int rc = n < 0 ? (int)n : parse_status_thp_enabled(buf, (size_t)n);
	free(buf);
	return rc;
}

int parse_auxv_random(const void *buf, size_t len, uint64_t *addr)
{
	const uint64_t *a = buf;

	/* Pairs of (type, value) up to AT_NULL; AT_RANDOM is 25. */
	for (size_t i = 0; i + 1 < len / sizeof(uint64_t) && a[i] != 0; i += 2)
		if (a[i] == 25) {
			*addr = a[i + 1];
			return 0;
		}
	return -ENOENT;
}

uint64_t read_exec_random(int proc_pid_dirfd)
{
	uint64_t auxv[128] = {0}, addr, h = 1469598103934665603ULL;
	unsigned char rnd[16];
	ssize_t n = read_one_shot_at(proc_pid_dirfd, "auxv", (char *)auxv, sizeof(auxv));
	int fd;

	if (n < 0 || parse_auxv_random(auxv, (size_t)n, &addr) < 0)
		return 0;
	fd = openat(proc_pid_dirfd, "mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = addr <= INT64_MAX ? pread(fd, rnd, sizeof(rnd), (off_t)addr) : -1;
	close(fd);
	if (n != (ssize_t)sizeof(rnd))
		return 0;
	for (size_t i = 0; i < sizeof(rnd); i++)
		h = (h ^ rnd[i]) * 1099511628211ULL;
	return h;
}
