/* SPDX-License-Identifier: GPL-2.0-or-later */
/* utf8: where a byte string stops being valid UTF-8, and a copy with the
 * invalid bytes replaced. Pure but for that copy's malloc().
 *
 * Names that reach our text outputs (cgroup paths, comm) are whatever bytes
 * their owner chose; JSON and the Prometheus text format both require UTF-8.
 * Writers replace each byte that does not start a valid sequence with U+FFFD,
 * as a decoder following the Unicode "maximal subpart" practice would do
 * byte by byte. */
#pragma once
#include <stddef.h>

/* The UTF-8 encoding of U+FFFD REPLACEMENT CHARACTER. */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Length (1-4) of the valid UTF-8 sequence that starts at s, or 0 if the
 * byte at s starts none: a stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF, or a sequence cut short (by NUL
 * or by the end of the string). s points into a NUL-terminated string;
 * *s must not be NUL. */
size_t utf8_seq_len(const char *s);

/* The same for the n bytes at s (n >= 1), which need no NUL: 0 as well if
 * the sequence would run past them. */
size_t utf8_seq_len_n(const char *s, size_t n);

/* True if every byte of the NUL-terminated s is in a valid sequence. */
int utf8_valid(const char *s);

/* A malloc()ed copy of s with UTF8_REPLACEMENT for each byte that starts
 * no valid sequence: the name as the text outputs print it. NULL if out of
 * memory. */
char *utf8_replaced_dup(const char *s);
