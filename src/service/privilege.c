/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Capability checks, so a missing privilege is one clear message up front
 * rather than a trickle of EPERMs mid-pass. */
#include "privilege.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procfs.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*   CapEff:	000001fffeffffff
 * Exactly what the kernel prints: 1 to 16 hex digits after blanks. strtoull
 * alone would also take a sign ("-1" reads as every capability), "0x", and
 * stop at a NUL byte without a word. */
int parse_cap_eff(const char *buf, size_t len, uint64_t *caps)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l > 7 && !memcmp(p, "CapEff:", 7)) {
			uint64_t v = 0;
			size_t i = 7, digits;

			while (i < l && (p[i] == ' ' || p[i] == '\t'))
				i++;
			digits = l - i;
			if (digits == 0 || digits > 16)
				return -EINVAL;
			for (; i < l; i++) {
				int d = hex_digit(p[i]);

				if (d < 0)
					return -EINVAL;
				v = v << 4 | (uint64_t)d;
			}
			*caps = v;
			return 0;
		}
		p += l + 1;
	}
	return -EINVAL;
}

int check_privileges(bool will_collapse, char *msg, size_t msglen)
{
	static const struct {
		int cap;
		const char *name, *why;
		bool collapse_only;
	} need[] = {
	    {HC_CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "PFNs in /proc/PID/pagemap and /proc/kpageflags", false},
	    {HC_CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "ptrace read access to other processes' pagemap", false},
	    {HC_CAP_SYS_NICE, "CAP_SYS_NICE", "process_madvise(MADV_COLLAPSE) on other processes", true},
	};
	char buf[16384];
	uint64_t caps = 0;
	size_t off = 0;
	ssize_t n;

	n = read_small_file_at(-1, "/proc/self/status", buf, sizeof(buf));
	if (n < 0 || parse_cap_eff(buf, (size_t)n, &caps) < 0) {
		snprintf(msg, msglen, "cannot read the capability set from /proc/self/status");
		return -EPERM;
	}
	msg[0] = 0;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if ((caps >> need[i].cap) & 1 || (need[i].collapse_only && !will_collapse))
			continue;
		off += (size_t)snprintf(msg + off, off < msglen ? msglen - off : 0, "%smissing %s (needed for %s)",
					off ? "; " : "", need[i].name, need[i].why);
	}
	return off ? -EPERM : 0;
}
