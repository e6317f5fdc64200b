/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hc_prom_check FILE: validates the Prometheus text exposition format
 * (version 0.0.4), as node_exporter's textfile collector would read it,
 * plus the naming rules the daemon promises:
 *
 *  - every line ends in '\n' and is UTF-8 (no overlong forms, surrogates
 *    or code points above U+10FFFF); blank lines and other '#' comments
 *    are allowed;
 *  - "# HELP name text" and "# TYPE name type" come before the family's
 *    first sample, each at most once; every family has both;
 *  - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 *    [a-zA-Z_][a-zA-Z0-9_]* (not starting "__"), no label twice;
 *  - label values are "quoted" with only \\, \" and \n escapes;
 *  - a value is a float (or NaN, +Inf, -Inf), optionally followed by an
 *    integer millisecond timestamp;
 *  - a family's samples are one contiguous group, no series twice;
 *  - counters are named *_total and are never negative.
 *
 * Prints one line per problem ("FILE:LINE: why") and exits 1 if any, else
 * prints "FILE: OK, N families, M samples" and exits 0. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAMILIES 256
#define MAX_SERIES   4096
#define MAX_LABELS   16

struct family {
	char name[256];
	char type[16];
	bool help, typed, has_samples, closed;
};

static struct family families[MAX_FAMILIES];
static size_t nfamilies;
static char *series[MAX_SERIES]; /* "name{sorted labels}" seen so far */
static size_t nseries;
static const char *file;
static unsigned line_no, errors;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s:%u: ", file, line_no);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	errors++;
}

static bool name_start(int c, bool colon_ok)
{
	return isalpha(c) || c == '_' || (colon_ok && c == ':');
}

static bool name_char(int c, bool colon_ok)
{
	return name_start(c, colon_ok) || isdigit(c);
}

/* Length of the name at s (0 if none). */
static size_t name_len(const char *s, bool colon_ok)
{
	size_t n = 0;

	if (!name_start((unsigned char)s[0], colon_ok))
		return 0;
	while (name_char((unsigned char)s[n], colon_ok))
		n++;
	return n;
}

static struct family *find_family(const char *name, size_t len)
{
	for (size_t i = 0; i < nfamilies; i++)
		if (strlen(families[i].name) == len && !memcmp(families[i].name, name, len))
			return &families[i];
	return NULL;
}

static struct family *add_family(const char *name, size_t len)
{
	struct family *f;

	if (nfamilies == MAX_FAMILIES || len >= sizeof(f->name)) {
		problem("too many families or too long a name");
		return NULL;
	}
	f = &families[nfamilies++];
	memcpy(f->name, name, len);
	f->name[len] = 0;
	return f;
}

/* The family a sample name belongs to: histogram and summary samples carry
 * a suffix; everything else is its own family. */
static struct family *family_of_sample(const char *name, size_t len)
{
	static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
	struct family *f = find_family(name, len);

	if (f)
		return f;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sl = strlen(suffixes[i]);

		if (len > sl && !memcmp(name + len - sl, suffixes[i], sl)) {
			f = find_family(name, len - sl);
			if (f && (!strcmp(f->type, "histogram") || !strcmp(f->type, "summary")))
				return f;
		}
	}
	return NULL;
}

static struct family *current; /* the family of the previous sample */

static void descriptor(const char *s)
{
	bool is_type = !strncmp(s, "# TYPE ", 7);
	const char *name = s + 7, *rest;
	size_t len = name_len(name, true);
	struct family *f;

	if (!len || (name[len] != ' ' && name[len] != 0)) {
		problem("%s without a valid metric name", is_type ? "TYPE" : "HELP");
		return;
	}
	rest = name[len] ? name + len + 1 : name + len;
	f = find_family(name, len);
	if (f && f->has_samples) {
		problem("%s for %s after its samples", is_type ? "TYPE" : "HELP", f->name);
		return;
	}
	if (!f && !(f = add_family(name, len)))
		return;
	if (is_type) {
		static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
		bool known = false;

		if (f->typed)
			problem("second TYPE for %s", f->name);
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			known |= !strcmp(rest, types[i]);
		if (!known)
			problem("TYPE %s: unknown type '%s'", f->name, rest);
		snprintf(f->type, sizeof(f->type), "%s", rest);
		f->typed = true;
		if (!strcmp(rest, "counter") && (len < 6 || strcmp(f->name + len - 6, "_total")))
			problem("counter %s does not end in _total", f->name);
	} else {
		if (f->help)
			problem("second HELP for %s", f->name);
		f->help = true;
		/* HELP text escapes only \\ and \n. */
		for (const char *p = rest; *p; p++)
			if (*p == '\\' && (++p, *p != '\\' && *p != 'n')) {
				problem("HELP %s: bad escape", f->name);
				break;
			}
	}
}

/* A float as Go's strconv.ParseFloat takes it, minus hex; or NaN/±Inf. */
static bool parse_value(const char *s, size_t len, double *out)
{
	char buf[64];
	char *end;
	size_t i = 0;
	bool digits = false;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (!strcmp(buf, "NaN") || !strcmp(buf, "+Inf") || !strcmp(buf, "-Inf") || !strcmp(buf, "Inf")) {
		*out = strtod(buf, NULL);
		return true;
	}
	if (buf[i] == '+' || buf[i] == '-')
		i++;
	while (isdigit((unsigned char)buf[i]))
		i++, digits = true;
	if (buf[i] == '.')
		for (i++; isdigit((unsigned char)buf[i]); i++)
			digits = true;
	if (!digits)
		return false;
	if (buf[i] == 'e' || buf[i] == 'E') {
		i++;
		if (buf[i] == '+' || buf[i] == '-')
			i++;
		if (!isdigit((unsigned char)buf[i]))
			return false;
		while (isdigit((unsigned char)buf[i]))
			i++;
	}
	if (buf[i])
		return false;
	errno = 0;
	*out = strtod(buf, &end);
	return *end == 0 && errno != ERANGE;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parses {name="value",...} at *sp; fills key with the sorted label set.
 * Returns false after reporting a problem. */
static bool parse_labels(const char **sp, char *key, size_t keylen)
{
	char *labels[MAX_LABELS], buf[4096];
	const char *s = *sp + 1;
	size_t nlabels = 0, used = 0;

	key[0] = 0;
	while (*s != '}') {
		size_t n = name_len(s, false);
		char *lab = buf + used;

		if (!n) {
			problem("bad label name at '%.20s'", s);
			return false;
		}
		if (n >= 2 && s[0] == '_' && s[1] == '_') {
			problem("label name %.*s is reserved (starts with __)", (int)n, s);
			return false;
		}
		if (nlabels == MAX_LABELS || used + n + 2 >= sizeof(buf)) {
			problem("too many labels");
			return false;
		}
		memcpy(lab, s, n);
		used += n;
		buf[used++] = '=';
		s += n;
		if (s[0] != '=' || s[1] != '"') {
			problem("label %.*s: expected =\"", (int)n, lab);
			return false;
		}
		for (s += 2; *s != '"'; s++) {
			if (!*s) {
				problem("label %.*s: unterminated value", (int)n, lab);
				return false;
			}
			if (*s == '\\') {
				s++;
				if (*s != '\\' && *s != '"' && *s != 'n') {
					problem("label %.*s: bad escape \\%c", (int)n, lab, *s ? *s : '0');
					return false;
				}
			}
			if (used + 3 >= sizeof(buf)) {
				problem("label values too long");
				return false;
			}
			buf[used++] = *s;
		}
		buf[used++] = 0;
		for (size_t i = 0; i < nlabels; i++)
			if (!strncmp(labels[i], lab, n + 1)) {
				problem("label %.*s given twice", (int)n, lab);
				return false;
			}
		labels[nlabels++] = lab;
		s++;
		if (*s == ',')
			s++;
		else if (*s != '}') {
			problem("expected ',' or '}' after label %.*s", (int)n, lab);
			return false;
		}
	}
	qsort(labels, nlabels, sizeof(labels[0]), compare_strings);
	for (size_t i = 0; i < nlabels; i++) {
		strncat(key, i ? "," : "{", keylen - strlen(key) - 1);
		strncat(key, labels[i], keylen - strlen(key) - 1);
	}
	if (nlabels)
		strncat(key, "}", keylen - strlen(key) - 1);
	*sp = s + 1;
	return true;
}

static void remember_series(const char *name, size_t len, const char *labels)
{
	char *k;

	if (asprintf(&k, "%.*s%s", (int)len, name, labels) < 0)
		abort();
	for (size_t i = 0; i < nseries; i++)
		if (!strcmp(series[i], k)) {
			problem("series %s given twice", k);
			free(k);
			return;
		}
	if (nseries == MAX_SERIES) {
		problem("too many series");
		free(k);
		return;
	}
	series[nseries++] = k;
}

static void sample(const char *s)
{
	size_t len = name_len(s, true);
	const char *p = s + len, *v, *sp;
	char labels[4096] = "";
	struct family *f;
	double value = 0;

	if (!len) {
		problem("sample without a valid metric name: '%.40s'", s);
		return;
	}
	if (*p == '{' && !parse_labels(&p, labels, sizeof(labels)))
		return;
	if (*p != ' ') {
		problem("%.*s: expected a space before the value", (int)len, s);
		return;
	}
	v = p + 1;
	sp = strchr(v, ' ');
	if (!parse_value(v, sp ? (size_t)(sp - v) : strlen(v), &value))
		problem("%.*s: value '%s' is not a float", (int)len, s, v);
	if (sp) {
		const char *t = sp + 1;

		if (*t == '-')
			t++;
		if (!*t || strspn(t, "0123456789") != strlen(t))
			problem("%.*s: timestamp '%s' is not an integer", (int)len, s, sp + 1);
	}
	f = family_of_sample(s, len);
	if (!f) {
		problem("sample %.*s before its HELP and TYPE", (int)len, s);
		return;
	}
	if (!f->typed || !f->help)
		problem("sample %.*s: its family lacks %s", (int)len, s, f->typed ? "HELP" : "TYPE");
	if (f->closed)
		problem("sample %.*s: its family's samples are not one group", (int)len, s);
	if (current && current != f)
		current->closed = true;
	current = f;
	f->has_samples = true;
	if (!strcmp(f->type, "counter") && value < 0)
		problem("counter %.*s is negative", (int)len, s);
	remember_series(s, len, labels);
}

/* Byte offset of the first byte of s[0..n) that is not in a well-formed
 * UTF-8 sequence, or n. Written here from the Unicode table of well-formed
 * sequences, independently of the daemon's src/util/utf8.c. */
static size_t utf8_bad_at(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], need, lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong form */
			hi = c == 0xed ? 0x9f : 0xbf; /* no surrogate */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			lo = c == 0xf0 ? 0x90 : 0x80; /* no overlong form */
			hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
		} else {
			return i;
		}
		if (i + need >= n) /* cut short by the end of the line */
			return i;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (unsigned k = 2; k <= need; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return i;
		i += need + 1;
	}
	return n;
}

int main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *in;

	if (argc != 2) {
		fprintf(stderr, "usage: hc_prom_check FILE\n");
		return 2;
	}
	file = argv[1];
	in = fopen(file, "r");
	if (!in) {
		printf("%s: %s\n", file, strerror(errno));
		return 1;
	}
	while ((n = getline(&line, &cap, in)) > 0) {
		line_no++;
		if (line[n - 1] != '\n')
			problem("last line does not end in a newline");
		else
			line[--n] = 0;
		if (strlen(line) != (size_t)n)
			problem("NUL byte in line");
		else if (utf8_bad_at((const unsigned char *)line, (size_t)n) != (size_t)n)
			problem("not UTF-8 at byte %zu", utf8_bad_at((const unsigned char *)line, (size_t)n) + 1);
		else if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7))
			descriptor(line);
		else if (line[0] == '#' || line[0] == 0)
			continue; /* a comment or a blank line */
		else
			sample(line);
	}
	free(line);
	fclose(in);
	for (size_t i = 0; i < nfamilies; i++)
		if (!families[i].has_samples)
			printf("%s: note: family %s has no samples\n", file, families[i].name);
	if (!line_no) {
		printf("%s: empty\n", file);
		errors++;
	}
	if (errors) {
		printf("%s: %u problems\n", file, errors);
		return 1;
	}
	printf("%s: OK, %zu families, %zu samples\n", file, nfamilies, nseries);
	return 0;
}
