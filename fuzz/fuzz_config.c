/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes config_load(): the main file and the cgroup.d *.conf files through libinih.
 *
 * config.c has no buffer-level entry point (the strict line reader is fed
 * from a file), so the input is written to files in a private temp dir and
 * loaded with skip_owner_check. Input: the main file, then each cgroup.d
 * file, separated by form feeds ('\f', itself a control character the
 * parser rejects, so no input loses anything by it). Inputs that set
 * cgroup_dir are skipped: they would point the loader at arbitrary
 * directories of this machine, which makes runs depend on the host.
 * On success, checks the promises of config.h: rules sorted and normalized,
 * values in range, config_policy_for() answering from them. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CGROUP_FILES 8

static char dir[64], main_path[96], cg_dir[96];
static unsigned cg_written;

static void cg_file(unsigned i, char *out, size_t n)
{
	snprintf(out, n, "%s/%02u.conf", cg_dir, i);
}

static void cleanup(void)
{
	char p[128];

	for (unsigned i = 0; i < MAX_CGROUP_FILES; i++) {
		cg_file(i, p, sizeof(p));
		unlink(p);
	}
	unlink(main_path);
	rmdir(cg_dir);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc, (void)argv;
	/* tmpfs: on a disk, creating and unlinking files each run costs ~4 ms. */
	if (!tmp || strlen(tmp) >= 32)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/hc-fuzz-config.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(main_path, sizeof(main_path), "%s/main.conf", dir);
	snprintf(cg_dir, sizeof(cg_dir), "%s/cgroup.d", dir);
	if (mkdir(cg_dir, 0755) < 0) {
		perror("mkdir");
		abort();
	}
	atexit(cleanup);
	return 0;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n || close(fd) < 0) {
		perror(path);
		abort();
	}
}

static void check_policy(const struct policy *p)
{
	if (p->weight < 1 || p->weight > 10000 || p->budget_mb_per_s < 1 || p->limits.max_ptes_none >= HPAGE_PAGES ||
	    p->limits.max_ptes_swap >= HPAGE_PAGES || p->limits.max_ptes_shared >= HPAGE_PAGES ||
	    p->limits.min_referenced_pct > 100 || p->eagain_retries > 100)
		abort();
}

static void check_config(const struct config *c)
{
	check_policy(&c->defaults);
	if (!c->metrics_file || !c->cgroup_dir || c->khugepaged > KHUGEPAGED_OFF)
		abort();
	for (size_t i = 0; i < c->nrules; i++) {
		const char *p = c->rules[i].path;

		check_policy(&c->rules[i].policy);
		if (p[0] != '/' || strstr(p, "//") || (p[1] && p[strlen(p) - 1] == '/'))
			abort(); /* not normalized */
		if (i && strcmp(c->rules[i - 1].path, p) >= 0)
			abort(); /* not sorted, or a duplicate */
		/* A literal rule's own path picks that rule (the most specific
		 * match: a pattern never beats a literal path of the same depth).
		 * A pattern need not match itself ("/[ab]"), and another pattern
		 * may be more specific for its text. */
		if (!strpbrk(p, "*?[") && config_policy_for(c, p) != &c->rules[i].policy)
			abort();
	}
	if (config_policy_for(c, NULL) != &c->defaults)
		abort();
}

/* A line of the main file that starts, after blanks (and a BOM), with
 * the key cgroup_dir; only the main file may set it. */
static bool sets_cgroup_dir(const uint8_t *p, size_t n)
{
	static const char key[] = "cgroup_dir";
	const uint8_t *end = p + n;

	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;

		if (e - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
			p += 3;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(e - p) >= sizeof(key) - 1 && !memcmp(p, key, sizeof(key) - 1))
			return true;
		p = e + 1;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *p = data, *ff;
	char path[128], err[512];
	struct config c;
	unsigned n = 0;

	ff = memchr(p, '\f', size);
	if (sets_cgroup_dir(p, (size_t)((ff ? ff : end) - p)))
		return -1; /* not added to the corpus */
	for (unsigned i = 0; i < cg_written; i++) {
		cg_file(i, path, sizeof(path));
		unlink(path);
	}
	write_file(main_path, p, (size_t)((ff ? ff : end) - p));
	while (ff && n < MAX_CGROUP_FILES) {
		p = ff + 1;
		ff = memchr(p, '\f', (size_t)(end - p));
		cg_file(n++, path, sizeof(path));
		write_file(path, p, (size_t)((ff ? ff : end) - p));
	}
	cg_written = n;

	err[0] = '\0';
	if (config_load(main_path, false, true, &c, err, sizeof(err)) == 0) {
		check_config(&c);
		config_free(&c);
	} else if (!err[0]) {
		abort(); /* a failure must say why */
	}
	return 0;
}
