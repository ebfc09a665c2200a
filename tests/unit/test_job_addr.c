/*
 * test_job_addr.c - a job's address as the CLI reads it ("J" or "A_T") and
 * squeue's lines of an array's tasks (plugin/slurm/job_addr.c;
 * contrib/cli/README.md, "Job arrays").
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "job_addr.h"
#include "record.h"

static void test_job_arg_plain_job_id(void **state)
{
	rb_job_arg r;

	(void)state;
	assert_int_equal(rb_job_arg_parse("42", &r), 0);
	assert_int_equal(r.id, 42);
	assert_false(r.task);
	assert_int_equal(rb_job_arg_parse("4294967295", &r), 0);
	assert_int_equal(r.id, 4294967295u);
}

static void test_job_arg_array_task(void **state)
{
	rb_job_arg r;

	(void)state;
	assert_int_equal(rb_job_arg_parse("123_4", &r), 0);
	assert_int_equal(r.id, 123);
	assert_true(r.task);
	assert_int_equal(r.task_id, 4);
	assert_int_equal(rb_job_arg_parse("123_0", &r), 0);
	assert_true(r.task);
	assert_int_equal(r.task_id, 0);
	assert_int_equal(rb_job_arg_parse("4294967295_4294967293", &r), 0);
	assert_int_equal(r.task_id, RB_TASK_ID_MAX);
}

static void test_job_arg_reads_what_rb_job_addr_writes(void **state)
{
	char addr[RB_JOB_ADDR_MAX];
	rb_job_arg r;

	(void)state;
	assert_int_equal(rb_job_arg_parse(rb_job_addr(130, 123, 7, addr), &r), 0);
	assert_true(r.task && r.id == 123 && r.task_id == 7);
	assert_int_equal(rb_job_arg_parse(rb_job_addr(130, 0, 0, addr), &r), 0);
	assert_true(!r.task && r.id == 130);
}

static void test_job_arg_malformed_is_refused(void **state)
{
	static const char *const bad[] = {
		"", "0", "0_1", "123_", "_4", "123_x", "12x", "123_4_5",
		"123_[5]", "123_[5-9%2]", "-1", "+5", " 5", "5 ", "123_-1",
		"123_ 4", "4294967296", "99999999999", "1_4294967294",
		"1_4294967295", "123__4", "x_4",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rb_job_arg r;

		if (rb_job_arg_parse(bad[i], &r) == 0)
			fail_msg("'%s' was taken as a job id", bad[i]);
	}
	assert_int_equal(rb_job_arg_parse(NULL, &(rb_job_arg){ 0 }), -1);
}

/* What Slurm prints for array 123 with tasks 0 and 1 running and 5-999
 * pending at most 4 at a time (the pending set's form checked on 22.05,
 * 24.11 and 26.05 by tests/integration/test_cli_array_pending.sh). */
static const char squeue_out[] =
	"124|123_[5-999%4]|5-999%4|PENDING|\n"
	"125|123_0|0|RUNNING|\n"
	"123|123_1|1|COMPLETING|\n";

static void test_squeue_array_tasks_and_pending_set(void **state)
{
	rb_squeue_task t[8];
	size_t n;

	(void)state;
	assert_int_equal(rb_squeue_array_parse(squeue_out, 123, t, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_true(t[0].not_started);
	assert_string_equal(t[0].addr, "123_[5-999%4]");
	assert_string_equal(t[0].state, "PENDING");
	assert_false(t[1].not_started);
	assert_int_equal(t[1].job_id, 125);
	assert_int_equal(t[1].task_id, 0);
	assert_string_equal(t[1].state, "RUNNING");
	assert_int_equal(t[2].job_id, 123);
	assert_int_equal(t[2].task_id, 1);
}

static void test_squeue_array_other_jobs_skipped(void **state)
{
	rb_squeue_task t[4];
	size_t n;

	(void)state;
	/* a plain job prints its own id and N/A; 1234_0 is another array */
	assert_int_equal(rb_squeue_array_parse("123|123|N/A|RUNNING|\n"
					       "1300|1234_0|0|RUNNING|\n\n",
					       123, t, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rb_squeue_array_parse("", 123, t, 4, &n), 0);
	assert_int_equal(n, 0);
}

static void test_squeue_array_counts_beyond_max(void **state)
{
	rb_squeue_task t[1];
	size_t n;

	(void)state;
	assert_int_equal(rb_squeue_array_parse(squeue_out, 123, t, 1, &n), 0);
	assert_int_equal(n, 3);
	assert_true(t[0].not_started);
}

static void test_squeue_array_malformed_line_is_an_error(void **state)
{
	static const char *const bad[] = {
		"124|123_[5-999%4]|5-999%4|PENDING\n",  /* no closing bar */
		"124|123_x|x|PENDING|\n",
		"124|123_[5;rm]|5|PENDING|\n",
		"124|123_4|4|running|\n",
		"124|123_4|4||\n",
		"abc|123_4|4|RUNNING|\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rb_squeue_task t[4];
		size_t n;

		if (rb_squeue_array_parse(bad[i], 123, t, 4, &n) == 0)
			fail_msg("'%s' was taken as an answer", bad[i]);
	}
}

/* One checkpoint directory per task of an array: --checkpoint-dir takes
 * sbatch's --output patterns (docs/arrays.md). */
static void test_checkpoint_dir_patterns_name_one_task(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(rb_checkpoint_dir_expand("ck/%A_%a", 17, 12, 5, out,
						  sizeof(out)), 0);
	assert_string_equal(out, "ck/12_5");
	assert_int_equal(rb_checkpoint_dir_expand("run-%j/%a%%x%q%", 17, 12, 0,
						  out, sizeof(out)), 0);
	assert_string_equal(out, "run-17/0%x%q%");
	/* no array task: %A is the job id, %a is 0 */
	assert_int_equal(rb_checkpoint_dir_expand("ck-%A-%a", 17, 0, 0, out,
						  sizeof(out)), 0);
	assert_string_equal(out, "ck-17-0");
	assert_int_equal(rb_checkpoint_dir_expand("ckpt", 17, 12, 5, out,
						  sizeof(out)), 0);
	assert_string_equal(out, "ckpt");
}

/* A result over its buffer is refused and the directory kept as given. */
static void test_checkpoint_dir_pattern_too_long_is_kept_unexpanded(void **state)
{
	char out[12];

	(void)state;
	assert_int_equal(rb_checkpoint_dir_expand("ck/%A_%a", 4294967295u,
						  4294967295u, 4294967295u,
						  out, sizeof(out)), -1);
	assert_string_equal(out, "ck/%A_%a");
	assert_int_equal(rb_checkpoint_dir_expand("a-very-long-%a", 1, 1, 1,
						  out, sizeof(out)), -1);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_arg_plain_job_id),
		cmocka_unit_test(test_job_arg_array_task),
		cmocka_unit_test(test_job_arg_reads_what_rb_job_addr_writes),
		cmocka_unit_test(test_job_arg_malformed_is_refused),
		cmocka_unit_test(test_squeue_array_tasks_and_pending_set),
		cmocka_unit_test(test_squeue_array_other_jobs_skipped),
		cmocka_unit_test(test_squeue_array_counts_beyond_max),
		cmocka_unit_test(test_squeue_array_malformed_line_is_an_error),
		cmocka_unit_test(test_checkpoint_dir_patterns_name_one_task),
		cmocka_unit_test(test_checkpoint_dir_pattern_too_long_is_kept_unexpanded),
	};
	return cmocka_run_group_tests_name("job_addr", tests, NULL, NULL);
}
