// SPDX-License-Identifier: GPL-2.0-only
/* thp_prctl.bpf.c: a task iterator that prints, for every process (thread
 * group leader with an mm), its pid and its prctl(PR_SET_THP_DISABLE) mode
 * as the kernel keeps it: two bits of mm->flags (include/linux/mm_types.h
 * at v6.18: MMF_DISABLE_THP_EXCEPT_ADVISED 23, MMF_DISABLE_THP_COMPLETELY
 * 24). fork copies them (MMF_INIT_MASK) and exec keeps them, so reading the
 * mm is exact for every process, whenever and however it was started.
 *
 * Only the fields read are declared; libbpf relocates them against the
 * running kernel's BTF (CO-RE), so no vmlinux.h of the build machine is
 * baked in. mm->flags is a bitmap (mm_flags_t) since 6.18 and an unsigned
 * long before; both flavours are declared, the kernel's BTF picks one.
 * The bitmap came with except-advised (both 6.18); on an older kernel bit
 * 23 means something else (MMF_HUGE_ZERO_PAGE) and is not read. */
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define MMF_DISABLE_THP_EXCEPT_ADVISED 23
#define MMF_DISABLE_THP_COMPLETELY     24

struct seq_file;

struct mm_flags___bitmap {
	unsigned long __mm_flags[1];
};

struct mm_struct___bitmap {
	struct mm_flags___bitmap flags;
} __attribute__((preserve_access_index));

struct mm_struct___word {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct mm_struct;

struct task_struct {
	int pid;
	int tgid;
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* One record per process; the layout is struct prctl_iter_rec (prctl_iter.h). */
struct rec {
	__u32 tgid;
	__u32 mode; /* bit 0: completely, bit 1: except advised */
};

char LICENSE[] SEC("license") = "GPL";

SEC("iter/task")
int thp_prctl(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct mm_struct *mm;
	unsigned long f;
	struct rec r = {0};

	if (!t || BPF_CORE_READ(t, pid) != BPF_CORE_READ(t, tgid))
		return 0; /* the end, or a thread: its leader has the same mm */
	mm = BPF_CORE_READ(t, mm);
	if (!mm)
		return 0; /* a kernel thread, or a zombie */
	r.tgid = (__u32)BPF_CORE_READ(t, tgid);
	if (bpf_core_field_exists(((struct mm_struct___bitmap *)0)->flags.__mm_flags)) {
		f = BPF_CORE_READ((struct mm_struct___bitmap *)mm, flags.__mm_flags[0]);
		r.mode = (__u32)((f >> MMF_DISABLE_THP_COMPLETELY) & 1);
		r.mode |= (__u32)(((f >> MMF_DISABLE_THP_EXCEPT_ADVISED) & 1) << 1);
	} else {
		/* Before 6.18 bit 23 is MMF_HUGE_ZERO_PAGE, and there is no
		 * except-advised mode: only bit 24 (MMF_DISABLE_THP) counts. */
		f = BPF_CORE_READ((struct mm_struct___word *)mm, flags);
		r.mode = (__u32)((f >> MMF_DISABLE_THP_COMPLETELY) & 1);
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
