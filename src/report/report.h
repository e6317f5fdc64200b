/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report: print a pass as text (in the spirit of the kernel's
 * tools/mm/thpmaps) or as JSON. Output only; no decisions. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "engine_stats.h"

/* Per process (dry run): blocks counted by result and candidates in collapse
 * order with their scores; then the pass summary. */
void report_text(FILE *f, const struct engine_stats *e, const struct pass_options *o, const struct pass_stats *ps,
		 bool per_process);
void report_json(FILE *f, const struct engine_stats *e, const struct pass_options *o, const struct pass_stats *ps,
		 bool per_process);

/* Writes s as a JSON string literal: quote, backslash and control bytes
 * escaped, each byte that starts no valid UTF-8 sequence as \ufffd. */
void json_string(FILE *f, const char *s);
