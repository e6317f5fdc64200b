/* What the kernel offers: syscalls, ioctls, prctl flags and THP knobs. */
#include "kernel_features.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "khugepaged.h"
#include "log.h"
#include "procfs.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
/* _IOWR('f', 16, struct pm_scan_arg), 96 bytes (include/uapi/linux/fs.h). */
#define KF_PAGEMAP_SCAN _IOWR('f', 16, char[96])

/* A child sets PR_THP_DISABLE_EXCEPT_ADVISED on itself: before 6.18
 * prctl(PR_SET_THP_DISABLE) takes no flags and says EINVAL. The daemon's
 * own mm is never touched. */
static int probe_except_advised(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) == 0 : -ECHILD;
}

int kernel_probe_real(enum kernel_probe_what what, void *arg)
{
	struct iovec none = {0};
	int fd, r;

	(void)arg;
	switch (what) {
	case KPROBE_PROCESS_MADVISE:
		/* No such pidfd: EBADF where the syscall exists. */
		r = (int)syscall(SYS_process_madvise, -1, &none, 1, MADV_COLLAPSE, 0);
		return r < 0 && errno == ENOSYS ? 0 : 1;
	case KPROBE_MADV_COLLAPSE:
		/* An empty range: the advice is checked first (EINVAL when
		 * unknown), then nothing is done. */
		r = madvise(NULL, 0, MADV_COLLAPSE);
		return r == 0 ? 1 : errno == EINVAL ? 0 : -errno;
	case KPROBE_PAGEMAP_SCAN:
		fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		/* No argument: EFAULT where the ioctl exists, ENOTTY before 6.7. */
		r = ioctl(fd, KF_PAGEMAP_SCAN, NULL);
		r = r < 0 && errno == ENOTTY ? 0 : 1;
		close(fd);
		return r;
	case KPROBE_EXCEPT_ADVISED:
		return probe_except_advised();
	}
	return -EINVAL;
}

static bool probed(const struct kernel_probe *p, enum kernel_probe_what what)
{
	int r = p->probe ? p->probe(what, p->arg) : kernel_probe_real(what, NULL);

	return r != 0;
}

/* The selected word of dir/file, or "" when it cannot be read. */
static void selected(const char *dir, const char *file, char *out, size_t len)
{
	char path[768], buf[256];

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) < 0 || sysfs_selected(buf, out, len) < 0)
		out[0] = '\0';
}

/* log2(kB / 4): the order of a hugepages-<kB>kB directory, or -1. */
static int order_of(const char *name)
{
	char *end;
	unsigned long kb;

	if (strncmp(name, "hugepages-", 10))
		return -1;
	kb = strtoul(name + 10, &end, 10);
	if (strcmp(end, "kB") || kb < 8 || (kb & (kb - 1)))
		return -1;
	for (int o = 1; o < 32; o++)
		if ((4UL << o) == kb)
			return o;
	return -1;
}

static void read_orders(const char *dir, struct kernel_features *f)
{
	char top[32], shtop[32], word[32], file[320];
	struct dirent *d;
	DIR *dp = opendir(dir);
	bool sh_on, sh_per_size = false;

	if (!dp)
		return;
	selected(dir, "enabled", top, sizeof(top));
	selected(dir, "shmem_enabled", shtop, sizeof(shtop));
	sh_on = shtop[0] && strcmp(shtop, "never") && strcmp(shtop, "deny");
	while ((d = readdir(dp))) {
		int o = order_of(d->d_name);

		if (o < 0)
			continue;
		snprintf(file, sizeof(file), "%s/enabled", d->d_name);
		selected(dir, file, word, sizeof(word));
		if (word[0])
			f->per_size = true;
		if (!strcmp(word, "always") || !strcmp(word, "madvise") ||
		    (!strcmp(word, "inherit") && top[0] && strcmp(top, "never")))
			f->anon_orders |= UINT32_C(1) << o;
		snprintf(file, sizeof(file), "%s/shmem_enabled", d->d_name);
		selected(dir, file, word, sizeof(word));
		sh_per_size |= word[0] != '\0';
		if (word[0] && strcmp(word, "never") && (strcmp(word, "inherit") || sh_on))
			f->shmem_orders |= UINT32_C(1) << o;
	}
	closedir(dp);
	/* 6.8 to 6.10 have per-size anonymous knobs only: shmem makes PMD-size
	 * pages alone, as shmem_enabled says (6.8 mm/shmem.c shmem_is_huge()). */
	if (f->per_size && !sh_per_size && sh_on)
		f->shmem_orders |= UINT32_C(1) << KF_PMD_ORDER;
}

int kernel_features_detect(const struct kernel_probe *p, struct kernel_features *out)
{
	struct kernel_features f = {0};
	struct utsname u;
	const char *rel = p->release;

	if (!rel)
		rel = uname(&u) == 0 ? u.release : "";
	snprintf(f.release, sizeof(f.release), "%s", rel);
	{
		char *end;
		unsigned long major = strtoul(f.release, &end, 10), minor = 0;

		if (end != f.release && *end == '.')
			minor = strtoul(end + 1, &end, 10);
		else
			major = 0;
		f.major = major > 1000 ? 0 : (unsigned)major;
		f.minor = minor > 1000 ? 0 : (unsigned)minor;
	}
	f.process_madvise = probed(p, KPROBE_PROCESS_MADVISE);
	f.madv_collapse = f.process_madvise && probed(p, KPROBE_MADV_COLLAPSE);
	f.pagemap_scan = probed(p, KPROBE_PAGEMAP_SCAN);
	f.except_advised = probed(p, KPROBE_EXCEPT_ADVISED);
	read_orders(p->sysfs_thp, &f);
	/* No knob says so: the release does (7.2 added it). */
	f.mthp_collapse = f.major > 7 || (f.major == 7 && f.minor >= 2);
	*out = f;
	return 0;
}

void kernel_orders_name(uint32_t orders, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int o = 0; o < 32 && used < len; o++) {
		if (!(orders & (UINT32_C(1) << o)))
			continue;
		int n = snprintf(buf + used, len - used, "%s%lukB", used ? " " : "", 4UL << o);

		used += n > 0 ? (size_t)n : 0;
	}
	if (!orders)
		snprintf(buf, len, "none");
}

void kernel_features_describe(const struct kernel_features *f, char *buf, size_t len)
{
	char anon[160], shmem[160];

	kernel_orders_name(f->anon_orders, anon, sizeof(anon));
	kernel_orders_name(f->shmem_orders, shmem, sizeof(shmem));
	snprintf(buf, len,
		 "kernel %s: process_madvise %s, MADV_COLLAPSE %s, PAGEMAP_SCAN %s, per-size THP knobs %s, "
		 "except-advised prctl %s, khugepaged mTHP collapse %s; THP sizes enabled: anonymous %s, shmem %s",
		 f->release[0] ? f->release : "?", f->process_madvise ? "yes" : "no", f->madv_collapse ? "yes" : "no",
		 f->pagemap_scan ? "yes" : "no (pagemap reads)", f->per_size ? "yes" : "no",
		 f->except_advised ? "yes" : "no (status THP_enabled is exact)", f->mthp_collapse ? "yes" : "no",
		 f->per_size ? anon : "-", f->per_size ? shmem : "-");
}

bool kernel_features_usable(const struct kernel_features *f, char *why, size_t len)
{
	const char *rel = f->release[0] ? f->release : "unknown";

	if (!f->process_madvise)
		snprintf(why, len,
			 "process_madvise(2) needs Linux 5.10 and MADV_COLLAPSE Linux 6.1 or later (this is %s)", rel);
	else if (!f->madv_collapse)
		snprintf(why, len, "MADV_COLLAPSE needs Linux 6.1 or later (this is %s)", rel);
	else
		return true;
	return false;
}

uint32_t kernel_mthp_lost(const struct kernel_features *f, enum khugepaged_mode mode)
{
	if (mode == KHUGEPAGED_KEEP || !f->mthp_collapse)
		return 0;
	return f->anon_orders & ~(UINT32_C(1) << KF_PMD_ORDER);
}

void kernel_features_warn_mthp(const struct kernel_features *f, enum khugepaged_mode mode)
{
	uint32_t lost = kernel_mthp_lost(f, mode);
	char names[160];

	if (!lost)
		return;
	kernel_orders_name(lost, names, sizeof(names));
	log_warn("khugepaged collapses anonymous memory to %s pages on this kernel (mTHP, Linux 7.2+); "
		 "khugepaged = %s stops it, and hugecollapsed makes only 2048kB pages (MADV_COLLAPSE is "
		 "PMD-size only): memory khugepaged would have made %s stays in 4 KiB pages; "
		 "use khugepaged = keep to keep them",
		 names, khugepaged_mode_name(mode), names);
}

int kernel_features_start(const char *sysfs_thp, enum khugepaged_mode mode, bool quiet, struct kernel_features *out)
{
	struct kernel_probe p = {.sysfs_thp = sysfs_thp};
	char line[512];

	kernel_features_detect(&p, out);
	kernel_features_describe(out, line, sizeof(line));
	if (quiet)
		log_debug("%s", line);
	else
		log_info("%s", line);
	if (!kernel_features_usable(out, line, sizeof(line))) {
		log_err("cannot collapse on this kernel: %s", line);
		return -ENOTSUP;
	}
	kernel_features_warn_mthp(out, mode);
	return 0;
}
