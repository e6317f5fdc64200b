/* cgroup_hier: which hierarchy the rules match, from fixture
 * PROC_ROOT/self/cgroup files, and rules refused when no process can match
 * them (issue 16, defect 8). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cgroup_hier.h"

#define FIX HC_FIXTURES "/cgroup_hier"

static void test_detect(void **state)
{
	enum cgroup_hier h;

	(void)state;
	assert_int_equal(cgroup_hier_detect(FIX "/v1_memory", &h), 0);
	assert_int_equal(h, CGROUP_HIER_V1_MEMORY);
	assert_int_equal(cgroup_hier_detect(FIX "/v1_systemd", &h), 0);
	assert_int_equal(h, CGROUP_HIER_V1_SYSTEMD);
	assert_int_equal(cgroup_hier_detect(FIX "/v1_none", &h), 0);
	assert_int_equal(h, CGROUP_HIER_NONE);
	assert_int_equal(cgroup_hier_detect(FIX "/hybrid", &h), 0);
	assert_int_equal(h, CGROUP_HIER_V2);
	assert_int_equal(cgroup_hier_detect(FIX "/missing", &h), -ENOENT);
}

static void test_rules_refused_where_they_cannot_match(void **state)
{
	struct config c;
	struct cgroup_rule rules[2] = {
	    {.path = "/", .file = "root.conf", .line = 2},
	    {.path = "/docker/4f1c2a", .file = "docker.conf", .line = 3},
	};
	char msg[512] = "";

	(void)state;
	config_defaults(&c);
	c.rules = rules;
	c.nrules = 1; /* "/" matches everyone anywhere */
	assert_int_equal(cgroup_rules_check(&c, CGROUP_HIER_NONE, msg, sizeof(msg)), 0);
	c.nrules = 2;
	assert_int_equal(cgroup_rules_check(&c, CGROUP_HIER_V1_MEMORY, msg, sizeof(msg)), 0);
	assert_int_equal(cgroup_rules_check(&c, CGROUP_HIER_V1_SYSTEMD, msg, sizeof(msg)), 0);
	assert_int_equal(cgroup_rules_check(&c, CGROUP_HIER_V2, msg, sizeof(msg)), 0);
	assert_int_equal(cgroup_rules_check(&c, CGROUP_HIER_NONE, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "docker.conf:3: path /docker/4f1c2a can never match"));
	/* The whole check on fixture hosts. */
	assert_int_equal(cgroup_rules_verify(&c, FIX "/v1_memory", msg, sizeof(msg)), 0);
	assert_int_equal(cgroup_rules_verify(&c, FIX "/v1_none", msg, sizeof(msg)), -ENOENT);
	assert_int_equal(cgroup_rules_verify(&c, FIX "/missing", msg, sizeof(msg)), -ENOENT);
	c.nrules = 0;
	assert_int_equal(cgroup_rules_verify(&c, FIX "/missing", msg, sizeof(msg)), 0);
	c.rules = NULL;
	config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_detect),
	    cmocka_unit_test(test_rules_refused_where_they_cannot_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
