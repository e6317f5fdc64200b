/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The khugepaged record file: a pure parser and formatter, and atomic I/O. */
#include "khugepaged_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_VERSION "1"

static int __attribute__((format(printf, 4, 5))) bad(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "line %u: ", line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool value_ok(const char *v, size_t len)
{
	if (len == 0 || len >= sizeof(((struct khugepaged_saved *)0)->saved[0].value))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '+' || c == '-'))
			return false;
	}
	return true;
}

/* One "file=value" knob line (key and value not NUL-terminated). */
static int parse_knob(const char *key, size_t klen, const char *v, size_t vlen, unsigned line,
		      struct khugepaged_saved *out, char *err, size_t errlen)
{
	char file[sizeof(out->saved[0].file)];
	const char *ours;

	if (klen >= sizeof(file))
		return bad(err, errlen, line, "unknown key");
	memcpy(file, key, klen);
	file[klen] = '\0';
	ours = khugepaged_knob_target(file);
	if (!ours)
		return bad(err, errlen, line, "unknown key '%s'", file);
	for (size_t i = 0; i < out->n; i++)
		if (!strcmp(out->saved[i].file, file))
			return bad(err, errlen, line, "'%s' recorded twice", file);
	if (!value_ok(v, vlen))
		return bad(err, errlen, line, "'%s': not a knob value", file);
	/* The daemon never records a knob that already held its own value:
	 * such an "original" is the crash this file exists to survive. */
	if (strlen(ours) == vlen && !memcmp(ours, v, vlen))
		return bad(err, errlen, line, "'%s': the original is the daemon's own value %s", file, ours);
	if (out->n == KHUGEPAGED_MAX_SAVED)
		return bad(err, errlen, line, "too many knobs");
	memcpy(out->saved[out->n].file, file, klen + 1);
	memcpy(out->saved[out->n].value, v, vlen);
	out->saved[out->n].value[vlen] = '\0';
	out->n++;
	return 0;
}

static bool is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && !memcmp(s, word, len);
}

int parse_khugepaged_state_buf(const char *buf, size_t len, struct khugepaged_saved *out, char *err, size_t errlen)
{
	enum { WANT_VERSION, WANT_MODE, KNOBS, ENDED } at = WANT_VERSION;
	enum khugepaged_mode mode = KHUGEPAGED_KEEP;
	struct khugepaged_saved r = {0};
	unsigned line = 0;
	size_t pos = 0;

	if (len > KHUGEPAGED_STATE_MAX) {
		snprintf(err, errlen, "%zu bytes, more than %d", len, KHUGEPAGED_STATE_MAX);
		return -EFBIG;
	}
	while (pos < len) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos), *eq;
		size_t n;

		line++;
		if (!nl)
			return bad(err, errlen, line, "no newline at the end: the file is cut");
		n = (size_t)(nl - s);
		pos += n + 1;
		if (memchr(s, '\0', n))
			return bad(err, errlen, line, "NUL byte");
		if (n > 0 && s[0] == '#')
			continue;
		if (at == ENDED)
			return bad(err, errlen, line, "text after 'end'");
		if (at == KNOBS && is(s, n, "end")) {
			at = ENDED;
			continue;
		}
		eq = memchr(s, '=', n);
		if (!eq)
			return bad(err, errlen, line, "expected key=value");
		size_t klen = (size_t)(eq - s), vlen = n - klen - 1;

		if (at == WANT_VERSION) {
			if (!is(s, klen, "version"))
				return bad(err, errlen, line, "expected version=" STATE_VERSION " first");
			if (!is(eq + 1, vlen, STATE_VERSION))
				return bad(err, errlen, line,
					   "version not understood (this is version " STATE_VERSION ")");
			at = WANT_MODE;
		} else if (at == WANT_MODE) {
			if (!is(s, klen, "mode"))
				return bad(err, errlen, line, "expected mode=idle|off");
			if (is(eq + 1, vlen, "idle"))
				mode = KHUGEPAGED_IDLE;
			else if (is(eq + 1, vlen, "off"))
				mode = KHUGEPAGED_OFF;
			else
				return bad(err, errlen, line, "mode is not idle or off");
			at = KNOBS;
		} else {
			int rc = parse_knob(s, klen, eq + 1, vlen, line, &r, err, errlen);

			if (rc < 0)
				return rc;
		}
	}
	if (at != ENDED)
		return bad(err, errlen, line + 1, "no 'end' line: the file is cut");
	out->mode = mode;
	out->n = r.n;
	memcpy(out->saved, r.saved, sizeof(r.saved));
	return 0;
}

int khugepaged_state_format(const struct khugepaged_saved *s, char *buf, size_t buflen)
{
	size_t used;
	int n;

	n = snprintf(buf, buflen, "# hugecollapsed: original values of the THP knobs it changed\nversion=%s\nmode=%s\n",
		     STATE_VERSION, khugepaged_mode_name(s->mode));
	if (n < 0 || (size_t)n >= buflen)
		return -ENOSPC;
	used = (size_t)n;
	for (size_t i = 0; i < s->n; i++) {
		n = snprintf(buf + used, buflen - used, "%s=%s\n", s->saved[i].file, s->saved[i].value);
		if (n < 0 || (size_t)n >= buflen - used)
			return -ENOSPC;
		used += (size_t)n;
	}
	n = snprintf(buf + used, buflen - used, "end\n");
	if (n < 0 || (size_t)n >= buflen - used)
		return -ENOSPC;
	return (int)(used + (size_t)n);
}

int khugepaged_state_load(const char *path, struct khugepaged_saved *s, char *err, size_t errlen)
{
	char buf[KHUGEPAGED_STATE_MAX + 1];
	struct stat st;
	size_t len = 0;
	int fd, r;

	/* O_NOFOLLOW: a symlink is refused (ELOOP); O_NONBLOCK: a FIFO planted
	 * here must not hang the start. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s", r == -ELOOP ? "a symbolic link" : strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s", strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "%s",
			 !S_ISREG(st.st_mode)     ? "not a regular file"
			 : st.st_uid != geteuid() ? "not owned by the daemon's user (root)"
						  : "writable by group or others");
		close(fd);
		return -EPERM;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(err, errlen, "%s", strerror(-r));
			close(fd);
			return r;
		}
		if (n == 0 || (len += (size_t)n) == sizeof(buf))
			break;
	}
	close(fd);
	return parse_khugepaged_state_buf(buf, len, s, err, errlen);
}

/* Makes a rename or an unlink in path's directory durable. */
static int fsync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, r = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int make_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	/* Outside systemd there is no RuntimeDirectory= to make it. */
	if (slash && slash != path) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

/* Opens path's temporary file fresh: O_EXCL|O_NOFOLLOW, so nothing planted
 * there (a symlink, a file someone else holds open) is written through. A
 * temporary left by a daemon that died mid-write is removed first. */
static int open_temp(const char *path, const char *tmp)
{
	int fd;

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		int r = make_parent_dir(path);

		if (r < 0)
			return r;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	return fd < 0 ? -errno : fd;
}

int khugepaged_state_lock(const char *path, pid_t *holder)
{
	char lock[PATH_MAX], buf[24];
	bool written;
	int fd, r;
	ssize_t n;

	*holder = 0;
	if ((size_t)snprintf(lock, sizeof(lock), "%s.lock", path) >= sizeof(lock))
		return -ENAMETOOLONG;
	fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		r = make_parent_dir(path);
		if (r < 0)
			return r;
		fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	/* The kernel drops the lock when its holder dies, however it dies:
	 * nothing to clean up after a crash. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			*holder = (pid_t)strtol(buf, NULL, 10);
		}
		close(fd);
		return r;
	}
	/* The holder's pid, for the message of whoever finds it locked; padded
	 * to a fixed width, so it overwrites any earlier one whole. */
	n = snprintf(buf, sizeof(buf), "%-11d\n", (int)getpid());
	written = pwrite(fd, buf, (size_t)n, 0) == n;
	(void)written; /* if not, only that message lacks our pid */
	return fd;
}

int khugepaged_state_save(const char *path, const struct khugepaged_saved *s)
{
	char buf[KHUGEPAGED_STATE_MAX], tmp[PATH_MAX];
	int fd, len, err = 0;
	ssize_t n;

	len = khugepaged_state_format(s, buf, sizeof(buf));
	if (len < 0)
		return len;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open_temp(path, tmp);
	if (fd < 0)
		return fd;
	/* 0600 whatever the umask, and owned by us: what load() trusts. */
	if (fchmod(fd, 0600) < 0)
		err = -errno;
	n = err ? 0 : write(fd, buf, (size_t)len);
	if (!err && n != len)
		err = n < 0 ? -errno : -EIO;
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	return fsync_dir_of(path);
}

int khugepaged_state_remove(const char *path)
{
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return fsync_dir_of(path);
}
