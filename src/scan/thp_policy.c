/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The THP policy khugepaged obeys, evaluated for one VMA. */
#include "thp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "khugepaged_knobs.h" /* khugepaged_original() */
#include "procfs.h"
#include "vma_eligibility.h"

static const char *const thp_names[] = {"never", "madvise", "always", "inherit"};
static const char *const shmem_names[] = {"never", "advise", "within_size", "always", "deny", "force", "inherit"};

const char *thp_mode_name(enum thp_mode m)
{
	return (unsigned)m < sizeof(thp_names) / sizeof(thp_names[0]) ? thp_names[m] : "?";
}

const char *shmem_mode_name(enum shmem_mode m)
{
	return (unsigned)m < sizeof(shmem_names) / sizeof(shmem_names[0]) ? shmem_names[m] : "?";
}

int parse_thp_mode(const char *word, bool per_size, enum thp_mode *out)
{
	for (unsigned i = 0; i < sizeof(thp_names) / sizeof(thp_names[0]); i++) {
		if (strcmp(word, thp_names[i]))
			continue;
		if (i == THP_INHERIT && !per_size)
			return -EINVAL;
		*out = (enum thp_mode)i;
		return 0;
	}
	return -EINVAL;
}

int parse_shmem_mode(const char *word, bool per_size, enum shmem_mode *out)
{
	for (unsigned i = 0; i < sizeof(shmem_names) / sizeof(shmem_names[0]); i++) {
		if (strcmp(word, shmem_names[i]))
			continue;
		/* deny and force exist only at the top; inherit only per size. */
		if (i == SHMEM_INHERIT && !per_size)
			return -EINVAL;
		if ((i == SHMEM_DENY || i == SHMEM_FORCE) && per_size)
			return -EINVAL;
		*out = (enum shmem_mode)i;
		return 0;
	}
	return -EINVAL;
}

static const char *const thp_file_names[THP_NFILES] = {
    [THP_F_ENABLED] = "enabled",
    [THP_F_PMD] = "hugepages-2048kB/enabled",
    [THP_F_SHMEM] = "shmem_enabled",
    [THP_F_PMD_SHMEM] = "hugepages-2048kB/shmem_enabled",
    [THP_F_MAX_PTES_NONE] = "khugepaged/max_ptes_none",
};

void thp_files_init(struct thp_files *f)
{
	f->dir[0] = '\0';
	for (unsigned i = 0; i < THP_NFILES; i++) {
		f->fd[i] = -1;
		f->absent[i] = false;
	}
}

void thp_files_close(struct thp_files *f)
{
	for (unsigned i = 0; i < THP_NFILES; i++)
		if (f->fd[i] >= 0)
			close(f->fd[i]);
	thp_files_init(f);
}

static bool thp_file_per_size(enum thp_file w)
{
	return w == THP_F_PMD || w == THP_F_PMD_SHMEM;
}

static int thp_file_open(const char *dir, enum thp_file w)
{
	char path[768];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, thp_file_names[w]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

ssize_t thp_files_read(struct thp_files *f, const char *dir, enum thp_file w, char *buf, size_t bufsize)
{
	ssize_t n;
	int fd;

	if (strcmp(f->dir, dir)) {
		thp_files_close(f);
		if ((size_t)snprintf(f->dir, sizeof(f->dir), "%s", dir) >= sizeof(f->dir)) {
			f->dir[0] = '\0'; /* too long to keep: a read by path each time */
			fd = thp_file_open(dir, w);
			if (fd < 0)
				return fd;
			n = pread_one_shot(fd, buf, bufsize);
			close(fd);
			return n;
		}
	}
	if (f->absent[w])
		return -ENOENT;
	if (f->fd[w] >= 0) {
		n = pread_one_shot(f->fd[w], buf, bufsize);
		if (n >= 0)
			return n;
		close(f->fd[w]);
		f->fd[w] = -1;
	}
	fd = thp_file_open(dir, w);
	if (fd < 0) {
		if (fd == -ENOENT && thp_file_per_size(w))
			f->absent[w] = true;
		return fd;
	}
	n = pread_one_shot(fd, buf, bufsize);
	if (n < 0)
		close(fd);
	else
		f->fd[w] = fd;
	return n;
}

/* The selected word of file w of dir ("always [madvise] never" →
 * "madvise"), through f's kept fds, or by path when f is NULL. */
static int read_word(struct thp_files *f, const char *dir, enum thp_file w, char *out, size_t outlen)
{
	char path[768], buf[256];
	ssize_t n;

	if (f) {
		n = thp_files_read(f, dir, w, buf, sizeof(buf));
	} else {
		snprintf(path, sizeof(path), "%s/%s", dir, thp_file_names[w]);
		n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
	}
	if (n < 0)
		return (int)n;
	return sysfs_selected(buf, out, outlen);
}

/* One knob, live and original. An absent per-size file is inherit. */
static int read_knob(struct thp_files *f, const char *dir, const struct khugepaged_saved *saved, enum thp_file w,
		     bool shmem, bool per_size, uint8_t *live, uint8_t *orig)
{
	char word[32];
	const char *o, *file = thp_file_names[w];
	int r = read_word(f, dir, w, word, sizeof(word));

	if (r == -ENOENT && per_size) {
		*live = shmem ? SHMEM_INHERIT : THP_INHERIT;
		snprintf(word, sizeof(word), "inherit");
	} else if (r < 0) {
		return r;
	} else {
		enum thp_mode t = THP_NEVER;
		enum shmem_mode s = SHMEM_NEVER;

		r = shmem ? parse_shmem_mode(word, per_size, &s) : parse_thp_mode(word, per_size, &t);
		if (r < 0)
			return r;
		*live = shmem ? (uint8_t)s : (uint8_t)t;
	}
	*orig = *live;
	o = saved ? khugepaged_original(saved, file) : NULL;
	if (o) {
		enum thp_mode t = THP_NEVER;
		enum shmem_mode s = SHMEM_NEVER;

		/* A record we cannot parse is ignored: the live value stands. */
		r = shmem ? parse_shmem_mode(o, per_size, &s) : parse_thp_mode(o, per_size, &t);
		if (r == 0)
			*orig = shmem ? (uint8_t)s : (uint8_t)t;
	}
	return 0;
}

int thp_state_read_kept(struct thp_files *f, const char *dir, const struct khugepaged_saved *saved,
			struct thp_state *out)
{
	struct thp_state st;
	int r;

	r = read_knob(f, dir, saved, THP_F_ENABLED, false, false, &st.live.enabled, &st.orig.enabled);
	if (r == 0)
		r = read_knob(f, dir, saved, THP_F_PMD, false, true, &st.live.pmd, &st.orig.pmd);
	if (r == 0)
		r = read_knob(f, dir, saved, THP_F_SHMEM, true, false, &st.live.shmem, &st.orig.shmem);
	if (r == 0)
		r = read_knob(f, dir, saved, THP_F_PMD_SHMEM, true, true, &st.live.pmd_shmem, &st.orig.pmd_shmem);
	if (r == 0)
		*out = st;
	return r;
}

int thp_state_read(const char *dir, const struct khugepaged_saved *saved, struct thp_state *out)
{
	return thp_state_read_kept(NULL, dir, saved, out);
}

static bool mode_allows(unsigned m, bool hg)
{
	return m == THP_ALWAYS || (m == THP_MADVISE && hg);
}

static bool anon_allows(const struct thp_policy *p, bool hg)
{
	return mode_allows(p->pmd == THP_INHERIT ? p->enabled : p->pmd, hg);
}

/* The mount's huge= (or, for the internal mount, shmem_enabled): always
 * and within_size → yes (within_size: a block inside i_size, as a mapped
 * one is), advise → hg, never → no (mm/shmem.c shmem_huge_global_enabled()). */
static bool huge_allows(unsigned huge, bool hg)
{
	return huge == SHMEM_ALWAYS || huge == SHMEM_WITHIN_SIZE || (huge == SHMEM_ADVISE && hg);
}

/* Linux 6.18 mm/shmem.c: deny turns everything off and force everything on
 * (for shared anonymous memory, the sizes set to inherit); files, memfd
 * and SysV shm included, follow their mount's huge= (the internal mount's
 * is shmem_enabled); only shared anonymous memory has per-size knobs
 * (shmem_allowable_huge_orders(): vma_is_anon_shmem()). */
static bool shmem_allows(const struct thp_policy *p, const struct vma *v, bool hg)
{
	if (p->shmem == SHMEM_DENY)
		return false;
	if (v->shmem_src == SHMEM_SRC_MOUNT)
		return p->shmem == SHMEM_FORCE || (v->mount_huge != VMA_HUGE_UNKNOWN && huge_allows(v->mount_huge, hg));
	if (v->shmem_src == SHMEM_SRC_INTERNAL)
		return p->shmem == SHMEM_FORCE || huge_allows(p->shmem, hg);
	if (p->shmem == SHMEM_FORCE)
		return p->pmd_shmem == SHMEM_INHERIT;
	switch (p->pmd_shmem) {
	case SHMEM_ALWAYS:
	case SHMEM_WITHIN_SIZE:
		return true;
	case SHMEM_ADVISE:
		return hg;
	case SHMEM_INHERIT:
		return huge_allows(p->shmem, hg);
	default:
		return false;
	}
}

bool thp_policy_allows(const struct thp_policy *p, enum thp_scope scope, const struct vma *v, enum thp_prctl m)
{
	bool hg = (v->vmflags & VMF(HG)) != 0;

	if (!v->has_vmflags || (v->vmflags & VMF(NH)) || m == THP_PRCTL_COMPLETELY)
		return false;
	if (v->kind == VMA_SHMEM && p->shmem == SHMEM_DENY)
		return false;
	if (!hg && m != THP_PRCTL_NONE) /* except-advised, or not known not to be */
		return false;
	/* Scopes stand in for enabled; shmem has its own knobs, which the
	 * daemon never changes: the kernel's rules hold in every scope. */
	if (v->kind == VMA_SHMEM)
		return shmem_allows(p, v, hg);
	switch (scope) {
	case THP_SCOPE_MADVISE:
		return hg;
	case THP_SCOPE_ALWAYS:
		return v->kind != VMA_SPECIAL;
	case THP_SCOPE_KERNEL:
		break;
	}
	switch (v->kind) {
	case VMA_ANON:
		return anon_allows(p, hg);
	case VMA_FILE:
		return mode_allows(p->enabled, hg);
	default:
		return false;
	}
}

/* Does v contain a whole aligned 2 MiB block? THPeligible is 0 otherwise. */
static bool has_whole_block(const struct vma *v)
{
	struct vma_blocks b;

	vma_blocks(v, &b);
	return b.whole > 0;
}

enum thp_prctl thp_prctl_infer(const struct thp_policy *live, bool status_thp_enabled, const struct vma *v, size_t n)
{
	enum thp_prctl m = THP_PRCTL_UNKNOWN;

	if (!status_thp_enabled)
		return THP_PRCTL_COMPLETELY;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].has_vmflags || !v[i].has_thpeligible || (v[i].vmflags & (VMF(HG) | VMF_INELIGIBLE_MASK)))
			continue;
		if (v[i].thp_eligible) {
			m = THP_PRCTL_NONE;
			continue;
		}
		/* Only plain anonymous memory: file and tmpfs VMAs can read 0
		 * for reasons of their own (a writer, a mount option). */
		if (v[i].kind == VMA_ANON && has_whole_block(&v[i]) && anon_allows(live, false))
			return THP_PRCTL_EXCEPT_ADVISED; /* contrary evidence: the safe side wins */
	}
	return m;
}

enum thp_prctl thp_prctl_from_status(bool status_thp_enabled)
{
	return status_thp_enabled ? THP_PRCTL_NONE : THP_PRCTL_COMPLETELY;
}

bool thp_prctl_matters(const struct thp_state *st, enum thp_scope scope, const struct vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(v[i].vmflags & VMF(HG)) && has_whole_block(&v[i]) &&
		    thp_vma_check(st, scope, &v[i], THP_PRCTL_NONE) == SCAN_CANDIDATE)
			return true;
	return false;
}

/* The knobs of v's kind are still the original ones: THPeligible answers. */
static bool original_in_force(const struct thp_state *st, const struct vma *v)
{
	if (v->kind == VMA_SHMEM)
		return true; /* the daemon never changes shmem knobs */
	return st->live.enabled == st->orig.enabled && st->live.pmd == st->orig.pmd;
}

enum scan_result thp_vma_check(const struct thp_state *st, enum thp_scope scope, const struct vma *v, enum thp_prctl m)
{
	bool allowed;

	if (!v->has_vmflags || (v->vmflags & VMF(NH)) || m == THP_PRCTL_COMPLETELY ||
	    (v->kind == VMA_SHMEM && st->live.shmem == SHMEM_DENY))
		return SCAN_INELIGIBLE;
	/* THPeligible says "some order" since Linux 6.8 (THP_ORDERS_ALL): an
	 * mTHP size alone makes it 1, so the PMD rules must agree too. It
	 * covers prctl, which the rules then need not guess. */
	if ((scope == THP_SCOPE_KERNEL || v->kind == VMA_SHMEM) && v->has_thpeligible && original_in_force(st, v))
		allowed = v->thp_eligible && thp_policy_allows(&st->live, scope, v, THP_PRCTL_NONE);
	else
		allowed = thp_policy_allows(&st->orig, scope, v, m);
	/* Refused only because nothing tells whether the process opted out. */
	if (!allowed && m == THP_PRCTL_UNKNOWN && thp_policy_allows(&st->orig, scope, v, THP_PRCTL_NONE))
		return SCAN_PRCTL_UNKNOWN;
	return allowed ? SCAN_CANDIDATE : SCAN_THP_POLICY;
}

/* "nothing", "MADV_HUGEPAGE memory only" or "all memory but MADV_NOHUGEPAGE"
 * for one kind: what a plain and an hg VMA of a process that did not call
 * prctl() get. */
static int kind_reach(const struct thp_policy *p, enum thp_scope scope, enum vma_kind kind)
{
	struct vma v = {.kind = (uint8_t)kind, .has_vmflags = true};

	if (thp_policy_allows(p, scope, &v, THP_PRCTL_NONE))
		return 2;
	v.vmflags = VMF(HG);
	return thp_policy_allows(p, scope, &v, THP_PRCTL_NONE) ? 1 : 0;
}

bool thp_policy_describe(const struct thp_state *st, enum thp_scope scope, bool prctl_exact, char *buf, size_t len)
{
	static const char *const reach[] = {"nothing", "MADV_HUGEPAGE memory only", "all memory but MADV_NOHUGEPAGE"};
	const struct thp_policy *p = &st->orig;
	int anon = kind_reach(p, scope, VMA_ANON), shmem = kind_reach(p, scope, VMA_SHMEM);
	bool changed = memcmp(&st->live, &st->orig, sizeof(st->live)) != 0;
	char pmd[48] = "", what[128];

	if (p->pmd != THP_INHERIT)
		snprintf(pmd, sizeof(pmd), ", hugepages-2048kB/enabled=%s", thp_mode_name((enum thp_mode)p->pmd));
	/* shmem_enabled is in the line: "nothing" of shmem goes without saying. */
	if (anon == shmem || shmem == 0)
		snprintf(what, sizeof(what), "%s", reach[anon]);
	else
		snprintf(what, sizeof(what), "anonymous: %s; shmem: %s", reach[anon], reach[shmem]);
	/* Memory without MADV_HUGEPAGE needs a process shown not to have set
	 * PR_THP_DISABLE_EXCEPT_ADVISED: the task iterator shows it for every
	 * process; without it THPeligible does where the live policy allows
	 * plain memory, and under enabled=never or madvise nothing does. */
	const char *caveat = "";
	if ((anon == 2 || shmem == 2) && !prctl_exact && !anon_allows(&st->live, false))
		caveat = " (but without the BPF prctl iterator no process can be shown not to have set "
			 "PR_THP_DISABLE_EXCEPT_ADVISED: plain memory is not collapsed, see prctl_unknown)";
	snprintf(buf, len, "THP enabled=%s%s, shmem_enabled=%s%s, scope=%s: collapsing %s%s",
		 thp_mode_name((enum thp_mode)p->enabled), pmd, shmem_mode_name((enum shmem_mode)p->shmem),
		 changed ? " (as before the daemon changed them)" : "", thp_scope_name(scope), what, caveat);
	return anon > 0 || shmem > 0;
}
