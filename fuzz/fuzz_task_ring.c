/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_task_ring_buf() and task_events_reduce(): the first 16 bytes
 * pick tail and head, the rest is the ring (cut to a power of two).
 * Whatever it answers, it must not read out of bounds; every PID it returns
 * must be a valid one, and born and gone must be sorted, unique and
 * disjoint. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "task_ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sorted(const pid_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] <= 0 || (i && v[i - 1] >= v[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_events t = {0};
	pid_t *born = NULL, *gone = NULL;
	size_t nborn = 0, ngone = 0, capborn = 0, capgone = 0, ring = 1;
	uint64_t tail, head;
	uint8_t *buf;

	if (size < 16)
		return 0;
	memcpy(&tail, data, 8);
	memcpy(&head, data + 8, 8);
	data += 16;
	size -= 16;
	while (ring * 2 <= size)
		ring *= 2;
	buf = malloc(ring);
	if (!buf)
		abort();
	memcpy(buf, data, size ? ring : 0);
	if (parse_task_ring_buf(buf, size ? ring : 0, tail, head, &t) == 0 &&
	    task_events_reduce(&t, &born, &nborn, &capborn, &gone, &ngone, &capgone) == 0) {
		check_sorted(born, nborn);
		check_sorted(gone, ngone);
		for (size_t i = 0, j = 0; i < nborn && j < ngone;) {
			if (born[i] == gone[j])
				abort();
			born[i] < gone[j] ? i++ : j++;
		}
	}
	free(born);
	free(gone);
	task_events_free(&t);
	free(buf);
	return 0;
}
