/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_status_buf() (and through it parse_prom_sample_buf()) on
 * any bytes in a buffer of exactly their size, then prints what it kept as
 * tables and JSON: every kept name is NUL-terminated and within bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	struct status st;
	FILE *null;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	if (parse_status_buf(buf, size, &st) == 0) {
		if (st.ncg > STATUS_MAX_CGROUPS || st.nproc > STATUS_MAX_PROCESSES || st.nresult > STATUS_MAX_COUNTS ||
		    st.noutcome > STATUS_MAX_COUNTS)
			abort();
		for (size_t i = 0; i < st.ncg; i++)
			if (strnlen(st.cg[i].cgroup, PROM_VALUE_MAX) == PROM_VALUE_MAX)
				abort();
		null = fopen("/dev/null", "w");
		if (null) {
			status_print_summary(null, &st, "x", PRODUCER_RUNNING, 0, 0);
			status_print_tables(null, &st);
			status_print_json(null, &st, "x", PRODUCER_GONE, 0, 0);
			fclose(null);
		}
		status_free(&st);
	}
	free(buf);
	return 0;
}
