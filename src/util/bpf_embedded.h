/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf_embedded: opening a BPF object built into the binary by a libbpf
 * skeleton (prctl_iter.h's iterator, fault_news.h's filter).
 *
 * Only the skeleton's embedded ELF bytes are used (NAME_bpf__elf_bytes()):
 * its generated helpers are libbpf's code, which our static analysis
 * should not judge. libbpf's own messages are silenced: the caller says
 * what failed, once, in the daemon's words. Needs HC_HAVE_BPF. */
#pragma once

#ifdef HC_HAVE_BPF
#include <stddef.h>

#include <bpf/libbpf.h>

/* Opens (does not load) the object and finds its program `name`: 0, or
 * -errno with *obj NULL. The caller closes *obj (bpf_object__close). */
int bpf_embedded_open(const void *elf, size_t len, const char *name, struct bpf_object **obj,
		      struct bpf_program **prog);

/* The object's internal map whose name ends with suffix (".bss",
 * ".rodata": libbpf prefixes part of the object's name), or NULL. */
struct bpf_map *bpf_embedded_map(struct bpf_object *obj, const char *suffix);
#endif
