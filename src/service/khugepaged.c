/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Taking over from khugepaged through its sysfs knobs, and restoring them. */
#include "khugepaged.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "khugepaged_state.h"
#include "log.h"
#include "procfs.h"

/* Reads a knob: the selected word of a choice file, or the trimmed text. */
static int knob_read(const char *dir, const char *file, char *out, size_t outlen)
{
	char path[512], buf[256];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
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

static int knob_write(const char *dir, const char *file, const char *value)
{
	char path[512];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* O_TRUNC as `echo V > knob` does: no-op on sysfs, but a regular file
	 * (--sysfs-thp test trees) must not keep the tail of a longer value. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static bool knob_exists(const char *dir, const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

int khugepaged_init(struct khugepaged_saved *s, const char *state_file, const char *sysfs_dir)
{
	memset(s, 0, sizeof(*s));
	s->sysfs_dir = sysfs_dir;
	if (state_file && strlen(state_file) >= sizeof(s->state_file))
		return -ENAMETOOLONG;
	snprintf(s->state_file, sizeof(s->state_file), "%s", state_file ? state_file : "");
	s->lock_fd = -1;
	return 0;
}

/* One process owns a state file's record at a time. A second daemon with
 * the same file, or a --restore while the daemon runs, would otherwise put
 * the knobs back under a daemon that still relies on them, and the next
 * exit would "restore" the other's values. Returns 0, or -EBUSY/-errno
 * with err saying why. */
static int own_record(struct khugepaged_saved *s, char *err, size_t errlen)
{
	pid_t holder;
	int fd;

	if (!s->state_file[0] || s->lock_fd >= 0)
		return 0;
	fd = khugepaged_state_lock(s->state_file, &holder);
	if (fd == -EBUSY && holder > 0)
		snprintf(err, errlen, "%s is in use by another hugecollapsed (pid %d)", s->state_file, (int)holder);
	else if (fd == -EBUSY)
		snprintf(err, errlen, "%s is in use by another hugecollapsed", s->state_file);
	else if (fd < 0)
		snprintf(err, errlen, "cannot lock the state file %s: %s", s->state_file, strerror(-fd));
	if (fd < 0)
		return fd;
	s->lock_fd = fd;
	return 0;
}

static void disown_record(struct khugepaged_saved *s)
{
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock_fd = -1;
}

static int write_knob(const struct khugepaged_saved *s, const char *file, const char *value)
{
	return s->write_knob ? s->write_knob(file, value, s->write_arg) : knob_write(s->sysfs_dir, file, value);
}

/* Only a file that exists is removed: a daemon in keep mode writes nothing. */
static int remove_record(struct khugepaged_saved *s)
{
	int r;

	if (!s->on_disk)
		return 0;
	r = khugepaged_state_remove(s->state_file);
	if (r < 0)
		log_err("khugepaged: cannot remove %s: %s", s->state_file, strerror(-r));
	else
		s->on_disk = false;
	return r;
}

static void drop(struct khugepaged_saved *s, size_t i)
{
	memmove(&s->saved[i], &s->saved[i + 1], (s->n - i - 1) * sizeof(s->saved[0]));
	s->n--;
}

/* The state file follows s: rewritten, or removed once s is empty. */
static int save_record(struct khugepaged_saved *s)
{
	int r;

	if (!s->state_file[0])
		return 0;
	if (s->n == 0)
		return remove_record(s);
	r = khugepaged_state_save(s->state_file, s);
	s->on_disk = s->on_disk || r == 0;
	return r;
}

/* Writes entry i's original back if the knob still holds the daemon's own
 * value; a knob that is back at its original, or that someone else set
 * since, is left alone. Returns 0 or -errno. */
static int put_back(const struct khugepaged_saved *s, size_t i)
{
	const char *file = s->saved[i].file, *orig = s->saved[i].value, *ours = khugepaged_knob_target(file);
	char live[32];
	int r;

	/* An unreadable knob is written anyway: the write says what is wrong. */
	if (knob_read(s->sysfs_dir, file, live, sizeof(live)) == 0) {
		if (!strcmp(live, orig))
			return 0;
		if (!ours || strcmp(live, ours)) {
			log_warn("khugepaged: %s is %s, set by someone else since hugecollapsed set it: "
				 "left alone (its original was %s)",
				 file, live, orig);
			return 0;
		}
	}
	r = write_knob(s, file, orig);
	if (r < 0)
		log_err("khugepaged: cannot restore %s to %s: %s", file, orig, strerror(-r));
	else
		log_info("khugepaged: restored %s to %s", file, orig);
	return r;
}

/* Reads the state file's record into the empty s; true if there was one. */
static bool adopt(struct khugepaged_saved *s)
{
	char msg[256], list[256] = "";
	size_t used = 0;
	int r;

	if (!s->state_file[0])
		return false;
	r = khugepaged_state_load(s->state_file, s, msg, sizeof(msg));
	if (r == -ENOENT)
		return false;
	if (r < 0) {
		log_err("khugepaged: ignoring the state file %s: %s", s->state_file, msg);
		s->n = 0;
		return false;
	}
	s->on_disk = true;
	for (size_t i = 0; i < s->n && used < sizeof(list); i++) {
		int n = snprintf(list + used, sizeof(list) - used, " %s=%s", s->saved[i].file, s->saved[i].value);

		used += n > 0 ? (size_t)n : 0;
	}
	log_warn("khugepaged: %s holds the originals recorded by a hugecollapsed that did not exit cleanly "
		 "(khugepaged = %s):%s; taking them from there",
		 s->state_file, khugepaged_mode_name(s->mode), s->n ? list : " none");
	return true;
}

/* Does shmem allow PMD-size pages, so that khugepaged keeps running under
 * enabled=never? shmem_enabled always/within_size/advise/force, or the
 * per-size file always/within_size/advise. */
static bool shmem_keeps_khugepaged(const char *dir)
{
	char top[32] = "", pmd[32] = "";

	knob_read(dir, "shmem_enabled", top, sizeof(top));
	knob_read(dir, "hugepages-2048kB/shmem_enabled", pmd, sizeof(pmd));
	if (!strcmp(top, "deny"))
		return false;
	if (!strcmp(pmd, "always") || !strcmp(pmd, "within_size") || !strcmp(pmd, "advise"))
		return true;
	return (!pmd[0] || !strcmp(pmd, "inherit")) && top[0] && strcmp(top, "never");
}

static bool mode_sets(const char *dir, enum khugepaged_mode mode, const char *file)
{
	const struct khugepaged_knob *k = khugepaged_knob_of(file);

	if (!k || !(k->modes & KHUGEPAGED_MODE_BIT(mode)))
		return false;
	/* off takes idle's knobs only where enabled=never leaves the thread
	 * running (see khugepaged_knobs[]). */
	return mode != KHUGEPAGED_OFF || k->modes == KHUGEPAGED_MODE_BIT(KHUGEPAGED_OFF) || shmem_keeps_khugepaged(dir);
}

/* Walks the record against the live values (see khugepaged.h), newest
 * first. Sets *changed if an entry went. Returns 0 or the first -errno of a
 * knob that could not be put back (its entry stays). */
static int reconcile(struct khugepaged_saved *s, enum khugepaged_mode mode, bool *changed)
{
	int first = 0;

	for (size_t i = s->n; i-- > 0;) {
		const char *file = s->saved[i].file, *ours = khugepaged_knob_target(file);
		char live[32];
		int r;

		if (ours && knob_read(s->sysfs_dir, file, live, sizeof(live)) == 0 && strcmp(live, ours)) {
			if (strcmp(live, s->saved[i].value))
				log_warn("khugepaged: %s is %s, set by someone else after hugecollapsed set it: "
					 "their value stays (instead of the original %s)",
					 file, live, s->saved[i].value);
			drop(s, i);
			*changed = true;
		} else if (!mode_sets(s->sysfs_dir, mode, file)) {
			r = put_back(s, i);
			if (r < 0) {
				first = first ? first : r;
				continue;
			}
			drop(s, i);
			*changed = true;
		}
	}
	return first;
}

/* Appends the mode's knobs that are not at the daemon's value and not in
 * the record yet, with their live value as the original. */
static int plan(struct khugepaged_saved *s, enum khugepaged_mode mode, char *err, size_t errlen)
{
	for (size_t i = 0; i < khugepaged_nknobs; i++) {
		const struct khugepaged_knob *k = &khugepaged_knobs[i];
		char old[32];
		int r;

		if (!mode_sets(s->sysfs_dir, mode, k->file) || khugepaged_original(s, k->file) ||
		    (k->optional && !knob_exists(s->sysfs_dir, k->file)))
			continue;
		r = knob_read(s->sysfs_dir, k->file, old, sizeof(old));
		if (r < 0) {
			snprintf(err, errlen, "cannot set %s/%s to %s: %s", s->sysfs_dir, k->file, k->ours,
				 strerror(-r));
			return r;
		}
		if (!strcmp(old, k->ours))
			continue; /* already so: nothing to restore */
		if (s->n == KHUGEPAGED_MAX_SAVED) {
			snprintf(err, errlen, "too many knobs to record");
			return -ENOSPC;
		}
		snprintf(s->saved[s->n].file, sizeof(s->saved[s->n].file), "%s", k->file);
		snprintf(s->saved[s->n].value, sizeof(s->saved[s->n].value), "%s", old);
		s->n++;
	}
	return 0;
}

/* Writes the daemon's value to entries from.. of the record. On failure the
 * entries not written are dropped, so that only written ones are undone. */
static int write_planned(struct khugepaged_saved *s, size_t from, char *err, size_t errlen)
{
	for (size_t i = from; i < s->n; i++) {
		const char *ours = khugepaged_knob_target(s->saved[i].file);
		int r = write_knob(s, s->saved[i].file, ours);

		if (r < 0) {
			snprintf(err, errlen, "cannot set %s/%s to %s: %s%s", s->sysfs_dir, s->saved[i].file, ours,
				 strerror(-r),
				 r == -EROFS || r == -EACCES || r == -EPERM ? " (read-only /sys? needs CAP_SYS_ADMIN)"
									    : "");
			s->n = i;
			return r;
		}
		log_info("khugepaged: set %s from %s to %s", s->saved[i].file, s->saved[i].value, ours);
	}
	return 0;
}

int khugepaged_apply(enum khugepaged_mode mode, struct khugepaged_saved *s, char *err, size_t errlen)
{
	bool dirty = false;
	size_t kept;
	int r;

	/* Keep mode with nothing recorded changes nothing: no lock needed. */
	if (mode != KHUGEPAGED_KEEP || s->n > 0 || access(s->state_file, F_OK) == 0) {
		r = own_record(s, err, errlen);
		if (r < 0)
			return r;
	}
	if (s->n == 0)
		dirty = adopt(s);
	r = reconcile(s, mode, &dirty);
	if (r < 0)
		snprintf(err, errlen, "cannot put back the original of a knob hugecollapsed had changed: %s",
			 strerror(-r));
	kept = s->n;
	s->mode = mode;
	if (r == 0)
		r = plan(s, mode, err, errlen);
	/* The record is on disk before the first write: a crash from here on
	 * leaves the originals to the next daemon or to --restore. */
	if (r == 0 && (dirty || s->n > kept)) {
		r = save_record(s);
		if (r < 0) {
			snprintf(err, errlen, "cannot write the state file %s: %s", s->state_file, strerror(-r));
			s->n = kept;
		}
	}
	if (r == 0)
		r = write_planned(s, kept, err, errlen);
	if (r < 0)
		khugepaged_restore(s);
	else if (s->n == 0 && !s->on_disk)
		disown_record(s); /* keep mode, all put back: nothing left to own */
	return r;
}

int khugepaged_restore(struct khugepaged_saved *s)
{
	int first = 0, r;

	/* Undo in reverse order of the writes. */
	while (s->n > 0) {
		r = put_back(s, s->n - 1);
		if (r < 0 && !first)
			first = r;
		s->n--;
	}
	s->mode = KHUGEPAGED_KEEP;
	if (first < 0) {
		if (s->on_disk)
			log_err("khugepaged: keeping %s for `hugecollapsed --restore`", s->state_file);
		disown_record(s);
		return first;
	}
	r = remove_record(s);
	disown_record(s);
	return r;
}

int khugepaged_restore_from_file(const char *state_file, const char *sysfs_dir)
{
	static struct khugepaged_saved s; /* PATH_MAX inside: not on the stack */
	bool changed = false;
	char msg[256];
	int r;

	r = khugepaged_init(&s, state_file, sysfs_dir);
	if (r < 0)
		snprintf(msg, sizeof(msg), "%s", strerror(-r));
	else if (access(s.state_file, F_OK) < 0)
		r = -ENOENT; /* nothing to restore, and no lock file made for it */
	else if ((r = own_record(&s, msg, sizeof(msg))) == 0)
		r = khugepaged_state_load(s.state_file, &s, msg, sizeof(msg));
	if (r == -EBUSY) {
		log_err("khugepaged: not restoring: %s; it restores the knobs itself when it stops", msg);
		return r;
	}
	if (r == -ENOENT) {
		log_info("khugepaged: nothing to restore (no %s)", state_file);
		disown_record(&s);
		return 0;
	}
	if (r < 0) {
		log_err("khugepaged: cannot restore from %s: %s", state_file, msg);
		disown_record(&s);
		return r;
	}
	s.on_disk = true;
	log_info("khugepaged: restoring what khugepaged = %s changed, from %s", khugepaged_mode_name(s.mode),
		 state_file);
	r = reconcile(&s, KHUGEPAGED_KEEP, &changed);
	if (r < 0)
		log_err("khugepaged: keeping %s for another try", state_file);
	else
		r = remove_record(&s);
	disown_record(&s);
	return r;
}

void khugepaged_log_state(const char *dir, enum khugepaged_mode mode)
{
	char enabled[32] = "?", pmd[32] = "-", sleep_ms[32] = "?", pages[32] = "?", scans[32] = "?",
	     collapsed[32] = "?";
	bool running;

	knob_read(dir, "enabled", enabled, sizeof(enabled));
	knob_read(dir, "hugepages-2048kB/enabled", pmd, sizeof(pmd));
	knob_read(dir, "khugepaged/scan_sleep_millisecs", sleep_ms, sizeof(sleep_ms));
	knob_read(dir, "khugepaged/pages_to_scan", pages, sizeof(pages));
	knob_read(dir, "khugepaged/full_scans", scans, sizeof(scans));
	knob_read(dir, "khugepaged/pages_collapsed", collapsed, sizeof(collapsed));
	log_info("khugepaged mode %s: enabled=%s hugepages-2048kB=%s scan_sleep_millisecs=%s pages_to_scan=%s "
		 "full_scans=%s pages_collapsed=%s",
		 khugepaged_mode_name(mode), enabled, pmd, sleep_ms, pages, scans, collapsed);
	running = strcmp(enabled, "never") != 0 ||
		  (strcmp(pmd, "never") && strcmp(pmd, "inherit") && strcmp(pmd, "-")) || shmem_keeps_khugepaged(dir);
	if (mode == KHUGEPAGED_KEEP && running && strcmp(pages, "1") != 0)
		log_warn("khugepaged is still scanning (pages_to_scan=%s every %s ms) and collapses too; "
			 "set khugepaged = idle or off to leave collapsing to hugecollapsed",
			 pages, sleep_ms);
}
