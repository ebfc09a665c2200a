/*
 * test_config.c - the admin's config file, job options and caps
 * (docs/rule.md, "Limits"; plugin/config/config.h).
 *
 * Every error test asserts the exact "file:line: message" text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "fixture.h"

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

/* Write len bytes of text to a fresh temp file in the fixture's directory. */
static const char *write_conf_len(fixture *f, const char *text, size_t len)
{
	int fd;

	if (f->path[0])
		unlink(f->path);
	snprintf(f->path, sizeof(f->path), "%s/rb.conf.XXXXXX", f->dir);
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return f->path;
}

static const char *write_conf(fixture *f, const char *text)
{
	return write_conf_len(f, text, strlen(text));
}

/* Load text; it must be accepted. */
static rb_config *load_ok(fixture *f, const char *text)
{
	write_conf(f, text);
	rb_config_free(f->cfg);
	f->cfg = NULL;
	memset(&f->err, 0, sizeof(f->err));
	if (rb_config_load(f->path, &f->cfg, &f->err) != 0)
		fail_msg("unexpected error: %s", f->err.msg);
	assert_non_null(f->cfg);
	return f->cfg;
}

/* Load text; it must be refused with exactly "PATH:LINE: message". */
static void load_fails(fixture *f, const char *text, int line,
		       const char *message)
{
	char expected[RB_ERR_MAX + 256];
	rb_config *cfg = (rb_config *)0x1;

	write_conf(f, text);
	memset(&f->err, 0, sizeof(f->err));
	assert_int_equal(rb_config_load(f->path, &cfg, &f->err), -1);
	assert_null(cfg);
	if (line > 0)
		snprintf(expected, sizeof(expected), "%s:%d: %s", f->path,
			 line, message);
	else
		snprintf(expected, sizeof(expected), "%s: %s", f->path,
			 message);
	assert_string_equal(f->err.msg, expected);
}

/* ---- defaults and parsing ---------------------------------------------- */

static void test_defaults_match_design(void **state)
{
	rb_config *c = rb_config_defaults();

	(void)state;
	assert_non_null(c);
	assert_string_equal(c->path, "(built-in defaults)");
	assert_string_equal(c->state_dir, "/var/spool/slurm/restore_budget");
	assert_int_equal(c->max_failures, 2);
	assert_int_equal(c->restore_retry_num, 3);
	assert_int_equal(c->restore_timeout, 300);
	assert_int_equal(c->accounting, RB_ACCOUNTING_GROUPED);
	assert_false(c->count_preemptions);
	assert_int_equal(c->track, RB_TRACK_ALL);
	assert_int_equal(c->on_error, RB_ON_ERROR_OPEN);
	assert_int_equal(c->on_exhausted, RB_ON_EXHAUSTED_FAIL);
	assert_int_equal(c->store, RB_STORE_CONTROLLER);
	assert_int_equal(c->caps.max_failures, 10);
	assert_int_equal(c->caps.restore_retry_num, 10);
	assert_false(c->caps.allow_unlimited);
	assert_string_equal(c->checkpoint_pattern, "checkpoint*");
	assert_string_equal(c->checkpoint_latest, "latest");
	assert_int_equal(c->n_partitions, 0);
	assert_int_equal(c->n_accounts, 0);
	rb_config_free(c);
	rb_config_free(NULL);
}

static void test_empty_file_gives_defaults_and_its_path(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "# nothing set\n");

	assert_string_equal(c->path, f->path);
	assert_string_equal(c->state_dir, RB_DEFAULT_STATE_DIR);
	assert_int_equal(c->max_failures, 2);
	assert_int_equal(c->restore_retry_num, 3);
	assert_int_equal(c->restore_timeout, 300);
	assert_int_equal(c->caps.max_failures, 10);
}

/* docs/stores.md, "Which store": the controller's job record, unless the
 * admin named a state_dir (which only the shared-directory store uses);
 * an explicit store always wins. */
static void test_store_is_controller_unless_a_state_dir_is_named(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "max_failures = 1;\n");

	assert_int_equal(c->store, RB_STORE_CONTROLLER);
	c = load_ok(f, "state_dir = \"/srv/rb\";\n");
	assert_int_equal(c->store, RB_STORE_DIR);
	c = load_ok(f, "state_dir = \"/srv/rb\";\nstore = \"controller\";\n");
	assert_int_equal(c->store, RB_STORE_CONTROLLER);
	c = load_ok(f, "store = \"dir\";\n");
	assert_int_equal(c->store, RB_STORE_DIR);
}

static void test_every_key_is_parsed(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
		"state_dir = \"/shared/rb\";\n"
		"max_failures = 7;\n"
		"restore_retry_num = 0;\n"
		"restore_timeout = 0;\n"
		"restore_accounting = \"ray\";\n"
		"count_preemptions = true;\n"
		"track = \"opt-in\";\n"
		"on_error = \"closed\";\n"
		"on_exhausted = \"hold\";\n"
		"store = \"controller\";\n"
		"limits = { max_failures = 20; restore_retry_num = 8;\n"
		"           allow_unlimited = true; };\n"
		"checkpoint = { pattern = \"ckpt-*\"; latest = \"LATEST\"; };\n"
		"partitions = {\n"
		"  preempt = { max_failures = 5; restore_retry_num = 4;\n"
		"              restore_timeout = 600; };\n"
		"  debug = { max_failures = -1; };\n"
		"};\n"
		"accounts = { ml-team = { max_failures = 4; restore_timeout = 60; };\n"
		"             a2023 = { name = \"2023.proj\"; restore_retry_num = 2; }; };\n");

	assert_string_equal(c->state_dir, "/shared/rb");
	assert_int_equal(c->max_failures, 7);
	assert_int_equal(c->restore_retry_num, 0);
	assert_int_equal(c->restore_timeout, 0);
	assert_int_equal(c->accounting, RB_ACCOUNTING_RAY);
	assert_true(c->count_preemptions);
	assert_int_equal(c->track, RB_TRACK_OPT_IN);
	assert_int_equal(c->on_error, RB_ON_ERROR_CLOSED);
	assert_int_equal(c->on_exhausted, RB_ON_EXHAUSTED_HOLD);
	assert_int_equal(c->store, RB_STORE_CONTROLLER);
	assert_int_equal(c->caps.max_failures, 20);
	assert_int_equal(c->caps.restore_retry_num, 8);
	assert_true(c->caps.allow_unlimited);
	assert_string_equal(c->checkpoint_pattern, "ckpt-*");
	assert_string_equal(c->checkpoint_latest, "LATEST");

	assert_int_equal(c->n_partitions, 2);
	assert_string_equal(c->partitions[0].name, "preempt");
	assert_true(c->partitions[0].values.has_max_failures);
	assert_int_equal(c->partitions[0].values.max_failures, 5);
	assert_true(c->partitions[0].values.has_restore_retry_num);
	assert_int_equal(c->partitions[0].values.restore_retry_num, 4);
	assert_true(c->partitions[0].values.has_restore_timeout);
	assert_int_equal(c->partitions[0].values.restore_timeout, 600);
	assert_string_equal(c->partitions[1].name, "debug");
	assert_int_equal(c->partitions[1].values.max_failures, RB_UNLIMITED);
	assert_false(c->partitions[1].values.has_restore_retry_num);
	assert_false(c->partitions[1].values.has_restore_timeout);

	assert_int_equal(c->n_accounts, 2);
	assert_string_equal(c->accounts[0].name, "ml-team");
	assert_int_equal(c->accounts[0].values.max_failures, 4);
	assert_false(c->accounts[0].values.has_restore_retry_num);
	assert_int_equal(c->accounts[0].values.restore_timeout, 60);
	assert_string_equal(c->accounts[1].name, "2023.proj");
	assert_false(c->accounts[1].values.has_max_failures);
	assert_int_equal(c->accounts[1].values.restore_retry_num, 2);
}

static void test_account_name_with_dash_and_underscore_is_a_key(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
		"accounts = { ml-team = { max_failures = 4; };\n"
		"             gpu_a100-x2 = { max_failures = 1; }; };\n");

	assert_int_equal(c->n_accounts, 2);
	assert_string_equal(c->accounts[0].name, "ml-team");
	assert_string_equal(c->accounts[1].name, "gpu_a100-x2");
}

static void test_name_starting_with_digit_needs_name_key(void **state)
{
	fixture *f = *state;

	/* libconfig cannot write it as a key: a syntax error ... */
	load_fails(f, "accounts = {\n  2023proj = { max_failures = 1; };\n};\n",
		   2, "syntax error: syntax error (fix the file, then run restore-budget check-config)");
	/* ... so the `name` key carries it. */
	rb_config *c = load_ok(f,
		"accounts = { p2023 = { name = \"2023proj\"; max_failures = 1; }; };\n");
	assert_string_equal(c->accounts[0].name, "2023proj");
}

static void test_int64_literal_that_fits_is_accepted(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "max_failures = 2L;\nrestore_timeout = 0x10;\n");

	assert_int_equal(c->max_failures, 2);
	assert_int_equal(c->restore_timeout, 16);
}

static void test_implicit_default_follows_a_lower_cap(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
		"limits = { max_failures = 1; restore_retry_num = 2; };\n");

	assert_int_equal(c->max_failures, 1);
	assert_int_equal(c->restore_retry_num, 2);
}

static void test_unlimited_default_with_allow_unlimited(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f,
		"max_failures = -1;\nlimits = { allow_unlimited = true; };\n");

	assert_int_equal(c->max_failures, RB_UNLIMITED);
}

static void test_example_config_loads(void **state)
{
	fixture *f = *state;
	const char *src = getenv("RB_SOURCE_DIR");
	char path[4096];

	snprintf(path, sizeof(path), "%s/config/restore_budget.conf",
		 src ? src : ".");
	if (rb_config_load(path, &f->cfg, &f->err) != 0)
		fail_msg("%s", f->err.msg);
	assert_string_equal(f->cfg->state_dir, "/var/spool/slurm/restore_budget");
	assert_int_equal(f->cfg->max_failures, 2);
	assert_int_equal(f->cfg->restore_retry_num, 3);
	assert_int_equal(f->cfg->n_partitions, 1);
	assert_string_equal(f->cfg->partitions[0].name, "preempt");
	assert_int_equal(f->cfg->n_accounts, 1);
	assert_string_equal(f->cfg->accounts[0].name, "ml-team");
}

/* ---- errors: file, syntax, keys, types ---------------------------------- */

static void test_missing_file_cannot_read(void **state)
{
	fixture *f = *state;
	char path[160];
	rb_config *c = (rb_config *)0x1;

	snprintf(path, sizeof(path), "%s/absent.conf", f->dir);
	assert_int_equal(rb_config_load(path, &c, &f->err), -1);
	assert_null(c);
	assert_int_equal(errno, ENOENT);
	char expected[256];
	snprintf(expected, sizeof(expected),
		 "%s: cannot read: No such file or directory", path);
	assert_string_equal(f->err.msg, expected);
}

static void test_directory_cannot_read(void **state)
{
	fixture *f = *state;
	char expected[256];
	rb_config *c = NULL;

	assert_int_equal(rb_config_load(f->dir, &c, &f->err), -1);
	snprintf(expected, sizeof(expected), "%s: cannot read: Is a directory",
		 f->dir);
	assert_string_equal(f->err.msg, expected);
}

static void test_world_writable_file_is_refused(void **state)
{
	fixture *f = *state;
	char expected[512];
	rb_config *c = NULL;

	write_conf(f, "max_failures = 1;\n");
	assert_int_equal(chmod(f->path, 0666), 0);
	assert_int_equal(rb_config_load(f->path, &c, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "%s: refusing a file every user may write: anyone could change the limits (run chmod o-w %s)",
		 f->path, f->path);
	assert_string_equal(f->err.msg, expected);
}

/* The same check as the job's user: user_init loads the config with the
 * job user's euid and root writes the ledger with what it says. */
static void test_a_file_others_could_change_is_refused_whatever_the_euid(void **state)
{
	fixture *f = *state;
	rb_config *c = NULL;
	pid_t pid;
	int status;

	if (geteuid() != 0)
		skip();
	write_conf(f, "max_failures = 1;\n");
	assert_int_equal(chmod(f->dir, 0755), 0);
	assert_int_equal(chmod(f->path, 0644), 0);
	assert_int_equal(chown(f->path, 65534, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rb_err err;

		if (seteuid(65534) < 0)
			_exit(3);
		_exit(rb_config_load(f->path, &c, &err) == -1 &&
		      strstr(err.msg, "owned by uid 65534") ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(chown(f->path, 0, 0), 0);
}

static void test_root_refuses_a_file_others_could_change(void **state)
{
	fixture *f = *state;
	char expected[512];
	rb_config *c = NULL;

	if (geteuid() != 0)
		skip();
	write_conf(f, "max_failures = 1;\n");
	assert_int_equal(chmod(f->path, 0664), 0);
	assert_int_equal(rb_config_load(f->path, &c, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "%s: refusing a file owned by uid 0 with mode 0664: only root may be able to change the limits (run chown root %s; chmod go-w %s)",
		 f->path, f->path, f->path);
	assert_string_equal(f->err.msg, expected);
	assert_int_equal(chmod(f->path, 0644), 0);
	assert_int_equal(chown(f->path, 65534, 0), 0);
	assert_int_equal(rb_config_load(f->path, &c, &f->err), -1);
	assert_non_null(strstr(f->err.msg, "owned by uid 65534 with mode 0644"));
	assert_int_equal(chown(f->path, 0, 0), 0);
	assert_int_equal(rb_config_load(f->path, &c, &f->err), 0);
	rb_config_free(c);
}

static void test_syntax_error_names_file_and_line(void **state)
{
	load_fails(*state, "max_failures = 1;\nrestore_timeout = 5\ntrack = ;\n",
		   3, "syntax error: syntax error (fix the file, then run restore-budget check-config)");
}

static void test_duplicate_key_is_a_syntax_error(void **state)
{
	load_fails(*state, "max_failures = 1;\n\nmax_failures = 2;\n", 3,
		   "syntax error: duplicate setting name (fix the file, then run restore-budget check-config)");
}

static void test_include_is_refused(void **state)
{
	load_fails(*state, "max_failures = 1;\n# @include in a comment is fine\n"
		   "  @include \"/etc/passwd\"\n", 3,
		   "@include is not allowed: put every setting in this one file (an included file could change the limits from outside it; fix the file, then run restore-budget check-config)");
}

static void test_include_in_strings_and_comments_is_only_text(void **state)
{
	rb_config *c = load_ok(*state,
		"/*\n@include \"/etc/passwd\"\n*/\n"
		"// @include \"x\"\n"
		"state_dir = \"/srv/@include\";\n");

	assert_string_equal(c->state_dir, "/srv/@include");
}

static void test_nul_byte_is_a_syntax_error(void **state)
{
	fixture *f = *state;
	char expected[512];
	rb_config *c = NULL;

	write_conf_len(f, "max_failures = 1;\n# x\0y\n", 24);
	assert_int_equal(rb_config_load(f->path, &c, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "%s:2: syntax error: a NUL byte (fix the file, then run restore-budget check-config)",
		 f->path);
	assert_string_equal(f->err.msg, expected);
}

static void test_unknown_top_level_key(void **state)
{
	load_fails(*state, "max_failures = 1;\nmax_failure = 2;\n", 2,
		   "unknown key \"max_failure\" (known keys: store, state_dir, max_failures, restore_retry_num, restore_timeout, restore_accounting, count_preemptions, track, on_error, on_exhausted, limits, checkpoint, partitions, accounts, max_interruptions, exit_rules, requeue_exit)");
}

static void test_unknown_nested_keys_name_the_dotted_path(void **state)
{
	fixture *f = *state;

	load_fails(f, "limits = {\n  max_failure = 3;\n};\n", 2,
		   "unknown key \"limits.max_failure\" (known keys in limits: max_failures, restore_retry_num, allow_unlimited, max_interruptions)");
	load_fails(f, "checkpoint = { pattern = \"c*\";\n latests = \"l\"; };\n", 2,
		   "unknown key \"checkpoint.latests\" (known keys in checkpoint: pattern, latest, fallback)");
	load_fails(f, "partitions = {\n  preempt = {\n    max_failure = 3;\n  };\n};\n",
		   3, "unknown key \"partitions.preempt.max_failure\" (known keys in partitions.preempt: name, max_failures, restore_retry_num, restore_timeout, max_interruptions, exit_rules)");
	load_fails(f, "accounts = { ml-team = { retries = 3; }; };\n", 1,
		   "unknown key \"accounts.ml-team.retries\" (known keys in accounts.ml-team: name, max_failures, restore_retry_num, restore_timeout, max_interruptions, exit_rules)");
}

static void test_wrong_types_are_errors(void **state)
{
	fixture *f = *state;

	load_fails(f, "\nmax_failures = \"2\";\n", 2,
		   "max_failures = \"2\" has the wrong type: expected an integer " FIX);
	load_fails(f, "max_failures = 2.0;\n", 1,
		   "max_failures = 2.0 has the wrong type: expected an integer " FIX);
	load_fails(f, "restore_timeout = 2.5;\n", 1,
		   "restore_timeout = 2.5 has the wrong type: expected an integer " FIX);
	load_fails(f, "count_preemptions = \"yes\";\n", 1,
		   "count_preemptions = \"yes\" has the wrong type: expected true or false " FIX);
	load_fails(f, "state_dir = 5;\n", 1,
		   "state_dir = 5 has the wrong type: expected a string in double quotes " FIX);
	load_fails(f, "track = true;\n", 1,
		   "track = true has the wrong type: expected a string in double quotes " FIX);
	load_fails(f, "limits = 5;\n", 1,
		   "limits = 5 has the wrong type: expected a group { max_failures = N; restore_retry_num = N; allow_unlimited = BOOL; } " FIX);
	load_fails(f, "partitions = { preempt = 5; };\n", 1,
		   "partitions.preempt = 5 has the wrong type: expected a group { max_failures = N; restore_retry_num = N; restore_timeout = SEC; } " FIX);
	load_fails(f, "accounts = ( 1, 2 );\n", 1,
		   "accounts = ( ... ) has the wrong type: expected a group { NAME = { max_failures = N; ... }; ... } " FIX);
	load_fails(f, "limits = { allow_unlimited = 1; };\n", 1,
		   "limits.allow_unlimited = 1 has the wrong type: expected true or false " FIX);
}

static void test_bad_enum_values_list_the_allowed_ones(void **state)
{
	fixture *f = *state;

	load_fails(f, "restore_accounting = \"fifo\";\n", 1,
		   "restore_accounting = \"fifo\" is not valid: must be \"grouped\" or \"ray\" " FIX);
	load_fails(f, "track = \"optin\";\n", 1,
		   "track = \"optin\" is not valid: must be \"all\" or \"opt-in\" " FIX);
	load_fails(f, "on_error = \"ignore\";\n", 1,
		   "on_error = \"ignore\" is not valid: must be \"open\" or \"closed\" " FIX);
	load_fails(f, "on_exhausted = \"Fail\";\n", 1,
		   "on_exhausted = \"Fail\" is not valid: must be \"fail\" or \"hold\" " FIX);
	load_fails(f, "store = \"nfs\";\n", 1,
		   "store = \"nfs\" is not valid: must be \"dir\" or \"controller\" " FIX);
}

/* ---- errors: ranges and caps -------------------------------------------- */

static void test_restore_retry_num_zero_is_out_of_range_when_grouped(void **state)
{
	load_fails(*state, "# R\n\n\n\n\n\nrestore_retry_num = 0;\n", 7,
		   "restore_retry_num = 0 is out of range: must be 1..1000000 with restore_accounting = \"grouped\" " FIX);
}

static void test_restore_retry_num_zero_is_allowed_in_ray_mode(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "restore_retry_num = 0;\nrestore_accounting = \"ray\";\n");

	assert_int_equal(c->restore_retry_num, 0);
	load_fails(f, "restore_accounting = \"ray\";\nrestore_retry_num = -1;\n", 2,
		   "restore_retry_num = -1 is out of range: must be 0..1000000 with restore_accounting = \"ray\" " FIX);
}

static void test_max_failures_unlimited_needs_allow_unlimited(void **state)
{
	load_fails(*state, "max_failures = -1;\n", 1,
		   "max_failures = -1 (unlimited) is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..10, then run restore-budget check-config)");
}

static void test_max_failures_below_minus_one_is_out_of_range(void **state)
{
	load_fails(*state, "max_failures = -2;\n", 1,
		   "max_failures = -2 is out of range: must be 0..1000000, or -1 for unlimited " FIX);
}

static void test_restore_timeout_range(void **state)
{
	fixture *f = *state;

	load_fails(f, "restore_timeout = -1;\n", 1,
		   "restore_timeout = -1 is out of range: must be 0..2592000 seconds " FIX);
	load_fails(f, "restore_timeout = 2592001;\n", 1,
		   "restore_timeout = 2592001 is out of range: must be 0..2592000 seconds " FIX);
	assert_int_equal(load_ok(f, "restore_timeout = 2592000;\n")->restore_timeout,
			 RB_RESTORE_TIMEOUT_MAX);
}

static void test_caps_out_of_range(void **state)
{
	fixture *f = *state;

	load_fails(f, "limits = {\n  max_failures = -1;\n};\n", 2,
		   "limits.max_failures = -1 is out of range: must be 0..1000000 " FIX);
	load_fails(f, "limits = { restore_retry_num = 0; };\n", 1,
		   "limits.restore_retry_num = 0 is out of range: must be 1..1000000 " FIX);
	load_fails(f, "limits = { restore_retry_num = 1000001; };\n", 1,
		   "limits.restore_retry_num = 1000001 is out of range: must be 1..1000000 " FIX);
}

static void test_default_above_cap_is_an_error(void **state)
{
	fixture *f = *state;

	load_fails(f, "limits = { max_failures = 3; };\nmax_failures = 4;\n", 2,
		   "max_failures = 4 exceeds the cap limits.max_failures = 3 (lower it to at most 3 or raise the cap, then run restore-budget check-config)");
	load_fails(f, "restore_retry_num = 11;\n", 1,
		   "restore_retry_num = 11 exceeds the cap limits.restore_retry_num = 10 (lower it to at most 10 or raise the cap, then run restore-budget check-config)");
}

static void test_partition_and_account_values_above_cap_are_errors(void **state)
{
	fixture *f = *state;

	load_fails(f, "partitions = {\n preempt = { max_failures = 20; };\n};\n", 2,
		   "partitions.preempt.max_failures = 20 exceeds the cap limits.max_failures = 10 (lower it to at most 10 or raise the cap, then run restore-budget check-config)");
	load_fails(f, "accounts = {\n ml-team = {\n  restore_retry_num = 12;\n };\n};\n", 3,
		   "accounts.ml-team.restore_retry_num = 12 exceeds the cap limits.restore_retry_num = 10 (lower it to at most 10 or raise the cap, then run restore-budget check-config)");
	load_fails(f, "partitions = { p = { max_failures = -1; }; };\n", 1,
		   "partitions.p.max_failures = -1 (unlimited) is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..10, then run restore-budget check-config)");
	load_fails(f, "accounts = { a = { restore_timeout = -5; }; };\n", 1,
		   "accounts.a.restore_timeout = -5 is out of range: must be 0..2592000 seconds " FIX);
}

static void test_integer_too_big_for_32_bits_is_out_of_range(void **state)
{
	fixture *f = *state;

	/* libconfig 1.5 would store these wrapped: -1 (unlimited) and 1. */
	load_fails(f, "limits = { allow_unlimited = true; };\nmax_failures = 4294967295;\n", 2,
		   "max_failures = 4294967295 is out of range: must be 0..1000000, or -1 for unlimited " FIX);
	load_fails(f, "limits = {\n  max_failures =\n    4294967297;\n};\n", 2,
		   "limits.max_failures = 4294967297 is out of range: must be 0..1000000 " FIX);
	load_fails(f, "restore_timeout = 99999999999999999999;\n", 1,
		   "restore_timeout = 99999999999999999999 is out of range: must be 0..2592000 seconds " FIX);
	load_fails(f, "max_failures = 3000000000L;\n", 1,
		   "max_failures = 3000000000 is out of range: must be 0..1000000, or -1 for unlimited " FIX);
}

static void test_state_dir_must_be_absolute(void **state)
{
	load_fails(*state, "state_dir = \"spool/rb\";\n", 1,
		   "state_dir = \"spool/rb\" is not an absolute path: must start with '/' " FIX);
}

static void test_checkpoint_names_are_validated(void **state)
{
	fixture *f = *state;

	load_fails(f, "checkpoint = { pattern = \"\"; };\n", 1,
		   "checkpoint.pattern = \"\" is not valid: must be a non-empty file name of at most 255 bytes without '/' " FIX);
	load_fails(f, "checkpoint = { pattern = \"a/b*\"; };\n", 1,
		   "checkpoint.pattern = \"a/b*\" is not valid: must be a non-empty file name of at most 255 bytes without '/' " FIX);
	load_fails(f, "checkpoint = {\n latest = \".latest\"; };\n", 2,
		   "checkpoint.latest = \".latest\" is not valid: must be a non-empty file name of at most 255 bytes without '/' that does not start with '.' " FIX);
	load_fails(f, "checkpoint = { latest = \"x/y\"; };\n", 1,
		   "checkpoint.latest = \"x/y\" is not valid: must be a non-empty file name of at most 255 bytes without '/' that does not start with '.' " FIX);
}

static void test_same_partition_or_account_twice_is_an_error(void **state)
{
	fixture *f = *state;

	load_fails(f, "partitions = { a = { max_failures = 1; };\n b = { name = \"a\"; }; };\n", 2,
		   "partitions.b: \"a\" is already configured by partitions.a at line 1 (keep one group for it, then run restore-budget check-config)");
	load_fails(f, "accounts = { ml-team = { };\n ML-Team = { }; };\n", 2,
		   "accounts.ML-Team: \"ML-Team\" is already configured by accounts.ml-team at line 1 (account names match ignoring case; keep one group for it, then run restore-budget check-config)");
	load_fails(f, "accounts = { x = { name = \"\"; }; };\n", 1,
		   "accounts.x.name = \"\" is not valid: must be a non-empty name of at most 255 bytes " FIX);
}

/* ---- resolve: precedence ------------------------------------------------ */

static const char *precedence_conf =
	"max_failures = 1; restore_retry_num = 2; restore_timeout = 100;\n"
	"restore_accounting = \"grouped\"; count_preemptions = true;\n"
	"partitions = { preempt = { max_failures = 5; restore_retry_num = 6;\n"
	"                           restore_timeout = 600; }; };\n"
	"accounts = { ml-team = { max_failures = 4; }; };\n";

static void assert_limits(const rb_limits *l, int m, int r, int t)
{
	assert_int_equal(l->max_failures, m);
	assert_int_equal(l->restore_retry_num, r);
	assert_int_equal(l->restore_timeout, t);
}

static void test_resolve_default_alone(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_limits l;
	char warn[256] = "junk";

	assert_int_equal(rb_config_resolve(c, NULL, NULL, NULL, &l, warn, sizeof(warn)), 0);
	assert_limits(&l, 1, 2, 100);
	assert_string_equal(warn, "");
	/* an unknown partition or account changes nothing */
	assert_int_equal(rb_config_resolve(c, "other", "nobody", NULL, &l, NULL, 0), 0);
	assert_limits(&l, 1, 2, 100);
}

static void test_resolve_top_level_gives_accounting_and_count_preemptions(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_limits l;

	rb_config_resolve(c, "preempt", "ml-team", NULL, &l, NULL, 0);
	assert_int_equal(l.accounting, RB_ACCOUNTING_GROUPED);
	assert_true(l.count_preemptions);
}

static void test_resolve_partition_over_default(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_limits l;

	rb_config_resolve(c, "preempt", NULL, NULL, &l, NULL, 0);
	assert_limits(&l, 5, 6, 600);
	/* partition names match exactly */
	rb_config_resolve(c, "Preempt", NULL, NULL, &l, NULL, 0);
	assert_limits(&l, 1, 2, 100);
}

static void test_resolve_account_over_default(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_limits l;

	rb_config_resolve(c, NULL, "ml-team", NULL, &l, NULL, 0);
	assert_limits(&l, 4, 2, 100);
	/* account names match ignoring case */
	rb_config_resolve(c, NULL, "ML-TEAM", NULL, &l, NULL, 0);
	assert_limits(&l, 4, 2, 100);
}

static void test_resolve_account_over_partition(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_limits l;

	rb_config_resolve(c, "preempt", "ml-team", NULL, &l, NULL, 0);
	/* account sets only max_failures; the rest come from the partition */
	assert_limits(&l, 4, 6, 600);
}

static void test_resolve_job_alone_over_default(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_overrides job = { .has_restore_timeout = true, .restore_timeout = 7 };
	rb_limits l;

	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, NULL, 0), 0);
	assert_limits(&l, 1, 2, 7);
}

static void test_resolve_job_over_account_and_partition(void **state)
{
	rb_config *c = load_ok(*state, precedence_conf);
	rb_overrides job = { .has_max_failures = true, .max_failures = 8,
			     .has_restore_retry_num = true, .restore_retry_num = 9 };
	rb_limits l;

	assert_int_equal(rb_config_resolve(c, "preempt", "ml-team", &job, &l, NULL, 0), 0);
	assert_limits(&l, 8, 9, 600);
}

/* ---- resolve: clamping -------------------------------------------------- */

static void test_resolve_clamps_job_values_over_caps_with_warning(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "limits = { max_failures = 10; restore_retry_num = 10; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = 50,
			     .has_restore_retry_num = true, .restore_retry_num = 11 };
	rb_limits l;
	char warn[1024], expected[1024];

	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 2);
	assert_limits(&l, 10, 10, 300);
	snprintf(expected, sizeof(expected),
		 "--max-failures=50 exceeds the cap limits.max_failures = 10 set in %s: using 10\n"
		 "--restore-retries=11 exceeds the cap limits.restore_retry_num = 10 set in %s: using 10",
		 f->path, f->path);
	assert_string_equal(warn, expected);
}

static void test_resolve_clamps_unlimited_without_allow_unlimited(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "limits = { max_failures = 6; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = RB_UNLIMITED };
	rb_limits l;
	char warn[512], expected[512];

	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 1);
	assert_int_equal(l.max_failures, 6);
	snprintf(expected, sizeof(expected),
		 "--max-failures=unlimited exceeds the cap limits.max_failures = 6 set in %s (limits.allow_unlimited is false): using 6",
		 f->path);
	assert_string_equal(warn, expected);
}

static void test_resolve_allows_unlimited_with_allow_unlimited(void **state)
{
	rb_config *c = load_ok(*state, "limits = { allow_unlimited = true; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = RB_UNLIMITED };
	rb_limits l;
	char warn[256];

	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 0);
	assert_int_equal(l.max_failures, RB_UNLIMITED);
	assert_string_equal(warn, "");
}

static void test_resolve_raises_zero_retries_to_one_when_grouped(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "# grouped by default\n");
	rb_overrides job = { .has_restore_retry_num = true, .restore_retry_num = 0 };
	rb_limits l;
	char warn[512], expected[512];

	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 1);
	assert_int_equal(l.restore_retry_num, 1);
	snprintf(expected, sizeof(expected),
		 "--restore-retries=0 is below the minimum 1 with restore_accounting = \"grouped\" set in %s: using 1",
		 f->path);
	assert_string_equal(warn, expected);

	c = load_ok(f, "restore_accounting = \"ray\";\n");
	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, NULL, 0), 0);
	assert_int_equal(l.restore_retry_num, 0);
}

static void test_resolve_with_defaults_names_built_in_defaults(void **state)
{
	rb_config *c = rb_config_defaults();
	rb_overrides job = { .has_max_failures = true, .max_failures = 11 };
	rb_limits l;
	char warn[512];

	(void)state;
	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 1);
	assert_string_equal(warn, "--max-failures=11 exceeds the cap limits.max_failures = 10 set in (built-in defaults): using 10");
	rb_config_free(c);
}

static void test_resolve_small_warn_buffer_is_truncated_safely(void **state)
{
	rb_config *c = rb_config_defaults();
	rb_overrides job = { .has_max_failures = true, .max_failures = 11,
			     .has_restore_retry_num = true, .restore_retry_num = 11 };
	rb_limits l;
	char warn[16];

	(void)state;
	assert_int_equal(rb_config_resolve(c, NULL, NULL, &job, &l, warn, sizeof(warn)), 2);
	assert_int_equal(strlen(warn), sizeof(warn) - 1);
	assert_limits(&l, 10, 10, 300);
	rb_config_free(c);
}

/* ---- job options --------------------------------------------------------- */

static void parse_fails(const char *name, const char *value, const char *message)
{
	rb_overrides job = { 0 };
	rb_err err = { { 0 } };

	assert_int_equal(rb_options_parse(&job, name, value, &err), -1);
	assert_string_equal(err.msg, message);
	/* an error leaves the job untouched */
	assert_false(job.has_max_failures || job.has_restore_retry_num ||
		     job.has_restore_timeout);
}

static void test_options_parse_valid_values(void **state)
{
	rb_overrides job = { 0 };
	rb_err err;

	(void)state;
	assert_int_equal(rb_options_parse(&job, "max-failures", "0", &err), 0);
	assert_true(job.has_max_failures);
	assert_int_equal(job.max_failures, 0);
	assert_int_equal(rb_options_parse(&job, "max-failures", "1000000", &err), 0);
	assert_int_equal(job.max_failures, 1000000);
	assert_int_equal(rb_options_parse(&job, "restore-retries", "007", &err), 0);
	assert_true(job.has_restore_retry_num);
	assert_int_equal(job.restore_retry_num, 7);
	assert_int_equal(rb_options_parse(&job, "restore-timeout", "2592000", &err), 0);
	assert_true(job.has_restore_timeout);
	assert_int_equal(job.restore_timeout, 2592000);
}

static void test_options_unlimited_and_minus_one_for_max_failures(void **state)
{
	rb_overrides job = { 0 };
	rb_err err;

	(void)state;
	assert_int_equal(rb_options_parse(&job, "max-failures", "unlimited", &err), 0);
	assert_int_equal(job.max_failures, RB_UNLIMITED);
	job.max_failures = 3;
	assert_int_equal(rb_options_parse(&job, "max-failures", "-1", &err), 0);
	assert_int_equal(job.max_failures, RB_UNLIMITED);
	parse_fails("restore-retries", "unlimited",
		    "--restore-retries=unlimited: not a number (expected an integer 0..1000000)");
	parse_fails("restore-retries", "-1",
		    "--restore-retries=-1: out of range (expected an integer 0..1000000)");
	parse_fails("max-failures", "Unlimited",
		    "--max-failures=Unlimited: not a number (expected an integer 0..1000000 or \"unlimited\")");
}

static void test_options_negative_is_out_of_range(void **state)
{
	(void)state;
	parse_fails("max-failures", "-2",
		    "--max-failures=-2: out of range (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("restore-timeout", "-5",
		    "--restore-timeout=-5: out of range (expected a number of seconds 0..2592000)");
	parse_fails("max-failures", "-",
		    "--max-failures=-: not a number (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("max-failures", "-0",
		    "--max-failures=-0: out of range (expected an integer 0..1000000 or \"unlimited\")");
}

static void test_options_overflow_and_over_max_are_out_of_range(void **state)
{
	(void)state;
	parse_fails("max-failures", "99999999999999999999",
		    "--max-failures=99999999999999999999: out of range (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("max-failures", "1000001",
		    "--max-failures=1000001: out of range (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("restore-timeout", "2592001",
		    "--restore-timeout=2592001: out of range (expected a number of seconds 0..2592000)");
}

static void test_options_garbage_is_not_a_number(void **state)
{
	(void)state;
	parse_fails("max-failures", "abc",
		    "--max-failures=abc: not a number (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("max-failures", "12abc",
		    "--max-failures=12abc: not a number (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("restore-retries", " 3",
		    "--restore-retries= 3: not a number (expected an integer 0..1000000)");
	parse_fails("restore-retries", "3 ",
		    "--restore-retries=3 : not a number (expected an integer 0..1000000)");
	parse_fails("restore-retries", "+3",
		    "--restore-retries=+3: not a number (expected an integer 0..1000000)");
	parse_fails("restore-timeout", "1.5",
		    "--restore-timeout=1.5: not a number (expected a number of seconds 0..2592000)");
	parse_fails("restore-timeout", "0x10",
		    "--restore-timeout=0x10: not a number (expected a number of seconds 0..2592000)");
	parse_fails("max-failures", "1\n2",
		    "--max-failures=1\\x0a2: not a number (expected an integer 0..1000000 or \"unlimited\")");
}

static void test_options_empty_is_an_error(void **state)
{
	(void)state;
	parse_fails("max-failures", "",
		    "--max-failures=: empty value (expected an integer 0..1000000 or \"unlimited\")");
	parse_fails("restore-retries", NULL,
		    "--restore-retries=: empty value (expected an integer 0..1000000)");
}

static void test_options_unknown_name_is_an_error(void **state)
{
	(void)state;
	parse_fails("max-failure", "3",
		    "--max-failure=3: unknown option (known: --max-failures, --restore-retries, --restore-timeout)");
	parse_fails("--max-failures", "3",
		    "----max-failures=3: unknown option (known: --max-failures, --restore-retries, --restore-timeout)");
}

/* ---- caps at sbatch ----------------------------------------------------- */

static void test_check_caps_accepts_values_within_caps(void **state)
{
	rb_config *c = load_ok(*state, "limits = { max_failures = 10; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = 10,
			     .has_restore_retry_num = true, .restore_retry_num = 10,
			     .has_restore_timeout = true, .restore_timeout = 5 };
	rb_err err;

	assert_int_equal(rb_config_check_caps(c, &job, &err), 0);
	assert_int_equal(rb_config_check_caps(c, NULL, &err), 0);
}

static void test_check_caps_refuses_max_failures_over_cap(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "limits = { max_failures = 10; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = 50 };
	char expected[512];

	assert_int_equal(rb_config_check_caps(c, &job, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "--max-failures=50 exceeds the cap limits.max_failures = 10 set in %s (ask your admin, or request at most 10)",
		 f->path);
	assert_string_equal(f->err.msg, expected);
}

static void test_check_caps_refuses_unlimited_unless_allowed(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "limits = { max_failures = 4; };\n");
	rb_overrides job = { .has_max_failures = true, .max_failures = RB_UNLIMITED };
	char expected[512];

	assert_int_equal(rb_config_check_caps(c, &job, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "--max-failures=unlimited exceeds the cap limits.max_failures = 4 set in %s: limits.allow_unlimited is false (ask your admin, or request at most 4)",
		 f->path);
	assert_string_equal(f->err.msg, expected);

	c = load_ok(f, "limits = { max_failures = 4; allow_unlimited = true; };\n");
	assert_int_equal(rb_config_check_caps(c, &job, &f->err), 0);
}

static void test_check_caps_refuses_restore_retries_over_cap(void **state)
{
	fixture *f = *state;
	rb_config *c = load_ok(f, "limits = { restore_retry_num = 5; };\n");
	rb_overrides job = { .has_restore_retry_num = true, .restore_retry_num = 6 };
	char expected[512];

	assert_int_equal(rb_config_check_caps(c, &job, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "--restore-retries=6 exceeds the cap limits.restore_retry_num = 5 set in %s (ask your admin, or request at most 5)",
		 f->path);
	assert_string_equal(f->err.msg, expected);

	job.restore_retry_num = 0;
	assert_int_equal(rb_config_check_caps(c, &job, &f->err), -1);
	snprintf(expected, sizeof(expected),
		 "--restore-retries=0 is below the minimum 1 with restore_accounting = \"grouped\" set in %s (request at least 1)",
		 f->path);
	assert_string_equal(f->err.msg, expected);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_defaults_match_design),
		T(test_empty_file_gives_defaults_and_its_path),
	T(test_store_is_controller_unless_a_state_dir_is_named),
	T(test_every_key_is_parsed),
		T(test_account_name_with_dash_and_underscore_is_a_key),
		T(test_name_starting_with_digit_needs_name_key),
		T(test_int64_literal_that_fits_is_accepted),
		T(test_implicit_default_follows_a_lower_cap),
		T(test_unlimited_default_with_allow_unlimited),
		T(test_example_config_loads),
		T(test_missing_file_cannot_read),
		T(test_directory_cannot_read),
		T(test_world_writable_file_is_refused),
		T(test_a_file_others_could_change_is_refused_whatever_the_euid),
		T(test_root_refuses_a_file_others_could_change),
		T(test_syntax_error_names_file_and_line),
		T(test_duplicate_key_is_a_syntax_error),
		T(test_include_is_refused),
		T(test_include_in_strings_and_comments_is_only_text),
		T(test_nul_byte_is_a_syntax_error),
		T(test_unknown_top_level_key),
		T(test_unknown_nested_keys_name_the_dotted_path),
		T(test_wrong_types_are_errors),
		T(test_bad_enum_values_list_the_allowed_ones),
		T(test_restore_retry_num_zero_is_out_of_range_when_grouped),
		T(test_restore_retry_num_zero_is_allowed_in_ray_mode),
		T(test_max_failures_unlimited_needs_allow_unlimited),
		T(test_max_failures_below_minus_one_is_out_of_range),
		T(test_restore_timeout_range),
		T(test_caps_out_of_range),
		T(test_default_above_cap_is_an_error),
		T(test_partition_and_account_values_above_cap_are_errors),
		T(test_integer_too_big_for_32_bits_is_out_of_range),
		T(test_state_dir_must_be_absolute),
		T(test_checkpoint_names_are_validated),
		T(test_same_partition_or_account_twice_is_an_error),
		T(test_resolve_default_alone),
		T(test_resolve_top_level_gives_accounting_and_count_preemptions),
		T(test_resolve_partition_over_default),
		T(test_resolve_account_over_default),
		T(test_resolve_account_over_partition),
		T(test_resolve_job_alone_over_default),
		T(test_resolve_job_over_account_and_partition),
		T(test_resolve_clamps_job_values_over_caps_with_warning),
		T(test_resolve_clamps_unlimited_without_allow_unlimited),
		T(test_resolve_allows_unlimited_with_allow_unlimited),
		T(test_resolve_raises_zero_retries_to_one_when_grouped),
		T(test_resolve_with_defaults_names_built_in_defaults),
		T(test_resolve_small_warn_buffer_is_truncated_safely),
		T(test_options_parse_valid_values),
		T(test_options_unlimited_and_minus_one_for_max_failures),
		T(test_options_negative_is_out_of_range),
		T(test_options_overflow_and_over_max_are_out_of_range),
		T(test_options_garbage_is_not_a_number),
		T(test_options_empty_is_an_error),
		T(test_options_unknown_name_is_an_error),
		T(test_check_caps_accepts_values_within_caps),
		T(test_check_caps_refuses_max_failures_over_cap),
		T(test_check_caps_refuses_unlimited_unless_allowed),
		T(test_check_caps_refuses_restore_retries_over_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
