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
#include "slurmconf.h"
#include "step.h"

/* One directory for the group's files (the config reader refuses files in
 * a directory others can write, like /tmp itself), its two file names, and
 * the config last read. */
typedef struct {
	char dir[64];
	char path[96];
	rb_config *cfg;
	rb_err err;
} files;

static files group;
static const char *const file_names[] = { "rb.conf", "slurm.conf" };

static int group_up(void **state)
{
	(void)state;
	strcpy(group.dir, "/tmp/rb_test_requeue.XXXXXX");
	return mkdtemp(group.dir) && chmod(group.dir, 0755) == 0 ? 0 : -1;
}

static int group_down(void **state)
{
	char path[128];

	(void)state;
	rb_config_free(group.cfg);
	for (size_t i = 0; i < sizeof(file_names) / sizeof(*file_names); i++) {
		snprintf(path, sizeof(path), "%s/%s", group.dir, file_names[i]);
		unlink(path);
	}
	return rmdir(group.dir);
}

/* Each test starts from the group's directory and no config. */
static int test_up(void **state)
{
	rb_config_free(group.cfg);
	group.cfg = NULL;
	*state = &group;
	return 0;
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

/* The code for config text and slurm.conf text (NULL: unreadable). */
static int code_of(files *f, const char *conf, const char *slurm_text)
{
	rb_requeue_exit r;

	if (slurm_text)
		rb_slurmconf_parse_requeue_exit(slurm_text, &r);
	assert_int_equal(config_of(f, conf), 0);
	return rb_requeue_exit_of(f->cfg, slurm_text ? &r : NULL);
}

static void test_requeue_exit_defaults_to_first_RequeueExit(void **state)
{
	assert_int_equal(code_of(*state, "max_failures = 2;\n",
				 "RequeueExit=75,42\n"), 75);
}

static void test_requeue_exit_config_wins_over_RequeueExit(void **state)
{
	assert_int_equal(code_of(*state, "requeue_exit = 42;\n",
				 "RequeueExit=75,42\n"), 42);
	assert_int_equal(code_of(*state, "requeue_exit = 42;\n", NULL), 42);
}

static void test_requeue_exit_unknown_without_key_or_RequeueExit(void **state)
{
	assert_int_equal(code_of(*state, "max_failures = 2;\n", NULL), 0);
	assert_int_equal(code_of(*state, "max_failures = 2;\n",
				 "ClusterName=c\nRequeueExitHold=43\n"), 0);
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

/* The warning for config text against slurm.conf text (NULL: unreadable)
 * at slurm_path: its return, the line in buf. */
static int warning_of(files *f, const char *conf, const char *slurm_text,
		      const char *slurm_path, char *buf, size_t len)
{
	rb_requeue_exit r;

	if (slurm_text)
		rb_slurmconf_parse_requeue_exit(slurm_text, &r);
	assert_int_equal(config_of(f, conf), 0);
	return rb_requeue_exit_warning(f->cfg, slurm_text ? &r : NULL,
				       slurm_path, buf, len);
}

static void test_check_config_warns_when_requeue_exit_not_in_RequeueExit(void **state)
{
	files *f = *state;
	char buf[1024];

	assert_int_equal(warning_of(f, "requeue_exit = 7;\n", "RequeueExit=42,3\n",
				    "/etc/slurm/slurm.conf", buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "requeue_exit = 7"));
	assert_non_null(strstr(buf, f->path));
	assert_non_null(strstr(buf, "RequeueExit=42,3 of /etc/slurm/slurm.conf"));
	assert_non_null(strstr(buf, "set requeue_exit to one of 42,3"));
	assert_non_null(strstr(buf, "scontrol reconfigure"));
}

static void test_check_config_warns_when_slurm_conf_has_no_RequeueExit(void **state)
{
	char buf[1024];

	assert_int_equal(warning_of(*state, "requeue_exit = 42;\n",
				    "ClusterName=c\n", "/s/slurm.conf", buf,
				    sizeof(buf)), 1);
	assert_non_null(strstr(buf, "/s/slurm.conf sets no RequeueExit"));
	assert_non_null(strstr(buf, "add RequeueExit=42 to /s/slurm.conf"));
}

static void test_check_config_silent_when_requeue_exit_in_RequeueExit(void **state)
{
	static const struct {
		const char *conf, *slurm;
	} quiet[] = {
		{ "requeue_exit = 42;\n", "RequeueExit=3,40-45\n" },
		/* unreadable slurm.conf: nothing to compare with */
		{ "requeue_exit = 42;\n", NULL },
		/* the key unset: the default is RequeueExit's own code */
		{ "max_failures = 2;\n", "RequeueExit=3\n" },
	};
	char buf[1024];

	for (size_t i = 0; i < sizeof(quiet) / sizeof(*quiet); i++) {
		assert_int_equal(warning_of(*state, quiet[i].conf, quiet[i].slurm,
					    "/s", buf, sizeof(buf)), 0);
		assert_string_equal(buf, "");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_requeue_exit_is_read_from_the_config, test_up),
		cmocka_unit_test_setup(test_requeue_exit_unset_by_default, test_up),
		cmocka_unit_test_setup(test_requeue_exit_out_of_range_names_file_line_value_limit, test_up),
		cmocka_unit_test_setup(test_requeue_exit_must_be_an_integer, test_up),
		cmocka_unit_test_setup(test_RequeueExit_lists_and_ranges_are_parsed, test_up),
		cmocka_unit_test_setup(test_RequeueExitHold_is_not_RequeueExit, test_up),
		cmocka_unit_test_setup(test_RequeueExit_last_line_wins_and_junk_is_skipped, test_up),
		cmocka_unit_test_setup(test_RequeueExit_is_read_from_the_file, test_up),
		cmocka_unit_test_setup(test_requeue_exit_defaults_to_first_RequeueExit, test_up),
		cmocka_unit_test_setup(test_requeue_exit_config_wins_over_RequeueExit, test_up),
		cmocka_unit_test_setup(test_requeue_exit_unknown_without_key_or_RequeueExit, test_up),
		cmocka_unit_test_setup(test_requeue_exit_exported, test_up),
		cmocka_unit_test_setup(test_requeue_exit_not_exported_when_unknown, test_up),
		cmocka_unit_test_setup(test_check_config_warns_when_requeue_exit_not_in_RequeueExit, test_up),
		cmocka_unit_test_setup(test_check_config_warns_when_slurm_conf_has_no_RequeueExit, test_up),
		cmocka_unit_test_setup(test_check_config_silent_when_requeue_exit_in_RequeueExit, test_up),
	};

	return cmocka_run_group_tests(tests, group_up, group_down);
}
