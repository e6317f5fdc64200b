/* prctl_iter: every process's prctl(PR_SET_THP_DISABLE) mode, read from
 * the kernel's own record (two bits of mm->flags) by a BPF task iterator
 * (src/scan/bpf/thp_prctl.bpf.c).
 *
 * Why this and not following prctl() calls: the mode lives in the mm, fork
 * copies it and exec keeps it, so one read is exact for every process,
 * whenever it started (before the daemon, in --once) and however it got
 * the mode (its own call, a launcher's, inheritance), and nothing has to be
 * learned or kept across a restart of the daemon. It costs other processes
 * nothing: the iterator runs only when the daemon reads it, while a syscall
 * tracepoint would send every system call of every process through the
 * slow path for as long as it is enabled.
 *
 * Measured on this machine (6.18, 2 vCPUs): see BENCHMARKS.md, "prctl".
 *
 * Needs: a kernel with BTF (/sys/kernel/btf/vmlinux) and task iterators
 * (5.8), bpf() (CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON), and a build with
 * libbpf, clang and bpftool (HC_HAVE_BPF). Where any is missing,
 * prctl_iter_open() fails and the caller keeps its inference. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "thp_policy.h"

/* The iterator's record, as the BPF program writes it. */
struct prctl_iter_rec {
	uint32_t tgid;
	uint32_t mode; /* PRCTL_ITER_* bits */
};
#define PRCTL_ITER_COMPLETELY     1u
#define PRCTL_ITER_EXCEPT_ADVISED 2u

/* One walk's answer: the processes that existed then, sorted by pid. */
struct prctl_table {
	struct prctl_iter_rec *rec;
	size_t n, cap;
};

struct prctl_iter;

/* Whether prctl_iter_open() can be expected to work, without loading it
 * (that parses the kernel's BTF: several MB of peak RSS): built with BPF,
 * BTF present, bpf() allowed. 0, or -errno as prctl_iter_open(). */
int prctl_iter_usable(void);

/* Loads and attaches the iterator. 0, or -errno: -ENOSYS when built
 * without BPF, -EPERM without the privilege, -ENOENT without BTF, … */
int prctl_iter_open(struct prctl_iter **out);
void prctl_iter_close(struct prctl_iter *it);

/* Walks every task once and replaces t with the result. 0 or -errno.
 * The pids are global ones (init pid namespace): in a container they are
 * not the pids of its /proc. */
int prctl_iter_read(struct prctl_iter *it, struct prctl_table *t);

/* The mode of one process (the kernel walks only its tasks). 0, -ESRCH
 * when it has gone or has no mm, or -errno. */
int prctl_iter_read_pid(struct prctl_iter *it, pid_t pid, enum thp_prctl *m);

/* The records in buf (len bytes, as read from the iterator) into t, sorted
 * by pid. -EINVAL when len is not a whole number of records or a mode has
 * unknown bits, -ENOMEM. Pure. */
int parse_prctl_iter_buf(const void *buf, size_t len, struct prctl_table *t);

/* The mode of pid, or false when pid was not in the walk (started after
 * it, or not a process). Pure. */
bool prctl_table_find(const struct prctl_table *t, pid_t pid, enum thp_prctl *m);

void prctl_table_free(struct prctl_table *t);
