/* Taking over from khugepaged through its sysfs knobs, and restoring them. */
#include "khugepaged.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "procs.h"

static const char *sysfs_dir(void)
{
	const char *d = getenv("HC_SYSFS_THP");

	return d && *d ? d : "/sys/kernel/mm/transparent_hugepage";
}

int sysfs_selected(const char *text, char *out, size_t outlen)
{
	const char *a = strchr(text, '['), *b = a ? strchr(a, ']') : NULL;

	if (!a || !b || (size_t)(b - a - 1) >= outlen || b == a + 1)
		return -EINVAL;
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = 0;
	return 0;
}

/* Reads a knob: the selected word of a choice file, or the trimmed text. */
static int knob_read(const char *file, char *out, size_t outlen)
{
	char path[512], buf[256];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", sysfs_dir(), file);
	n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (strchr(buf, '['))
		return sysfs_selected(buf, out, outlen);
	size_t len = strcspn(buf, "\n");

	if (len >= outlen)
		return -EINVAL;
	memcpy(out, buf, len);
	out[len] = '\0';
	return 0;
}

static int knob_write(const char *file, const char *value)
{
	char path[512];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", sysfs_dir(), file);
	/* O_TRUNC as `echo V > knob` does: no-op on sysfs, but a regular file
	 * (HC_SYSFS_THP test trees) must not keep the tail of a longer value. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static bool knob_exists(const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", sysfs_dir(), file);
	return access(path, F_OK) == 0;
}

/* Records the old value, then writes the new one. */
static int set_knob(struct khugepaged_saved *s, const char *file, const char *value, char *err, size_t errlen)
{
	char old[32];
	int r;

	r = knob_read(file, old, sizeof(old));
	if (r == 0 && !strcmp(old, value))
		return 0; /* already so: nothing to restore */
	if (r == 0)
		r = knob_write(file, value);
	if (r < 0) {
		snprintf(err, errlen, "cannot set %s/%s to %s: %s%s", sysfs_dir(), file, value, strerror(-r),
			 r == -EROFS || r == -EACCES || r == -EPERM ? " (read-only /sys? needs CAP_SYS_ADMIN)" : "");
		return r;
	}
	snprintf(s->saved[s->n].file, sizeof(s->saved[s->n].file), "%s", file);
	snprintf(s->saved[s->n].value, sizeof(s->saved[s->n].value), "%s", old);
	s->n++;
	log_info("khugepaged: set %s from %s to %s", file, old, value);
	return 0;
}

int khugepaged_apply(enum khugepaged_mode mode, struct khugepaged_saved *s, char *err, size_t errlen)
{
	int r = 0;

	s->mode = mode;
	s->n = 0;
	switch (mode) {
	case KHUGEPAGED_KEEP:
		return 0;
	case KHUGEPAGED_IDLE:
		r = set_knob(s, "khugepaged/scan_sleep_millisecs", "4294967295", err, errlen);
		if (r == 0)
			r = set_knob(s, "khugepaged/pages_to_scan", "1", err, errlen);
		break;
	case KHUGEPAGED_OFF:
		if (knob_exists("hugepages-2048kB/enabled"))
			r = set_knob(s, "hugepages-2048kB/enabled", "never", err, errlen);
		if (r == 0)
			r = set_knob(s, "enabled", "never", err, errlen);
		break;
	}
	if (r < 0)
		khugepaged_restore(s);
	s->mode = r < 0 ? KHUGEPAGED_KEEP : mode;
	return r;
}

int khugepaged_restore(struct khugepaged_saved *s)
{
	int first = 0;

	/* Undo in reverse order of the writes. */
	while (s->n > 0) {
		s->n--;
		int r = knob_write(s->saved[s->n].file, s->saved[s->n].value);

		if (r < 0) {
			log_err("khugepaged: cannot restore %s to %s: %s", s->saved[s->n].file, s->saved[s->n].value,
				strerror(-r));
			if (!first)
				first = r;
		} else {
			log_info("khugepaged: restored %s to %s", s->saved[s->n].file, s->saved[s->n].value);
		}
	}
	s->mode = KHUGEPAGED_KEEP;
	return first;
}

void khugepaged_log_state(enum khugepaged_mode mode)
{
	char enabled[32] = "?", pmd[32] = "-", sleep_ms[32] = "?", pages[32] = "?", scans[32] = "?",
	     collapsed[32] = "?";
	bool running;

	knob_read("enabled", enabled, sizeof(enabled));
	knob_read("hugepages-2048kB/enabled", pmd, sizeof(pmd));
	knob_read("khugepaged/scan_sleep_millisecs", sleep_ms, sizeof(sleep_ms));
	knob_read("khugepaged/pages_to_scan", pages, sizeof(pages));
	knob_read("khugepaged/full_scans", scans, sizeof(scans));
	knob_read("khugepaged/pages_collapsed", collapsed, sizeof(collapsed));
	log_info("khugepaged mode %s: enabled=%s hugepages-2048kB=%s scan_sleep_millisecs=%s pages_to_scan=%s "
		 "full_scans=%s pages_collapsed=%s",
		 khugepaged_mode_name(mode), enabled, pmd, sleep_ms, pages, scans, collapsed);
	running = strcmp(enabled, "never") != 0 || (strcmp(pmd, "never") && strcmp(pmd, "inherit") && strcmp(pmd, "-"));
	if (mode == KHUGEPAGED_KEEP && running && strcmp(pages, "1") != 0)
		log_warn("khugepaged is still scanning (pages_to_scan=%s every %s ms) and collapses too; "
			 "set khugepaged = idle or off to leave collapsing to hugecollapsed",
			 pages, sleep_ms);
}

const char *khugepaged_original(const struct khugepaged_saved *s, const char *file)
{
	for (size_t i = 0; i < s->n && i < KHUGEPAGED_MAX_SAVED; i++)
		if (!strcmp(s->saved[i].file, file))
			return s->saved[i].value;
	return NULL;
}

const char *khugepaged_sysfs_dir(void)
{
	return sysfs_dir();
}
