/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_khugepaged_state_buf(): any bytes, in a buffer of exactly
 * their size (so ASan sees a read past the end). An accepted record must
 * name only knobs the daemon writes, each once, with a value that is not the
 * daemon's own, and must read back the same after formatting: the daemon
 * writes these originals to sysfs, so nothing else may get through. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "khugepaged_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct khugepaged_saved rec, again;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), err[256], text[KHUGEPAGED_STATE_MAX];
	int len;

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	memset(&rec, 0, sizeof(rec));
	if (parse_khugepaged_state_buf(buf, size, &rec, err, sizeof(err)) == 0) {
		if (rec.n > KHUGEPAGED_MAX_SAVED || (rec.mode != KHUGEPAGED_IDLE && rec.mode != KHUGEPAGED_OFF))
			abort();
		for (size_t i = 0; i < rec.n; i++) {
			const char *ours = khugepaged_knob_target(rec.saved[i].file);

			if (!ours || !strcmp(ours, rec.saved[i].value) || !rec.saved[i].value[0] ||
			    strpbrk(rec.saved[i].value, "\n=/ "))
				abort();
			for (size_t j = 0; j < i; j++)
				if (!strcmp(rec.saved[i].file, rec.saved[j].file))
					abort();
		}
		len = khugepaged_state_format(&rec, text, sizeof(text));
		memset(&again, 0, sizeof(again));
		if (len < 0 || parse_khugepaged_state_buf(text, (size_t)len, &again, err, sizeof(err)) != 0 ||
		    again.n != rec.n || again.mode != rec.mode || memcmp(again.saved, rec.saved, sizeof(rec.saved)))
			abort();
	}
	free(buf);
	return 0;
}
