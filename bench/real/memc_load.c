/* bench_memc_load: a memcached client that fills, loads and verifies.
 *
 *   bench_memc_load (--port P | --socket PATH) --keys N --value-size S --fill
 *   bench_memc_load (--port P | --socket PATH) --keys N --value-size S --verify
 *   bench_memc_load (--port P | --socket PATH) --keys N --value-size S --seconds T [--set-pct 10]
 *
 * Keys are "k%010u" for 0 <= i < N; the value of key i is S bytes that a
 * function of i alone gives, so every value read back can be checked without
 * remembering it, and a set of the same key writes the same bytes again (the
 * data set does not change under the load).
 *   --fill    sets every key (pipelined, noreply), then one round trip
 *   --verify  gets every key (multi-get, 100 keys a request); prints
 *             "verify N errors E" (a miss or a wrong byte is an error)
 *   --seconds random keys for T seconds, one request at a time: set-pct% sets,
 *             the rest gets, each value checked; prints
 *             "ops_per_s X p99_us X max_us X errors E"
 * Exit status 0 when it could talk to the server (errors are printed, not
 * fatal: the caller reports them); 1 on a connection or protocol failure. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../bench_util.h"

#define MAX_VALUE 65536
#define MULTI     100

static int fd = -1;
static char rbuf[1 << 20];
static size_t rlen, rpos;

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The value of key i: printable, so a protocol dump stays readable. */
static void value_of(uint32_t i, char *v, size_t n)
{
	uint64_t s = splitmix(i);

	for (size_t j = 0; j < n; j++) {
		if ((j & 7) == 0)
			s = splitmix(s);
		v[j] = (char)('a' + ((s >> ((j & 7) * 8)) & 0xff) % 26);
	}
}

static int send_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fill_rbuf(void)
{
	ssize_t r;

	if (rpos == rlen)
		rpos = rlen = 0;
	if (rpos > 0 && rlen == sizeof(rbuf)) {
		memmove(rbuf, rbuf + rpos, rlen - rpos);
		rlen -= rpos;
		rpos = 0;
	}
	do
		r = read(fd, rbuf + rlen, sizeof(rbuf) - rlen);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	rlen += (size_t)r;
	return 0;
}

/* One line without its \r\n into line (at most cap - 1 bytes). */
static int read_line(char *line, size_t cap)
{
	for (;;) {
		char *nl = memchr(rbuf + rpos, '\n', rlen - rpos);

		if (nl) {
			size_t n = (size_t)(nl - (rbuf + rpos));

			if (n && rbuf[rpos + n - 1] == '\r')
				n--;
			if (n >= cap)
				return -1;
			memcpy(line, rbuf + rpos, n);
			line[n] = 0;
			rpos = (size_t)(nl - rbuf) + 1;
			return 0;
		}
		if (fill_rbuf() < 0)
			return -1;
	}
}

static int read_bytes(char *out, size_t n)
{
	while (n) {
		size_t k;

		if (rpos == rlen && fill_rbuf() < 0)
			return -1;
		k = rlen - rpos < n ? rlen - rpos : n;
		memcpy(out, rbuf + rpos, k);
		rpos += k;
		out += k;
		n -= k;
	}
	return 0;
}

/* Reads one get reply (VALUE lines, then END); for each value, checks it
 * against its key's. Returns the number of keys seen, or -1. */
static long read_get_reply(size_t vsize, long *errors)
{
	static char data[MAX_VALUE + 2], want[MAX_VALUE];
	char line[256], key[64];
	long seen = 0;
	unsigned flags;
	size_t bytes;

	for (;;) {
		if (read_line(line, sizeof(line)) < 0)
			return -1;
		if (strcmp(line, "END") == 0)
			return seen;
		if (sscanf(line, "VALUE %63s %u %zu", key, &flags, &bytes) != 3 || bytes > MAX_VALUE)
			return -1;
		if (read_bytes(data, bytes + 2) < 0)
			return -1;
		seen++;
		value_of((uint32_t)strtoul(key + 1, NULL, 10), want, vsize);
		if (bytes != vsize || memcmp(data, want, vsize) != 0)
			(*errors)++;
	}
}

static int do_fill(uint32_t n, size_t vsize)
{
	static char buf[1 << 20], v[MAX_VALUE];
	size_t len = 0;
	char line[64];

	for (uint32_t i = 0; i < n; i++) {
		if (len + vsize + 128 > sizeof(buf)) {
			if (send_all(buf, len) < 0)
				return -1;
			len = 0;
		}
		value_of(i, v, vsize);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "set k%010u 0 0 %zu noreply\r\n", i, vsize);
		memcpy(buf + len, v, vsize);
		len += vsize;
		memcpy(buf + len, "\r\n", 2);
		len += 2;
	}
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "version\r\n");
	if (send_all(buf, len) < 0 || read_line(line, sizeof(line)) < 0 || strncmp(line, "VERSION", 7) != 0)
		return -1;
	printf("filled %u\n", n);
	return 0;
}

static int do_verify(uint32_t n, size_t vsize)
{
	char req[MULTI * 16 + 16];
	long errors = 0, seen_all = 0;

	for (uint32_t i = 0; i < n; i += MULTI) {
		size_t len = (size_t)snprintf(req, sizeof(req), "get");
		uint32_t k = 0;
		long seen;

		for (; k < MULTI && i + k < n; k++)
			len += (size_t)snprintf(req + len, sizeof(req) - len, " k%010u", i + k);
		memcpy(req + len, "\r\n", 2);
		if (send_all(req, len + 2) < 0 || (seen = read_get_reply(vsize, &errors)) < 0)
			return -1;
		errors += k - seen; /* misses */
		seen_all += seen;
	}
	printf("verify %u found %ld errors %ld\n", n, seen_all, errors);
	return 0;
}

static int do_load(uint32_t n, size_t vsize, double seconds, unsigned set_pct)
{
	static char buf[MAX_VALUE + 128], v[MAX_VALUE];
	size_t cap = 1 << 20, count = 0;
	double *lat = malloc(cap * sizeof(*lat)), t_end, t_start;
	uint64_t rng = 0x12345678;
	long errors = 0;
	char line[64];

	if (!lat)
		return -1;
	t_start = now_s();
	t_end = t_start + seconds;
	for (;;) {
		double t0 = now_s(), t1;
		uint32_t i;
		size_t len;

		if (t0 >= t_end)
			break;
		rng = splitmix(rng);
		i = (uint32_t)(rng % n);
		if ((rng >> 40) % 100 < set_pct) {
			value_of(i, v, vsize);
			len = (size_t)snprintf(buf, sizeof(buf), "set k%010u 0 0 %zu\r\n", i, vsize);
			memcpy(buf + len, v, vsize);
			memcpy(buf + len + vsize, "\r\n", 2);
			if (send_all(buf, len + vsize + 2) < 0 || read_line(line, sizeof(line)) < 0)
				return -1;
			if (strcmp(line, "STORED") != 0)
				errors++;
		} else {
			long seen;

			len = (size_t)snprintf(buf, sizeof(buf), "get k%010u\r\n", i);
			if (send_all(buf, len) < 0 || (seen = read_get_reply(vsize, &errors)) < 0)
				return -1;
			if (seen != 1)
				errors++;
		}
		t1 = now_s();
		if (count == cap) {
			double *l = realloc(lat, 2 * cap * sizeof(*lat));

			if (!l)
				return -1;
			lat = l;
			cap *= 2;
		}
		lat[count++] = (t1 - t0) * 1e6;
	}
	if (!count)
		return -1;
	qsort(lat, count, sizeof(*lat), cmp_double);
	printf("ops_per_s %.0f p99_us %.0f max_us %.0f errors %ld\n", (double)count / (now_s() - t_start),
	       lat[(size_t)((double)count * 0.99)], lat[count - 1], errors);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"port", required_argument, NULL, 'p'},
	    {"keys", required_argument, NULL, 'n'},
	    {"value-size", required_argument, NULL, 's'},
	    {"seconds", required_argument, NULL, 't'},
	    {"set-pct", required_argument, NULL, 'w'},
	    {"fill", no_argument, NULL, 'f'},
	    {"verify", no_argument, NULL, 'v'},
	    {"socket", required_argument, NULL, 'u'},
	    {NULL, 0, NULL, 0},
	};
	unsigned port = 11211, set_pct = 10;
	uint32_t n = 0;
	size_t vsize = 100;
	double seconds = 0;
	int mode = 0, c, one = 1, rc;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	const char *path = NULL;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			n = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			vsize = strtoul(optarg, NULL, 10);
			break;
		case 't':
			seconds = strtod(optarg, NULL);
			mode = 't';
			break;
		case 'w':
			set_pct = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'u':
			path = optarg;
			break;
		case 'f':
		case 'v':
			mode = c;
			break;
		default:
			return 2;
		}
	}
	if (!mode || !n || !vsize || vsize > MAX_VALUE || port > 65535 || set_pct > 100 ||
	    (path && strlen(path) >= sizeof(su.sun_path))) {
		fprintf(stderr,
			"usage: bench_memc_load --port P --keys N --value-size S (--fill | --verify | --seconds T)\n");
		return 2;
	}
	if (path) {
		strcpy(su.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&su, sizeof(su));
	} else {
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		if (rc == 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (rc < 0) {
		perror("bench_memc_load: connect");
		return 1;
	}
	rc = mode == 'f' ? do_fill(n, vsize) : mode == 'v' ? do_verify(n, vsize) : do_load(n, vsize, seconds, set_pct);
	if (rc < 0) {
		fprintf(stderr, "bench_memc_load: connection or protocol failure\n");
		return 1;
	}
	return 0;
}
