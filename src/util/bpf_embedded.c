/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening the BPF objects built into the binary; see the header. */
#include "bpf_embedded.h"

#ifdef HC_HAVE_BPF
#include <errno.h>
#include <string.h>

/* libbpf's own messages: the caller says what failed. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

int bpf_embedded_open(const void *elf, size_t len, const char *name, struct bpf_object **obj, struct bpf_program **prog)
{
	libbpf_set_print(quiet);
	*obj = bpf_object__open_mem(elf, len, NULL);
	if (!*obj)
		return errno ? -errno : -EIO;
	*prog = bpf_object__find_program_by_name(*obj, name);
	if (!*prog) {
		bpf_object__close(*obj);
		*obj = NULL;
		return -ENOENT;
	}
	return 0;
}

struct bpf_map *bpf_embedded_map(struct bpf_object *obj, const char *suffix)
{
	size_t ls = strlen(suffix);
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		const char *name = bpf_map__name(m);
		size_t ln = strlen(name);

		if (ln >= ls && !strcmp(name + ln - ls, suffix))
			return m;
	}
	return NULL;
}
#endif
