/*
 * test_engine.c - every rule of docs/rule.md, "The rule", named after the rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define CKPT "/home/u/ckpt/checkpoint-7"

static rb_limits limits(int m, int r)
{
	rb_limits l = {
		.max_failures = m, .restore_retry_num = r, .restore_timeout = 0,
		.accounting = RB_ACCOUNTING_GROUPED, .count_preemptions = false,
		.max_interruptions = RB_UNLIMITED,
	};
	return l;
}

/* Start attempt n, report its phase as the batch step would. */
static rb_decision begin(rb_budget *b, int64_t n, const rb_limits *l,
			 const char *ckpt, rb_charge *c)
{
	rb_decision d = rb_engine_start(b, n, l, 1000 + n * 100, c, NULL, 0);
	const char *handed = ckpt && ckpt[0] ? ckpt : b->checkpoint;

	rb_engine_set_phase(b, n, rb_engine_start_phase(n, handed), ckpt);
	return d;
}

/* A budget whose attempt 1 is RESTORING from CKPT (attempt 0 was preempted). */
static void restoring_at_1(rb_budget *b, const rb_limits *l)
{
	rb_budget_init(b);
	begin(b, 0, l, NULL, NULL);
	rb_engine_end(b, 0, RB_END_INTERRUPTED, 0, 1050);
	begin(b, 1, l, CKPT, NULL);
	assert_int_equal(b->cur.phase, RB_PHASE_RESTORING);
}

/* --- the charge table ---------------------------------------------------- */

static void test_restoring_interrupted_is_restore_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1150);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
	assert_int_equal(c.attempt, 1);
	assert_int_equal(b.restore_failures, 1);
	assert_int_equal(b.failures, 0);
}

static void test_restoring_failed_is_restore_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
	assert_int_equal(c.end, RB_END_FAILED);
	assert_int_equal(c.end_code, 42);
	assert_int_equal(b.prev_end, RB_END_FAILED);
	assert_int_equal(b.prev_end_code, 42);
	assert_int_equal(b.restore_failures, 1);
	assert_int_equal(b.failures, 0);
}

static void test_restoring_without_recorded_end_is_restore_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	restoring_at_1(&b, &l);
	/* the node died: no end recorded */
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
	assert_int_equal(c.end, RB_END_INTERRUPTED);
	assert_int_equal(b.restore_failures, 1);
}

static void test_unreported_phase_after_requeue_with_checkpoint_counts_as_restoring(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1150);
	/* attempt 2 starts; its batch step never reports (node died) */
	rb_engine_start(&b, 2, &l, 1200, NULL, NULL, 0);
	assert_int_equal(b.cur.phase, RB_PHASE_RESTORING);
	rb_engine_start(&b, 3, &l, 1300, &c, NULL, 0);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
	assert_int_equal(b.restore_failures, 2);
}

static void test_r_reaching_R_converts_to_one_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 2);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(b.restore_failures, 1);
	rb_engine_end(&b, 2, RB_END_FAILED, 42, 1250);
	begin(&b, 3, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_CONVERTED);
	assert_int_equal(c.failures_before, 0);
	assert_int_equal(c.failures_after, 1);
	assert_int_equal(c.restore_failures_before, 1);
	assert_int_equal(c.restore_failures_after, 0);
	assert_int_equal(b.failures, 1);
	assert_int_equal(b.restore_failures, 0);
}

static void test_running_failed_is_one_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	restoring_at_1(&b, &l);
	assert_true(rb_engine_confirm(&b, 1, RB_CONFIRM_ACK));
	rb_engine_end(&b, 1, RB_END_FAILED, 3, 1150);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_FAILURE);
	assert_int_equal(c.phase, RB_PHASE_RUNNING);
	assert_int_equal(b.failures, 1);
	assert_int_equal(b.restore_failures, 0);
}

static void test_fresh_failed_is_one_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	assert_int_equal(b.cur.phase, RB_PHASE_FRESH);
	rb_engine_end(&b, 0, RB_END_FAILED, 139, 1050);
	begin(&b, 1, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_FAILURE);
	assert_int_equal(c.phase, RB_PHASE_FRESH);
	assert_int_equal(b.failures, 1);
}

static void test_running_interrupted_charges_nothing(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_confirm(&b, 1, RB_CONFIRM_ACK);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1150);
	assert_int_equal(begin(&b, 2, &l, NULL, &c), RB_DECISION_RUN);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_int_equal(b.failures, 0);
	assert_int_equal(b.restore_failures, 0);
	assert_int_equal(b.interruptions, 2);
}

static void test_fresh_interrupted_charges_nothing(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);
	rb_charge c;

	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1050);
	assert_int_equal(begin(&b, 1, &l, NULL, &c), RB_DECISION_RUN);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_int_equal(b.failures, 0);
}

static void test_count_preemptions_charges_interruption(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(1, 3);
	rb_charge c;

	l.count_preemptions = true;
	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1050);
	assert_int_equal(begin(&b, 1, &l, NULL, &c), RB_DECISION_RUN);
	assert_int_equal(c.kind, RB_CHARGE_PREEMPTION);
	assert_int_equal(b.failures, 1);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1150);
	assert_int_equal(begin(&b, 2, &l, NULL, &c), RB_DECISION_REFUSE);
	assert_int_equal(b.failures, 2);
}

static void test_completed_then_requeued_is_interruption(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_COMPLETED, 0, 1150);
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_EXIT0);
	assert_int_equal(begin(&b, 2, &l, NULL, &c), RB_DECISION_RUN);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_int_equal(c.end, RB_END_INTERRUPTED);
}

/* --- confirmation -------------------------------------------------------- */

static void test_confirm_by_ack_resets_r(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, NULL);
	assert_int_equal(b.restore_failures, 1);
	assert_true(rb_engine_confirm(&b, 2, RB_CONFIRM_ACK));
	assert_int_equal(b.restore_failures, 0);
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_ACK);
	/* a second confirmation changes nothing */
	assert_false(rb_engine_confirm(&b, 2, RB_CONFIRM_TIMEOUT));
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_ACK);
}

static void test_confirm_by_restore_timeout(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	l.restore_timeout = 300;
	restoring_at_1(&b, &l);
	/* attempt 1 started at 1100 and ran 300 s */
	assert_true(rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1400));
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_TIMEOUT);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_int_equal(b.restore_failures, 0);
}

static void test_restore_timeout_not_reached_is_no_confirmation(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);
	rb_charge c;

	l.restore_timeout = 300;
	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1399);
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_NONE);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
}

static void test_restore_timeout_zero_disables_timeout_path(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1000000);
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_NONE);
}

static void test_confirm_by_exit0(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, NULL);
	assert_int_equal(b.restore_failures, 1);
	rb_engine_end(&b, 2, RB_END_COMPLETED, 0, 1250);
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_EXIT0);
	assert_int_equal(b.restore_failures, 0);
}

static void test_confirm_only_applies_to_restoring_current_attempt(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	assert_false(rb_engine_confirm(&b, 0, RB_CONFIRM_ACK)); /* FRESH */
	restoring_at_1(&b, &l);
	assert_false(rb_engine_confirm(&b, 0, RB_CONFIRM_ACK)); /* stale */
	assert_false(rb_engine_confirm(&b, 2, RB_CONFIRM_ACK)); /* future */
	assert_int_equal(b.cur.confirmed, RB_CONFIRM_NONE);
}

static void test_failures_must_be_consecutive(void **state)
{
	(void)state;
	/* R = 2: fail, confirm, fail -> still no failure counted */
	rb_budget b;
	rb_limits l = limits(0, 2);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, NULL);
	rb_engine_confirm(&b, 2, RB_CONFIRM_ACK);
	rb_engine_end(&b, 2, RB_END_INTERRUPTED, 0, 1250);
	begin(&b, 3, &l, NULL, NULL);
	rb_engine_end(&b, 3, RB_END_FAILED, 42, 1350);
	assert_int_equal(begin(&b, 4, &l, NULL, NULL), RB_DECISION_RUN);
	assert_int_equal(b.failures, 0);
	assert_int_equal(b.restore_failures, 1);
}

/* --- end recording --------------------------------------------------------- */

static void test_first_recorded_end_wins(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	restoring_at_1(&b, &l);
	assert_true(rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1150));
	assert_false(rb_engine_end(&b, 1, RB_END_FAILED, 9, 1160));
	assert_int_equal(b.cur.end, RB_END_INTERRUPTED);
	assert_false(rb_engine_end(&b, 0, RB_END_FAILED, 9, 1160));
}

/* --- exhaustion and the budget tables -------------------------------------- */

/* A trial whose checkpoint is deterministically corrupt after one preemption:
 * how many restore attempts does it make before an attempt is refused? */
static int corrupt_checkpoint_restore_attempts(rb_limits l, int64_t cap,
					       char *reason, size_t len)
{
	rb_budget b;
	int restores = 0;
	int64_t n;

	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	rb_engine_set_phase(&b, 0, RB_PHASE_FRESH, CKPT); /* wrote a checkpoint */
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1050);
	for (n = 1; n <= cap; n++) {
		if (rb_engine_start(&b, n, &l, 1000 + n * 100, NULL, reason,
				    len) == RB_DECISION_REFUSE)
			break;
		assert_int_equal(b.cur.phase, RB_PHASE_RESTORING);
		assert_string_equal(b.cur.checkpoint, CKPT);
		rb_engine_end(&b, n, RB_END_FAILED, 42, 1000 + n * 100 + 5);
		restores++;
	}
	assert_string_equal(b.checkpoint, CKPT);
	return restores;
}

static void test_grouped_budget_table_is_R_times_M_plus_1(void **state)
{
	(void)state;
	for (int m = 0; m <= 3; m++) {
		for (int r = 1; r <= 4; r++) {
			char reason[RB_REASON_MAX];
			int got = corrupt_checkpoint_restore_attempts(
				limits(m, r), 1000, reason, sizeof(reason));

			if (got != r * (m + 1))
				fail_msg("M=%d R=%d: %d restore attempts, want %d",
					 m, r, got, r * (m + 1));
			assert_non_null(strstr(reason, "budget exhausted"));
		}
	}
}

static void test_grouped_design_table_M1_R3_is_6(void **state)
{
	(void)state;
	assert_int_equal(corrupt_checkpoint_restore_attempts(limits(1, 3), 100,
							     NULL, 0), 6);
	assert_int_equal(corrupt_checkpoint_restore_attempts(limits(2, 2), 100,
							     NULL, 0), 6);
	assert_int_equal(corrupt_checkpoint_restore_attempts(limits(0, 1), 100,
							     NULL, 0), 1);
}

static void test_ray_budget_table_is_R_plus_M_plus_1(void **state)
{
	(void)state;
	for (int m = 0; m <= 3; m++) {
		for (int r = 0; r <= 4; r++) {
			rb_limits l = limits(m, r);
			int got;

			l.accounting = RB_ACCOUNTING_RAY;
			got = corrupt_checkpoint_restore_attempts(l, 1000, NULL, 0);
			if (got != r + m + 1)
				fail_msg("ray M=%d R=%d: %d restore attempts, want %d",
					 m, r, got, r + m + 1);
		}
	}
}

static void test_unlimited_max_failures_never_exhausts(void **state)
{
	(void)state;
	assert_int_equal(corrupt_checkpoint_restore_attempts(
				 limits(RB_UNLIMITED, 1), 2000, NULL, 0), 2000);
	rb_limits l = limits(RB_UNLIMITED, 0);
	l.accounting = RB_ACCOUNTING_RAY;
	assert_int_equal(corrupt_checkpoint_restore_attempts(l, 500, NULL, 0),
			 500);
}

static void test_exhausted_iff_failures_exceed_max(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(1, 3);

	rb_budget_init(&b);
	b.failures = 1;
	assert_false(rb_engine_is_exhausted(&b, &l));
	b.failures = 2;
	assert_true(rb_engine_is_exhausted(&b, &l));
	b.granted = 1;
	assert_false(rb_engine_is_exhausted(&b, &l));
	l.max_failures = RB_UNLIMITED;
	b.failures = 1000000;
	assert_false(rb_engine_is_exhausted(&b, &l));
}

static void test_refusal_reason_names_the_counts(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(1, 3);
	char reason[RB_REASON_MAX];

	rb_budget_init(&b);
	begin(&b, 0, &l, NULL, NULL);
	rb_engine_set_phase(&b, 0, RB_PHASE_FRESH, CKPT);
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1);
	for (int n = 1; n <= 6; n++) {
		assert_int_equal(rb_engine_start(&b, n, &l, 0, NULL, reason,
						 sizeof(reason)),
				 RB_DECISION_RUN);
		rb_engine_end(&b, n, RB_END_FAILED, 42, 1);
	}
	assert_int_equal(rb_engine_start(&b, 7, &l, 0, NULL, reason,
					 sizeof(reason)), RB_DECISION_REFUSE);
	assert_string_equal(reason,
			    "restore 3 of 3 failed (attempt 6): failures 2 > "
			    "max_failures 1: budget exhausted");
	assert_true(b.exhausted);
	assert_true(b.cur.refused);
}

static void test_refused_attempt_is_not_charged_again(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	assert_int_equal(begin(&b, 2, &l, NULL, NULL), RB_DECISION_REFUSE);
	rb_engine_end(&b, 2, RB_END_FAILED, 1, 1250); /* task_init refused it */
	b.granted = 1;                                  /* an admin grants one */
	rb_charge c;
	char reason[RB_REASON_MAX];
	assert_int_equal(rb_engine_start(&b, 3, &l, 0, &c, reason, sizeof(reason)),
			 RB_DECISION_RUN);
	assert_int_equal(b.failures, 1);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_true(c.refused);
	assert_int_equal(c.attempt, 2);
	assert_non_null(strstr(reason, "attempt 2 was refused"));
}

/* The charge names a refused attempt's end with its exit code, as it does
 * a charged one's: the start event says "failed:1", and no reader has to
 * find the code in the end event (docs/rule.md). */
static void test_refused_attempts_end_keeps_its_exit_code(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	assert_int_equal(begin(&b, 2, &l, NULL, NULL), RB_DECISION_REFUSE);
	rb_engine_end(&b, 2, RB_END_FAILED, 1, 1250);
	b.granted = 1;
	assert_int_equal(rb_engine_start(&b, 3, &l, 0, &c, NULL, 0),
			 RB_DECISION_RUN);
	assert_true(c.refused);
	assert_int_equal(c.end, RB_END_FAILED);
	assert_int_equal(c.end_code, 1);
}

static void test_restores_left_formula(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(2, 3);

	rb_budget_init(&b);
	assert_int_equal(rb_engine_restores_left(&b, &l), 9); /* (2+1)*3 */
	b.failures = 1;
	b.restore_failures = 2;
	assert_int_equal(rb_engine_restores_left(&b, &l), 4); /* 2*3-2 */
	l.accounting = RB_ACCOUNTING_RAY;
	b.failures = 0;
	b.restore_failures = 0;
	assert_int_equal(rb_engine_restores_left(&b, &l), 6); /* 3+2+1 */
	l.max_failures = RB_UNLIMITED;
	assert_int_equal(rb_engine_restores_left(&b, &l), -1);
}

static void test_restores_left_counts_down_to_refusal(void **state)
{
	(void)state;
	/* restores_left at each start = restore attempts still to come */
	for (int acc = 0; acc < 2; acc++) {
		rb_limits l = limits(1, 2);
		rb_budget b;

		l.accounting = acc ? RB_ACCOUNTING_RAY : RB_ACCOUNTING_GROUPED;
		rb_budget_init(&b);
		begin(&b, 0, &l, NULL, NULL);
		rb_engine_set_phase(&b, 0, RB_PHASE_FRESH, CKPT);
		rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1);
		int64_t total = rb_engine_restores_left(&b, &l);
		int64_t n = 1;
		while (rb_engine_start(&b, n, &l, 0, NULL, NULL, 0) ==
		       RB_DECISION_RUN) {
			assert_int_equal(rb_engine_restores_left(&b, &l),
					 total - (n - 1));
			rb_engine_end(&b, n, RB_END_FAILED, 42, 1);
			n++;
		}
		assert_int_equal(n - 1, total);
		assert_int_equal(rb_engine_restores_left(&b, &l), 0);
	}
}

static void test_lowered_R_converts_at_next_restore_failure(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(3, 5);
	rb_limits lower = limits(3, 2);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1);
	begin(&b, 2, &l, NULL, NULL);
	rb_engine_end(&b, 2, RB_END_FAILED, 42, 1);
	begin(&b, 3, &l, NULL, NULL);
	assert_int_equal(b.restore_failures, 2);
	rb_engine_end(&b, 3, RB_END_FAILED, 42, 1);
	/* the admin lowered R to 2 while the job waited */
	begin(&b, 4, &lower, NULL, &c);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_CONVERTED);
	assert_int_equal(b.failures, 1);
	assert_int_equal(b.restore_failures, 0);
	assert_int_equal(b.cur.limits.restore_retry_num, 2);
}

/* --- idempotence and the checkpoint pointer -------------------------------- */

static void test_charging_is_idempotent_per_attempt(void **state)
{
	(void)state;
	rb_budget b, before;
	rb_limits l = limits(1, 1);
	rb_charge c;

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	begin(&b, 2, &l, NULL, &c);
	assert_int_equal(b.failures, 1);
	before = b;
	/* the prolog on every other node of the job, and a late duplicate */
	for (int node = 0; node < 8; node++) {
		assert_int_equal(rb_engine_start(&b, 2, &l, 9999, &c, NULL, 0),
				 RB_DECISION_RUN);
		assert_int_equal(c.kind, RB_CHARGE_NONE);
		assert_int_equal(rb_engine_start(&b, 1, &l, 9999, &c, NULL, 0),
				 RB_DECISION_RUN);
	}
	assert_memory_equal(&b, &before, sizeof(b));
}

static void test_repeated_start_of_refused_attempt_stays_refused(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(0, 1);

	restoring_at_1(&b, &l);
	rb_engine_end(&b, 1, RB_END_FAILED, 42, 1150);
	assert_int_equal(begin(&b, 2, &l, NULL, NULL), RB_DECISION_REFUSE);
	assert_int_equal(rb_engine_start(&b, 2, &l, 0, NULL, NULL, 0),
			 RB_DECISION_REFUSE);
	assert_int_equal(b.failures, 1);
}

static void test_checkpoint_is_never_cleared(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(5, 2);

	restoring_at_1(&b, &l);
	for (int n = 2; n < 8; n++) {
		rb_engine_end(&b, n - 1, RB_END_FAILED, 42, 1);
		begin(&b, n, &l, "", NULL);   /* nothing found this time */
		assert_string_equal(b.checkpoint, CKPT);
		assert_string_equal(b.cur.checkpoint, CKPT);
		assert_int_equal(b.cur.phase, RB_PHASE_RESTORING);
	}
}

static void test_newer_checkpoint_replaces_pointer(void **state)
{
	(void)state;
	rb_budget b;
	rb_limits l = limits(5, 2);

	restoring_at_1(&b, &l);
	rb_engine_confirm(&b, 1, RB_CONFIRM_ACK);
	rb_engine_end(&b, 1, RB_END_INTERRUPTED, 0, 1);
	begin(&b, 2, &l, "/home/u/ckpt/checkpoint-9", NULL);
	assert_string_equal(b.checkpoint, "/home/u/ckpt/checkpoint-9");
	assert_string_equal(b.cur.checkpoint, "/home/u/ckpt/checkpoint-9");
}

static void test_start_phase(void **state)
{
	(void)state;
	assert_int_equal(rb_engine_start_phase(0, NULL), RB_PHASE_FRESH);
	assert_int_equal(rb_engine_start_phase(0, ""), RB_PHASE_FRESH);
	assert_int_equal(rb_engine_start_phase(0, CKPT), RB_PHASE_RUNNING);
	assert_int_equal(rb_engine_start_phase(3, ""), RB_PHASE_FRESH);
	assert_int_equal(rb_engine_start_phase(3, CKPT), RB_PHASE_RESTORING);
}

/* --- randomized invariants ------------------------------------------------- */

static void test_random_sequences_keep_invariants(void **state)
{
	(void)state;
	unsigned seed = 12345;
	const int sequences = 5000;

	for (int s = 0; s < sequences; s++) {
		rb_limits l = limits((int)(rand_r(&seed) % 5) - 1,
				     (int)(rand_r(&seed) % 4) + 1);
		rb_budget b;
		int64_t n = 0;
		bool have_ckpt = false;

		l.accounting = rand_r(&seed) % 3 == 0 ? RB_ACCOUNTING_RAY :
							 RB_ACCOUNTING_GROUPED;
		l.count_preemptions = rand_r(&seed) % 4 == 0;
		l.restore_timeout = rand_r(&seed) % 2 ? 0 : 50;
		rb_budget_init(&b);

		for (int step = 0; step < 40; step++) {
			int prev_f = b.failures;
			rb_budget snapshot;
			rb_decision d;

			/* start attempt n, sometimes twice (multi-node) */
			d = rb_engine_start(&b, n, &l, n * 100, NULL, NULL, 0);
			assert_true(b.failures >= prev_f);
			assert_int_equal(d == RB_DECISION_REFUSE,
					 rb_engine_is_exhausted(&b, &l));
			if (have_ckpt)
				assert_string_equal(b.checkpoint, CKPT);
			snapshot = b;
			assert_int_equal(rb_engine_start(&b, n, &l, 0, NULL,
							 NULL, 0), d);
			assert_memory_equal(&b, &snapshot, sizeof(b));
			if (l.accounting == RB_ACCOUNTING_GROUPED)
				assert_true(b.restore_failures < l.restore_retry_num);
			else
				assert_true(b.restore_failures <= l.restore_retry_num);
			assert_true(b.restore_failures >= 0);
			if (d == RB_DECISION_REFUSE)
				break;

			/* the batch step: sometimes finds a checkpoint */
			const char *found = rand_r(&seed) % 3 == 0 ? CKPT : "";
			if (rand_r(&seed) % 8 != 0) { /* sometimes never reports */
				have_ckpt = have_ckpt || found[0];
				rb_engine_set_phase(&b, n, rb_engine_start_phase(
					n, have_ckpt ? CKPT : ""), found);
			}
			if (rand_r(&seed) % 3 == 0)
				rb_engine_confirm(&b, n, RB_CONFIRM_ACK);
			switch (rand_r(&seed) % 4) {
			case 0: break; /* no end recorded */
			case 1: rb_engine_end(&b, n, RB_END_INTERRUPTED, 0,
					      n * 100 + rand_r(&seed) % 100);
				break;
			case 2: rb_engine_end(&b, n, RB_END_FAILED, 42,
					      n * 100 + rand_r(&seed) % 100);
				break;
			default: rb_engine_end(&b, n, RB_END_COMPLETED, 0,
					       n * 100 + 1);
				break;
			}
			if (have_ckpt)
				assert_string_equal(b.checkpoint, CKPT);
			n++;
		}
	}
}

/* --- names ------------------------------------------------------------------ */

static void test_names_round_trip(void **state)
{
	(void)state;
	for (int i = RB_PHASE_NONE; i <= RB_PHASE_RUNNING; i++) {
		rb_phase p;
		assert_int_equal(rb_phase_parse(rb_phase_name(i), &p), 0);
		assert_int_equal(p, i);
	}
	for (int i = RB_END_NONE; i <= RB_END_COMPLETED; i++) {
		rb_end e;
		assert_int_equal(rb_end_parse(rb_end_name(i), &e), 0);
		assert_int_equal(e, i);
	}
	for (int i = RB_CHARGE_NONE; i <= RB_CHARGE_PREEMPTION; i++) {
		rb_charge_kind k;
		assert_int_equal(rb_charge_parse(rb_charge_name(i), &k), 0);
		assert_int_equal(k, i);
	}
	for (int i = RB_CONFIRM_NONE; i <= RB_CONFIRM_EXIT0; i++) {
		rb_confirm c;
		assert_int_equal(rb_confirm_parse(rb_confirm_name(i), &c), 0);
		assert_int_equal(c, i);
	}
	rb_accounting a;
	assert_int_equal(rb_accounting_parse("ray", &a), 0);
	assert_int_equal(a, RB_ACCOUNTING_RAY);
	assert_int_equal(rb_accounting_parse("Ray", &a), -1);
	assert_int_equal(rb_phase_parse(NULL, &(rb_phase){0}), -1);
	assert_string_equal(rb_phase_name(99), "unknown");

	char buf[32];
	rb_end_format(RB_END_FAILED, 42, buf, sizeof(buf));
	assert_string_equal(buf, "failed:42");
	rb_end_format(RB_END_INTERRUPTED, 0, buf, sizeof(buf));
	assert_string_equal(buf, "interrupted");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restoring_interrupted_is_restore_failure),
		cmocka_unit_test(test_restoring_failed_is_restore_failure),
		cmocka_unit_test(test_restoring_without_recorded_end_is_restore_failure),
		cmocka_unit_test(test_unreported_phase_after_requeue_with_checkpoint_counts_as_restoring),
		cmocka_unit_test(test_r_reaching_R_converts_to_one_failure),
		cmocka_unit_test(test_running_failed_is_one_failure),
		cmocka_unit_test(test_fresh_failed_is_one_failure),
		cmocka_unit_test(test_running_interrupted_charges_nothing),
		cmocka_unit_test(test_fresh_interrupted_charges_nothing),
		cmocka_unit_test(test_count_preemptions_charges_interruption),
		cmocka_unit_test(test_completed_then_requeued_is_interruption),
		cmocka_unit_test(test_confirm_by_ack_resets_r),
		cmocka_unit_test(test_confirm_by_restore_timeout),
		cmocka_unit_test(test_restore_timeout_not_reached_is_no_confirmation),
		cmocka_unit_test(test_restore_timeout_zero_disables_timeout_path),
		cmocka_unit_test(test_confirm_by_exit0),
		cmocka_unit_test(test_confirm_only_applies_to_restoring_current_attempt),
		cmocka_unit_test(test_failures_must_be_consecutive),
		cmocka_unit_test(test_first_recorded_end_wins),
		cmocka_unit_test(test_grouped_budget_table_is_R_times_M_plus_1),
		cmocka_unit_test(test_grouped_design_table_M1_R3_is_6),
		cmocka_unit_test(test_ray_budget_table_is_R_plus_M_plus_1),
		cmocka_unit_test(test_unlimited_max_failures_never_exhausts),
		cmocka_unit_test(test_exhausted_iff_failures_exceed_max),
		cmocka_unit_test(test_refusal_reason_names_the_counts),
		cmocka_unit_test(test_refused_attempt_is_not_charged_again),
		cmocka_unit_test(test_refused_attempts_end_keeps_its_exit_code),
		cmocka_unit_test(test_restores_left_formula),
		cmocka_unit_test(test_restores_left_counts_down_to_refusal),
		cmocka_unit_test(test_lowered_R_converts_at_next_restore_failure),
		cmocka_unit_test(test_charging_is_idempotent_per_attempt),
		cmocka_unit_test(test_repeated_start_of_refused_attempt_stays_refused),
		cmocka_unit_test(test_checkpoint_is_never_cleared),
		cmocka_unit_test(test_newer_checkpoint_replaces_pointer),
		cmocka_unit_test(test_start_phase),
		cmocka_unit_test(test_random_sequences_keep_invariants),
		cmocka_unit_test(test_names_round_trip),
	};
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
