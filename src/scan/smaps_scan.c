/* SPDX-License-Identifier: GPL-2.0-or-later */
/* smaps_scan: a single-pass, allocation-light parser for /proc/PID/smaps.
 *
 * The format (fs/proc/task_mmu.c, show_map_vma() and show_smap()):
 *
 *   start-end perms offset major:minor inode [padding name]
 *   Key:   N kB               (many; some, like THPeligible, have no unit)
 *   VmFlags: rd wr mr mw me ac
 *
 * start, end, offset, major and minor are hex, inode is decimal. The name
 * is everything after the padding: file paths are printed raw except that
 * seq_path() escapes '\n' as "\012", so a name never spans lines but may
 * contain spaces and end in " (deleted)". Nameless VMAs end in "inode \n". */
#include "smaps_scan.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

#define NAMES_INITIAL_CAP 4096
#define READ_INITIAL_CAP  (256 * 1024)
#define READ_MIN_ROOM     (64 * 1024)

void vma_list_init(struct vma_list *l)
{
	memset(l, 0, sizeof(*l));
}

void vma_list_clear(struct vma_list *l)
{
	l->n = 0;
	l->names_len = l->names ? 1 : 0;
}

void vma_list_free(struct vma_list *l)
{
	free(l->v);
	free(l->names);
	vma_list_init(l);
}

const char *vma_name(const struct vma_list *l, const struct vma *v)
{
	if (!l->names || v->name_off >= l->names_len)
		return "";
	return l->names + v->name_off;
}

static int reserve_vma(struct vma_list *l)
{
	return GROW(l->v, l->cap, l->n + 1);
}

/* Appends name + NUL to the arena and returns its offset in *off. Offset 0
 * is reserved for "no name", so the arena always starts with a NUL. */
static int add_name(struct vma_list *l, const char *s, size_t len, uint32_t *off)
{
	size_t need = (l->names_len ? l->names_len : 1) + len + 1;
	if (need > UINT32_MAX)
		return -ENOMEM;
	if (need > l->names_cap) {
		size_t cap = l->names_cap ? l->names_cap : NAMES_INITIAL_CAP;
		while (cap < need)
			cap *= 2;
		char *p = realloc(l->names, cap);
		if (!p)
			return -ENOMEM;
		l->names = p;
		l->names_cap = cap;
	}
	if (!l->names_len) {
		l->names[0] = '\0';
		l->names_len = 1;
	}
	*off = (uint32_t)l->names_len;
	memcpy(l->names + l->names_len, s, len);
	l->names[l->names_len + len] = '\0';
	l->names_len += len + 1;
	return 0;
}

/* Number parsers: advance *pp, never past end, and fail on no digits or
 * overflow. */
static int parse_hex(const char **pp, const char *end, uint64_t max, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	for (; p < end; p++) {
		unsigned d;
		char c = *p;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (v > (max >> 4))
			return -1;
		v = (v << 4) | d;
		if (v > max)
			return -1;
	}
	if (p == *pp)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

static int parse_dec(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (p == *pp)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

static bool expect(const char **pp, const char *end, char c)
{
	if (*pp >= end || **pp != c)
		return false;
	(*pp)++;
	return true;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool is_name(const char *s, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(s, name, len) == 0;
}

/* What backs a VMA, judged from its header line only. The heuristics:
 *  - No name: private (perms "…p") with inode 0 is anonymous memory; a
 *    nameless shared or inode-backed VMA is not something the kernel prints
 *    for ordinary memory, so it is SPECIAL (left alone).
 *  - Bracketed names are kernel-chosen: [heap], [stack], [stack:TID] (old
 *    kernels) and [anon:NAME] (prctl PR_SET_VMA_ANON_NAME) are anonymous;
 *    [anon_shmem:NAME] is a named shared anonymous mapping; everything else
 *    ([vdso], [vvar], [vvar_vclock], [vsyscall], [uprobes], …) is SPECIAL.
 *  - "/dev/zero" and "/dev/zero (deleted)": with 's' perms (VM_MAYSHARE,
 *    which shmem_zero_setup() always pairs with VM_SHARED) it is shared
 *    anonymous memory, i.e. shmem; a private /dev/zero mapping is plain
 *    anonymous memory (mmap_zero() makes it vma_is_anonymous()).
 *  - "/memfd:" and "/SYSV" (SysV shm; its inode may print as 0) live on
 *    the kernel's internal tmpfs mount, i.e. SHMEM; "/dev/shm/" is a tmpfs
 *    mount. Files on other tmpfs mounts cannot be told apart by name: they
 *    count as FILE here, and tmpfs_mounts_classify() (tmpfs_mounts.h) moves
 *    them to SHMEM by their device, from mountinfo.
 *  - "anon_inode:…" files (perf rings, io_uring, DRM, …) are driver memory
 *    with no page cache to collapse: SPECIAL.
 *  - Any other name is a FILE mapping. */
static uint8_t classify(const char *name, size_t len, const char *perms, uint64_t inode, uint8_t *src)
{
	bool shared = perms[3] == 's';

	*src = SHMEM_SRC_NONE;
	if (len == 0)
		return inode == 0 && !shared ? VMA_ANON : VMA_SPECIAL;
	if (name[0] == '[') {
		if (is_name(name, len, "[heap]") || is_name(name, len, "[stack]") || has_prefix(name, len, "[stack:") ||
		    has_prefix(name, len, "[anon:"))
			return VMA_ANON;
		if (has_prefix(name, len, "[anon_shmem:")) {
			*src = SHMEM_SRC_ANON;
			return VMA_SHMEM;
		}
		return VMA_SPECIAL;
	}
	if (is_name(name, len, "/dev/zero") || is_name(name, len, "/dev/zero (deleted)")) {
		*src = shared ? SHMEM_SRC_ANON : SHMEM_SRC_NONE;
		return shared ? VMA_SHMEM : VMA_ANON;
	}
	if (has_prefix(name, len, "/memfd:") || has_prefix(name, len, "/SYSV")) {
		*src = SHMEM_SRC_INTERNAL;
		return VMA_SHMEM;
	}
	if (has_prefix(name, len, "/dev/shm/")) {
		*src = SHMEM_SRC_MOUNT;
		return VMA_SHMEM;
	}
	if (has_prefix(name, len, "anon_inode:"))
		return VMA_SPECIAL;
	return VMA_FILE;
}

/* "start-end perms offset major:minor inode[ name]" into *v. */
static int parse_header(const char *p, const char *end, struct vma_list *l, struct vma *v)
{
	uint64_t major, minor;

	memset(v, 0, sizeof(*v));
	if (parse_hex(&p, end, UINT64_MAX, &v->start) || !expect(&p, end, '-') ||
	    parse_hex(&p, end, UINT64_MAX, &v->end) || !expect(&p, end, ' '))
		return -EINVAL;
	if (v->start >= v->end) /* the kernel never prints an empty VMA */
		return -EINVAL;
	if (end - p < 5 || (p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 's' && p[3] != 'p') || p[4] != ' ')
		return -EINVAL;
	memcpy(v->perms, p, 4);
	v->perms[4] = '\0';
	p += 5;
	if (parse_hex(&p, end, UINT64_MAX, &v->offset) || !expect(&p, end, ' ') ||
	    parse_hex(&p, end, UINT32_MAX, &major) || !expect(&p, end, ':') || parse_hex(&p, end, UINT32_MAX, &minor) ||
	    !expect(&p, end, ' ') || parse_dec(&p, end, &v->inode))
		return -EINVAL;
	v->dev_major = (uint32_t)major;
	v->dev_minor = (uint32_t)minor;
	if (p < end && *p != ' ')
		return -EINVAL;
	p = skip_blanks(p, end);

	size_t name_len = (size_t)(end - p);
	if (name_len) {
		if (memchr(p, '\0', name_len))
			return -EINVAL;
		int err = add_name(l, p, name_len, &v->name_off);
		if (err)
			return err;
	}
	v->kind = classify(p, name_len, v->perms, v->inode, &v->shmem_src);
	v->mount_huge = VMA_HUGE_UNKNOWN; /* until tmpfs_mounts_classify() */
	return 0;
}

uint64_t parse_vmflags(const char *s, size_t len)
{
	uint64_t flags = 0;
	const char *p = s, *end = s + len;

	while (p < end) {
		p = skip_blanks(p, end);
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		if (p - tok != 2)
			continue; /* empty or not a mnemonic */
		int bit = -1;
		switch (((unsigned char)tok[0] << 8) | (unsigned char)tok[1]) {
#define MNEMONIC(a, b, name)                                                                                           \
	case ((a) << 8) | (b):                                                                                         \
		bit = VMF_##name;                                                                                      \
		break;
			MNEMONIC('r', 'd', RD)
			MNEMONIC('w', 'r', WR)
			MNEMONIC('e', 'x', EX)
			MNEMONIC('s', 'h', SH)
			MNEMONIC('m', 'r', MR)
			MNEMONIC('m', 'w', MW)
			MNEMONIC('m', 'e', ME)
			MNEMONIC('m', 's', MS)
			MNEMONIC('g', 'd', GD)
			MNEMONIC('p', 'f', PF)
			MNEMONIC('l', 'o', LO)
			MNEMONIC('i', 'o', IO)
			MNEMONIC('d', 'c', DC)
			MNEMONIC('d', 'e', DE)
			MNEMONIC('a', 'c', AC)
			MNEMONIC('n', 'r', NR)
			MNEMONIC('h', 't', HT)
			MNEMONIC('d', 'd', DD)
			MNEMONIC('m', 'm', MM)
			MNEMONIC('h', 'g', HG)
			MNEMONIC('n', 'h', NH)
			MNEMONIC('m', 'g', MG)
			MNEMONIC('u', 'm', UM)
			MNEMONIC('u', 'w', UW)
			MNEMONIC('s', 'd', SD)
			MNEMONIC('u', 'i', UI)
#undef MNEMONIC
		default:
			break;
		}
		if (bit >= 0)
			flags |= UINT64_C(1) << bit;
	}
	return flags;
}

/* The kB field a key is recorded in, or NULL to ignore the key. */
static uint64_t *kb_field(struct vma *v, const char *key, size_t len)
{
	switch (len) {
	case 3:
		return memcmp(key, "Rss", 3) ? NULL : &v->rss_kb;
	case 4:
		return memcmp(key, "Swap", 4) ? NULL : &v->swap_kb;
	case 8:
		return memcmp(key, "LazyFree", 8) ? NULL : &v->lazyfree_kb;
	case 9:
		return memcmp(key, "Anonymous", 9) ? NULL : &v->anon_kb;
	case 10:
		return memcmp(key, "Referenced", 10) ? NULL : &v->referenced_kb;
	case 13:
		if (!memcmp(key, "AnonHugePages", 13))
			return &v->anon_huge_kb;
		return memcmp(key, "FilePmdMapped", 13) ? NULL : &v->file_pmd_kb;
	case 14:
		return memcmp(key, "ShmemPmdMapped", 14) ? NULL : &v->shmem_pmd_kb;
	default:
		return NULL;
	}
}

/* "Key: value" where the key has been split off. Unknown keys are skipped
 * whatever their value; recorded ones must be exactly "N kB". */
static int parse_field(struct vma *v, const char *key, size_t key_len, const char *p, const char *end)
{
	if (key_len == 7 && !memcmp(key, "VmFlags", 7)) {
		v->vmflags = parse_vmflags(p, (size_t)(end - p));
		v->has_vmflags = true;
		return 0;
	}
	if (key_len == 11 && !memcmp(key, "THPeligible", 11)) {
		/* "THPeligible:    1": one digit, no unit (show_smap()). */
		p = skip_blanks(p, end);
		if (end - p < 1 || (p[0] != '0' && p[0] != '1') || skip_blanks(p + 1, end) != end)
			return -EINVAL;
		v->thp_eligible = p[0] == '1';
		v->has_thpeligible = true;
		return 0;
	}
	uint64_t *field = kb_field(v, key, key_len);
	if (!field)
		return 0;
	p = skip_blanks(p, end);
	if (parse_dec(&p, end, field) || !expect(&p, end, ' '))
		return -EINVAL;
	p = skip_blanks(p, end);
	if (end - p < 2 || p[0] != 'k' || p[1] != 'B' || skip_blanks(p + 2, end) != end)
		return -EINVAL;
	return 0;
}

/* Length of a leading [A-Za-z0-9_]+ followed by ':', or 0: field lines look
 * like that, header lines never do (their first token ends in '-'). */
static size_t key_length(const char *p, const char *end)
{
	const char *q = p;
	while (q < end &&
	       ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_'))
		q++;
	return q > p && q < end && *q == ':' ? (size_t)(q - p) : 0;
}

int parse_smaps_buf(const char *buf, size_t len, struct vma_list *out)
{
	const char *p = buf, *end = buf + len;
	struct vma *cur = NULL; /* out->v[out->n], counted once complete */
	size_t names_mark = out->names_len;
	int err = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		size_t key_len = key_length(p, eol);

		if (key_len) {
			if (!cur) {
				err = -EINVAL; /* a field before any header */
				break;
			}
			err = parse_field(cur, p, key_len, p + key_len + 1, eol);
		} else {
			if (cur) {
				out->n++;
				cur = NULL;
			}
			names_mark = out->names_len;
			err = reserve_vma(out);
			if (!err) {
				cur = &out->v[out->n];
				err = parse_header(p, eol, out, cur);
			}
		}
		if (err)
			break;
		p = nl ? nl + 1 : end;
	}
	if (err) {
		/* Drop the VMA being parsed: its fields may be incomplete. */
		if (out->names_len > names_mark)
			out->names_len = names_mark;
		return err;
	}
	if (cur)
		out->n++;
	return 0;
}

/* Grows *buf so that at least READ_MIN_ROOM bytes follow used. */
static int grow_read_buf(char **buf, size_t *bufcap, size_t used)
{
	if (*bufcap - used >= READ_MIN_ROOM)
		return 0;
	size_t cap = *bufcap ? *bufcap * 2 : READ_INITIAL_CAP;
	while (cap - used < READ_MIN_ROOM)
		cap *= 2;
	char *p = realloc(*buf, cap);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*bufcap = cap;
	return 0;
}

int read_smaps(int proc_pid_dirfd, char **buf, size_t *bufcap, struct vma_list *out)
{
	int fd = openat(proc_pid_dirfd, "smaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	size_t used = 0;
	int err = 0;
	for (;;) {
		err = grow_read_buf(buf, bufcap, used);
		if (err)
			break;
		ssize_t n = read(fd, *buf + used, *bufcap - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (err)
		return err;
	return parse_smaps_buf(*buf, used, out);
}

size_t smaps_trim(char **buf, size_t *bufcap, struct vma_list *vmas, size_t keep)
{
	size_t freed = 0;

	if (*bufcap > keep) {
		freed += *bufcap;
		free(*buf);
		*buf = NULL;
		*bufcap = 0;
	}
	if (vmas->cap * sizeof(*vmas->v) + vmas->names_cap > keep) {
		freed += vmas->cap * sizeof(*vmas->v) + vmas->names_cap;
		vma_list_free(vmas);
	}
	/* Blocks this large come from mmap() and are returned by free(); a
	 * smaller one can sit in the middle of the heap, which only trimming
	 * returns. Rare (once per huge process), so the cost does not matter. */
	if (freed)
		malloc_trim(0);
	return freed;
}
