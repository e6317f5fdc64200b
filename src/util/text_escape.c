/* Control characters in names, escaped for text output (see the header). */
#include "text_escape.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

const char *text_escape(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	while (*s) {
		const unsigned char c = (unsigned char)*s;
		size_t len = utf8_seq_len(s);
		/* U+0080..U+009F: C2 80..C2 9F. */
		int esc = len == 0 || c < 0x20 || c == 0x7f || c == '\\' ||
			  (len == 2 && c == 0xc2 && (unsigned char)s[1] < 0xa0);

		if (esc) {
			if (o + 4 >= outlen)
				break;
			snprintf(out + o, 5, "\\x%02x", c);
			o += 4;
			s++;
			continue;
		}
		if (o + len >= outlen)
			break;
		memcpy(out + o, s, len);
		o += len;
		s += len;
	}
	out[o] = '\0';
	return out;
}
