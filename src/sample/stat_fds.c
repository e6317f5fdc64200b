/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/stat fds kept between passes; see the header. */
#include "stat_fds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

void stat_fds_init(struct stat_fds *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < STAT_FDS_MAX; i++)
		c->e[i].fd = -1;
}

static void drop(struct stat_fd *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->used = 0;
}

/* The slot of pid, or NULL. STAT_FDS_MAX is small: a scan beats a map. */
static struct stat_fd *find(struct stat_fds *c, pid_t pid)
{
	for (size_t i = 0; i < STAT_FDS_MAX; i++)
		if (c->e[i].used && c->e[i].pid == pid)
			return &c->e[i];
	return NULL;
}

/* A free slot, or the least recently read one, emptied. */
static struct stat_fd *victim(struct stat_fds *c)
{
	struct stat_fd *v = &c->e[0];

	for (size_t i = 0; i < STAT_FDS_MAX && v->used; i++)
		if (c->e[i].used < v->used)
			v = &c->e[i];
	drop(v);
	return v;
}

ssize_t stat_fds_read(struct stat_fds *c, int rootfd, pid_t pid, char *buf, size_t bufsize)
{
	struct stat_fd *s = find(c, pid);
	char name[32];
	ssize_t n;
	int fd;

	if (s) {
		n = pread_one_shot(s->fd, buf, bufsize);
		if (n >= 0) {
			s->used = ++c->clock;
			c->hits++;
			return n;
		}
		drop(s); /* exited (-ESRCH), or anything else: open afresh */
	}
	snprintf(name, sizeof(name), "%d/stat", (int)pid);
	fd = openat(rootfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	c->opens++;
	n = pread_one_shot(fd, buf, bufsize);
	if (n < 0) {
		close(fd);
		return n;
	}
	s = victim(c);
	s->pid = pid;
	s->fd = fd;
	s->used = ++c->clock;
	return n;
}

void stat_fds_close(struct stat_fds *c)
{
	for (size_t i = 0; i < STAT_FDS_MAX; i++)
		drop(&c->e[i]);
}
