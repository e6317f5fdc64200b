/* SPDX-License-Identifier: GPL-2.0-or-later */
/* System-wide mapped user memory from /proc/meminfo; see the header. */
#include "mapped_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "procfs.h"

/* The value of "NAME:   N kB" at the start of a line, or -1. */
static int64_t field_kb(const char *buf, size_t len, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i + nlen < len;) {
		const char *line = buf + i;
		const char *nl = memchr(line, '\n', len - i);
		size_t llen = nl ? (size_t)(nl - line) : len - i;

		if (llen > nlen && !memcmp(line, name, nlen) && line[nlen] == ':') {
			uint64_t v = 0;
			size_t j = nlen + 1, digits = 0;

			while (j < llen && line[j] == ' ')
				j++;
			for (; j < llen && line[j] >= '0' && line[j] <= '9' && digits < 18; j++, digits++)
				v = v * 10 + (uint64_t)(line[j] - '0');
			if (!digits || (j < llen && line[j] != ' '))
				return -1;
			return (int64_t)v;
		}
		i += llen + 1;
	}
	return -1;
}

int parse_meminfo_buf(const char *buf, size_t len, uint64_t *mapped_kb)
{
	int64_t anon = field_kb(buf, len, "AnonPages");
	int64_t mapped = field_kb(buf, len, "Mapped");

	if (anon < 0 || mapped < 0)
		return -EINVAL;
	*mapped_kb = (uint64_t)anon + (uint64_t)mapped;
	return 0;
}

int read_mapped_memory_kb(const char *proc_root, uint64_t *mapped_kb)
{
	char path[4096], buf[8192];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/meminfo", proc_root);
	n = read_one_shot_at(AT_FDCWD, path, buf, sizeof(buf));
	return n < 0 ? (int)n : parse_meminfo_buf(buf, (size_t)n, mapped_kb);
}

/* Through a kept fd: pread costs the read alone, without the open and
 * close of a path (a third of it). */
static int watch_read(struct mapped_watch *w, uint64_t *kb)
{
	char path[4096] = "", buf[8192];
	ssize_t n;

	if (w->read_kb)
		return w->read_kb(kb);
	if (!w->meminfo.open) /* the path is needed for the open only */
		snprintf(path, sizeof(path), "%s/meminfo", w->proc_root);
	n = kept_file_read(&w->meminfo, path, buf, sizeof(buf));
	return n < 0 ? (int)n : parse_meminfo_buf(buf, (size_t)n, kb);
}

void mapped_watch_close(struct mapped_watch *w)
{
	kept_file_close(&w->meminfo);
}

int mapped_free_kb_sysinfo(uint64_t *kb)
{
	struct sysinfo si;

	if (sysinfo(&si) != 0)
		return -errno;
	*kb = (uint64_t)si.freeram * si.mem_unit / 1024;
	return 0;
}

/* The free memory a meminfo read starts its window with. */
static void note_free(struct mapped_watch *w, double now)
{
	w->free_known = w->read_free_kb && w->read_free_kb(&w->free_kb) == 0;
	w->read_at = now;
}

/* Whether meminfo need not be read now: free memory did not fall by more
 * than the slack since the last read, which is recent enough. */
static bool free_steady(const struct mapped_watch *w, double now)
{
	uint64_t kb;

	if (!w->free_known || now - w->read_at >= MAPPED_FORCE_S || w->read_free_kb(&kb) < 0)
		return false;
	return kb + MAPPED_SLACK_KB >= w->free_kb;
}

void mapped_watch_note(struct mapped_watch *w, double now)
{
	note_free(w, now);
	w->known = watch_read(w, &w->kb) == 0;
	w->next_check = now + MAPPED_CHECK_S;
	w->faulted_kb = 0;
}

void mapped_watch_faulted(struct mapped_watch *w, uint64_t kb)
{
	w->faulted_kb = w->faulted_kb + kb < w->faulted_kb ? UINT64_MAX : w->faulted_kb + kb;
}

bool mapped_watch_moved(struct mapped_watch *w, double now)
{
	uint64_t kb = 0, before = w->kb, explained = w->faulted_kb; /* clang-analyzer cannot see that 0 means set */

	if (!w->known || now < w->next_check)
		return false;
	w->next_check = now + MAPPED_CHECK_S;
	if (free_steady(w, now))
		return false; /* the window, and the faults it explains, go on */
	note_free(w, now);
	if (watch_read(w, &kb) < 0)
		return false;
	w->kb = kb;
	w->faulted_kb = 0;
	w->grew = kb > before + MAPPED_SLACK_KB;
	if (explained > UINT64_MAX - MAPPED_SLACK_KB - before)
		return false;
	return kb > before + explained + MAPPED_SLACK_KB;
}
