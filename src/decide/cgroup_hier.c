/* Which cgroup hierarchy the per-cgroup rules match here (issue 16, defect
 * 8: on cgroup-v1-only hosts every rule was ignored without a word). */
#include "cgroup_hier.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "procfs.h"

int cgroup_hier_detect(const char *proc_root, enum cgroup_hier *h)
{
	char file[PATH_MAX], buf[32768], path[PATH_MAX];
	ssize_t n;

	snprintf(file, sizeof(file), "%s/self/cgroup", proc_root);
	n = read_small_file_at(AT_FDCWD, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return parse_cgroup_policy_buf(buf, (size_t)n, path, sizeof(path), h);
}

int cgroup_rules_check(const struct config *cfg, enum cgroup_hier h, char *msg, size_t msglen)
{
	if (h != CGROUP_HIER_NONE)
		return 0;
	for (size_t i = 0; i < cfg->nrules; i++) {
		const struct cgroup_rule *r = &cfg->rules[i];

		if (strcmp(r->path, "/") != 0) {
			snprintf(msg, msglen,
				 "%s:%u: path %s can never match: /proc/self/cgroup has no cgroup v2 line and no "
				 "cgroup v1 memory or name=systemd hierarchy, so every process is in /",
				 r->file ? r->file : "?", r->line, r->path);
			return -ENOENT;
		}
	}
	return 0;
}

int cgroup_rules_verify(const struct config *cfg, const char *proc_root, char *msg, size_t msglen)
{
	enum cgroup_hier h;
	int r = cgroup_hier_detect(proc_root, &h);

	if (r < 0) {
		snprintf(msg, msglen, "cannot tell which cgroup hierarchy the rules match: %s/self/cgroup: %s",
			 proc_root, strerror(-r));
		return cfg->nrules ? r : 0;
	}
	if (h != CGROUP_HIER_V2 && cfg->nrules)
		log_info("no cgroup v2 line in %s/self/cgroup: cgroup rules match the paths of %s", proc_root,
			 cgroup_hier_name(h));
	return cgroup_rules_check(cfg, h, msg, msglen);
}
