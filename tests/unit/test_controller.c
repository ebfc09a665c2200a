/*
 * test_controller.c - asking the controller never waits past its deadline
 * (child.c), its answers are parsed strictly (scontrol.c), and PrologFlags
 * are read from slurm.conf as Slurm reads them (slurmconf.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "admin_comment.h"
#include "scontrol.h"
#include "slurmconf.h"

static const char *const no_env[] = { "PATH=/usr/bin:/bin", NULL };

/* --- child.c --------------------------------------------------------------- */

static void child_output_is_captured(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "echo hello; echo oops >&2", NULL };
	char out[64];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(5000), out,
				      sizeof(out), &err), 0);
	assert_string_equal(out, "hello\n");
}

static void child_exit_status_is_returned_with_its_stderr(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "echo 'no such job' >&2; exit 3", NULL };
	char out[64];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(5000), out,
				      sizeof(out), &err), 3);
	assert_non_null(strstr(err.msg, "exited 3: no such job"));
}

static void child_that_hangs_is_killed_at_the_deadline(void **state)
{
	const char *argv[] = { "/bin/sleep", "30", NULL };
	rb_deadline t0 = rb_deadline_in(0);
	char out[8];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(300), out,
				      sizeof(out), &err), -1);
	assert_true(rb_deadline_in(0) - t0 < 3000);
	assert_non_null(strstr(err.msg, "deadline"));
}

/* A frozen controller: the child closes its output and never exits; its
 * grandchild keeps nothing open. Both die at the deadline. */
static void child_that_closes_output_and_hangs_is_killed(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 30", NULL };
	rb_deadline t0 = rb_deadline_in(0);
	char out[8];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(300), out,
				      sizeof(out), &err), -1);
	assert_true(rb_deadline_in(0) - t0 < 3000);
}

/* A child that leaves a grandchild holding the pipe open is cut off too:
 * the whole process group is killed. */
static void child_whose_grandchild_holds_the_pipe_is_cut_off(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "sleep 30 & echo started", NULL };
	rb_deadline t0 = rb_deadline_in(0);
	char out[64];
	rb_err err;

	(void)state;
	rb_child_run(argv, no_env, rb_deadline_in(300), out, sizeof(out), &err);
	assert_true(rb_deadline_in(0) - t0 < 3000);
	assert_string_equal(out, "started\n");
}

static void child_output_beyond_the_buffer_is_dropped(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x", NULL };
	char out[16];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(5000), out,
				      sizeof(out), &err), 0);
	assert_int_equal(strlen(out), sizeof(out) - 1);
}

static void child_that_cannot_start_is_an_error(void **state)
{
	const char *argv[] = { "/nonexistent/scontrol", NULL };
	char out[8];
	rb_err err;

	(void)state;
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(1000), out,
				      sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/scontrol"));
}

static void child_gets_only_the_environment_given(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "echo \"[$HOME][$SECRET]\"", NULL };
	char out[64];
	rb_err err;

	(void)state;
	setenv("SECRET", "leak", 1);
	assert_int_equal(rb_child_run(argv, no_env, rb_deadline_in(5000), out,
				      sizeof(out), &err), 0);
	assert_string_equal(out, "[][]\n");
}

static void deadline_in_the_past_has_nothing_left(void **state)
{
	(void)state;
	assert_int_equal(rb_deadline_left(rb_deadline_in(-10)), 0);
	assert_true(rb_deadline_left(rb_deadline_in(10000)) > 9000);
}

/* --- scontrol.c -------------------------------------------------------------- */

/* job 42, no array task */
static const rb_job_ref job42 = { 42, 0, 0 };

static void squeue_preempted_job_is_parsed(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|42|3|2026-12-01T10:00:05|ml|\n", &job42, &j), 0);
	assert_true(j.have_restarts);
	assert_int_equal(j.restarts, 3);
	assert_true(j.have_preempt);
	assert_true(j.preempted);
	assert_string_equal(j.account, "ml");
}

static void squeue_requeued_job_is_not_preempted(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|42|1|N/A|(null)|\n", &job42, &j), 0);
	assert_true(j.have_preempt);
	assert_false(j.preempted);
	assert_string_equal(j.account, "");
	assert_int_equal(rb_squeue_parse_job("42|42|1|NOT_SET||\n", &job42, &j), 0);
	assert_false(j.preempted);
}

static void squeue_other_job_is_refused(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("4|4|1|N/A|x|\n", &job42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("420|420|1|N/A|x|\n", &job42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("", &job42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("slurm_load_jobs error: Invalid job id specified\n", &job42, &j), -1);
}

/* A truncated line says nothing of what it lacks. */
static void squeue_truncated_line_is_refused(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|42|1", &job42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("42|42|1|N/A", &job42, &j), -1);
	assert_false(j.have_preempt);
}

static void squeue_garbage_counts_are_unknown(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|42|-1|N/A|a|\n", &job42, &j), 0);
	assert_false(j.have_restarts);
	assert_int_equal(rb_squeue_parse_job("42|42|12x|N/A|a|\n", &job42, &j), 0);
	assert_false(j.have_restarts);
}

/* A stand-in for a Slurm command: dir/name runs the shell line body. */
static void fake_tool(const char *dir, const char *name, const char *body)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0700);
}

static void remove_fakes(const char *dir)
{
	static const char *const names[] = { "squeue", "scontrol", "log" };
	char path[512];

	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* The controller cut off: a fake scontrol that never answers. */
static void controller_that_never_answers_is_cut_off(void **state)
{
	char dir[] = "/tmp/rb-fake-bin-XXXXXX";
	rb_controller c;
	rb_ctl_job j;
	rb_deadline t0;
	rb_err err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_tool(dir, "squeue", "sleep 30");
	fake_tool(dir, "scontrol", "sleep 30");
	c.bindir = dir;
	c.slurm_conf = "/nonexistent/slurm.conf";
	c.deadline = rb_deadline_in(300);
	t0 = rb_deadline_in(0);
	assert_int_equal(rb_controller_job(&c, &job42, &j, &err), -1);
	assert_true(rb_deadline_in(0) - t0 < 3000);
	/* the deadline is shared: nothing is left for the next question */
	assert_int_equal(rb_controller_requeue_hold(&c, &job42, &err), -1);
	assert_non_null(strstr(err.msg, "no time left"));
	remove_fakes(dir);
}

static void controller_gets_its_arguments_and_slurm_conf(void **state)
{
	static const rb_job_ref job7 = { 7, 0, 0 };
	char dir[] = "/tmp/rb-fake-bin-XXXXXX";
	char log[600], script[700], seen[1024] = "";
	rb_controller c;
	rb_ctl_job j;
	rb_err err;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(script, sizeof(script), "echo \"$SLURM_CONF|$*\" >>%s", log);
	fake_tool(dir, "scontrol", script);
	snprintf(script, sizeof(script),
		 "echo \"$SLURM_CONF|$*\" >>%s; echo '7|7|2|2026-12-01T10:00:05|acct|'", log);
	fake_tool(dir, "squeue", script);
	c.bindir = dir;
	c.slurm_conf = "/etc/x/slurm.conf";
	c.deadline = rb_deadline_in(5000);
	assert_int_equal(rb_controller_comment(&c, &job7, "restore_budget: held: why", &err), 0);
	assert_int_equal(rb_controller_requeue_hold(&c, &job7, &err), 0);
	assert_int_equal(rb_controller_job(&c, &job7, &j, &err), 0);
	assert_int_equal(j.restarts, 2);
	assert_true(j.preempted);
	f = fopen(log, "r");
	assert_non_null(f);
	assert_int_equal(fread(seen, 1, sizeof(seen) - 1, f) > 0, 1);
	fclose(f);
	assert_string_equal(seen, "/etc/x/slurm.conf|update JobId=7 AdminComment=restore_budget: held: why\n"
				  "/etc/x/slurm.conf|requeuehold 7\n"
				  "/etc/x/slurm.conf|--noheader --states=all --jobs 7 --Format=JobID:0|,JobArrayID:0|,RestartCnt:0|,PreemptTime:0|,Account:0|\n");
	remove_fakes(dir);
}

/* --- array tasks (docs/arrays.md) --------------------------------------------- */

/* `squeue --jobs 1` of an array 1 whose tasks 0, 1 and 7 run: task 7, the
 * last to start, kept the array's own job id. */
static const char every_task[] = "2|1_0|0|N/A|a|\n"
				 "3|1_1|4|2026-12-01T10:00:05|b|\n"
				 "1|1_7|2|N/A|c|\n";

static void squeue_array_task_line_is_picked_out_of_every_tasks_lines(void **state)
{
	const rb_job_ref t7 = { 1, 1, 7 }, t1 = { 3, 1, 1 };
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job(every_task, &t7, &j), 0);
	assert_int_equal(j.restarts, 2);
	assert_false(j.preempted);
	assert_string_equal(j.account, "c");
	assert_int_equal(rb_squeue_parse_job(every_task, &t1, &j), 0);
	assert_int_equal(j.restarts, 4);
	assert_true(j.preempted);
	assert_string_equal(j.account, "b");
}

static void squeue_array_task_absent_is_refused(void **state)
{
	const rb_job_ref t7 = { 1, 1, 7 }, t5 = { 6, 1, 5 };
	rb_ctl_job j;

	(void)state;
	/* task 5 is not listed; the pending rest of the array is no task */
	assert_int_equal(rb_squeue_parse_job(every_task, &t5, &j), -1);
	assert_int_equal(rb_squeue_parse_job("1|1_[5-7]|0|N/A|a|\n", &t7, &j), -1);
	/* the task's id under another job id is not this task */
	assert_int_equal(rb_squeue_parse_job("9|1_7|0|N/A|a|\n", &t7, &j), -1);
	/* listed twice: which line is it? */
	assert_int_equal(rb_squeue_parse_job("1|1_7|0|N/A|a|\n1|1_7|3|N/A|a|\n", &t7, &j), -1);
	assert_false(j.have_restarts);
}

/* A job that is no array task never reads an array task's line, even the
 * one that has its id (the bare array id names every task). */
static void squeue_plain_job_never_reads_an_array_tasks_line(void **state)
{
	const rb_job_ref bare = { 1, 0, 0 };
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job(every_task, &bare, &j), -1);
	/* a heterogeneous job's part names no task: still its line */
	assert_int_equal(rb_squeue_parse_job("1|1+0|5|N/A|a|\n", &bare, &j), 0);
	assert_int_equal(j.restarts, 5);
}

static void job_ref_of_no_array_is_a_plain_job(void **state)
{
	rb_job_ref r;

	(void)state;
	r = rb_job_ref_of(5, 0, 0xfffffffe);
	assert_int_equal(r.array_job_id, 0);
	assert_int_equal(r.array_task_id, 0);
	r = rb_job_ref_of(5, 0xfffffffe, 0xfffffffe);
	assert_int_equal(r.array_job_id, 0);
	r = rb_job_ref_of(5, 4, 0xfffffffe);
	assert_int_equal(r.array_job_id, 0);
	r = rb_job_ref_of(5, 4, 1);
	assert_int_equal(r.job_id, 5);
	assert_int_equal(r.array_job_id, 4);
	assert_int_equal(r.array_task_id, 1);
}

/* Every question and action names the task as A_T, never the bare id. */
static void controller_addresses_an_array_task_as_a_t(void **state)
{
	static const rb_job_ref t7 = { 1, 1, 7 };
	char dir[] = "/tmp/rb-fake-bin-XXXXXX";
	char log[600], script[700], seen[1024] = "";
	char comment[RB_ADMIN_COMMENT_MAX + 1];
	rb_controller c;
	rb_ctl_job j;
	rb_err err;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(script, sizeof(script), "echo \"$*\" >>%s", log);
	fake_tool(dir, "scontrol", script);
	snprintf(script, sizeof(script),
		 "echo \"$*\" >>%s; case \"$*\" in *admin_comment*) echo '1|1_7|site|';; "
		 "*) echo '1|1_7|2|N/A|acct|';; esac", log);
	fake_tool(dir, "squeue", script);
	c.bindir = dir;
	c.slurm_conf = NULL;
	c.deadline = rb_deadline_in(5000);
	assert_int_equal(rb_controller_job(&c, &t7, &j, &err), 0);
	assert_int_equal(rb_controller_admin_comment(&c, &t7, comment, sizeof(comment), &err), 0);
	assert_string_equal(comment, "site");
	assert_int_equal(rb_controller_comment(&c, &t7, "site\nrestore_budget: held: why", &err), 0);
	assert_int_equal(rb_controller_requeue_hold(&c, &t7, &err), 0);
	f = fopen(log, "r");
	assert_non_null(f);
	assert_int_equal(fread(seen, 1, sizeof(seen) - 1, f) > 0, 1);
	fclose(f);
	assert_string_equal(seen,
			    "--noheader --states=all --jobs 1_7 --Format=JobID:0|,JobArrayID:0|,RestartCnt:0|,PreemptTime:0|,Account:0|\n"
			    "--noheader --states=all --jobs 1_7 --Format=JobID:0|,JobArrayID:0|,admin_comment:0|\n"
			    "update JobId=1_7 AdminComment=site\nrestore_budget: held: why\n"
			    "requeuehold 1_7\n");
	remove_fakes(dir);
}

/* squeue listing other jobs with the task's (an old squeue ignoring _T):
 * the comment is not read, so it is never written back cut. */
static void controller_refuses_a_comment_listed_among_others(void **state)
{
	static const rb_job_ref t7 = { 1, 1, 7 };
	char dir[] = "/tmp/rb-fake-bin-XXXXXX";
	char comment[RB_ADMIN_COMMENT_MAX + 1];
	rb_controller c;
	rb_err err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_tool(dir, "squeue", "printf '2|1_0|(null)|\\n1|1_7|site|\\n'");
	c.bindir = dir;
	c.slurm_conf = NULL;
	c.deadline = rb_deadline_in(5000);
	assert_int_equal(rb_controller_admin_comment(&c, &t7, comment, sizeof(comment), &err), -1);
	assert_non_null(strstr(err.msg, "--jobs 1_7 listed other jobs too"));
	remove_fakes(dir);
}

/* --- slurmconf.c --------------------------------------------------------------- */

static void prologflags_absent_is_none(void **state)
{
	(void)state;
	assert_int_equal(rb_slurmconf_parse_prolog_flags("ClusterName=x\n#PrologFlags=RunInJob\n"), 0);
}

static void prologflags_runinjob_implies_contain_and_alloc(void **state)
{
	(void)state;
	assert_int_equal(rb_slurmconf_parse_prolog_flags("PrologFlags=RunInJob\n"),
			 RB_PF_RUN_IN_JOB | RB_PF_CONTAIN | RB_PF_ALLOC);
}

static void prologflags_are_case_insensitive_lists(void **state)
{
	(void)state;
	assert_int_equal(rb_slurmconf_parse_prolog_flags("  prologflags = x11,CONTAIN # site\n"),
			 RB_PF_CONTAIN | RB_PF_ALLOC);
	assert_int_equal(rb_slurmconf_parse_prolog_flags("PrologFlags=Alloc,Serial"), RB_PF_ALLOC);
}

/* One policy for every slurm.conf key (slurmconf.h): the CLI's ClusterName
 * is the last line's, as Slurm reads it (and as PrologFlags is), never
 * the first's; lower-cased; a last line that sets nothing usable gives no
 * name rather than an earlier line's. */
static void slurm_conf_cluster_name_last_line_wins(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(rb_slurmconf_parse_cluster_name(
		"ClusterName=first\n# ClusterName=commented\n  clustername = Last # ours\n",
		out, sizeof(out)), 0);
	assert_string_equal(out, "last");
	assert_int_equal(rb_slurmconf_parse_cluster_name(
		"ClusterName=first\nClusterName=\n", out, sizeof(out)), -1);
	assert_int_equal(rb_slurmconf_parse_cluster_name(
		"SlurmctldHost=x\n", out, sizeof(out)), -1);
	assert_int_equal(rb_slurmconf_parse_cluster_name(
		"ClusterName=abcdefgh\n", out, 8), -1);
}

static void prologflags_last_line_wins(void **state)
{
	(void)state;
	assert_int_equal(rb_slurmconf_parse_prolog_flags("PrologFlags=RunInJob\nPrologFlags=Alloc\n"),
			 RB_PF_ALLOC);
	/* a longer key is another key */
	assert_int_equal(rb_slurmconf_parse_prolog_flags("PrologFlagsX=RunInJob\n"), 0);
}

static void prologflags_unreadable_file_is_an_error(void **state)
{
	rb_err err;

	(void)state;
	assert_int_equal(rb_slurmconf_prolog_flags("/nonexistent/slurm.conf", &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/slurm.conf"));
}

/* store = "controller": what squeue says before the AdminComment; only a
 * number, a state and a time stand before it, none a user names. */
static void budget_read_is_split(void **state)
{
	char out[64];
	rb_ctl_job j;
	struct tm tm = { .tm_year = 126, .tm_mon = 11, .tm_mday = 2,
			 .tm_hour = 16, .tm_min = 21, .tm_sec = 53, .tm_isdst = -1 };

	(void)state;
	assert_int_equal(rb_budget_read_split("3|R|2026-12-02T16:21:53|site|x\nmore", &j, out, sizeof(out)), 0);
	assert_int_equal(j.restarts, 3);
	assert_string_equal(j.state, "R");
	assert_int_equal(j.submit_time, (int64_t)mktime(&tm));
	assert_string_equal(out, "site|x\nmore");
	assert_int_equal(rb_budget_read_split("0|PD|Unknown|(null)", &j, out, sizeof(out)), 0);
	assert_int_equal(j.submit_time, 0);
	assert_string_equal(out, "");
	assert_int_equal(rb_budget_read_split("x|R|N/A|", &j, out, sizeof(out)), -1);
	assert_int_equal(rb_budget_read_split("1|r|N/A|", &j, out, sizeof(out)), -1);
	assert_int_equal(rb_budget_read_split("1|R", &j, out, sizeof(out)), -1);
	assert_int_equal(rb_budget_read_split("-1|R|N/A|", &j, out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(budget_read_is_split),
		cmocka_unit_test(child_output_is_captured),
		cmocka_unit_test(child_exit_status_is_returned_with_its_stderr),
		cmocka_unit_test(child_that_hangs_is_killed_at_the_deadline),
		cmocka_unit_test(child_that_closes_output_and_hangs_is_killed),
		cmocka_unit_test(child_whose_grandchild_holds_the_pipe_is_cut_off),
		cmocka_unit_test(child_output_beyond_the_buffer_is_dropped),
		cmocka_unit_test(child_that_cannot_start_is_an_error),
		cmocka_unit_test(child_gets_only_the_environment_given),
		cmocka_unit_test(deadline_in_the_past_has_nothing_left),
		cmocka_unit_test(squeue_preempted_job_is_parsed),
		cmocka_unit_test(squeue_requeued_job_is_not_preempted),
		cmocka_unit_test(squeue_other_job_is_refused),
		cmocka_unit_test(squeue_truncated_line_is_refused),
		cmocka_unit_test(squeue_garbage_counts_are_unknown),
		cmocka_unit_test(controller_that_never_answers_is_cut_off),
		cmocka_unit_test(controller_gets_its_arguments_and_slurm_conf),
		cmocka_unit_test(squeue_array_task_line_is_picked_out_of_every_tasks_lines),
		cmocka_unit_test(squeue_array_task_absent_is_refused),
		cmocka_unit_test(squeue_plain_job_never_reads_an_array_tasks_line),
		cmocka_unit_test(job_ref_of_no_array_is_a_plain_job),
		cmocka_unit_test(controller_addresses_an_array_task_as_a_t),
		cmocka_unit_test(controller_refuses_a_comment_listed_among_others),
		cmocka_unit_test(prologflags_absent_is_none),
		cmocka_unit_test(prologflags_runinjob_implies_contain_and_alloc),
		cmocka_unit_test(prologflags_are_case_insensitive_lists),
		cmocka_unit_test(prologflags_last_line_wins),
		cmocka_unit_test(slurm_conf_cluster_name_last_line_wins),
		cmocka_unit_test(prologflags_unreadable_file_is_an_error),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
