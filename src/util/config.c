/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config: the main file and cgroup.d policy files, parsed strictly with libinih.
 *
 * libinih does the key = value splitting, but it is fed through our own line
 * reader (ini_parse_stream), which is where the strictness lives: the reader
 * counts lines for messages, rejects NUL bytes, control characters, invalid
 * UTF-8 and lines longer than inih's buffer (inih would silently split those
 * into several "lines"), tracks [section] headers itself, and strips leading
 * whitespace so inih never treats an indented line as a continuation of the
 * previous value. The first error wins and stops the parse. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"

#define CONFIG_MAX_FILE_BYTES  (1u << 20) /* a config file is tiny; anything bigger is a mistake */
#define CONFIG_DEFAULT_METRICS "/run/hugecollapsed/metrics.prom"
#define CONFIG_TEXTFILE_NAME   "hugecollapsed.prom"
#define CONFIG_DEFAULT_STATE   "/run/hugecollapsed/khugepaged.state"
#define CGROUP_DIR_NAME        "cgroup.d"

static const struct policy policy_default = {
    .enable = true,
    .weight = 100,
    .budget_mb_per_s = 128,
    .limits = COLLAPSE_LIMITS_DEFAULT,
    .idle_after_s = 60,
    .max_wait_s = 30,
    .eagain_retries = 3,
    .file_backed = true,
    .access_sampling = false,
    .access_sample_s = 30,
    .scope = THP_SCOPE_KERNEL,
    .memcg_headroom_mb = 2,
    .blocks_per_call = 1023,
    .pause_ms = 0,
};

/* ---- keys ---- */

enum key_kind { K_UINT, K_BOOL, K_STRING, K_KHUGEPAGED, K_SCOPE, K_CGROUP_PATH, K_MODE };
enum key_home { IN_DAEMON, IN_POLICY, IN_RULE }; /* struct config, struct policy, [cgroup] only */

struct key_def {
	const char *name;
	enum key_home home;
	enum key_kind kind;
	size_t off;
	unsigned min, max;
};

#define DAEMON_KEY(n, kind, lo, hi)                                                                                    \
	{                                                                                                              \
#n, IN_DAEMON, kind, offsetof(struct config, n), lo, hi                                                \
	}
#define POLICY_KEY(n, field, kind, lo, hi)                                                                             \
	{                                                                                                              \
		n, IN_POLICY, kind, offsetof(struct policy, field), lo, hi                                             \
	}

static const struct key_def keys[] = {
    DAEMON_KEY(scan_interval_ms, K_UINT, 0, 3600000),
    DAEMON_KEY(metrics_file, K_STRING, 0, 0),
    DAEMON_KEY(metrics_interval_s, K_UINT, 1, 3600),
    DAEMON_KEY(cgroup_dir, K_STRING, 0, 0),
    DAEMON_KEY(khugepaged, K_KHUGEPAGED, 0, 0),
    DAEMON_KEY(mode, K_MODE, 0, 0),
    DAEMON_KEY(state_file, K_STRING, 0, 0),
    DAEMON_KEY(full_rescan_s, K_UINT, 1, 86400),
    DAEMON_KEY(alloc_backoff_ms, K_UINT, 0, 3600000),
    DAEMON_KEY(coverage_top_cgroups, K_UINT, 0, 1000),
    DAEMON_KEY(pressure_some_pct, K_UINT, 0, 100),
    DAEMON_KEY(pressure_full_pct, K_UINT, 0, 100),
    DAEMON_KEY(pressure_free_margin_mb, K_UINT, 0, 65536),
    DAEMON_KEY(cold_watch, K_BOOL, 0, 0),
    POLICY_KEY("enable", enable, K_BOOL, 0, 0),
    POLICY_KEY("weight", weight, K_UINT, 1, 10000),
    POLICY_KEY("budget_mb_per_s", budget_mb_per_s, K_UINT, 1, 100000),
    POLICY_KEY("max_ptes_none", limits.max_ptes_none, K_UINT, 0, HPAGE_PAGES - 1),
    POLICY_KEY("max_ptes_swap", limits.max_ptes_swap, K_UINT, 0, HPAGE_PAGES - 1),
    POLICY_KEY("max_ptes_shared", limits.max_ptes_shared, K_UINT, 0, HPAGE_PAGES - 1),
    POLICY_KEY("min_referenced_pct", limits.min_referenced_pct, K_UINT, 0, 100),
    POLICY_KEY("idle_after_s", idle_after_s, K_UINT, 1, 86400),
    POLICY_KEY("max_wait_s", max_wait_s, K_UINT, 1, 86400),
    POLICY_KEY("eagain_retries", eagain_retries, K_UINT, 0, 100),
    POLICY_KEY("file_backed", file_backed, K_BOOL, 0, 0),
    POLICY_KEY("access_sampling", access_sampling, K_BOOL, 0, 0),
    POLICY_KEY("access_sample_s", access_sample_s, K_UINT, 1, 86400),
    POLICY_KEY("coverage_target_pct", coverage_target_pct, K_UINT, 0, 100),
    POLICY_KEY("scope", scope, K_SCOPE, 0, 0),
    POLICY_KEY("memcg_headroom_mb", memcg_headroom_mb, K_UINT, 0, 65536),
    POLICY_KEY("blocks_per_call", blocks_per_call, K_UINT, 1, 1023),
    POLICY_KEY("pause_ms", pause_ms, K_UINT, 0, 10000),
    {"path", IN_RULE, K_CGROUP_PATH, 0, 0, 0},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

enum section { SEC_NONE, SEC_DAEMON, SEC_COLLAPSE, SEC_CGROUP };
static const char *const section_names[] = {"", "daemon", "collapse", "cgroup"};

/* ---- parse state of one file ---- */

struct parse {
	const char *file; /* as shown in messages */
	bool cgroup_file; /* a cgroup_dir file rather than the main file */
	const char *buf;
	size_t len, pos;
	unsigned lineno;
	enum section section;
	unsigned cgroup_sections;
	unsigned seen[NKEYS]; /* line each key was set on, 0 = not yet */
	struct config *c;     /* daemon keys; c->rules for duplicate paths */
	struct policy *policy;
	char *rule_path; /* cgroup files: the normalized path = */
	unsigned rule_line;
	unsigned err_line; /* first error; 0 = none yet (or a file-level one) */
	bool failed;
	char *msg;
	size_t msglen;
};

static void vfail_at(char *msg, size_t msglen, const char *file, unsigned line, const char *fmt, va_list ap)
{
	int n = line ? snprintf(msg, msglen, "%s:%u: ", file, line) : snprintf(msg, msglen, "%s: ", file);

	if (n >= 0 && (size_t)n < msglen)
		vsnprintf(msg + n, msglen - (size_t)n, fmt, ap);
}

/* "FILE: why", for problems with a file as a whole. */
static void __attribute__((format(printf, 4, 5)))
fail_file(char *msg, size_t msglen, const char *file, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail_at(msg, msglen, file, 0, fmt, ap);
	va_end(ap);
}

/* "FILE:LINE: why" for the current line; only the first error is kept. */
static bool __attribute__((format(printf, 2, 3))) fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return false;
	p->failed = true;
	p->err_line = p->lineno;
	va_start(ap, fmt);
	vfail_at(p->msg, p->msglen, p->file, p->lineno, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- the line reader: byte checks, length, sections ---- */

static bool check_bytes(struct parse *p, const char *line, size_t n)
{
	const unsigned char *s = (const unsigned char *)line;
	size_t i = 0, l;

	while (i < n) {
		if (s[i] == 0)
			return fail(p, "NUL byte at column %zu (binary data, not a config file?)", i + 1);
		if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return fail(p, "control character 0x%02x at column %zu", s[i], i + 1);
		l = utf8_seq_len_n(line + i, n - i);
		if (!l)
			return fail(p, "invalid UTF-8 at column %zu", i + 1);
		i += l;
	}
	return true;
}

static enum section section_by_name(const char *name, size_t n)
{
	for (int s = SEC_DAEMON; s <= SEC_CGROUP; s++)
		if (strlen(section_names[s]) == n && !memcmp(section_names[s], name, n))
			return (enum section)s;
	return SEC_NONE;
}

/* s (n bytes, no leading blanks) is "[name]" with an optional comment after. */
static bool take_section(struct parse *p, const char *s, size_t n)
{
	const char *close = memchr(s, ']', n);
	const char *rest;
	size_t namelen;
	enum section sec;

	if (!close)
		return fail(p, "section header without ']'");
	namelen = (size_t)(close - s - 1);
	for (rest = close + 1; rest < s + n && (*rest == ' ' || *rest == '\t'); rest++)
		;
	if (rest < s + n && *rest != ';' && *rest != '#')
		return fail(p, "section [%.*s]: junk after ']'", (int)namelen, s + 1);
	sec = section_by_name(s + 1, namelen);
	if (sec == SEC_NONE)
		return fail(p, "section [%.*s]: unknown section (expected %s)", (int)namelen > 64 ? 64 : (int)namelen,
			    s + 1, p->cgroup_file ? "[cgroup] or [collapse]" : "[daemon] or [collapse]");
	if (sec == SEC_DAEMON && p->cgroup_file)
		return fail(p, "section [daemon]: only allowed in the main file");
	if (sec == SEC_CGROUP && !p->cgroup_file)
		return fail(p, "section [cgroup]: belongs in a file in cgroup_dir, not in the main file");
	if (sec == SEC_CGROUP && p->cgroup_sections++)
		return fail(p, "section [cgroup]: a second one; use one file per cgroup");
	p->section = sec;
	return true;
}

/* What inih would do with this line is decided here first, so that every
 * error gets a precise message and the right line number. */
static bool check_structure(struct parse *p, const char *s, size_t n)
{
	if (n == 0 || s[0] == ';' || s[0] == '#')
		return true;
	if (s[0] == '[')
		return take_section(p, s, n);
	if (!memchr(s, '=', n) && !memchr(s, ':', n))
		return fail(p, "expected 'key = value', '[section]' or a comment");
	return true;
}

/* An ini_reader: hands inih one checked line at a time. num is inih's line
 * buffer size (INI_MAX_LINE, 200 in Debian's build); it needs room for
 * "\r\n\0", hence the num - 3 limit documented in ini.h. */
static char *read_line(char *str, int num, void *stream)
{
	struct parse *p = stream;
	const char *s = p->buf + p->pos;
	const char *nl;
	size_t n;

	if (p->failed || p->pos >= p->len)
		return NULL;
	nl = memchr(s, '\n', p->len - p->pos);
	n = nl ? (size_t)(nl - s) : p->len - p->pos;
	p->pos += n + (nl != NULL);
	p->lineno++;
	if (n && s[n - 1] == '\r')
		n--;
	if (!check_bytes(p, s, n))
		return NULL;
	if (num < 3 || n > (size_t)num - 3) {
		fail(p, "line is %zu bytes long; the limit is %d", n, num < 3 ? 0 : num - 3);
		return NULL;
	}
	if (p->lineno == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3, n -= 3;
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	if (!check_structure(p, s, n))
		return NULL;
	memcpy(str, s, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	return str;
}

/* ---- values ---- */

static bool parse_uint(struct parse *p, const struct key_def *k, const char *v, unsigned *out)
{
	unsigned long long x = 0;
	const char *d = v;

	if (!*v)
		return fail(p, "key '%s': empty value (expected a number in %u..%u)", k->name, k->min, k->max);
	if (*v == '-')
		return fail(p, "key '%s': '%s' is negative (range %u..%u)", k->name, v, k->min, k->max);
	if (*v < '0' || *v > '9')
		return fail(p, "key '%s': '%s' is not a number (range %u..%u)", k->name, v, k->min, k->max);
	for (; *d >= '0' && *d <= '9'; d++)
		if (x <= UINT_MAX)
			x = x * 10 + (unsigned)(*d - '0');
	if (*d)
		return fail(p, "key '%s': '%s' has junk after the number", k->name, v);
	if (x < k->min || x > k->max)
		return fail(p, "key '%s': %s is out of range %u..%u", k->name, v, k->min, k->max);
	*out = (unsigned)x;
	return true;
}

static bool parse_bool(struct parse *p, const struct key_def *k, const char *v, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]) || !strcasecmp(v, no[i])) {
			*out = !strcasecmp(v, yes[i]);
			return true;
		}
	}
	return fail(p, "key '%s': '%s' is not a boolean (use yes/no, true/false, on/off or 1/0)", k->name, v);
}

static bool parse_khugepaged(struct parse *p, const struct key_def *k, const char *v, enum khugepaged_mode *out)
{
	for (int m = KHUGEPAGED_KEEP; m <= KHUGEPAGED_OFF; m++) {
		if (!strcasecmp(v, khugepaged_mode_name((enum khugepaged_mode)m))) {
			*out = (enum khugepaged_mode)m;
			return true;
		}
	}
	return fail(p, "key '%s': '%s' is not one of keep, idle, off", k->name, v);
}

static bool parse_scope(struct parse *p, const struct key_def *k, const char *v, enum thp_scope *out)
{
	for (int m = THP_SCOPE_KERNEL; m <= THP_SCOPE_ALWAYS; m++) {
		if (!strcasecmp(v, thp_scope_name((enum thp_scope)m))) {
			*out = (enum thp_scope)m;
			return true;
		}
	}
	return fail(p, "key '%s': '%s' is not one of kernel, madvise, always", k->name, v);
}

static bool parse_mode(struct parse *p, const struct key_def *k, const char *v, enum run_mode *out)
{
	for (int m = RUN_COLLAPSE; m <= RUN_OBSERVE; m++) {
		if (!strcasecmp(v, run_mode_name((enum run_mode)m))) {
			*out = (enum run_mode)m;
			return true;
		}
	}
	return fail(p, "key '%s': '%s' is not one of collapse, observe", k->name, v);
}

static bool parse_string(struct parse *p, const struct key_def *k, const char *v, char **out)
{
	char *dup;

	if (!strcmp(k->name, "cgroup_dir") && !*v)
		return fail(p, "key '%s': must not be empty", k->name);
	if ((!strcmp(k->name, "metrics_file") || !strcmp(k->name, "state_file")) && *v && *v != '/')
		return fail(p, "key '%s': '%s' must be an absolute path (or empty for none)", k->name, v);
	if (!strcmp(k->name, "state_file") && strlen(v) >= PATH_MAX - 16)
		return fail(p, "key '%s': path too long", k->name);
	dup = strdup(v);
	if (!dup)
		return fail(p, "key '%s': out of memory", k->name);
	free(*out);
	*out = dup;
	return true;
}

/* Normalizes a cgroup v2 path into out (at least strlen(in) + 2 bytes):
 * "//a//b/" -> "/a/b". Returns NULL or why it is not acceptable. */
static const char *normalize_cgroup_path(const char *in, char *out)
{
	char *o = out;
	const char *s = in, *e;
	size_t n;

	if (*in != '/')
		return "must start with '/'";
	for (const char *c = in; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return "contains a control character";
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return "'.' and '..' components are not allowed";
		*o++ = '/';
		memcpy(o, s, n);
		o += n;
		s = e;
	}
	if (o == out)
		*o++ = '/';
	*o = '\0';
	return NULL;
}

static bool parse_cgroup_path(struct parse *p, const struct key_def *k, const char *v)
{
	char *norm = calloc(1, strlen(v) + 2); /* zeroed: the analyzer cannot see normalize terminate it */
	const char *why;

	if (!norm)
		return fail(p, "key '%s': out of memory", k->name);
	why = normalize_cgroup_path(v, norm);
	if (why) {
		free(norm);
		return fail(p, "key '%s': '%s' %s", k->name, v, why);
	}
	why = config_check_pattern(norm);
	if (why) {
		fail(p, "key '%s': '%s' %s", k->name, v, why);
		free(norm);
		return false;
	}
	for (size_t i = 0; i < p->c->nrules; i++) {
		const struct cgroup_rule *r = &p->c->rules[i];

		if (!strcmp(r->path, norm)) {
			fail(p, "key '%s': %s already has a rule in %s:%u", k->name, norm, r->file, r->line);
			free(norm);
			return false;
		}
	}
	p->rule_path = norm;
	p->rule_line = p->lineno;
	return true;
}

/* ---- the inih handler ---- */

static const struct key_def *key_by_name(const char *name, size_t *idx)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (!strcmp(keys[i].name, name)) {
			*idx = i;
			return &keys[i];
		}
	}
	return NULL;
}

static bool key_allowed(const struct parse *p, const struct key_def *k)
{
	switch (p->section) {
	case SEC_DAEMON:
		return k->home == IN_DAEMON;
	case SEC_COLLAPSE:
		return k->home == IN_POLICY;
	case SEC_CGROUP:
		return k->home == IN_POLICY || k->home == IN_RULE;
	default:
		return false;
	}
}

static const char *key_belongs(const struct key_def *k)
{
	switch (k->home) {
	case IN_DAEMON:
		return "it belongs in [daemon] of the main file";
	case IN_POLICY:
		return "it belongs in [collapse] or [cgroup]";
	default:
		return "it belongs in [cgroup] of a file in cgroup_dir";
	}
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	const struct key_def *k;
	size_t idx;
	char *base;

	(void)section; /* we track sections ourselves, see take_section() */
	if (p->failed)
		return 0;
	if (!*name)
		return fail(p, "empty key name");
	if (p->section == SEC_NONE)
		return fail(p, "key '%s': outside any section", name);
	k = key_by_name(name, &idx);
	if (!k)
		return fail(p, "key '%s': unknown key in [%s]", name, section_names[p->section]);
	if (!key_allowed(p, k))
		return fail(p, "key '%s': not allowed in [%s]; %s", name, section_names[p->section], key_belongs(k));
	if (p->seen[idx])
		return fail(p, "key '%s': set twice (first on line %u)", name, p->seen[idx]);
	p->seen[idx] = p->lineno;

	base = k->home == IN_DAEMON ? (char *)p->c : (char *)p->policy;
	switch (k->kind) {
	case K_UINT:
		return parse_uint(p, k, value, (unsigned *)(base + k->off));
	case K_BOOL:
		return parse_bool(p, k, value, (bool *)(base + k->off));
	case K_STRING:
		return parse_string(p, k, value, (char **)(base + k->off));
	case K_KHUGEPAGED:
		return parse_khugepaged(p, k, value, (enum khugepaged_mode *)(base + k->off));
	case K_SCOPE:
		return parse_scope(p, k, value, (enum thp_scope *)(base + k->off));
	case K_CGROUP_PATH:
		return parse_cgroup_path(p, k, value);
	case K_MODE:
		return parse_mode(p, k, value, (enum run_mode *)(base + k->off));
	}
	return fail(p, "key '%s': internal error", name);
}

static bool key_was_set(const struct parse *p, const char *name)
{
	size_t idx;

	return key_by_name(name, &idx) && p->seen[idx];
}

/* Runs inih over buf; returns false with p->msg set on the first error. */
static bool parse_buffer(struct parse *p)
{
	int r = ini_parse_stream(read_line, p, on_key, p);

	if (r == -2) {
		fail_file(p->msg, p->msglen, p->file, "out of memory");
		return false;
	}
	/* An error inih found on its own (a line our reader let through). */
	if (r > 0 && (!p->failed || (unsigned)r < p->err_line)) {
		p->failed = true;
		p->err_line = (unsigned)r;
		snprintf(p->msg, p->msglen, "%s:%d: syntax error (expected 'key = value', '[section]' or a comment)",
			 p->file, r);
	}
	return !p->failed;
}

/* ---- files: open, StrictModes-like checks, read ---- */

/* Opens dirfd/name (dirfd may be AT_FDCWD) and reads it whole. Returns 0,
 * 1 if it does not exist, or -1 with msg set. */
static int read_config_file(int dirfd, const char *name, const char *shown, bool skip_owner_check, char **buf,
			    size_t *len, char *msg, size_t msglen)
{
	struct stat st, lst;
	char target[PATH_MAX] = "";
	char note[PATH_MAX + 64] = "";
	char *data = NULL;
	size_t got = 0, cap = 0;
	ssize_t r;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		fail_file(msg, msglen, shown, "cannot open: %s", strerror(errno));
		return -1;
	}
	/* Check what was opened (fstat), but say so when it was a symlink. */
	if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode)) {
		if (readlinkat(dirfd, name, target, sizeof(target) - 1) < 0)
			strcpy(target, "?");
		snprintf(note, sizeof(note), " (a symlink; checked its target %s)", target);
	}
	if (fstat(fd, &st) < 0) {
		fail_file(msg, msglen, shown, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		fail_file(msg, msglen, shown, "is a directory, not a config file%s", note);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		fail_file(msg, msglen, shown, "is not a regular file%s", note);
		goto fail;
	}
	if (!skip_owner_check && st.st_uid != 0) {
		fail_file(msg, msglen, shown, "owned by uid %u, not root%s; refusing to trust it (chown root)",
			  (unsigned)st.st_uid, note);
		goto fail;
	}
	if (!skip_owner_check && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		fail_file(msg, msglen, shown, "writable by %s (mode %04o)%s; refusing to trust it (chmod go-w)",
			  (st.st_mode & S_IWOTH) ? "others" : "group", (unsigned)(st.st_mode & 07777), note);
		goto fail;
	}
	if (st.st_size > CONFIG_MAX_FILE_BYTES) {
		fail_file(msg, msglen, shown, "larger than %u bytes; not a config file?", CONFIG_MAX_FILE_BYTES);
		goto fail;
	}
	cap = (size_t)st.st_size + 1; /* +1: to see EOF without another grow */
	data = malloc(cap);
	if (!data) {
		fail_file(msg, msglen, shown, "out of memory");
		goto fail;
	}
	/* Read to EOF rather than trusting st_size: the file may be growing. */
	for (;;) {
		if (got == cap) {
			char *grown;

			if (cap > CONFIG_MAX_FILE_BYTES) {
				fail_file(msg, msglen, shown, "larger than %u bytes; not a config file?",
					  CONFIG_MAX_FILE_BYTES);
				goto fail;
			}
			cap = cap * 2 > CONFIG_MAX_FILE_BYTES + 1 ? CONFIG_MAX_FILE_BYTES + 1 : cap * 2;
			grown = realloc(data, cap);
			if (!grown) {
				fail_file(msg, msglen, shown, "out of memory");
				goto fail;
			}
			data = grown;
		}
		r = read(fd, data + got, cap - got);
		if (r == 0)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail_file(msg, msglen, shown, "cannot read: %s", strerror(errno));
			goto fail;
		}
		got += (size_t)r;
	}
	close(fd);
	*buf = data;
	*len = got;
	return 0;
fail:
	free(data);
	close(fd);
	return -1;
}

/* ---- the main file ---- */

static char *path_join(const char *dir, const char *name)
{
	char *s;

	size_t n = strlen(dir);

	return asprintf(&s, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) < 0 ? NULL : s;
}

/* The directory part of path ("." if none), newly allocated. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Debian's prometheus-node-exporter reads *.prom files from this one
 * directory (bookworm's 1.5, its --collector.textfile.directory default). */
const char *config_textfile_dir = "/var/lib/prometheus/node-exporter";

char *config_default_metrics_file(const char *textfile_dir)
{
	struct stat st;

	/* A file there outlives the daemon (/run/hugecollapsed goes on stop),
	 * so a stopped daemon shows as a stale last-pass timestamp. */
	if (textfile_dir && *textfile_dir && stat(textfile_dir, &st) == 0 && S_ISDIR(st.st_mode))
		return path_join(textfile_dir, CONFIG_TEXTFILE_NAME);
	return strdup(CONFIG_DEFAULT_METRICS);
}

static int defaults_into(struct config *c)
{
	char *dir = dir_of(HC_DEFAULT_CONFIG);

	memset(c, 0, sizeof(*c));
	c->scan_interval_ms = 1000;
	c->metrics_interval_s = 10;
	c->khugepaged = KHUGEPAGED_KEEP;
	c->full_rescan_s = 300;
	c->alloc_backoff_ms = 60000;
	c->coverage_top_cgroups = 10;
	c->pressure_some_pct = 10;
	c->pressure_full_pct = 2;
	c->pressure_free_margin_mb = 64;
	c->cold_watch = true;
	c->defaults = policy_default;
	c->metrics_file = config_default_metrics_file(config_textfile_dir);
	c->state_file = strdup(CONFIG_DEFAULT_STATE);
	c->cgroup_dir = dir ? path_join(dir, CGROUP_DIR_NAME) : NULL;
	free(dir);
	if (!c->metrics_file || !c->state_file || !c->cgroup_dir) {
		config_free(c);
		return -1;
	}
	return 0;
}

void config_defaults(struct config *c)
{
	if (defaults_into(c) < 0) {
		fputs("hugecollapsed: out of memory\n", stderr);
		abort();
	}
}

static bool load_main(struct config *c, const char *path, bool missing_ok, bool skip_owner_check, char *msg,
		      size_t msglen)
{
	struct parse p = {.file = path, .c = c, .policy = &c->defaults, .msg = msg, .msglen = msglen};
	char *dir = dir_of(path), *buf = NULL;
	bool ok = false;
	int r;

	free(c->cgroup_dir);
	c->cgroup_dir = dir ? path_join(dir, CGROUP_DIR_NAME) : NULL;
	c->path = strdup(path);
	if (!c->cgroup_dir || !c->path) {
		fail_file(msg, msglen, path, "out of memory");
		goto out;
	}
	r = read_config_file(AT_FDCWD, path, path, skip_owner_check, &buf, &p.len, msg, msglen);
	if (r == 1 && !missing_ok)
		fail_file(msg, msglen, path, "cannot open: %s", strerror(ENOENT));
	if (r != 0) {
		ok = r == 1 && missing_ok;
		goto out;
	}
	p.buf = buf;
	if (!parse_buffer(&p))
		goto out;
	/* A relative cgroup_dir is relative to the main file, not to our cwd. */
	if (c->cgroup_dir[0] != '/' && key_was_set(&p, "cgroup_dir")) {
		char *abs = path_join(dir, c->cgroup_dir);

		if (!abs) {
			fail_file(msg, msglen, path, "out of memory");
			goto out;
		}
		free(c->cgroup_dir);
		c->cgroup_dir = abs;
	}
	ok = true;
out:
	free(buf);
	free(dir);
	return ok;
}

/* ---- cgroup_dir ---- */

static bool is_conf_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".conf");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_rule(const void *a, const void *b)
{
	return strcmp(((const struct cgroup_rule *)a)->path, ((const struct cgroup_rule *)b)->path);
}

/* The *.conf names in dirfd, sorted, NULL-terminated. */
static char **list_conf_files(int dirfd, const char *dirpath, char *msg, size_t msglen)
{
	int fd = dup(dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	char **names = NULL, **grown;
	size_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		fail_file(msg, msglen, dirpath, "cannot read directory: %s", strerror(errno));
		return NULL;
	}
	names = calloc(1, sizeof(*names));
	while (names && (errno = 0, e = readdir(d))) {
		if (!is_conf_name(e->d_name))
			continue;
		grown = realloc(names, (n + 2) * sizeof(*names));
		if (!grown || !(grown[n] = strdup(e->d_name))) {
			names = grown ? grown : names;
			goto oom;
		}
		names = grown;
		names[++n] = NULL;
	}
	if (!names)
		goto oom;
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	return names;
oom:
	closedir(d);
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	fail_file(msg, msglen, dirpath, "out of memory");
	return NULL;
}

static unsigned path_depth(const char *path)
{
	unsigned n = 0;

	for (const char *s = path; *s; s++)
		n += *s == '/' && s[1];
	return n;
}

static size_t literal_bytes(const char *path);

void config_rule_init(struct cgroup_rule *r)
{
	r->literal_prefix = strcspn(r->path, "*?[");
	r->glob = r->path[r->literal_prefix] != '\0';
	r->depth = path_depth(r->path);
	r->literals = literal_bytes(r->path);
}

static struct cgroup_rule rule_new(char *path, char *file, unsigned line, const struct policy *policy)
{
	struct cgroup_rule r = {.path = path, .file = file, .line = line, .policy = *policy};

	config_rule_init(&r);
	return r;
}

static bool load_cgroup_file(struct config *c, int dirfd, const char *name, bool skip_owner_check, char *msg,
			     size_t msglen)
{
	struct policy policy = c->defaults; /* unset keys inherit the finished [collapse] */
	char *shown = path_join(c->cgroup_dir, name), *buf = NULL;
	struct parse p = {.file = shown, .cgroup_file = true, .c = c, .policy = &policy, .msg = msg, .msglen = msglen};
	struct cgroup_rule *grown;
	bool ok = false;

	if (!shown) {
		fail_file(msg, msglen, c->cgroup_dir, "out of memory");
		return false;
	}
	if (read_config_file(dirfd, name, shown, skip_owner_check, &buf, &p.len, msg, msglen) != 0) {
		/* 1: it vanished between readdir and open; a concurrent edit. */
		goto out;
	}
	p.buf = buf;
	if (!parse_buffer(&p))
		goto out;
	if (!p.rule_path) {
		fail_file(msg, msglen, shown,
			  "key 'path': missing; each file in cgroup_dir needs [cgroup] path = /...");
		goto out;
	}
	grown = realloc(c->rules, (c->nrules + 1) * sizeof(*c->rules));
	if (!grown) {
		fail_file(msg, msglen, shown, "out of memory");
		goto out;
	}
	c->rules = grown;
	c->rules[c->nrules++] = rule_new(p.rule_path, shown, p.rule_line, &policy);
	p.rule_path = shown = NULL; /* owned by the rule now */
	ok = true;
out:
	if (!ok && !p.failed && msg[0] == '\0')
		fail_file(msg, msglen, p.file, "vanished while loading");
	free(p.rule_path);
	free(shown);
	free(buf);
	return ok;
}

/* A directory of config files: root's, and only root may write it. */
static bool trusted_dir(int fd, const char *dir, bool skip_owner_check, char *msg, size_t msglen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		fail_file(msg, msglen, dir, "cannot stat: %s", strerror(errno));
		return false;
	}
	if (!skip_owner_check && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		if (st.st_uid != 0)
			fail_file(msg, msglen, dir, "owned by uid %u, not root; refusing to trust it (chown root)",
				  (unsigned)st.st_uid);
		else
			fail_file(msg, msglen, dir, "writable by %s (mode %04o); refusing to trust it (chmod go-w)",
				  (st.st_mode & S_IWOTH) ? "others" : "group", (unsigned)(st.st_mode & 07777));
		return false;
	}
	return true;
}

/* ---- the drop-in directory: the *.conf files of PATH.d, after PATH ---- */

/* One drop-in: the main file's sections and keys; a key set here replaces
 * the value of the main file or of an earlier drop-in (within one file, a
 * key set twice is still an error). */
static bool load_dropin(struct config *c, int dirfd, const char *dirpath, const char *name, bool skip_owner_check,
			char *msg, size_t msglen)
{
	char *shown = path_join(dirpath, name), *buf = NULL, *main_dir = NULL;
	struct parse p = {.file = shown, .c = c, .policy = &c->defaults, .msg = msg, .msglen = msglen};
	bool ok = false;

	if (!shown) {
		fail_file(msg, msglen, dirpath, "out of memory");
		return false;
	}
	if (read_config_file(dirfd, name, shown, skip_owner_check, &buf, &p.len, msg, msglen) != 0)
		goto out; /* 1: it vanished between readdir and open; a concurrent edit */
	p.buf = buf;
	if (!parse_buffer(&p))
		goto out;
	/* A relative cgroup_dir is relative to the main file's directory. */
	if (c->cgroup_dir[0] != '/' && key_was_set(&p, "cgroup_dir")) {
		char *abs = (main_dir = dir_of(c->path)) ? path_join(main_dir, c->cgroup_dir) : NULL;

		if (!abs) {
			fail_file(msg, msglen, shown, "out of memory");
			goto out;
		}
		free(c->cgroup_dir);
		c->cgroup_dir = abs;
	}
	ok = true;
out:
	if (!ok && !p.failed && msg[0] == '\0')
		fail_file(msg, msglen, shown, "vanished while loading");
	free(main_dir);
	free(shown);
	free(buf);
	return ok;
}

static bool load_dropin_dir(struct config *c, bool skip_owner_check, char *msg, size_t msglen)
{
	size_t size = strlen(c->path) + sizeof(".d");
	char *dir = malloc(size), **names;
	bool ok = true;
	int fd;

	if (!dir) {
		fail_file(msg, msglen, c->path, "out of memory");
		return false;
	}
	snprintf(dir, size, "%s.d", c->path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ok = errno == ENOENT; /* no drop-ins */
		if (!ok)
			fail_file(msg, msglen, dir, "cannot open the drop-in directory: %s", strerror(errno));
		free(dir);
		return ok;
	}
	names = trusted_dir(fd, dir, skip_owner_check, msg, msglen) ? list_conf_files(fd, dir, msg, msglen) : NULL;
	ok = names != NULL;
	for (size_t i = 0; names && names[i]; i++) {
		if (ok)
			ok = load_dropin(c, fd, dir, names[i], skip_owner_check, msg, msglen);
		free(names[i]);
	}
	free(names);
	close(fd);
	free(dir);
	return ok;
}

static bool load_cgroup_dir(struct config *c, bool skip_owner_check, char *msg, size_t msglen)
{
	const char *dir = c->cgroup_dir;
	char **names;
	bool ok = true;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return true; /* no cgroup policies */
		if (errno == ENOTDIR)
			fail_file(msg, msglen, dir, "cgroup_dir exists but is not a directory");
		else
			fail_file(msg, msglen, dir, "cannot open cgroup_dir: %s", strerror(errno));
		return false;
	}
	if (!trusted_dir(fd, dir, skip_owner_check, msg, msglen)) {
		close(fd);
		return false;
	}
	names = list_conf_files(fd, dir, msg, msglen);
	if (!names) {
		close(fd);
		return false;
	}
	for (size_t i = 0; names[i]; i++) {
		if (ok)
			ok = load_cgroup_file(c, fd, names[i], skip_owner_check, msg, msglen);
		free(names[i]);
	}
	free(names);
	close(fd);
	if (ok && c->nrules) /* qsort(NULL, 0, …) is undefined */
		qsort(c->rules, c->nrules, sizeof(*c->rules), cmp_rule);
	return ok;
}

/* ---- public ---- */

int config_load(const char *path, bool missing_ok, bool skip_owner_check, struct config *out, char *err, size_t errlen)
{
	char msg[1024] = "";
	struct config c;

	if (defaults_into(&c) < 0) {
		snprintf(msg, sizeof(msg), "%s: out of memory", path ? path : "config");
		goto fail_nofree;
	}
	if (path && (!load_main(&c, path, missing_ok, skip_owner_check, msg, sizeof(msg)) ||
		     !load_dropin_dir(&c, skip_owner_check, msg, sizeof(msg)) ||
		     !load_cgroup_dir(&c, skip_owner_check, msg, sizeof(msg))))
		goto fail;
	*out = c;
	return 0;
fail:
	config_free(&c);
fail_nofree:
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -1;
}

void config_free(struct config *c)
{
	for (size_t i = 0; i < c->nrules; i++) {
		free(c->rules[i].path);
		free(c->rules[i].file);
	}
	free(c->rules);
	free(c->path);
	free(c->metrics_file);
	free(c->state_file);
	free(c->cgroup_dir);
	memset(c, 0, sizeof(*c));
}

/* ---- which rule: literal paths and patterns ---- */

#define GLOB_FLAGS (FNM_PATHNAME | FNM_NOESCAPE | FNM_LEADING_DIR)

/* The [...] at s (s[0] == '['), within one component (the caller's s ends
 * at its '/' or NUL): the length through its ']', or 0 if it has none.
 * *why says what else is wrong. */
static size_t bracket_len(const char *s, size_t n, const char **why)
{
	static const char *const classes[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
					      "lower", "print", "punct", "space", "upper", "xdigit"};
	size_t i = 1;

	if (i < n && (s[i] == '!' || s[i] == '^'))
		i++;
	if (i < n && s[i] == ']') /* a ']' first is a member */
		i++;
	for (; i < n; i++) {
		if (s[i] == ']')
			return i + 1;
		if (s[i] == '[' && i + 1 < n && (s[i + 1] == ':' || s[i + 1] == '=' || s[i + 1] == '.')) {
			const char *end = memchr(s + i + 2, ']', n - i - 2);
			size_t len = end ? (size_t)(end - (s + i + 2)) : 0;
			bool known = false;

			if (s[i + 1] != ':') {
				*why = "uses [= =] or [. .], which cgroup names have no use for";
				return 0;
			}
			if (!end || len < 1 || s[i + 2 + len - 1] != ':') {
				*why = "has a '[:' without its ':]'";
				return 0;
			}
			for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++)
				known |= strlen(classes[k]) == len - 1 && !strncmp(classes[k], s + i + 2, len - 1);
			if (!known) {
				*why = "names an unknown [:class:]";
				return 0;
			}
			i = (size_t)(end - s);
		}
	}
	return 0;
}

/* Bytes of path outside '*', '?' and [...] (a '[' without its ']' counts
 * as one: config_check_pattern() refuses it anyway). */
static size_t literal_bytes(const char *path)
{
	const char *why = NULL;
	size_t lit = 0;

	for (const char *s = path; *s;) {
		size_t n = strcspn(s, "/"), len;

		for (size_t i = 0; i < n; i++) {
			if (s[i] == '*' || s[i] == '?')
				continue;
			len = s[i] == '[' ? bracket_len(s + i, n - i, &why) : 0;
			if (len)
				i += len - 1;
			else
				lit++;
		}
		s += n;
		if (*s == '/')
			s++, lit++;
	}
	return lit;
}

const char *config_check_pattern(const char *pattern)
{
	const char *why = NULL;

	if (strstr(pattern, "**"))
		return "has '**': '*' matches within one path component, never across '/'; write one per component";
	for (const char *s = pattern; *s;) {
		size_t n = strcspn(s, "/"), len;

		for (size_t i = 0; i < n; i++) {
			if (s[i] != '[')
				continue;
			len = bracket_len(s + i, n - i, &why);
			if (!len)
				return why ? why
					   : "has a '[' without its ']' in the same component (for a literal '[' write "
					     "[[])";
			i += len - 1;
		}
		s += n;
		if (*s == '/')
			s++;
	}
	/* glibc's own verdict, for what the checks above may have missed. */
	if (fnmatch(pattern, "/", GLOB_FLAGS) != 0 && fnmatch(pattern, "/", GLOB_FLAGS) != FNM_NOMATCH)
		return "is not a valid pattern";
	return NULL;
}

bool config_rule_matches(const struct cgroup_rule *r, const char *cgroup)
{
	size_t n;

	/* A pattern names at least one component, and '*' would match the
	 * root's empty one: "/\x2a" is the root's children, not the root. */
	if (r->glob)
		return cgroup[0] == '/' && cgroup[1] != '\0' && fnmatch(r->path, cgroup, GLOB_FLAGS) == 0;
	n = strlen(r->path);
	if (n == 1) /* "/" */
		return true;
	return !strncmp(cgroup, r->path, n) && (cgroup[n] == '\0' || cgroup[n] == '/');
}

bool config_rule_more_specific(const struct cgroup_rule *a, const struct cgroup_rule *b)
{
	if (a->depth != b->depth)
		return a->depth > b->depth;
	if (a->glob != b->glob)
		return !a->glob;
	if (a->literals != b->literals)
		return a->literals > b->literals;
	if (a->literal_prefix != b->literal_prefix)
		return a->literal_prefix > b->literal_prefix;
	return strcmp(a->path, b->path) < 0;
}

/* Linear in the number of rules (times the path length): tens of rules are
 * expected, and the caller caches the answer per process. */
const struct policy *config_policy_for(const struct config *c, const char *cgroup)
{
	const struct cgroup_rule *best = NULL;

	if (!cgroup)
		return &c->defaults;
	for (size_t i = 0; i < c->nrules; i++) {
		const struct cgroup_rule *r = &c->rules[i];

		if (config_rule_matches(r, cgroup) && (!best || config_rule_more_specific(r, best)))
			best = r;
	}
	return best ? &best->policy : &c->defaults;
}

const char *khugepaged_mode_name(enum khugepaged_mode m)
{
	switch (m) {
	case KHUGEPAGED_KEEP:
		return "keep";
	case KHUGEPAGED_IDLE:
		return "idle";
	case KHUGEPAGED_OFF:
		return "off";
	}
	return "?";
}

const char *thp_scope_name(enum thp_scope s)
{
	switch (s) {
	case THP_SCOPE_KERNEL:
		return "kernel";
	case THP_SCOPE_MADVISE:
		return "madvise";
	case THP_SCOPE_ALWAYS:
		return "always";
	}
	return "?";
}

const char *run_mode_name(enum run_mode m)
{
	switch (m) {
	case RUN_COLLAPSE:
		return "collapse";
	case RUN_OBSERVE:
		return "observe";
	}
	return "?";
}

enum khugepaged_mode config_khugepaged_in_force(const struct config *c)
{
	return c->mode == RUN_OBSERVE ? KHUGEPAGED_KEEP : c->khugepaged;
}
