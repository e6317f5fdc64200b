/* Fuzzes parse_tmpfs_mountinfo_buf() and tmpfs_mounts_apply(): any bytes as
 * a mountinfo, in a buffer of exactly their size (so ASan sees a read past
 * the end). The table comes out sorted and unique, every tmpfs huge= is one
 * of the four modes, and a VMA on a tmpfs device becomes mount shmem. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thp_policy.h"
#include "tmpfs_mounts.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tmpfs_mounts t = {.fd = -1};
	char *buf = malloc(size ? size : 1);
	struct vma v = {.start = 0, .end = HPAGE_SIZE, .kind = VMA_FILE, .mount_huge = VMA_HUGE_UNKNOWN};
	struct vma_list l = {.v = &v, .n = 1, .cap = 1};

	if (!buf)
		abort();
	if (size)
		memcpy(buf, data, size);
	if (parse_tmpfs_mountinfo_buf(buf, size, &t) == 0) {
		for (size_t i = 0; i < t.n; i++) {
			if (i && t.d[i - 1].dev >= t.d[i].dev)
				abort();
			if (t.d[i].dev >> 32)
				abort(); /* only major 0 */
			if (t.d[i].tmpfs && t.d[i].huge != SHMEM_NEVER && t.d[i].huge != SHMEM_ADVISE &&
			    t.d[i].huge != SHMEM_WITHIN_SIZE && t.d[i].huge != SHMEM_ALWAYS)
				abort();
		}
		if (t.n) {
			v.dev_minor = (uint32_t)t.d[0].dev;
			tmpfs_mounts_apply(&t, &l);
			if (t.d[0].tmpfs != (v.kind == VMA_SHMEM && v.shmem_src == SHMEM_SRC_MOUNT))
				abort();
		}
	}
	free(t.d);
	free(buf);
	return 0;
}
