/* The prctl mode of every process, from a BPF task iterator. */
#include "prctl_iter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

static int rec_cmp(const void *a, const void *b)
{
	const struct prctl_iter_rec *x = a, *y = b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

int parse_prctl_iter_buf(const void *buf, size_t len, struct prctl_table *t)
{
	size_t n = len / sizeof(struct prctl_iter_rec);

	if (len % sizeof(struct prctl_iter_rec))
		return -EINVAL;
	if (GROW(t->rec, t->cap, n) < 0)
		return -ENOMEM;
	if (n) /* memcpy(NULL, …, 0) is undefined */
		memcpy(t->rec, buf, len);
	t->n = n;
	for (size_t i = 0; i < n; i++)
		if (t->rec[i].mode & ~(PRCTL_ITER_COMPLETELY | PRCTL_ITER_EXCEPT_ADVISED) || t->rec[i].tgid == 0 ||
		    t->rec[i].tgid > INT32_MAX) {
			t->n = 0;
			return -EINVAL;
		}
	/* The kernel walks by pid, but a pid can be reused during the walk. */
	if (n)
		qsort(t->rec, n, sizeof(*t->rec), rec_cmp);
	return 0;
}

bool prctl_table_find(const struct prctl_table *t, pid_t pid, enum thp_prctl *m)
{
	struct prctl_iter_rec key = {.tgid = (uint32_t)pid};
	const struct prctl_iter_rec *r;

	if (!t->n || pid <= 0)
		return false;
	r = bsearch(&key, t->rec, t->n, sizeof(*t->rec), rec_cmp);
	if (!r)
		return false;
	/* Both bits set cannot happen (prctl sets one, clears the other). */
	*m = (r->mode & PRCTL_ITER_COMPLETELY)       ? THP_PRCTL_COMPLETELY
	     : (r->mode & PRCTL_ITER_EXCEPT_ADVISED) ? THP_PRCTL_EXCEPT_ADVISED
						     : THP_PRCTL_NONE;
	return true;
}

void prctl_table_free(struct prctl_table *t)
{
	free(t->rec);
	memset(t, 0, sizeof(*t));
}

#ifdef HC_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_embedded.h"
#include "thp_prctl.skel.h"

struct prctl_iter {
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *link;
	char *buf;
	size_t cap;
};

int prctl_iter_usable(void)
{
	int fd;

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return -errno;
	/* bpf() allowed (privilege, the unit's SystemCallFilter): a one-entry
	 * array map costs a page, where loading the program parses the
	 * kernel's whole BTF. */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int prctl_iter_open(struct prctl_iter **out)
{
	struct prctl_iter *it = calloc(1, sizeof(*it));
	const void *elf;
	size_t len;
	int r;

	if (!it)
		return -ENOMEM;
	elf = thp_prctl_bpf__elf_bytes(&len);
	r = bpf_embedded_open(elf, len, "thp_prctl", &it->obj, &it->prog);
	if (r < 0)
		goto fail;
	r = bpf_object__load(it->obj);
	if (r < 0)
		goto fail;
	it->link = bpf_program__attach_iter(it->prog, NULL);
	if (!it->link) {
		r = -errno;
		goto fail;
	}
	*out = it;
	return 0;
fail:
	prctl_iter_close(it);
	return r < 0 ? r : -EIO;
}

void prctl_iter_close(struct prctl_iter *it)
{
	if (!it)
		return;
	bpf_link__destroy(it->link);
	bpf_object__close(it->obj);
	free(it->buf);
	free(it);
}

/* Reads an iterator link's records into t. */
static int read_link(struct prctl_iter *it, int link_fd, struct prctl_table *t)
{
	size_t len = 0;
	int fd = bpf_iter_create(link_fd), r = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (GROW(it->buf, it->cap, len + 65536) < 0) {
			r = -ENOMEM;
			break;
		}
		n = read(fd, it->buf + len, it->cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return r < 0 ? r : parse_prctl_iter_buf(it->buf, len, t);
}

int prctl_iter_read(struct prctl_iter *it, struct prctl_table *t)
{
	return read_link(it, bpf_link__fd(it->link), t);
}

int prctl_iter_read_pid(struct prctl_iter *it, pid_t pid, enum thp_prctl *m)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info info = {.task.pid = (__u32)pid};
	struct prctl_table t = {0};
	struct bpf_link *link;
	int r;

	opts.link_info = &info;
	opts.link_info_len = sizeof(info);
	link = bpf_program__attach_iter(it->prog, &opts);
	if (!link)
		return -errno;
	r = read_link(it, bpf_link__fd(link), &t);
	bpf_link__destroy(link);
	/* The kernel walked pid's tasks only, pid as our pid namespace sees
	 * it; the record holds the global tgid, which differs in a container:
	 * take the one record, do not match its pid. */
	if (r == 0 && t.n != 1)
		r = -ESRCH;
	if (r == 0 && !prctl_table_find(&t, (pid_t)t.rec[0].tgid, m))
		r = -ESRCH;
	prctl_table_free(&t);
	return r;
}
#else
struct prctl_iter {
	int unused;
};

int prctl_iter_usable(void)
{
	return -ENOSYS;
}

int prctl_iter_open(struct prctl_iter **out)
{
	(void)out;
	return -ENOSYS;
}

void prctl_iter_close(struct prctl_iter *it)
{
	(void)it;
}

int prctl_iter_read(struct prctl_iter *it, struct prctl_table *t)
{
	(void)it, (void)t;
	return -ENOSYS;
}

int prctl_iter_read_pid(struct prctl_iter *it, pid_t pid, enum thp_prctl *m)
{
	(void)it, (void)pid, (void)m;
	return -ENOSYS;
}
#endif
