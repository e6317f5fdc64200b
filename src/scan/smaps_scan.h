/* SPDX-License-Identifier: GPL-2.0-or-later */
/* smaps_scan: parse /proc/PID/smaps into a list of VMAs.
 *
 * parse_smaps_buf() is pure: it reads only the buffer it is given, so it is
 * tested on fixture files and fuzzed. read_smaps() is the thin reader around
 * it. The parser never trusts its input: a truncated or garbage file yields
 * the VMAs it could parse up to the first malformed header, and an error. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The VmFlags this daemon cares about, as bits of vma.vmflags. Two-letter
 * mnemonics come from show_smap_vma_flags() in fs/proc/task_mmu.c; unknown
 * mnemonics are ignored. */
enum vm_flag_bit {
	VMF_RD,
	VMF_WR,
	VMF_EX,
	VMF_SH, /* shared */
	VMF_MR,
	VMF_MW,
	VMF_ME,
	VMF_MS, /* may share */
	VMF_GD, /* stack grows down */
	VMF_PF, /* pure PFN range */
	VMF_LO, /* mlocked */
	VMF_IO, /* memory-mapped I/O */
	VMF_DC, /* do not copy on fork */
	VMF_DE, /* do not expand */
	VMF_AC,
	VMF_NR,
	VMF_HT, /* hugetlb */
	VMF_DD, /* do not dump */
	VMF_MM, /* mixed map */
	VMF_HG, /* MADV_HUGEPAGE */
	VMF_NH, /* MADV_NOHUGEPAGE */
	VMF_MG, /* mergeable (KSM) */
	VMF_UM, /* userfaultfd missing */
	VMF_UW, /* userfaultfd wr-protect */
	VMF_SD, /* soft-dirty */
	VMF_UI, /* userfaultfd minor */
	VMF_NR_KNOWN,
};
#define VMF(b) (UINT64_C(1) << (VMF_##b))

/* What backs a VMA, as far as collapse is concerned. */
enum vma_kind {
	VMA_ANON,    /* private anonymous: heap, stack, [anon:…], nameless */
	VMA_SHMEM,   /* shared anonymous, memfd, SysV shm, files on tmpfs (struct vma.shmem_src) */
	VMA_FILE,    /* any other file mapping */
	VMA_SPECIAL, /* [vdso], [vvar], [vsyscall], … — never collapsible */
};

/* Which shmem knob decides a VMA_SHMEM VMA (mm/shmem.c, Linux 6.18:
 * shmem_allowable_huge_orders() and shmem_huge_global_enabled()). */
enum shmem_source {
	SHMEM_SRC_NONE,
	SHMEM_SRC_ANON,     /* shared anonymous (MAP_SHARED|MAP_ANONYMOUS, /dev/zero): the per-size shmem_enabled */
	SHMEM_SRC_INTERNAL, /* memfd, SysV shm (the kernel's internal mount): shmem_enabled */
	SHMEM_SRC_MOUNT,    /* a file on a tmpfs mount, /dev/shm included: the mount's huge= option */
};

#define VMA_HUGE_UNKNOWN 0xff

struct vma {
	uint64_t start, end; /* [start, end), bytes */
	uint64_t offset;     /* file offset in bytes, from the header line */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char perms[5];      /* "rw-p", NUL-terminated */
	uint8_t kind;       /* enum vma_kind */
	uint8_t shmem_src;  /* enum shmem_source; NONE unless kind is VMA_SHMEM */
	uint8_t mount_huge; /* SHMEM_SRC_MOUNT: the mount's huge= (enum shmem_mode), or VMA_HUGE_UNKNOWN */
	uint64_t vmflags;   /* VMF() bits */
	bool has_vmflags;   /* a VmFlags: line was seen */
	/* "THPeligible: 0|1": the kernel's THP policy answer for this VMA
	 * (sysfs modes, hg/nh, prctl), absent before Linux 4.19. */
	bool has_thpeligible, thp_eligible;
	/* Fields in KiB, 0 when absent. */
	uint64_t rss_kb, anon_kb, referenced_kb, lazyfree_kb, anon_huge_kb, shmem_pmd_kb, file_pmd_kb, swap_kb;
	uint32_t name_off; /* offset into vma_list.names; 0 means no name */
};

/* A growable VMA array plus one string arena for names (index 0 is ""). */
struct vma_list {
	struct vma *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

void vma_list_init(struct vma_list *l);
void vma_list_clear(struct vma_list *l); /* keeps the allocations */
void vma_list_free(struct vma_list *l);
const char *vma_name(const struct vma_list *l, const struct vma *v);

/* Parses len bytes of smaps text, appending to out. Returns 0 on success,
 * -EINVAL if the text is malformed (out then holds the VMAs completed before
 * the bad line; the VMA whose record held the bad line is dropped), -ENOMEM
 * on allocation failure. Accepts a missing trailing newline. */
int parse_smaps_buf(const char *buf, size_t len, struct vma_list *out);

/* Parses the two-letter VmFlags list ("rd wr mr mw me ac sd") into VMF bits. */
uint64_t parse_vmflags(const char *s, size_t len);

/* Reads and parses "smaps" relative to a /proc/PID directory fd. buf/bufcap
 * is a caller-owned buffer that is grown as needed and reused across calls,
 * so a steady-state pass does no allocation. Returns 0 or -errno
 * (-ESRCH/-ENOENT when the process is gone). */
int read_smaps(int proc_pid_dirfd, char **buf, size_t *bufcap, struct vma_list *out);

/* What a reader keeps between processes. One process with 64000 VMAs
 * needs a smaps buffer of ~50 MiB (measured: the daemon's VmHWM grew by 53
 * MiB) and a VMA list of several MiB; keeping them for ever costs every
 * later pass that memory. */
#define SMAPS_KEEP_BYTES ((size_t)4 << 20)

/* Frees buf (and the VMA list's arrays, contents and all) when
 * they hold more than keep bytes, so the next read grows them again from
 * small; hands freed heap pages back to the kernel. Returns the bytes
 * freed. Call it once a process is done with them. */
size_t smaps_trim(char **buf, size_t *bufcap, struct vma_list *vmas, size_t keep);
