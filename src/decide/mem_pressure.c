/* Host memory pressure: PSI and the zone watermarks (see the header). */
#include "mem_pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

static ssize_t pread_all(int fd, char *buf, size_t size);

/* "avg10=12.34": the value after key= up to a space; 0 or -EINVAL. */
static int psi_field(const char *line, size_t len, const char *key, double *out)
{
	size_t klen = strlen(key);
	char num[32];

	for (size_t i = 0; i + klen <= len; i++) {
		if ((i == 0 || line[i - 1] == ' ') && !memcmp(line + i, key, klen)) {
			size_t j = i + klen, n = 0;
			char *end;

			while (j < len && line[j] != ' ' && n < sizeof(num) - 1)
				num[n++] = line[j++];
			num[n] = 0;
			if (!n || (j < len && line[j] != ' '))
				return -EINVAL;
			*out = strtod(num, &end);
			if (*end || *out < 0 || *out > 100)
				return -EINVAL;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_psi_memory_buf(const char *buf, size_t len, struct psi_memory *out)
{
	const char *end = buf + len;
	bool some = false;

	memset(out, 0, sizeof(*out));
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		size_t l = (size_t)(eol - line);

		if (l > 5 && !memcmp(line, "some ", 5)) {
			if (psi_field(line + 5, l - 5, "avg10=", &out->some_avg10) < 0)
				return -EINVAL;
			some = true;
		} else if (l > 5 && !memcmp(line, "full ", 5)) {
			if (psi_field(line + 5, l - 5, "avg10=", &out->full_avg10) < 0)
				return -EINVAL;
			out->have_full = true;
		}
		line = eol + 1;
	}
	return some ? 0 : -ENOENT;
}

/* After leading spaces, "key" then spaces then a number. */
static int zone_value(const char *line, size_t len, const char *key, uint64_t *v)
{
	size_t i = 0, klen = strlen(key);

	while (i < len && line[i] == ' ')
		i++;
	if (i == 0 || len - i <= klen || memcmp(line + i, key, klen) || line[i + klen] != ' ')
		return -ENOENT;
	i += klen;
	while (i < len && line[i] == ' ')
		i++;
	return parse_dec_u64(line + i, len - i, v) < 0 ? -EINVAL : 0;
}

/* Node 0, zone   Normal
 *   pages free     83937
 *         boost    0
 *         min      8838
 *         low      11047
 *         high     13256 */
int parse_zoneinfo_buf(const char *buf, size_t len, uint64_t *free_pages, uint64_t *high_pages)
{
	const char *end = buf + len;
	uint64_t fsum = 0, hsum = 0, v;
	unsigned zones = 0;
	bool in_zone = false;

	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		size_t l = (size_t)(eol - line);
		int r;

		if (l >= 5 && !memcmp(line, "Node ", 5)) {
			in_zone = true;
			zones++;
		} else if (in_zone && (r = zone_value(line, l, "pages free", &v)) != -ENOENT) {
			if (r < 0)
				return r;
			fsum += v;
		} else if (in_zone && (r = zone_value(line, l, "high", &v)) != -ENOENT) {
			if (r < 0)
				return r;
			hsum += v;
			in_zone = false; /* the next "high" is a later zone's */
		}
		line = eol + 1;
	}
	if (!zones)
		return -ENOENT;
	*free_pages = fsum;
	*high_pages = hsum;
	return 0;
}

const char *mem_pressure_sign_name(enum mem_pressure_sign s)
{
	static const char *const n[] = {"none", "psi_some", "psi_full", "watermark"};

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "unknown";
}

enum mem_pressure_sign mem_pressure_decide(const struct mem_pressure_limits *l, const struct psi_memory *psi,
					   const uint64_t *free_pages, const uint64_t *high_pages)
{
	if (psi && l->full_pct && psi->have_full && psi->full_avg10 >= l->full_pct)
		return MEM_PRESSURE_PSI_FULL;
	if (psi && l->some_pct && psi->some_avg10 >= l->some_pct)
		return MEM_PRESSURE_PSI_SOME;
	if (free_pages && high_pages && *free_pages < *high_pages + l->free_margin_pages)
		return MEM_PRESSURE_WATERMARK;
	return MEM_PRESSURE_NONE;
}

void mem_pressure_init(struct mem_pressure *m)
{
	memset(m, 0, sizeof(*m));
	m->psi_fd = m->zone_fd = -1;
	m->checked = -1e9;
}

void mem_pressure_close(struct mem_pressure *m)
{
	if (m->psi_fd >= 0)
		close(m->psi_fd);
	if (m->zone_fd >= 0)
		close(m->zone_fd);
	m->psi_fd = m->zone_fd = -1;
	m->opened = false;
	free(m->buf);
	m->buf = NULL;
	m->cap = 0;
}

#define READ_MAX (64u << 20)

/* The whole file at fd into m->buf, growing it; length or -errno. */
static ssize_t read_whole(struct mem_pressure *m, int fd)
{
	for (;;) {
		ssize_t n;

		if (!m->buf || m->cap == 0) {
			m->buf = malloc(65536);
			if (!m->buf)
				return -ENOMEM;
			m->cap = 65536;
		}
		n = pread_all(fd, m->buf, m->cap);
		if (n != -EFBIG || m->cap >= READ_MAX)
			return n;
		char *nb = realloc(m->buf, m->cap * 4);
		if (!nb)
			return -ENOMEM;
		m->buf = nb;
		m->cap *= 4;
	}
}

/* pread into buf; length, or -errno (-EFBIG: did not fit). */
static ssize_t pread_all(int fd, char *buf, size_t size)
{
	ssize_t n;

	do
		n = pread(fd, buf, size, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == size ? -EFBIG : n;
}

enum mem_pressure_sign mem_pressure_check(struct mem_pressure *m, const char *proc_root,
					  const struct mem_pressure_limits *l, double now, double (*clock)(void))
{
	bool psi_ok = false, zone_ok = false;
	double t0;
	ssize_t n;

	if (now - m->checked < MEM_PRESSURE_CHECK_S)
		return m->sign;
	m->checked = now;
	t0 = clock ? clock() : 0;
	if (!m->opened) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/pressure/memory", proc_root);
		m->psi_fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/zoneinfo", proc_root);
		m->zone_fd = open(path, O_RDONLY | O_CLOEXEC);
		m->opened = true;
	}
	if (m->psi_fd >= 0 && (l->some_pct || l->full_pct)) {
		n = read_whole(m, m->psi_fd);
		psi_ok = n >= 0 && parse_psi_memory_buf(m->buf, (size_t)n, &m->psi) == 0;
	}
	if (m->zone_fd >= 0) {
		n = read_whole(m, m->zone_fd);
		zone_ok = n >= 0 && parse_zoneinfo_buf(m->buf, (size_t)n, &m->free_pages, &m->high_pages) == 0;
	}
	m->sign = mem_pressure_decide(l, psi_ok ? &m->psi : NULL, zone_ok ? &m->free_pages : NULL,
				      zone_ok ? &m->high_pages : NULL);
	if (clock)
		m->read_s += clock() - t0;
	m->reads++;
	return m->sign;
}
