/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup v2 mount from mountinfo, and cgroups that are gone. */
#include "cgroup2.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg.h"
#include "procfs.h"
#include "procs.h"

/* Copies the space-separated field at *p into out (NUL-terminated),
 * decoding mountinfo's \ooo escapes, and moves *p past it. */
static int take_field(const char **p, const char *end, char *out, size_t outlen)
{
	const char *s = *p, *e;
	int r;

	while (s < end && *s == ' ')
		s++;
	if (s >= end)
		return -EINVAL;
	for (e = s; e < end && *e != ' '; e++)
		;
	r = mountinfo_unescape(s, (size_t)(e - s), out, outlen);
	if (r == 0)
		*p = e;
	return r;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] -
 * FSTYPE SOURCE SUPEROPTS". Returns 1 for a cgroup2 mount (root and mnt
 * filled), 0 for another, -errno for a malformed cgroup2 line. */
static int parse_line(const char *p, const char *end, char *mnt, size_t mntlen, char *root, size_t rootlen)
{
	const char *sep = NULL;
	char skip[32];
	int r;

	/* " - " ends the optional fields; the first one is the separator
	 * (paths before it have their spaces escaped). */
	for (const char *q = p; q + 3 <= end; q++)
		if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
			sep = q + 3;
			break;
		}
	if (!sep || (size_t)(end - sep) < 8 || memcmp(sep, "cgroup2 ", 8) != 0)
		return 0;
	for (int i = 0; i < 3; i++) {
		r = take_field(&p, sep - 3, skip, sizeof(skip));
		if (r < 0)
			return -EINVAL;
	}
	r = take_field(&p, sep - 3, root, rootlen);
	if (r == 0)
		r = take_field(&p, sep - 3, mnt, mntlen);
	return r < 0 ? r : 1;
}

int parse_cgroup2_mount_buf(const char *buf, size_t len, char *mnt, size_t mntlen, char *root, size_t rootlen)
{
	const char *p = buf, *end = buf + len;
	int found = -ENOENT;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		char m[4096], rt[CGROUP2_ROOT_MAX];
		int r = parse_line(p, eol, m, sizeof(m), rt, sizeof(rt));

		if (r < 0 && found == -ENOENT)
			found = r;
		if (r == 1 && (found != 0 || strcmp(rt, "/") == 0)) {
			if ((size_t)snprintf(mnt, mntlen, "%s", m) >= mntlen ||
			    (size_t)snprintf(root, rootlen, "%s", rt) >= rootlen)
				return -ENAMETOOLONG;
			if (strcmp(rt, "/") == 0)
				return 0;
			found = 0;
		}
		p = eol + 1;
	}
	return found;
}

int cgroup2_open_dir(struct cgroup2_root *r, const char *dir, const char *root)
{
	r->fd = -1;
	if ((size_t)snprintf(r->root, sizeof(r->root), "%s", root) >= sizeof(r->root))
		return -ENAMETOOLONG;
	r->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return r->fd < 0 ? -errno : 0;
}

int cgroup2_open(struct cgroup2_root *r, const char *mountinfo)
{
	char *buf = NULL, mnt[4096], root[CGROUP2_ROOT_MAX];
	ssize_t n;
	int rc;

	r->fd = -1;
	n = read_file_alloc(mountinfo, MOUNTINFO_MAX_BYTES, &buf);
	rc = n < 0 ? (int)n : parse_cgroup2_mount_buf(buf, (size_t)n, mnt, sizeof(mnt), root, sizeof(root));
	free(buf);
	return rc < 0 ? rc : cgroup2_open_dir(r, mnt, root);
}

void cgroup2_close(struct cgroup2_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

int cgroup2_exists(const struct cgroup2_root *r, const char *path)
{
	size_t rl = strlen(r->root);
	const char *rel;
	struct stat st;

	if (r->fd < 0)
		return -ENOENT;
	if (path[0] != '/')
		return -EINVAL; /* "?": the engine could not read it */
	/* The mount shows the subtree at root: "/a/b" is at mnt/b if root is "/a". */
	if (rl > 1) {
		if (strncmp(path, r->root, rl) != 0 || (path[rl] != '/' && path[rl] != 0))
			return -EXDEV;
		path += rl;
	}
	rel = path + strspn(path, "/");
	if (fstatat(r->fd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	return S_ISDIR(st.st_mode) ? 1 : 0;
}

size_t cgroup_bytes_prune(struct cgroup_bytes *cg, size_t *n, const struct cgroup2_root *r)
{
	size_t kept = 0, total = *n;

	if (r->fd < 0)
		return 0;
	for (size_t i = 0; i < total; i++) {
		if (cgroup2_exists(r, cg[i].cgroup) == 0) {
			free(cg[i].cgroup);
			continue;
		}
		cg[kept++] = cg[i];
	}
	*n = kept;
	return total - kept;
}
