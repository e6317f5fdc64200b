/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procs: enumerate processes and sample their activity with libproc2, plus
 * pure parsers for the few /proc files read per process.
 *
 * One procs_sample() reads only /proc/PID/stat of each process (through
 * libproc2): that is the O(1) cost of an unchanged process. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_sample {
	pid_t pid;
	uint64_t start_ticks; /* (pid, start_ticks) is the process identity */
	uint64_t cpu_ticks;   /* utime + stime */
	uint64_t minflt, majflt;
	uint64_t rss_pages;
	uint64_t vsize;   /* bytes */
	uint64_t exec_id; /* changes on execve (parse_stat_buf only; 0 from libproc2) */
	char comm[64];
};

struct proc_table {
	struct proc_sample *p; /* sorted by pid */
	size_t n, cap;
};

struct procs;

/* Returns NULL with errno set on failure. */
struct procs *procs_open(void);
void procs_close(struct procs *p);

/* Samples every user-space process (kernel threads and zombies, which have
 * no mm, are left out) into out, sorted by pid. Returns 0 or -errno. */
int procs_sample(struct procs *p, struct proc_table *out);
void proc_table_free(struct proc_table *t);

/* Every numeric entry of root (a /proc), sorted: threads are not listed,
 * kernel threads are. Reads no file. Returns 0 or -errno. */
int procs_list_pids(const char *root, pid_t **pids, size_t *n, size_t *cap);
/* Reads root/PID/stat of each of pids[0..n) (sorted) into out, which it
 * empties first; processes that are gone, and kernel threads and zombies
 * (vsize 0: no mm), are left out. Returns 0 or -errno (-ENOMEM, or root
 * cannot be opened). */
int procs_sample_pids(const char *root, const pid_t *pids, size_t n, struct proc_table *out);
/* The same through an open directory fd of root (kept open between passes:
 * no path walk of /proc per pass). */
int procs_sample_pids_at(int rootfd, const pid_t *pids, size_t n, struct proc_table *out);
const struct proc_sample *proc_table_find(const struct proc_table *t, pid_t pid);

/* Pure parsers, over the text of one /proc file. */
/* An unsigned decimal of exactly len bytes (digits only: no sign, no
 * spaces), refusing overflow. 0 or -EINVAL, *v untouched on error. Shared
 * by the parsers of /proc/PID/stat, /proc/vmstat, memory.stat and memcg. */
int parse_dec_u64(const char *s, size_t len, uint64_t *v);

/* /proc/PID/stat; handles comm with spaces and parentheses. 0 or -EINVAL. */
int parse_stat_buf(const char *buf, size_t len, struct proc_sample *out);
/* The kernel prints at most PATH_MAX - 1 bytes of a cgroup path and cuts a
 * longer one there without an error; a path this long may be cut. */
#define CGROUP_PATH_CUT 4095
/* /proc/PID/cgroup: copies the path of the "0::" line. 0, -ENOENT when there
 * is no v2 line, -ENAMETOOLONG when it does not fit in pathlen or may have
 * been cut by the kernel (CGROUP_PATH_CUT bytes or more), or -EINVAL. */
int parse_cgroup_buf(const char *buf, size_t len, char *path, size_t pathlen);
/* /proc/PID/cgroup: copies the path of the v1 line whose controllers include
 * controller ("4:memory:/a/b"). 0, -ENOENT (no such line), -ENAMETOOLONG or
 * -EINVAL. */
int parse_cgroup_v1_buf(const char *buf, size_t len, const char *controller, char *path, size_t pathlen);
/* /proc/PID/status: 1 if THP_enabled: 1 (or the line is absent), 0 if the
 * process disabled THP with prctl(PR_SET_THP_DISABLE). */
int parse_status_thp_enabled(const char *buf, size_t len);

/* qsort() order of pid_t values, ascending. */
int pid_cmp(const void *a, const void *b);

/* Readers relative to an open /proc/PID directory (so a recycled PID is
 * never read by mistake). Return 0 or -errno. */
int read_proc_stat(int proc_pid_dirfd, struct proc_sample *out);
/* The cgroup v2 path, "/" on a host without cgroup v2; any other failure
 * (-ENAMETOOLONG, -EINVAL, -EFBIG, I/O) means the cgroup is unknown. */
int read_proc_cgroup(int proc_pid_dirfd, char *path, size_t pathlen);
int read_proc_thp_enabled(int proc_pid_dirfd); /* 1, 0 or -errno */

/* Reads a whole small file at dirfd/name into buf (NUL-terminated). Returns
 * the length or -errno; -EFBIG when the file does not fit in bufsize - 1. */
ssize_t read_small_file_at(int dirfd, const char *name, char *buf, size_t bufsize);

/* The proc root, "/proc" unless HC_PROC_ROOT is set (fixture tests). */
const char *proc_root(void);
