/*
 * test_step.c - what the batch step tells the job (step.h): its
 * RESTORE_BUDGET_* environment, the refusal, the catch-up attempt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "step.h"

static rb_record a_record(void)
{
	rb_record r;

	memset(&r, 0, sizeof(r));
	strcpy(r.cluster, "testc");
	r.job_id = 77;
	strcpy(r.work_dir, "/home/u/run");
	strcpy(r.checkpoint_dir, "ckpt");
	r.budget.failures = 1;
	r.budget.granted = 2;
	r.budget.restore_failures = 1;
	r.budget.cur.attempt = 5;
	r.budget.cur.limits.max_failures = 3;
	r.budget.cur.limits.restore_retry_num = 4;
	strcpy(r.budget.checkpoint, "/home/u/run/ckpt/c-9");
	return r;
}

static const rb_step_var *var(const rb_step_env *env, const char *name)
{
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++)
		if (env->var[i].name && strcmp(env->var[i].name, name) == 0)
			return &env->var[i];
	return NULL;
}

static void test_step_env_names_every_variable_once(void **state)
{
	static const char *const names[] = {
		"RESTORE_BUDGET_ATTEMPT", "RESTORE_BUDGET_PHASE",
		"RESTORE_BUDGET_CHECKPOINT", "RESTORE_BUDGET_FAILURES",
		"RESTORE_BUDGET_MAX_FAILURES", "RESTORE_BUDGET_RESTORE_FAILURES",
		"RESTORE_BUDGET_RESTORE_RETRY_NUM", "RESTORE_BUDGET_RESTORES_LEFT",
		"RESTORE_BUDGET_LAST_END", "RESTORE_BUDGET_ACK_FILE",
		"RESTORE_BUDGET_FALLBACK_FROM",
		"RESTORE_BUDGET_INTERRUPTIONS", "RESTORE_BUDGET_MAX_INTERRUPTIONS",
		"RESTORE_BUDGET_REQUEUE_EXIT", "RESTORE_BUDGET_CHECKPOINT_DIR",
	};
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	rb_step_env_of(&r, 5, RB_PHASE_RESTORING, "/c", &env);
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++) {
		int seen = 0;

		for (size_t k = 0; k < RB_STEP_VAR_COUNT; k++)
			seen += strcmp(env.var[k].name, names[i]) == 0;
		assert_int_equal(seen, 1);
	}
}

static void test_step_env_values_come_from_the_record(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	rb_step_env_of(&r, 5, RB_PHASE_RESTORING, "/c", &env);
	assert_string_equal(var(&env, "RESTORE_BUDGET_ATTEMPT")->value, "5");
	assert_string_equal(var(&env, "RESTORE_BUDGET_PHASE")->value, "RESTORING");
	assert_string_equal(var(&env, "RESTORE_BUDGET_CHECKPOINT")->value, "/c");
	assert_string_equal(var(&env, "RESTORE_BUDGET_FAILURES")->value, "1");
	/* M plus what an admin granted */
	assert_string_equal(var(&env, "RESTORE_BUDGET_MAX_FAILURES")->value, "5");
	assert_string_equal(var(&env, "RESTORE_BUDGET_RESTORE_FAILURES")->value, "1");
	assert_string_equal(var(&env, "RESTORE_BUDGET_RESTORE_RETRY_NUM")->value, "4");
	assert_true(var(&env, "RESTORE_BUDGET_ACK_FILE")->set);
	assert_non_null(strstr(var(&env, "RESTORE_BUDGET_ACK_FILE")->value,
			       "/home/u/run/ckpt/.restore_budget-ack.testc.77.5"));
}

static void test_step_env_says_unlimited(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	r.budget.cur.limits.max_failures = -1;
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_string_equal(var(&env, "RESTORE_BUDGET_MAX_FAILURES")->value, "unlimited");
	assert_string_equal(var(&env, "RESTORE_BUDGET_RESTORES_LEFT")->value, "unlimited");
}

static void test_step_env_has_no_ack_file_without_an_absolute_dir(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	strcpy(r.work_dir, "relative");
	r.checkpoint_dir[0] = '\0';
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_false(var(&env, "RESTORE_BUDGET_ACK_FILE")->set);
}

static void test_step_env_checkpoint_dir_is_absolute(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_true(var(&env, "RESTORE_BUDGET_CHECKPOINT_DIR")->set);
	assert_string_equal(var(&env, "RESTORE_BUDGET_CHECKPOINT_DIR")->value,
			    "/home/u/run/ckpt");
	strcpy(r.checkpoint_dir, "/scratch/u/ck");
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_string_equal(var(&env, "RESTORE_BUDGET_CHECKPOINT_DIR")->value,
			    "/scratch/u/ck");
}

static void test_step_env_no_checkpoint_dir_without_the_option(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	r.checkpoint_dir[0] = '\0';
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_false(var(&env, "RESTORE_BUDGET_CHECKPOINT_DIR")->set);
	strcpy(r.checkpoint_dir, "ckpt");
	strcpy(r.work_dir, "relative");
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	assert_false(var(&env, "RESTORE_BUDGET_CHECKPOINT_DIR")->set);
}

static void test_step_env_of_record_is_all_but_attempt_and_checkpoint(void **state)
{
	rb_record r = a_record();
	rb_step_env env;

	(void)state;
	rb_step_env_of(&r, 5, RB_PHASE_FRESH, "", &env);
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++) {
		bool kept = strcmp(env.var[i].name, "RESTORE_BUDGET_ATTEMPT") == 0 ||
			    strcmp(env.var[i].name, "RESTORE_BUDGET_CHECKPOINT") == 0 ||
			    /* the config's (test_requeue_exit.c) */
			    strcmp(env.var[i].name, "RESTORE_BUDGET_REQUEUE_EXIT") == 0 ||
			    /* the job's option */
			    strcmp(env.var[i].name, "RESTORE_BUDGET_CHECKPOINT_DIR") == 0;

		assert_int_equal(env.var[i].of_record, !kept);
	}
}

static void test_refusal_names_F_M_r_R_config_and_checkpoint(void **state)
{
	rb_record r = a_record();
	char buf[2 * RB_PATH_MAX];

	(void)state;
	rb_step_refusal(&r, 6, "/etc/rb.conf", buf, sizeof(buf));
	assert_string_equal(buf,
		"restore_budget: job 77 attempt 6 refused: restore budget exhausted: "
		"failures F=1 > max_failures M=5 (restore failures r=1 of R=4; "
		"limits from /etc/rb.conf). The checkpoint /home/u/run/ckpt/c-9 is "
		"kept. An admin can add budget with 'restore-budget grant 77 "
		"--failures N' and requeue the job.\n");
}

static void test_catch_up_attempt_is_the_controllers_count_when_ahead(void **state)
{
	rb_record r = a_record();

	(void)state;
	assert_int_equal(rb_step_catch_up_attempt(9, &r), 9);
}

static void test_catch_up_attempt_follows_the_record_otherwise(void **state)
{
	rb_record r = a_record();

	(void)state;
	assert_int_equal(rb_step_catch_up_attempt(-1, &r), 6);
	assert_int_equal(rb_step_catch_up_attempt(5, &r), 6);
}

/* Rule: a batch step that finds neither a note nor a record begins the
 * record (docs/security.md, "Names"): from an empty record, at the
 * controller's count, or attempt 0 when the controller does not answer
 * (a first attempt is never untracked for want of a note). */
static void test_catch_up_without_a_record_begins_at_the_controllers_count(void **state)
{
	rb_record r;

	(void)state;
	rb_record_init(&r);
	assert_int_equal(rb_step_catch_up_attempt(-1, &r), 0);
	assert_int_equal(rb_step_catch_up_attempt(0, &r), 0);
	assert_int_equal(rb_step_catch_up_attempt(3, &r), 3);
}

/* Rule (issue 21): Slurm relaunching without a prolog after an attempt
 * whose end was never recorded is a new attempt when the controller's
 * restart count is past the record, and is caught up, not run untracked. */
static void test_relaunch_after_a_lost_end_begins_a_new_attempt(void **state)
{
	rb_record r = a_record();

	(void)state;
	r.budget.cur.end = RB_END_NONE;
	assert_true(rb_step_begins_attempt(&r, r.budget.cur.attempt + 1));
	assert_int_equal(rb_step_catch_up_attempt(r.budget.cur.attempt + 1, &r),
			 r.budget.cur.attempt + 1);
}

/* Without an end and with the controller at the recorded attempt (or not
 * answering), the recorded attempt is this one: nothing is charged twice. */
static void test_no_end_and_no_count_past_it_is_the_recorded_attempt(void **state)
{
	rb_record r = a_record();

	(void)state;
	r.budget.cur.end = RB_END_NONE;
	assert_false(rb_step_begins_attempt(&r, -1));
	assert_false(rb_step_begins_attempt(&r, r.budget.cur.attempt));
	r.budget.cur.end = RB_END_FAILED;
	assert_true(rb_step_begins_attempt(&r, -1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_env_names_every_variable_once),
		cmocka_unit_test(test_step_env_values_come_from_the_record),
		cmocka_unit_test(test_step_env_says_unlimited),
		cmocka_unit_test(test_step_env_has_no_ack_file_without_an_absolute_dir),
		cmocka_unit_test(test_step_env_checkpoint_dir_is_absolute),
		cmocka_unit_test(test_step_env_no_checkpoint_dir_without_the_option),
		cmocka_unit_test(test_step_env_of_record_is_all_but_attempt_and_checkpoint),
		cmocka_unit_test(test_refusal_names_F_M_r_R_config_and_checkpoint),
		cmocka_unit_test(test_catch_up_attempt_is_the_controllers_count_when_ahead),
		cmocka_unit_test(test_catch_up_attempt_follows_the_record_otherwise),
		cmocka_unit_test(test_catch_up_without_a_record_begins_at_the_controllers_count),
		cmocka_unit_test(test_relaunch_after_a_lost_end_begins_a_new_attempt),
		cmocka_unit_test(test_no_end_and_no_count_past_it_is_the_recorded_attempt),
	};
	return cmocka_run_group_tests_name("step", tests, NULL, NULL);
}
