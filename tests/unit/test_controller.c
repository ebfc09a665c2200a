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
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
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

static void squeue_preempted_job_is_parsed(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|3|2026-12-01T10:00:05|ml|\n", 42, &j), 0);
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
	assert_int_equal(rb_squeue_parse_job("42|1|N/A|(null)|\n", 42, &j), 0);
	assert_true(j.have_preempt);
	assert_false(j.preempted);
	assert_string_equal(j.account, "");
	assert_int_equal(rb_squeue_parse_job("42|1|NOT_SET||\n", 42, &j), 0);
	assert_false(j.preempted);
}

static void squeue_other_job_is_refused(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("4|1|N/A|x|\n", 42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("420|1|N/A|x|\n", 42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("", 42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("slurm_load_jobs error: Invalid job id specified\n", 42, &j), -1);
}

/* A truncated line says nothing of what it lacks. */
static void squeue_truncated_line_is_refused(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|1", 42, &j), -1);
	assert_int_equal(rb_squeue_parse_job("42|1|N/A", 42, &j), -1);
	assert_false(j.have_preempt);
}

static void squeue_garbage_counts_are_unknown(void **state)
{
	rb_ctl_job j;

	(void)state;
	assert_int_equal(rb_squeue_parse_job("42|-1|N/A|a|\n", 42, &j), 0);
	assert_false(j.have_restarts);
	assert_int_equal(rb_squeue_parse_job("42|12x|N/A|a|\n", 42, &j), 0);
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
	assert_int_equal(rb_controller_job(&c, 42, &j, &err), -1);
	assert_true(rb_deadline_in(0) - t0 < 3000);
	/* the deadline is shared: nothing is left for the next question */
	assert_int_equal(rb_controller_requeue_hold(&c, 42, &err), -1);
	assert_non_null(strstr(err.msg, "no time left"));
	remove_fakes(dir);
}

static void controller_gets_its_arguments_and_slurm_conf(void **state)
{
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
		 "echo \"$SLURM_CONF|$*\" >>%s; echo '7|2|2026-12-01T10:00:05|acct|'", log);
	fake_tool(dir, "squeue", script);
	c.bindir = dir;
	c.slurm_conf = "/etc/x/slurm.conf";
	c.deadline = rb_deadline_in(5000);
	assert_int_equal(rb_controller_comment(&c, 7, "restore_budget: held: why", &err), 0);
	assert_int_equal(rb_controller_requeue_hold(&c, 7, &err), 0);
	assert_int_equal(rb_controller_job(&c, 7, &j, &err), 0);
	assert_int_equal(j.restarts, 2);
	assert_true(j.preempted);
	f = fopen(log, "r");
	assert_non_null(f);
	assert_int_equal(fread(seen, 1, sizeof(seen) - 1, f) > 0, 1);
	fclose(f);
	assert_string_equal(seen, "/etc/x/slurm.conf|update JobId=7 AdminComment=restore_budget: held: why\n"
				  "/etc/x/slurm.conf|requeuehold 7\n"
				  "/etc/x/slurm.conf|--noheader --states=all --jobs 7 --Format=JobID:0|,RestartCnt:0|,PreemptTime:0|,Account:0|\n");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
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
		cmocka_unit_test(prologflags_absent_is_none),
		cmocka_unit_test(prologflags_runinjob_implies_contain_and_alloc),
		cmocka_unit_test(prologflags_are_case_insensitive_lists),
		cmocka_unit_test(prologflags_last_line_wins),
		cmocka_unit_test(prologflags_unreadable_file_is_an_error),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
