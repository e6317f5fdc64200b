/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzzes config_policy_for(), the cgroup path matcher, against a plain
 * restatement of its contract (config.h) for literal paths: the rule with
 * the longest path that equals the cgroup or is a whole-component prefix
 * of it, "/" matching everything, the defaults if none. Rule lines with a
 * wildcard ('*', '?', '[') are patterns, whose order test_config checks on
 * fixtures; here they must match only as fnmatch(3) says, and a pattern
 * config_check_pattern() accepts must never crash the matcher.
 *
 * Input: lines; the first is the cgroup as /proc/PID/cgroup gives it (any
 * bytes), the others are rule paths. Rules are normalized and made unique
 * first, as config_load() guarantees ("//a/./b/" -> "/a/b"). */
#include <fnmatch.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RULES 64

/* "x//y/" -> "/x/y", dropping "." and ".." components (config_load would
 * reject them; dropping keeps the input useful). */
static char *normalize(const char *s, size_t n)
{
	char *out = malloc(n + 2), *o = out;
	size_t i = 0;

	if (!out)
		abort();
	while (i < n) {
		size_t j = i;

		while (j < n && s[j] != '/')
			j++;
		if (j > i && !(j - i == 1 && s[i] == '.') && !(j - i == 2 && s[i] == '.' && s[i + 1] == '.')) {
			*o++ = '/';
			memcpy(o, s + i, j - i);
			o += j - i;
		}
		i = j + 1;
	}
	if (o == out)
		*o++ = '/';
	*o = '\0';
	return out;
}

static bool matches(const char *rule, const char *cgroup)
{
	size_t n = strlen(rule), m = strlen(cgroup);

	if (!strcmp(rule, "/"))
		return true;
	return m >= n && !memcmp(rule, cgroup, n) && (m == n || cgroup[n] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size, *nl;
	struct cgroup_rule rules[MAX_RULES];
	struct config c;
	const struct policy *got, *want;
	size_t best_len = 0, nrules = 0;
	char *cgroup;

	config_defaults(&c);
	nl = memchr(s, '\n', size);
	cgroup = strndup(s, (size_t)((nl ? nl : end) - s));
	if (!cgroup)
		abort();
	while (nl && nrules < MAX_RULES) {
		const char *line = nl + 1;
		char *path;
		bool dup = false;

		nl = memchr(line, '\n', (size_t)(end - line));
		/* strnlen: a NUL ends the path, as in a C string from a file. */
		path = normalize(line, strnlen(line, (size_t)((nl ? nl : end) - line)));
		for (size_t i = 0; i < nrules; i++)
			dup |= !strcmp(rules[i].path, path);
		if (dup) {
			free(path);
			continue;
		}
		if (strpbrk(path, "*?[") && config_check_pattern(path)) {
			free(path); /* config_load() refuses it */
			continue;
		}
		rules[nrules] = (struct cgroup_rule){.path = path, .policy = c.defaults};
		config_rule_init(&rules[nrules]);
		rules[nrules].policy.weight = (unsigned)nrules + 1; /* tells rules apart */
		nrules++;
	}
	c.rules = rules;
	c.nrules = nrules;

	want = &c.defaults;
	for (size_t i = 0; i < nrules; i++) {
		size_t n = strlen(rules[i].path);

		if (rules[i].glob) {
			/* A pattern matches as fnmatch says, never the root (its
			 * one component is empty), or not at all. */
			bool root = cgroup[0] == '/' && cgroup[1] == '\0';

			if (config_rule_matches(&rules[i], cgroup) !=
			    (cgroup[0] == '/' && !root &&
			     fnmatch(rules[i].path, cgroup, FNM_PATHNAME | FNM_NOESCAPE | FNM_LEADING_DIR) == 0))
				abort();
			continue;
		}
		if (matches(rules[i].path, cgroup) && n > best_len) {
			want = &rules[i].policy;
			best_len = n;
		}
	}
	got = config_policy_for(&c, cgroup);
	/* With a matching pattern in play the oracle is test_config's. */
	for (size_t i = 0; i < nrules; i++)
		if (rules[i].glob && config_rule_matches(&rules[i], cgroup))
			want = got;
	if (got != want)
		abort();

	for (size_t i = 0; i < nrules; i++)
		free(rules[i].path);
	c.rules = NULL;
	c.nrules = 0;
	config_free(&c);
	free(cgroup);
	return 0;
}
