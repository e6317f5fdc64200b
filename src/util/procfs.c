/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procfs: reading whole small kernel files, and the decimal parser the
 * /proc and cgroup parsers share. */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int parse_dec_u64(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* Truncation is an error (-EFBIG): a cut /proc file would parse wrongly.
 * The loop of every reader below: read() from where the fd is, or pread()
 * from offset 0 (READ_PREAD: a kept fd); with READ_ONE_SHOT a read shorter
 * than asked ends it, without the read that would return 0. */
enum { READ_PREAD = 1, READ_ONE_SHOT = 2 };

static ssize_t read_whole(int fd, int how, char *buf, size_t bufsize)
{
	size_t len = 0;

	if (bufsize == 0)
		return -EINVAL;
	for (;;) {
		char extra;
		/* Once full, read one byte more to tell "exactly fits" from "cut". */
		char *dst = len < bufsize - 1 ? buf + len : &extra;
		size_t room = len < bufsize - 1 ? bufsize - 1 - len : 1;
		ssize_t r = how & READ_PREAD ? pread(fd, dst, room, (off_t)len) : read(fd, dst, room);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		if (dst == &extra)
			return -EFBIG;
		len += (size_t)r;
		if (how & READ_ONE_SHOT && (size_t)r < room)
			break;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

static ssize_t open_and_read(int dirfd, const char *name, int how, char *buf, size_t bufsize)
{
	ssize_t n;
	int fd;

	if (bufsize == 0)
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read_whole(fd, how, buf, bufsize);
	close(fd);
	return n;
}

ssize_t read_small_file_at(int dirfd, const char *name, char *buf, size_t bufsize)
{
	return open_and_read(dirfd, name, 0, buf, bufsize);
}

ssize_t read_one_shot_at(int dirfd, const char *name, char *buf, size_t bufsize)
{
	return open_and_read(dirfd, name, READ_ONE_SHOT, buf, bufsize);
}

ssize_t read_file_alloc(const char *path, size_t max, char **buf)
{
	size_t cap = 65536, len = 0;
	char *b = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	*buf = NULL;
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len + 1 >= cap || !b) {
			char *nb;

			if (b && cap > max) {
				err = -EFBIG;
				break;
			}
			if (b)
				cap *= 2;
			nb = realloc(b, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!err && len > max)
		err = -EFBIG;
	if (err) {
		free(b);
		return err;
	}
	b[len] = '\0';
	*buf = b;
	return (ssize_t)len;
}

ssize_t pread_one_shot(int fd, char *buf, size_t bufsize)
{
	return read_whole(fd, READ_PREAD | READ_ONE_SHOT, buf, bufsize);
}

ssize_t kept_file_read(struct kept_file *k, const char *path, char *buf, size_t bufsize)
{
	ssize_t n;

	if (!k->open) {
		k->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (k->fd < 0)
			return -errno;
		k->open = true;
	}
	n = pread_one_shot(k->fd, buf, bufsize);
	if (n < 0)
		kept_file_close(k);
	return n;
}

void kept_file_close(struct kept_file *k)
{
	if (k->open)
		close(k->fd);
	k->open = false;
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
