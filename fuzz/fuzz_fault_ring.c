/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_fault_ring_buf(): the first 16 bytes pick tail and head, the
 * rest is the ring (cut to a power of two). Whatever it answers, it must
 * not read out of bounds, every PID it returns must be a valid one, and the
 * per-PID counts must add up to the samples read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fault_ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fault_pids p = {0};
	uint64_t tail, head;
	size_t ring = 1;
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
	/* Keep the span small enough to matter: far heads are refused anyway. */
	if (parse_fault_ring_buf(buf, size ? ring : 0, tail, head, &p) == 0) {
		uint64_t sum = 0;

		fault_pids_finish(&p);
		for (size_t i = 0; i < p.n; i++) {
			if (p.pid[i] <= 0 || (i && p.pid[i - 1] >= p.pid[i]) || p.count[i] == 0)
				abort();
			sum += p.count[i];
		}
		/* Every sample names one PID, counted once (unless lost). */
		if (!p.lost && sum != p.samples)
			abort();
	}
	fault_pids_free(&p);
	free(buf);
	return 0;
}
