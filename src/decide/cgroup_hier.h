/* cgroup_hier: which cgroup hierarchy the per-cgroup rules match on this
 * host, and refusing rules that cannot match any process.
 *
 * Rules name cgroup paths ("/docker/abc"). A process's path comes from
 * /proc/PID/cgroup (procs.h: parse_cgroup_policy_buf): the "0::" line where
 * cgroup v2 is mounted (unified or hybrid hosts), else the v1 memory
 * hierarchy's line, else the v1 name=systemd one. Without any of those,
 * every process is in "/", and a rule for any other path would be ignored
 * silently: that configuration is refused at start and on reload. */
#pragma once
#include <stddef.h>

#include "config.h"
#include "procs.h"

/* From proc_root/self/cgroup (all processes share the hierarchies). 0 or
 * -errno. */
int cgroup_hier_detect(const char *proc_root, enum cgroup_hier *h);

/* 0, or -ENOENT with a message naming the first rule that no process can
 * match under h. Pure. */
int cgroup_rules_check(const struct config *cfg, enum cgroup_hier h, char *msg, size_t msglen);

/* Detects the hierarchy, logs it when it is not cgroup v2 (once per call),
 * and checks the rules. 0, or -errno with msg set. */
int cgroup_rules_verify(const struct config *cfg, const char *proc_root, char *msg, size_t msglen);
