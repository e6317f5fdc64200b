/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_no_perf: runs a command where perf_event_open() fails with EACCES, as
 * in a container whose seccomp profile denies it (Docker's default does).
 *
 *   hc_no_perf [--bpf] COMMAND [ARG...]
 *
 * --bpf denies bpf() instead, and allows perf_event_open(): the daemon then
 * has its doorbell, but neither its per-process filter (fault_news.h) nor
 * the prctl iterator, as on a kernel or in a unit without BPF.
 *
 * The daemon then has no page-fault doorbell and takes a full sample of
 * every process on every pass (engine_sample), which is the path that
 * integration/pid_reuse must drive on every pass: with the doorbell, a
 * pass samples only the processes that faulted, and idle processes whose
 * PIDs are recycled are seen by a full sample only every few seconds. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HC_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HC_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define HC_AUDIT_ARCH 0 /* unknown here: main() refuses to run */
#endif

int main(int argc, char **argv)
{
	int bpf = argc > 1 && !strcmp(argv[1], "--bpf");
	struct sock_filter prog[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HC_AUDIT_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bpf ? __NR_bpf : __NR_perf_event_open, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = sizeof(prog) / sizeof(prog[0]), .filter = prog};

	if (HC_AUDIT_ARCH == 0) {
		fprintf(stderr, "hc_no_perf: add this architecture's AUDIT_ARCH\n");
		return 1;
	}
	argv += bpf, argc -= bpf;
	if (argc < 2) {
		fprintf(stderr, "usage: hc_no_perf [--bpf] COMMAND [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0) {
		perror("hc_no_perf: seccomp");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror("hc_no_perf: exec");
	return 127;
}
