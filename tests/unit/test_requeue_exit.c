/*
 * test_requeue_exit.c - the requeue code (docs/rule.md, "The requeue
 * code"), each test named after its rule: the config key requeue_exit,
 * slurm.conf's RequeueExit, RESTORE_BUDGET_REQUEUE_EXIT in the job's
 * environment and check-config's warning.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "requeue_exit.h"
#include "slurmconf.h"
#include "step.h"

/* A directory of one test's files (the config reader refuses files in a
 * directory others can write, like /tmp itself). */
typedef struct {
	char dir[64];
	char path[96];
	rb_config *cfg;
	rb_err err;
} files;

static int files_up(void **state)
{
	files *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/rb_test_requeue.XXXXXX");
	if (!mkdtemp(f->dir) || chmod(f->dir, 0755) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int files_down(void **state)
{
	files *f = *state;
	char cmd[128];

	rb_config_free(f->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write text to dir/name; its path in f->path. */
static void put(files *f, const char *name, const char *text)
{
	FILE *fp;

	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
	fp = fopen(f->path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

/* The config of text: 0 (f->cfg), or -1 (f->err). */
static int config_of(files *f, const char *text)
{
	put(f, "rb.conf", text);
	rb_config_free(f->cfg);
	f->cfg = NULL;
	return rb_config_load(f->path, &f->cfg, &f->err);
}

static rb_requeue_exit requeue_exit_of_text(const char *text)
{
	rb_requeue_exit r;

	rb_slurmconf_parse_requeue_exit(text, &r);
	return r;
}

static const rb_step_var *requeue_var(const rb_step_env *env)
{
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++)
		if (strcmp(env->var[i].name, "RESTORE_BUDGET_REQUEUE_EXIT") == 0)
			return &env->var[i];
	fail_msg("RESTORE_BUDGET_REQUEUE_EXIT is not in the env table");
	return NULL;
}

/* ---- the config key --------------------------------------------------- */

static void test_requeue_exit_is_read_from_the_config(void **state)
{
	files *f = *state;

	assert_int_equal(config_of(f, "requeue_exit = 42;\n"), 0);
	assert_int_equal(f->cfg->requeue_exit, 42);
}

static void test_requeue_exit_unset_by_default(void **state)
{
	files *f = *state;
	rb_config *d = rb_config_defaults();

	assert_non_null(d);
	assert_int_equal(d->requeue_exit, 0);
	rb_config_free(d);
	assert_int_equal(config_of(f, "max_failures = 3;\n"), 0);
	assert_int_equal(f->cfg->requeue_exit, 0);
}

static void test_requeue_exit_out_of_range_names_file_line_value_limit(void **state)
{
	static const char *const bad[] = { "0", "256", "-1" };
	files *f = *state;
	char want[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char text[64];

		snprintf(text, sizeof(text), "max_failures = 2;\nrequeue_exit = %s;\n",
			 bad[i]);
		assert_int_equal(config_of(f, text), -1);
		snprintf(want, sizeof(want),
			 "%s:2: requeue_exit = %s is out of range: must be 1..255",
			 f->path, bad[i]);
		assert_non_null(strstr(f->err.msg, want));
	}
}

static void test_requeue_exit_must_be_an_integer(void **state)
{
	files *f = *state;

	assert_int_equal(config_of(f, "requeue_exit = \"42\";\n"), -1);
	assert_non_null(strstr(f->err.msg, ":1: "));
	assert_non_null(strstr(f->err.msg, "requeue_exit"));
}

/* ---- slurm.conf's RequeueExit ------------------------------------------ */

static void test_RequeueExit_lists_and_ranges_are_parsed(void **state)
{
	rb_requeue_exit r = requeue_exit_of_text(
		"ClusterName=c\n  requeueexit = 3,10-12 # site\n");

	(void)state;
	assert_true(r.set);
	assert_string_equal(r.text, "3,10-12");
	assert_int_equal(r.first, 3);
	assert_true(rb_requeue_exit_has(&r, 3));
	assert_true(rb_requeue_exit_has(&r, 10));
	assert_true(rb_requeue_exit_has(&r, 12));
	assert_false(rb_requeue_exit_has(&r, 13));
	assert_false(rb_requeue_exit_has(&r, 256));
	assert_false(rb_requeue_exit_has(&r, -1));
}

static void test_RequeueExitHold_is_not_RequeueExit(void **state)
{
	rb_requeue_exit r = requeue_exit_of_text(
		"RequeueExitHold=43\n#RequeueExit=44\n");

	(void)state;
	assert_false(r.set);
	assert_int_equal(r.first, -1);
	assert_false(rb_requeue_exit_has(&r, 43));
}

static void test_RequeueExit_last_line_wins_and_junk_is_skipped(void **state)
{
	rb_requeue_exit r = requeue_exit_of_text(
		"RequeueExit=7\nRequeueExit=x,0,300,5-,9-8,42\n");

	(void)state;
	assert_false(rb_requeue_exit_has(&r, 7));
	assert_true(rb_requeue_exit_has(&r, 0));
	assert_true(rb_requeue_exit_has(&r, 42));
	assert_false(rb_requeue_exit_has(&r, 5));
	/* 0 is in the list but is no code to exit with */
	assert_int_equal(r.first, 42);
}

static void test_RequeueExit_is_read_from_the_file(void **state)
{
	files *f = *state;
	rb_requeue_exit r;
	rb_err err;

	put(f, "slurm.conf", "ClusterName=c\nRequeueExit=42\n");
	assert_int_equal(rb_slurmconf_requeue_exit(f->path, &r, &err), 0);
	assert_int_equal(r.first, 42);
	assert_int_equal(rb_slurmconf_requeue_exit("/nonexistent/slurm.conf",
						   &r, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/slurm.conf"));
	assert_false(r.set);
}

/* ---- the code the job is given ----------------------------------------- */

static void test_requeue_exit_defaults_to_first_RequeueExit(void **state)
{
	rb_config *cfg = rb_config_defaults();
	rb_requeue_exit r = requeue_exit_of_text("RequeueExit=75,42\n");

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(rb_requeue_exit_of(cfg, &r), 75);
	rb_config_free(cfg);
}

static void test_requeue_exit_config_wins_over_RequeueExit(void **state)
{
	rb_config *cfg = rb_config_defaults();
	rb_requeue_exit r = requeue_exit_of_text("RequeueExit=75,42\n");

	(void)state;
	assert_non_null(cfg);
	cfg->requeue_exit = 42;
	assert_int_equal(rb_requeue_exit_of(cfg, &r), 42);
	assert_int_equal(rb_requeue_exit_of(cfg, NULL), 42);
	rb_config_free(cfg);
}

static void test_requeue_exit_unknown_without_key_or_RequeueExit(void **state)
{
	rb_config *cfg = rb_config_defaults();
	rb_requeue_exit none = requeue_exit_of_text("ClusterName=c\n");

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(rb_requeue_exit_of(cfg, NULL), 0);
	assert_int_equal(rb_requeue_exit_of(cfg, &none), 0);
	rb_config_free(cfg);
}

static void test_requeue_exit_exported(void **state)
{
	rb_record rec;
	rb_step_env env;
	const rb_step_var *v;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rb_step_env_of(&rec, 1, RB_PHASE_RESTORING, "/c", &env);
	rb_step_env_set_requeue_exit(&env, 42);
	v = requeue_var(&env);
	assert_true(v->set);
	assert_string_equal(v->value, "42");
	/* the config's, not the record's: kept when the record is behind */
	assert_false(v->of_record);
}

static void test_requeue_exit_not_exported_when_unknown(void **state)
{
	rb_record rec;
	rb_step_env env;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rb_step_env_of(&rec, 0, RB_PHASE_FRESH, "", &env);
	assert_false(requeue_var(&env)->set);
	rb_step_env_set_requeue_exit(&env, 0);
	assert_false(requeue_var(&env)->set);
}

/* ---- check-config's warning -------------------------------------------- */

static void test_check_config_warns_when_requeue_exit_not_in_RequeueExit(void **state)
{
	files *f = *state;
	rb_requeue_exit r = requeue_exit_of_text("RequeueExit=42,3\n");
	char buf[1024];

	assert_int_equal(config_of(f, "requeue_exit = 7;\n"), 0);
	assert_int_equal(rb_requeue_exit_warning(f->cfg, &r, "/etc/slurm/slurm.conf",
						 buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "requeue_exit = 7"));
	assert_non_null(strstr(buf, f->path));
	assert_non_null(strstr(buf, "RequeueExit=42,3 of /etc/slurm/slurm.conf"));
	assert_non_null(strstr(buf, "set requeue_exit to one of 42,3"));
	assert_non_null(strstr(buf, "scontrol reconfigure"));
}

static void test_check_config_warns_when_slurm_conf_has_no_RequeueExit(void **state)
{
	files *f = *state;
	rb_requeue_exit none = requeue_exit_of_text("ClusterName=c\n");
	char buf[1024];

	assert_int_equal(config_of(f, "requeue_exit = 42;\n"), 0);
	assert_int_equal(rb_requeue_exit_warning(f->cfg, &none, "/s/slurm.conf",
						 buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "/s/slurm.conf sets no RequeueExit"));
	assert_non_null(strstr(buf, "add RequeueExit=42 to /s/slurm.conf"));
}

static void test_check_config_silent_when_requeue_exit_in_RequeueExit(void **state)
{
	files *f = *state;
	rb_requeue_exit r = requeue_exit_of_text("RequeueExit=3,40-45\n");
	char buf[1024];

	assert_int_equal(config_of(f, "requeue_exit = 42;\n"), 0);
	assert_int_equal(rb_requeue_exit_warning(f->cfg, &r, "/s", buf,
						 sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* unreadable slurm.conf: nothing to compare with */
	assert_int_equal(rb_requeue_exit_warning(f->cfg, NULL, "/s", buf,
						 sizeof(buf)), 0);
	/* the key unset: the default is RequeueExit's own code */
	f->cfg->requeue_exit = 0;
	assert_int_equal(rb_requeue_exit_warning(f->cfg, &r, "/s", buf,
						 sizeof(buf)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requeue_exit_is_read_from_the_config, files_up, files_down),
		cmocka_unit_test_setup_teardown(test_requeue_exit_unset_by_default, files_up, files_down),
		cmocka_unit_test_setup_teardown(test_requeue_exit_out_of_range_names_file_line_value_limit, files_up, files_down),
		cmocka_unit_test_setup_teardown(test_requeue_exit_must_be_an_integer, files_up, files_down),
		cmocka_unit_test(test_RequeueExit_lists_and_ranges_are_parsed),
		cmocka_unit_test(test_RequeueExitHold_is_not_RequeueExit),
		cmocka_unit_test(test_RequeueExit_last_line_wins_and_junk_is_skipped),
		cmocka_unit_test_setup_teardown(test_RequeueExit_is_read_from_the_file, files_up, files_down),
		cmocka_unit_test(test_requeue_exit_defaults_to_first_RequeueExit),
		cmocka_unit_test(test_requeue_exit_config_wins_over_RequeueExit),
		cmocka_unit_test(test_requeue_exit_unknown_without_key_or_RequeueExit),
		cmocka_unit_test(test_requeue_exit_exported),
		cmocka_unit_test(test_requeue_exit_not_exported_when_unknown),
		cmocka_unit_test_setup_teardown(test_check_config_warns_when_requeue_exit_not_in_RequeueExit, files_up, files_down),
		cmocka_unit_test_setup_teardown(test_check_config_warns_when_slurm_conf_has_no_RequeueExit, files_up, files_down),
		cmocka_unit_test_setup_teardown(test_check_config_silent_when_requeue_exit_in_RequeueExit, files_up, files_down),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
