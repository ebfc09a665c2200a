/*
 * test_config_args.c - every key of the config file as a plugstack.conf
 * argument (DESIGN 14; docs/rule.md, "Plugstack arguments (configless)";
 * plugin/config/config_args.c). One test per rule; every error test
 * asserts the exact message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fixture.h"

#define HINT "(fix the argument in plugstack.conf, then run restore-budget check-config)"
#define FIX "(fix the value, then run restore-budget check-config)"

typedef ut_cfg_fixture fixture;

static int setup(void **state)
{
	return ut_cfg_setup(state);
}

static int teardown(void **state)
{
	return ut_cfg_teardown(state);
}

/* The file (NULL: none) and the arguments in args, split at spaces as
 * Slurm splits a plugstack.conf line. Returns rb_config_load_args'. */
static int load(fixture *f, const char *file, const char *args)
{
	char buf[2048], *av[32], *save = NULL;
	int ac = 0;

	rb_config_free(f->cfg);
	f->cfg = NULL;
	memset(&f->err, 0, sizeof(f->err));
	if (file) {
		FILE *fp;

		snprintf(f->path, sizeof(f->path), "%s/rb.conf", f->dir);
		fp = fopen(f->path, "w");
		assert_non_null(fp);
		fputs(file, fp);
		fclose(fp);
	}
	snprintf(buf, sizeof(buf), "%s", args);
	for (char *t = strtok_r(buf, " ", &save); t && ac < 32;
	     t = strtok_r(NULL, " ", &save))
		av[ac++] = t;
	return rb_config_load_args(file ? f->path : NULL, ac, av,
				   "plugstack.conf", &f->cfg, &f->err);
}

static rb_config *load_ok(fixture *f, const char *file, const char *args)
{
	if (load(f, file, args) != 0)
		fail_msg("unexpected error: %s", f->err.msg);
	assert_non_null(f->cfg);
	return f->cfg;
}

/* Refused with exactly "plugstack.conf: argument "ARG": MESSAGE". */
static void load_fails(fixture *f, const char *file, const char *args,
		       const char *arg, const char *message)
{
	char expected[RB_ERR_MAX + 256];

	assert_int_equal(load(f, file, args), -1);
	assert_null(f->cfg);
	snprintf(expected, sizeof(expected), "plugstack.conf: argument \"%s\": %s",
		 arg, message);
	assert_string_equal(f->err.msg, expected);
}

/* The setting of key: its value and origin. */
static const rb_setting *setting(const rb_config *c, const char *key)
{
	for (size_t i = 0; i < c->n_settings; i++)
		if (strcmp(c->settings[i].key, key) == 0)
			return &c->settings[i];
	fail_msg("no setting %s", key);
	return NULL;
}

/* ---- the rules ---------------------------------------------------------- */

static void test_no_file_and_arguments_gives_defaults_plus_arguments(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL, "state_dir=/srv/rb max_failures=4");

	assert_string_equal(c->state_dir, "/srv/rb");
	assert_int_equal(c->max_failures, 4);
	assert_int_equal(c->restore_retry_num, 3); /* default */
	assert_int_equal(c->restore_timeout, 300);
	assert_int_equal(c->store, RB_STORE_DIR);
	assert_string_equal(c->path, "plugstack.conf arguments");
	assert_null(c->file);
	assert_string_equal(c->args_from, "plugstack.conf");
}

static void test_no_file_no_arguments_is_the_built_in_defaults(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL, "");

	assert_string_equal(c->path, "(built-in defaults)");
	assert_int_equal(c->max_failures, 2);
	assert_null(c->args_from);
	assert_int_equal(setting(c, "max_failures")->from, RB_FROM_DEFAULT);
}

static void test_argument_overrides_file(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "max_failures = 1;\nrestore_retry_num = 5;\n",
			       "max_failures=3 restore_accounting=ray");

	assert_int_equal(c->max_failures, 3);
	assert_int_equal(c->restore_retry_num, 5); /* the file's */
	assert_int_equal(c->accounting, RB_ACCOUNTING_RAY);
	assert_string_equal(c->file, f->path);
}

static void test_path_names_file_and_arguments(void **state)
{
	fixture *f = *state;
	char want[256];
	rb_config *c = load_ok(f, "max_failures = 1;\n", "max_failures=3");

	snprintf(want, sizeof(want), "%s and plugstack.conf arguments", f->path);
	assert_string_equal(c->path, want);
	c = load_ok(f, "max_failures = 1;\n", "config=/x slurm_bindir=/usr/bin run_dir=/run/rb");
	assert_string_equal(c->path, f->path); /* the plugin's own: no config key */
}

static void test_nested_keys_with_dots(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL,
			       "limits.max_failures=20 limits.allow_unlimited=true "
			       "checkpoint.fallback=true checkpoint.pattern=ckpt_* "
			       "partitions.preempt.max_failures=5 "
			       "accounts.ml-team.restore_retry_num=2 max_failures=-1");
	rb_limits l;

	assert_int_equal(c->caps.max_failures, 20);
	assert_true(c->caps.allow_unlimited);
	assert_true(c->checkpoint_fallback);
	assert_string_equal(c->checkpoint_pattern, "ckpt_*");
	assert_int_equal(c->max_failures, RB_UNLIMITED);
	rb_config_resolve(c, "preempt", "ML-team", NULL, &l, NULL, 0);
	assert_int_equal(l.max_failures, 5);
	assert_int_equal(l.restore_retry_num, 2);
}

static void test_partition_argument_joins_the_files_group(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
			       "partitions = { preempt = { restore_retry_num = 4; max_failures = 1; }; };\n"
			       "accounts = { a2023 = { name = \"2023proj\"; max_failures = 4; }; };\n",
			       "partitions.preempt.max_failures=5 accounts.2023PROJ.restore_retry_num=2");
	rb_limits l;

	assert_int_equal(c->n_partitions, 1);
	assert_int_equal(c->n_accounts, 1);
	rb_config_resolve(c, "preempt", "2023proj", NULL, &l, NULL, 0);
	assert_int_equal(l.max_failures, 4);      /* the account's (file) */
	assert_int_equal(l.restore_retry_num, 2); /* the account's (argument) */
	rb_config_resolve(c, "preempt", NULL, NULL, &l, NULL, 0);
	assert_int_equal(l.max_failures, 5);      /* argument over file */
	assert_int_equal(l.restore_retry_num, 4);
}

static void test_name_libconfig_cannot_hold_is_an_argument_too(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL, "accounts.2023proj.max_failures=4");
	rb_limits l;

	assert_int_equal(c->n_accounts, 1);
	assert_string_equal(c->accounts[0].name, "2023proj");
	rb_config_resolve(c, NULL, "2023proj", NULL, &l, NULL, 0);
	assert_int_equal(l.max_failures, 4);
}

static void test_exit_rules_one_argument_per_action(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL, "exit_rules.fatal=3,4 exit_rules.ignore=75");

	assert_true(c->exit_rules.set);
	assert_int_equal(c->exit_rules.n, 2);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 3), RB_EXIT_RULE_FATAL);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 4), RB_EXIT_RULE_FATAL);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 75), RB_EXIT_RULE_IGNORE);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 5), RB_EXIT_RULE_NONE);
}

static void test_exit_rules_arguments_replace_the_files_list(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
			       "exit_rules = ( { codes = [3]; action = \"fatal\"; } );\n",
			       "exit_rules.ignore=75");

	assert_int_equal(c->exit_rules.n, 1);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 3), RB_EXIT_RULE_NONE);
	assert_int_equal(rb_config_exit_rule(c, NULL, NULL, 75), RB_EXIT_RULE_IGNORE);
}

static void test_exit_rules_under_a_partition_and_an_account(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, NULL,
			       "exit_rules.fatal=3 partitions.gpu.exit_rules.restore_failure=3 "
			       "accounts.ml.exit_rules.ignore=3,9");

	assert_int_equal(rb_config_exit_rule(c, "cpu", NULL, 3), RB_EXIT_RULE_FATAL);
	assert_int_equal(rb_config_exit_rule(c, "gpu", NULL, 3), RB_EXIT_RULE_RESTORE_FAILURE);
	assert_int_equal(rb_config_exit_rule(c, "gpu", "ml", 9), RB_EXIT_RULE_IGNORE);
}

static void test_a_code_under_two_actions_is_refused(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "exit_rules.fatal=3,4 exit_rules.ignore=75,4",
		   "exit_rules.ignore=75,4",
		   "exit code 4 is already under argument \"exit_rules.fatal=3,4\": put each code under one action only " HINT);
}

static void test_an_action_given_twice_is_refused(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "exit_rules.fatal=3 exit_rules.fatal=4",
		   "exit_rules.fatal=4",
		   "exit_rules.fatal is already set: give each action once, its codes comma-separated " HINT);
	load_fails(f, NULL, "exit_rules.fail=3", "exit_rules.fail=3",
		   "unknown exit rule action (known: exit_rules.failure, exit_rules.restore_failure, exit_rules.fatal, exit_rules.ignore, each =CODE,CODE...; fix the argument in plugstack.conf, then run restore-budget check-config)");
}

static void test_exit_code_out_of_range_names_the_argument(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "exit_rules.fatal=3,300", "exit_rules.fatal=3,300",
		   "exit_rules[1].codes: 300 is out of range: exit codes are 0..255 " FIX);
	load_fails(f, NULL, "exit_rules.fatal=", "exit_rules.fatal=",
		   "exit_rules[1].codes is empty: give at least one exit code 0..255 " FIX);
}

static void test_the_same_key_twice_is_refused(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "max_failures=3 max_failures=4", "max_failures=4",
		   "this key is already set by argument \"max_failures=3\": give each key once " HINT);
}

static void test_dotted_names_are_refused_with_a_message(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "partitions.gpu.a100.max_failures=5",
		   "partitions.gpu.a100.max_failures=5",
		   "the partition name \"gpu.a100\" holds a '.' (or is too long), which an argument cannot tell from the key's dots: set this partition in the config file (partitions = { x = { name = \"...\"; ... }; }), then run restore-budget check-config");
	load_fails(f, NULL, "accounts.2023.proj.exit_rules.fatal=3",
		   "accounts.2023.proj.exit_rules.fatal=3",
		   "the account name \"2023.proj\" holds a '.' (or is too long), which an argument cannot tell from the key's dots: set this account in the config file (accounts = { x = { name = \"...\"; ... }; }), then run restore-budget check-config");
}

static void test_bad_value_message_names_the_argument(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "max_failures=two", "max_failures=two",
		   "max_failures = \"two\" has the wrong type: expected an integer " FIX);
	load_fails(f, NULL, "checkpoint.fallback=yes", "checkpoint.fallback=yes",
		   "checkpoint.fallback = \"yes\" has the wrong type: expected true or false " FIX);
	load_fails(f, NULL, "store=ledger", "store=ledger",
		   "store = \"ledger\" is not valid: must be \"dir\" or \"controller\" " FIX);
	load_fails(f, NULL, "state_dir=relative", "state_dir=relative",
		   "state_dir = \"relative\" is not an absolute path: must start with '/' " FIX);
}

static void test_out_of_range_argument_names_the_limit(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "max_failures=11", "max_failures=11",
		   "max_failures = 11 exceeds the cap limits.max_failures = 10 (lower it to at most 10 or raise the cap, then run restore-budget check-config)");
	load_fails(f, NULL, "restore_timeout=99999999999999999999999",
		   "restore_timeout=99999999999999999999999",
		   "restore_timeout = 99999999999999999999999 is out of range: must be 0..2592000 seconds " FIX);
	load_fails(f, NULL, "partitions.p.max_failures=-1", "partitions.p.max_failures=-1",
		   "partitions.p.max_failures = -1 (unlimited) is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..10, then run restore-budget check-config)");
}

static void test_argument_is_checked_against_the_files_caps(void **state)
{
	fixture *f = *state;

	/* the same cross-key rules as the file: the cap is the file's */
	load_fails(f, "limits = { max_failures = 3; };\n", "max_failures=5",
		   "max_failures=5",
		   "max_failures = 5 exceeds the cap limits.max_failures = 3 (lower it to at most 3 or raise the cap, then run restore-budget check-config)");
	load_ok(f, "limits = { max_failures = 3; };\nmax_failures = 3;\n",
		"limits.max_failures=5 max_failures=5");
}

static void test_unknown_key_names_the_known_ones(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "max_failure=3", "max_failure=3",
		   "unknown key \"max_failure\" (known: store, state_dir, max_failures, restore_retry_num, restore_timeout, restore_accounting, count_preemptions, track, on_error, on_exhausted, limits, checkpoint, partitions, accounts, max_interruptions, exit_rules, requeue_exit, and the plugin's own config=PATH, slurm_bindir=DIR, run_dir=DIR; " "fix the argument in plugstack.conf, then run restore-budget check-config)");
	load_fails(f, NULL, "limits.max=3", "limits.max=3",
		   "unknown key \"max\" (known keys here: max_failures, restore_retry_num, allow_unlimited, max_interruptions; fix the argument in plugstack.conf, then run restore-budget check-config)");
	load_fails(f, NULL, "partitions.p.fallback=true", "partitions.p.fallback=true",
		   "unknown key \"fallback\" of partition \"p\" (known keys: name, max_failures, restore_retry_num, restore_timeout, max_interruptions, exit_rules; fix the argument in plugstack.conf, then run restore-budget check-config)");
}

static void test_an_argument_that_is_not_key_value_is_refused(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "verbose", "verbose",
		   "not KEY=VALUE (known: config=PATH, slurm_bindir=DIR, run_dir=DIR, and every key of the config file, nested keys with dots: limits.max_failures=10; " "fix the argument in plugstack.conf, then run restore-budget check-config)");
	load_fails(f, NULL, "limits=5", "limits=5",
		   "limits is a group: give its keys as limits.KEY=VALUE " HINT);
	load_fails(f, NULL, "max_failures.x=5", "max_failures.x=5",
		   "max_failures holds a value, not keys " HINT);
}

static void test_hostile_bytes_are_quoted_in_messages(void **state)
{
	fixture *f = *state;

	load_fails(f, NULL, "state_dir=rel\x1b[2J", "state_dir=rel\\x1b[2J",
		   "state_dir = \"rel\\x1b[2J\" is not an absolute path: must start with '/' " FIX);
}

static void test_origins_default_file_argument(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
			       "# a comment\nrestore_retry_num = 5;\npartitions = { p = { max_failures = 1; }; };\n",
			       "max_failures=3 exit_rules.fatal=3,4 partitions.p.restore_retry_num=2");
	const rb_setting *s;

	s = setting(c, "max_failures");
	assert_int_equal(s->from, RB_FROM_ARGUMENT);
	assert_string_equal(s->value, "3");
	s = setting(c, "restore_retry_num");
	assert_int_equal(s->from, RB_FROM_FILE);
	assert_int_equal(s->line, 2);
	assert_string_equal(s->value, "5");
	s = setting(c, "restore_timeout");
	assert_int_equal(s->from, RB_FROM_DEFAULT);
	assert_string_equal(s->value, "300");
	assert_string_equal(setting(c, "store")->value, "controller");
	assert_string_equal(setting(c, "limits.allow_unlimited")->value, "false");
	assert_string_equal(setting(c, "requeue_exit")->value, "unset");
	s = setting(c, "exit_rules.fatal");
	assert_int_equal(s->from, RB_FROM_ARGUMENT);
	assert_string_equal(s->value, "3,4");
	s = setting(c, "partitions.p.max_failures");
	assert_int_equal(s->from, RB_FROM_FILE);
	assert_int_equal(s->line, 3);
	s = setting(c, "partitions.p.restore_retry_num");
	assert_int_equal(s->from, RB_FROM_ARGUMENT);
	assert_string_equal(s->value, "2");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_no_file_and_arguments_gives_defaults_plus_arguments),
		T(test_no_file_no_arguments_is_the_built_in_defaults),
		T(test_argument_overrides_file),
		T(test_path_names_file_and_arguments),
		T(test_nested_keys_with_dots),
		T(test_partition_argument_joins_the_files_group),
		T(test_name_libconfig_cannot_hold_is_an_argument_too),
		T(test_exit_rules_one_argument_per_action),
		T(test_exit_rules_arguments_replace_the_files_list),
		T(test_exit_rules_under_a_partition_and_an_account),
		T(test_a_code_under_two_actions_is_refused),
		T(test_an_action_given_twice_is_refused),
		T(test_exit_code_out_of_range_names_the_argument),
		T(test_the_same_key_twice_is_refused),
		T(test_dotted_names_are_refused_with_a_message),
		T(test_bad_value_message_names_the_argument),
		T(test_out_of_range_argument_names_the_limit),
		T(test_argument_is_checked_against_the_files_caps),
		T(test_unknown_key_names_the_known_ones),
		T(test_an_argument_that_is_not_key_value_is_refused),
		T(test_hostile_bytes_are_quoted_in_messages),
		T(test_origins_default_file_argument),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
