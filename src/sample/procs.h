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
	char state;       /* 'R', 'S', 'Z', … (parse_stat_buf only) */
	char comm[64];
};

struct proc_table {
	struct proc_sample *p; /* sorted by pid */
	size_t n, cap;
	/* procs_sample_pids_at(): the PIDs read that were zombies (no mm, but
	 * their PID is freed as soon as the parent reaps them), sorted. */
	pid_t *zombies;
	size_t nzombies, capzombies;
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
/* The same, reading through kept fds (stat_fds.h), keeping new ones. */
struct stat_fds;
int procs_sample_pids_kept(int rootfd, struct stat_fds *kept, const pid_t *pids, size_t n, struct proc_table *out);
const struct proc_sample *proc_table_find(const struct proc_table *t, pid_t pid);

/* Pure parsers, over the text of one /proc file. */
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
/* Which hierarchy names a process's cgroup for the per-cgroup rules. */
enum cgroup_hier {
	CGROUP_HIER_V2,         /* the "0::" line (unified or hybrid hosts) */
	CGROUP_HIER_V1_MEMORY,  /* cgroup v1 only: the memory controller's hierarchy */
	CGROUP_HIER_V1_SYSTEMD, /* … without one: systemd's name=systemd hierarchy */
	CGROUP_HIER_NONE,       /* neither: every process is in "/" for the rules */
};
const char *cgroup_hier_name(enum cgroup_hier h); /* "cgroup v2", "cgroup v1 memory", … */
/* /proc/PID/cgroup: the path the per-cgroup rules match, from the first of
 * the "0::" line, the v1 "memory" line, the v1 "name=systemd" line (issue
 * 16, defect 8: on v1-only hosts there is no "0::" line and every rule was
 * ignored); "/" with CGROUP_HIER_NONE if none is there. Every process of a
 * host has the same hierarchies, so they all get the same one. 0,
 * -ENAMETOOLONG (too long, or maybe cut by the kernel) or -EINVAL. */
int parse_cgroup_policy_buf(const char *buf, size_t len, char *path, size_t pathlen, enum cgroup_hier *hier);

/* /proc/PID/status: 1 if THP_enabled: 1 (or the line is absent), 0 if the
 * process disabled THP with prctl(PR_SET_THP_DISABLE). */
int parse_status_thp_enabled(const char *buf, size_t len);

/* qsort() order of pid_t values, ascending. */
int pid_cmp(const void *a, const void *b);

/* Readers relative to an open /proc/PID directory (so a recycled PID is
 * never read by mistake). Return 0 or -errno. */
int read_proc_stat(int proc_pid_dirfd, struct proc_sample *out);
/* The path the per-cgroup rules match (parse_cgroup_policy_buf()); any
 * failure (-ENAMETOOLONG, -EINVAL, -EFBIG, I/O) means the cgroup is unknown. */
int read_proc_cgroup(int proc_pid_dirfd, char *path, size_t pathlen);
int read_proc_thp_enabled(int proc_pid_dirfd); /* 1, 0 or -errno */

/* The address of the AT_RANDOM bytes in an auxv image (native 64-bit
 * pairs). Returns 0 or -ENOENT. Pure. */
int parse_auxv_random(const void *buf, size_t len, uint64_t *addr);

/* A hash of the 16 bytes the kernel puts at AT_RANDOM in every execve():
 * new for each image even where its addresses are not (ASLR off, `setarch
 * -R`), so it completes the stat fingerprint. 0 when auxv or mem cannot be
 * read. */
uint64_t read_exec_random(int proc_pid_dirfd);
