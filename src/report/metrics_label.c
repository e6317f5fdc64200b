/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Label values of the metrics file. */
#include "metrics_label.h"

#include "utf8.h"

/* A label value as the text format requires: backslash, double quote and
 * newline escaped (\\ \" \n), and UTF-8, so each byte of s that starts
 * no valid sequence (a cgroup name may hold any byte but NUL, '/' and
 * newline, which cgroupfs refuses: it is escaped all the same) is written
 * as U+FFFD. Names that differ only there print the same: see
 * cgroup_series() in metrics.c. */
void metrics_label_value(FILE *f, const char *s)
{
	while (*s) {
		size_t l = utf8_seq_len(s);

		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!l)
			fputs(UTF8_REPLACEMENT, f);
		else
			fwrite(s, 1, l, f);
		s += l ? l : 1;
	}
}
