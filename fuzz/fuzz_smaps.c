/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes parse_smaps_buf() and parse_vmflags(): any bytes, any length.
 * Besides crashes and leaks, checks what the header promises: every parsed
 * VMA has start < end and a NUL-terminated name inside the arena. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smaps_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vma_list l;

	vma_list_init(&l);
	/* Parse twice into the same list: the second pass appends, as a
	 * caller that reuses its list across processes would. */
	for (int pass = 0; pass < 2; pass++) {
		int r = parse_smaps_buf((const char *)data, size, &l);

		if (r != 0 && r != -EINVAL && r != -ENOMEM)
			abort();
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct vma *v = &l.v[i];
		const char *name = vma_name(&l, v);

		if (v->start >= v->end || v->kind > VMA_SPECIAL)
			abort();
		if (v->name_off &&
		    (!l.names || v->name_off >= l.names_len || v->name_off + strlen(name) >= l.names_len))
			abort();
		if (v->perms[4] != '\0')
			abort();
	}
	(void)parse_vmflags((const char *)data, size);
	vma_list_clear(&l);
	vma_list_free(&l);
	return 0;
}
