/* text_escape: names as the text outputs print them to a terminal.
 *
 * comm (any user sets it with PR_SET_NAME) and cgroup names are bytes their
 * owner chose; raw, an ESC or CSI in them drives the terminal of whoever
 * reads --dry-run or --status output. Every C0 control, DEL, C1 control
 * (U+0080..U+009F), backslash and byte that starts no valid UTF-8 sequence
 * is written as \xNN; everything else is copied. Pure. */
#pragma once
#include <stddef.h>

/* Room for the escape of n bytes: 4 per byte, and the NUL. */
#define TEXT_ESCAPE_SIZE(n) (4 * (n) + 1)

/* Writes the escape of the NUL-terminated s into out (outlen >= 1 bytes,
 * always NUL-terminated, cut before an escape or a sequence that does not
 * fit). Returns out. */
const char *text_escape(const char *s, char *out, size_t outlen);
