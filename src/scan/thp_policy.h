/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thp_policy: which VMAs the THP policy lets us collapse, as khugepaged
 * would decide, and what to do where the kernel can no longer tell us.
 *
 * The policy is the four PMD-size sysfs modes (struct thp_policy). Two
 * copies matter (struct thp_state): the live one, which the kernel uses for
 * smaps THPeligible right now, and the original one, from before the daemon
 * changed anything (khugepaged = off sets enabled=never: THPeligible then
 * reads 0 for every anonymous and file VMA, while shmem keeps its own knobs).
 *
 * The rules (Linux 6.18, mm/huge_memory.c thp_vma_allowable_orders() and
 * __thp_vma_allowable_orders(), mm/shmem.c shmem_allowable_huge_orders(),
 * all checked on this kernel's THPeligible):
 *   anon:  hugepages-2048kB/enabled always → yes, madvise → hg, never → no,
 *          inherit → enabled: always → yes, madvise → hg, never → no.
 *   shmem: (mm/shmem.c shmem_allowable_huge_orders() and
 *          shmem_huge_global_enabled()) shmem_enabled deny → no; then by
 *          what backs the VMA (struct vma.shmem_src):
 *          - shared anonymous memory: force → yes when the per-size file is
 *            inherit; else the per-size file: always/within_size → yes,
 *            advise → hg, never → no, inherit → shmem_enabled: always and
 *            within_size → yes, advise → hg, never → no;
 *          - memfd and SysV shm (the kernel's internal mount): force → yes,
 *            else shmem_enabled as above; per-size files do not apply;
 *          - files on a tmpfs mount, /dev/shm and /tmp included
 *            (tmpfs_mounts.h tells them by device): force → yes, else the
 *            mount's huge= (absent: never) as above.
 *          Independent of enabled, and of the scope: scopes stand in for
 *          enabled only. The daemon never changes a shmem knob, so while
 *          THPeligible is there it decides shmem in every scope.
 *   file:  read-only file THP (CONFIG_READ_ONLY_THP_FOR_FS, a regular file
 *          nobody has open for writing) only where enabled allows the VMA:
 *          always → yes, madvise → hg, never → no. Open-for-write files, and
 *          every file on a kernel without CONFIG_READ_ONLY_THP_FOR_FS (this
 *          project's test machine), read THPeligible 0 and are refused by
 *          MADV_COLLAPSE itself (EINVAL, remembered).
 *   every kind: nh → no; prctl(PR_SET_THP_DISABLE) completely → no;
 *          PR_THP_DISABLE_EXCEPT_ADVISED → only hg VMAs.
 *
 * Scopes ([collapse] scope): kernel follows the rules above under the
 * original policy; madvise allows hg anonymous and file VMAs only; always
 * allows every anonymous and file VMA as if enabled=always; shmem follows
 * its own rules in every scope. No scope allows nh, a completely disabled
 * process, non-hg memory of an except-advised process, or shmem under deny.
 *
 * THPeligible is "any order" since Linux 6.8 (THP_ORDERS_ALL): an enabled
 * mTHP size makes it 1 where PMD-size pages are never, so a 1 counts only
 * where the PMD rules above agree. Before 6.8 it is the PMD answer
 * (hugepage_vma_check(vma, vm_flags, smaps=true, ...) in 6.1).
 *
 * The prctl mode. /proc/PID/status THP_enabled is 0 only for "completely";
 * Linux 6.18 shows except-advised nowhere but in THPeligible, which it sets
 * to 0 on every non-hg VMA of such a process. So (thp_prctl_infer()):
 *   - a non-hg VMA with THPeligible 1 proves the process is not
 *     except-advised (the kernel checked the flag to say 1): NONE;
 *   - an anonymous non-hg VMA with a whole 2 MiB block and THPeligible 0,
 *     where the live policy allows plain anonymous memory, proves it is;
 *   - otherwise (enabled=madvise or never, the common case) nothing in
 *     /proc tells, and the mode is UNKNOWN. Where a verdict depends on it
 *     (thp_prctl_matters()), rescan.c asks the kernel (prctl_iter.h, a BPF
 *     task iterator reading mm->flags), which is exact; without that,
 *     UNKNOWN is treated as except-advised (SCAN_PRCTL_UNKNOWN):
 *     non-advised memory is collapsed only for processes proven NONE. That
 *     is what makes scope=always and a khugepaged = off host whose original
 *     enabled was always conservative: their plain memory is collapsed only
 *     where the kernel's live answer shows the process did not opt out.
 *     With scope=kernel and the original policy in force, THPeligible is
 *     used directly and needs no inference.
 * A process that calls prctl() between our smaps read and the collapse can
 * see one more collapse, as with khugepaged's own scan. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "scan_result.h"
#include "smaps_scan.h"

struct khugepaged_saved;

/* enabled and hugepages-2048kB/enabled. */
enum thp_mode { THP_NEVER, THP_MADVISE, THP_ALWAYS, THP_INHERIT };
/* shmem_enabled and hugepages-2048kB/shmem_enabled. */
enum shmem_mode { SHMEM_NEVER, SHMEM_ADVISE, SHMEM_WITHIN_SIZE, SHMEM_ALWAYS, SHMEM_DENY, SHMEM_FORCE, SHMEM_INHERIT };

struct thp_policy {
	uint8_t enabled;   /* enum thp_mode, never INHERIT */
	uint8_t pmd;       /* hugepages-2048kB/enabled; INHERIT when the file is absent */
	uint8_t shmem;     /* enum shmem_mode, never INHERIT */
	uint8_t pmd_shmem; /* hugepages-2048kB/shmem_enabled; INHERIT when absent */
};

struct thp_state {
	struct thp_policy live; /* what the kernel applies now */
	struct thp_policy orig; /* before the daemon changed anything */
};

/* NONE: not disabled (proven); UNKNOWN: no evidence, treated as
 * EXCEPT_ADVISED; COMPLETELY: status THP_enabled 0. */
enum thp_prctl { THP_PRCTL_NONE, THP_PRCTL_UNKNOWN, THP_PRCTL_EXCEPT_ADVISED, THP_PRCTL_COMPLETELY };

/* Parse the [selected] word of a sysfs file (or a bare word). per_size
 * accepts "inherit" (and, for shmem, rejects deny/force, which only the
 * top-level file has). Return 0 or -EINVAL. Pure. */
int parse_thp_mode(const char *word, bool per_size, enum thp_mode *out);
int parse_shmem_mode(const char *word, bool per_size, enum shmem_mode *out);
const char *thp_mode_name(enum thp_mode m);
const char *shmem_mode_name(enum shmem_mode m);

/* Reads the live policy from the THP sysfs directory dir, and the original
 * one: the value khugepaged_original(saved, file) recorded where there is
 * one (saved may be NULL: nothing changed), else the live value. Absent
 * per-size files read as inherit. Returns 0, or -errno when enabled or
 * shmem_enabled cannot be read or parsed (out is then untouched). */
int thp_state_read(const char *dir, const struct khugepaged_saved *saved, struct thp_state *out);

/* The files of the THP sysfs directory the policy refresh reads, kept open
 * so that reading one again is a pread (the current value: a sysfs
 * attribute renders itself at each read from offset 0), without the open's
 * path walk through kernfs. */
enum thp_file { THP_F_ENABLED, THP_F_PMD, THP_F_SHMEM, THP_F_PMD_SHMEM, THP_F_MAX_PTES_NONE, THP_NFILES };
struct thp_files {
	char dir[512];           /* the directory they are in ("": none yet) */
	int fd[THP_NFILES];      /* -1: not open, opened at the next read */
	bool absent[THP_NFILES]; /* a per-size file that does not exist: not looked for again */
};
void thp_files_init(struct thp_files *f);
void thp_files_close(struct thp_files *f);
/* Reads file which of dir into buf (NUL-terminated): the length or -errno
 * (-ENOENT for an absent per-size file). A read that fails on a kept fd is
 * tried once more on a fresh open; a file that cannot be opened is looked
 * for again at the next read, an absent per-size one never. Another dir
 * than the last closes all and starts over. */
ssize_t thp_files_read(struct thp_files *f, const char *dir, enum thp_file which, char *buf, size_t bufsize);
/* thp_state_read() through f's kept files. */
int thp_state_read_kept(struct thp_files *f, const char *dir, const struct khugepaged_saved *saved,
			struct thp_state *out);

/* Does policy p, under scope, allow collapsing VMA v of a process in prctl
 * mode m? Only the THP policy: flags the kernel refuses anyway (hugetlb,
 * pfnmap, …), alignment and coldness are vma_verdict()'s. Pure. */
bool thp_policy_allows(const struct thp_policy *p, enum thp_scope scope, const struct vma *v, enum thp_prctl m);

/* The prctl mode of a process from its status THP_enabled and its VMAs,
 * read while live was in force (see the header comment). Pure. */
enum thp_prctl thp_prctl_infer(const struct thp_policy *live, bool status_thp_enabled, const struct vma *v, size_t n);

/* Before Linux 6.18 there is no except-advised mode, and status THP_enabled
 * is exact (kernel_features.h tells which kernel this is). Pure. */
enum thp_prctl thp_prctl_from_status(bool status_thp_enabled);

/* The policy's verdict on one VMA: SCAN_CANDIDATE (allowed), SCAN_INELIGIBLE
 * (the kernel refuses MADV_COLLAPSE too: nh, prctl completely, shmem under
 * deny), SCAN_THP_POLICY (khugepaged would not; MADV_COLLAPSE could) or
 * SCAN_PRCTL_UNKNOWN (allowed for a process that did not opt out, and m is
 * UNKNOWN: the safe rule refuses it, under its own name).
 * scope=kernel uses THPeligible while the live knobs of v's kind equal the
 * original ones, and evaluates the original policy otherwise. Pure. */
enum scan_result thp_vma_check(const struct thp_state *st, enum thp_scope scope, const struct vma *v, enum thp_prctl m);

/* One line for the log: "THP enabled=madvise, shmem_enabled=never,
 * scope=kernel: collapsing MADV_HUGEPAGE memory only". Returns false when
 * the scope allows nothing at all (the caller warns). Pure. */
bool thp_policy_describe(const struct thp_state *st, enum thp_scope scope, bool prctl_exact, char *buf, size_t len);

/* Would v's verdict differ between a process that set nothing and one
 * that set PR_THP_DISABLE_EXCEPT_ADVISED? Only then is the mode worth
 * reading. Pure. */
bool thp_prctl_matters(const struct thp_state *st, enum thp_scope scope, const struct vma *v, size_t n);
