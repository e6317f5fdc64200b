/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics_label: a label value of the Prometheus text format, for every
 * writer of the metrics file (metrics.c, coverage_metrics.c). */
#pragma once
#include <stdio.h>

/* Writes s as a label value (no quotes): backslash, double quote and
 * newline escaped, and each byte that starts no valid UTF-8 sequence as
 * U+FFFD (metrics_label.c). */
void metrics_label_value(FILE *f, const char *s);
