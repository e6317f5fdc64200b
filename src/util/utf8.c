/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTF-8 validation (RFC 3629, Unicode table 3-7 of well-formed sequences). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static int cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_seq_len_n(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && cont(s[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* E0: no overlong (A0..BF); ED: no surrogates (80..9F). */
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		return n >= 3 && s[1] >= lo && s[1] <= hi && cont(s[2]) ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		/* F0: no overlong (90..BF); F4: nothing above U+10FFFF (80..8F). */
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		return n >= 4 && s[1] >= lo && s[1] <= hi && cont(s[2]) && cont(s[3]) ? 4 : 0;
	}
	return 0; /* 80..C1 (continuation, overlong lead), F5..FF */
}

size_t utf8_seq_len(const char *s)
{
	/* A NUL is no continuation byte: a sequence it cuts is invalid either
	 * way, and strnlen() keeps the reads inside the string. */
	return utf8_seq_len_n(s, strnlen(s, 4));
}

int utf8_valid(const char *s)
{
	while (*s) {
		size_t l = utf8_seq_len(s);

		if (!l)
			return 0;
		s += l;
	}
	return 1;
}

char *utf8_replaced_dup(const char *s)
{
	size_t n = 0;
	char *out, *o;

	for (const char *p = s; *p;) {
		size_t l = utf8_seq_len(p);

		n += l ? l : sizeof(UTF8_REPLACEMENT) - 1;
		p += l ? l : 1;
	}
	out = o = malloc(n + 1);
	if (!out)
		return NULL;
	for (const char *p = s; *p;) {
		size_t l = utf8_seq_len(p);
		const char *from = l ? p : UTF8_REPLACEMENT;
		size_t k = l ? l : sizeof(UTF8_REPLACEMENT) - 1;

		memcpy(o, from, k);
		o += k;
		p += l ? l : 1;
	}
	*o = 0;
	return out;
}
