/*
 * test_lifecycle.c - the job's life events through a real ledger on disk:
 * the code the prolog, batch step and epilog run, without Slurm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "ledger.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "ack.h"
#include "step.h"
#include "fixture.h"

#define CLUSTER "testc"
#define CKPT "/home/u/ckpt/checkpoint-3"

typedef struct {
	char dir[64];
	rb_config *cfg;
	rb_store_dir store_dir;
	rb_store *st;            /* the ledger in dir */
	char run_dir[128];
	rb_node node;            /* node "n1", run_dir under dir */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f || ut_tmpdir(f->dir, sizeof(f->dir), "/tmp/rb-lifecycle-XXXXXX", 0755) < 0)
		return -1;
	f->cfg = ut_config_in(f->dir);
	f->st = rb_store_dir_init(&f->store_dir, f->cfg->state_dir, CLUSTER);
	snprintf(f->run_dir, sizeof(f->run_dir), "%s/run", f->dir);
	f->node = (rb_node){ f->run_dir, "n1", CLUSTER, 1300 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	int rc = ut_rmtree(f->dir);

	rb_config_free(f->cfg);
	free(f);
	return rc;
}

static rb_job_info job_info(uint32_t id, int64_t attempt)
{
	return ut_job_info(CLUSTER, id, attempt);
}

static rb_decision start(fixture *f, uint32_t id, int64_t n)
{
	rb_job_info j = job_info(id, n);
	rb_start_result res;
	rb_err err;

	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), 0);
	return res.decision;
}

static rb_record read_rec(fixture *f, uint32_t id)
{
	rb_record rec;
	rb_err err;

	assert_int_equal(rb_lifecycle_read(f->cfg, CLUSTER, id, &rec, &err), 0);
	return rec;
}

/* Attempt n restoring from CKPT, reported by the batch step. */
static void restoring(fixture *f, uint32_t id, int64_t n)
{
	rb_err err;

	start(f, id, n);
	assert_int_equal(rbt_report(f->cfg, CLUSTER, id, n,
					     RB_PHASE_RESTORING, CKPT, &err), 0);
}

static void test_start_creates_record_with_limits_in_force(void **state)
{
	fixture *f = *state;
	rb_record rec;

	assert_int_equal(start(f, 7, 0), RB_DECISION_RUN);
	rec = read_rec(f, 7);
	assert_int_equal(rec.job_id, 7);
	assert_string_equal(rec.cluster, CLUSTER);
	assert_int_equal(rec.budget.cur.attempt, 0);
	assert_int_equal(rec.budget.cur.limits.max_failures, 1);
	assert_int_equal(rec.budget.cur.limits.restore_retry_num, 2);
	assert_string_equal(rec.work_dir, "/home/u");
	assert_string_equal(rec.checkpoint_dir, "ckpt");
}

static void test_epilog_with_bumped_restart_count_is_interruption(void **state)
{
	fixture *f = *state;
	rb_err err;

	start(f, 8, 0);
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 8, 1, 0, 0, NULL, 1050,
					     &err), 0);
	assert_int_equal(read_rec(f, 8).budget.cur.end, RB_END_INTERRUPTED);
}

static void test_epilog_exit_code_is_failure(void **state)
{
	fixture *f = *state;
	rb_err err;
	rb_record rec;

	start(f, 9, 0);
	/* RequeueExit: the count is bumped only after the epilog */
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 9, 0, 42, 0, NULL, 1050,
					     &err), 0);
	rec = read_rec(f, 9);
	assert_int_equal(rec.budget.cur.end, RB_END_FAILED);
	assert_int_equal(rec.budget.cur.end_code, 42);
}

static void test_epilog_signal_is_failure(void **state)
{
	fixture *f = *state;
	rb_err err;
	rb_record rec;

	start(f, 10, 0);
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 10, 0, 0, 11, NULL, 1050,
					     &err), 0);
	rec = read_rec(f, 10);
	assert_int_equal(rec.budget.cur.end, RB_END_FAILED);
	assert_int_equal(rec.budget.cur.end_code, 128 + 11);
}

static void test_epilog_on_every_node_records_one_end(void **state)
{
	fixture *f = *state;
	rb_err err;

	start(f, 11, 0);
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 11, 0, 3, 0, NULL, 1050,
					     &err), 0);
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 11, 1, 0, 0, NULL, 1060,
					     &err), 0);
	assert_int_equal(read_rec(f, 11).budget.cur.end, RB_END_FAILED);
}

static void test_epilog_of_untracked_job_creates_nothing(void **state)
{
	fixture *f = *state;
	rb_record rec;
	rb_err err;

	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 12, 0, 0, 0, NULL, 1,
					     &err), 0);
	assert_int_equal(rb_lifecycle_read(f->cfg, CLUSTER, 12, &rec, &err), 1);
}

static void test_corrupt_checkpoint_exhausts_after_R_times_M_plus_1(void **state)
{
	fixture *f = *state;
	rb_err err;
	int64_t n;
	int restores = 0;

	start(f, 20, 0);
	assert_int_equal(rbt_report(f->cfg, CLUSTER, 20, 0,
					     RB_PHASE_FRESH, CKPT, &err), 0);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 20, 1, 0, 0, NULL, 1050, &err);
	for (n = 1; n < 50; n++) {
		if (start(f, 20, n) == RB_DECISION_REFUSE)
			break;
		rbt_report(f->cfg, CLUSTER, 20, n, RB_PHASE_RESTORING,
				    CKPT, &err);
		rb_lifecycle_epilog(f->cfg, CLUSTER, 20, n, 42, 0, NULL, 1000 + n * 100 + 5,
				    &err);
		restores++;
	}
	assert_int_equal(restores, 2 * (1 + 1));
	rb_record rec = read_rec(f, 20);
	assert_true(rec.budget.exhausted);
	assert_string_equal(rec.budget.checkpoint, CKPT);
	assert_int_equal(rec.budget.failures, 2);
}

/* --- the acknowledgement, in the job's own space (ack.c) --------------------- */

#define NOBODY 65534 /* a real user (setpriv --init-groups needs one) */

/* Job `id` of user nobody whose work dir is <dir>/w (root's, 0755) and
 * checkpoint dir <dir>/w/ckpt (nobody's, 0700). */
static rb_job_info nobody_job(fixture *f, uint32_t id, int64_t n, char *wd,
			      size_t wdlen)
{
	char ck[600];
	rb_job_info j = job_info(id, n);

	snprintf(wd, wdlen, "%s/w", f->dir);
	snprintf(ck, sizeof(ck), "%s/ckpt", wd);
	mkdir(wd, 0755);
	mkdir(ck, 0700);
	assert_int_equal(chown(ck, NOBODY, NOBODY), 0);
	j.uid = j.gid = NOBODY;
	j.work_dir = wd;
	return j;
}

static void start_job(fixture *f, const rb_job_info *j)
{
	rb_start_result res;
	rb_err err;

	assert_int_equal(rb_lifecycle_start(f->cfg, j, &res, NULL, &err), 0);
}

/* Attempt 0 checkpoints, is preempted; attempt 1 starts RESTORING. */
static void nobody_restoring(fixture *f, uint32_t id, char *wd, size_t wdlen)
{
	rb_job_info j = nobody_job(f, id, 0, wd, wdlen);
	rb_err err;

	start_job(f, &j);
	rb_lifecycle_epilog(f->cfg, CLUSTER, id, 1, 0, 0, NULL, 1050, &err);
	j.attempt = 1;
	start_job(f, &j);
	assert_int_equal(rbt_report(f->cfg, CLUSTER, id, 1,
					     RB_PHASE_RESTORING, CKPT, &err), 0);
}

static void touch_as(const char *path, uid_t uid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lchown(path, uid, uid), 0);
}

static void test_ack_path_is_in_the_jobs_checkpoint_or_work_dir(void **state)
{
	char p[256];

	(void)state;
	assert_int_equal(rb_ack_path("/home/u", "ck", "c1", 7, 2, p, sizeof(p)), 0);
	assert_string_equal(p, "/home/u/ck/.restore_budget-ack.c1.7.2");
	assert_int_equal(rb_ack_path("/home/u", "/scratch/u/ck", "c1", 7, 0, p,
				     sizeof(p)), 0);
	assert_string_equal(p, "/scratch/u/ck/.restore_budget-ack.c1.7.0");
	assert_int_equal(rb_ack_path("/home/u", NULL, "c1", 7, 1, p, sizeof(p)), 0);
	assert_string_equal(p, "/home/u/.restore_budget-ack.c1.7.1");
	assert_int_equal(rb_ack_path("", "ck", "c1", 7, 1, p, sizeof(p)), -1);
	assert_int_equal(rb_ack_path("/home/u", "ck", "c1", 7, 1, p, 10), -1);
}

static void test_ack_file_confirms_restore(void **state)
{
	fixture *f = *state;
	char wd[128], path[600];
	rb_err err;

	if (geteuid() != 0)
		skip(); /* the look runs as the job's user: root only */
	nobody_restoring(f, 30, wd, sizeof(wd));
	assert_int_equal(rb_ack_path(wd, "ckpt", CLUSTER, 30, 1, path,
				     sizeof(path)), 0);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(5000),
				     &err), 0);
	touch_as(path, NOBODY);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(5000),
				     &err), 1);
	/* the node dies: no epilog; the next prolog finds the ack */
	{
		rb_job_info j = nobody_job(f, 30, 2, wd, sizeof(wd));

		start_job(f, &j);
	}
	rb_record rec = read_rec(f, 30);
	assert_int_equal(rec.budget.restore_failures, 0);
	assert_int_equal(rec.budget.prev_end, RB_END_INTERRUPTED);
}

static void test_ack_seen_by_the_epilog_confirms_restore(void **state)
{
	fixture *f = *state;
	char wd[128], path[600];
	rb_err err;

	if (geteuid() != 0)
		skip();
	nobody_restoring(f, 34, wd, sizeof(wd));
	rb_ack_path(wd, "ckpt", CLUSTER, 34, 1, path, sizeof(path));
	touch_as(path, NOBODY);
	/* preempted while RESTORING, but the restore was acknowledged */
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 34, 2, 0, 0, NULL,
					     1150, &err), 0);
	assert_int_equal(read_rec(f, 34).budget.cur.confirmed, RB_CONFIRM_ACK);
	/* the file stays: neither the plugin nor root removes it */
	assert_int_equal(access(path, F_OK), 0);
}

/* Root could see all of these; the job's user cannot, or does not own
 * them: none is an acknowledgement. */
static void test_ack_is_looked_for_as_the_job_user(void **state)
{
	fixture *f = *state;
	char wd[128], path[600], hidden[600];
	rb_err err;

	if (geteuid() != 0)
		skip();
	nobody_restoring(f, 31, wd, sizeof(wd));
	rb_ack_path(wd, "ckpt", CLUSTER, 31, 1, path, sizeof(path));
	/* a file someone else owns */
	touch_as(path, 0);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(5000),
				     &err), 0);
	unlink(path);
	/* a symlink to a file the user does not own */
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(5000),
				     &err), 0);
	unlink(path);
	/* a link someone else planted, to a file the user owns (issue 19) */
	snprintf(hidden, sizeof(hidden), "%s/ckpt/users-own", wd);
	touch_as(hidden, NOBODY);
	assert_int_equal(symlink(hidden, path), 0);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(5000),
				     &err), 0);
	unlink(path);
	unlink(hidden);
	/* a file of the user's, in a directory only root can search */
	snprintf(hidden, sizeof(hidden), "%s/root-only", f->dir);
	mkdir(hidden, 0700);
	strcat(hidden, "/ack");
	touch_as(hidden, NOBODY);
	assert_int_equal(rb_ack_seen(hidden, NOBODY, NOBODY,
				     rb_deadline_in(5000), &err), 0);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 31, 2, 0, 0, NULL, 1150, &err);
	assert_int_equal(read_rec(f, 31).budget.cur.confirmed, RB_CONFIRM_NONE);
}

/* A look that cannot finish (a hung mount) is killed at its deadline and
 * is not an acknowledgement: here the deadline has already passed. */
static void test_ack_look_ends_at_its_deadline(void **state)
{
	fixture *f = *state;
	char wd[128], path[600];
	rb_err err = { "" };

	if (geteuid() != 0)
		skip();
	nobody_restoring(f, 37, wd, sizeof(wd));
	rb_ack_path(wd, "ckpt", CLUSTER, 37, 1, path, sizeof(path));
	touch_as(path, NOBODY);
	assert_int_equal(rb_ack_seen(path, NOBODY, NOBODY, rb_deadline_in(-1),
				     &err), -1);
	assert_non_null(strstr(err.msg, "deadline"));
}

/* docs/security.md: nothing inside state_dir is writable by a user. */
static void test_nothing_in_state_dir_is_writable_by_the_job_user(void **state)
{
	fixture *f = *state;
	char wd[128], cmd[512];

	if (geteuid() != 0)
		skip();
	nobody_restoring(f, 32, wd, sizeof(wd));
	rb_err err;

	rb_lifecycle_epilog(f->cfg, CLUSTER, 32, 2, 42, 0, NULL, 1150, &err);
	/* everything below the ledger's cluster dir is root's, not
	 * group/other-writable; no ack tree exists */
	snprintf(cmd, sizeof(cmd),
		 "test -z \"$(find %s/%s \\( ! -user root -o -perm /022 \\) -print)\" && test ! -e %s/%s/ack",
		 f->dir, CLUSTER, f->dir, CLUSTER);
	assert_int_equal(system(cmd), 0);
}

static void test_concurrent_prologs_charge_once(void **state)
{
	fixture *f = *state;
	rb_err err;
	const int nodes = 16;

	restoring(f, 40, 1);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 40, 1, 42, 0, NULL, 1150, &err);
	for (int i = 0; i < nodes; i++) {
		if (fork() == 0) {
			rb_job_info j = job_info(40, 2);
			rb_start_result res;
			rb_err e2;

			_exit(rb_lifecycle_start(f->cfg, &j, &res, NULL, &e2) == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < nodes; i++) {
		int status;

		wait(&status);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	rb_record rec = read_rec(f, 40);
	assert_int_equal(rec.budget.restore_failures, 1);
	assert_int_equal(rec.budget.cur.attempt, 2);
	assert_int_equal(rec.budget.last_charged, 1);
}

static void test_corrupt_record_is_an_error_not_a_fresh_budget(void **state)
{
	fixture *f = *state;
	char path[512];
	rb_job_info j = job_info(50, 1);
	rb_start_result res;
	rb_err err;
	int fd;

	start(f, 50, 0);
	snprintf(path, sizeof(path), "%s/%s/050/50.rec", f->dir, CLUSTER);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1, 40), 1);
	close(fd);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "corrupt"));
}

static void test_grant_adds_budget_and_is_logged(void **state)
{
	fixture *f = *state;
	rb_err err;
	int64_t n;

	start(f, 60, 0);
	rbt_report(f->cfg, CLUSTER, 60, 0, RB_PHASE_FRESH, CKPT, &err);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 60, 1, 0, 0, NULL, 1, &err);
	for (n = 1; start(f, 60, n) == RB_DECISION_RUN; n++)
		rb_lifecycle_epilog(f->cfg, CLUSTER, 60, n, 42, 0, NULL, 1, &err);
	assert_int_equal(rb_lifecycle_grant(f->cfg, CLUSTER, 60, 1, "root", &err), 0);
	assert_int_equal(read_rec(f, 60).budget.granted, 1);
	assert_int_equal(start(f, 60, n + 1), RB_DECISION_RUN);
	assert_int_equal(rb_lifecycle_grant(f->cfg, CLUSTER, 60, 0, "root", &err), -1);
	assert_int_equal(rb_lifecycle_grant(f->cfg, CLUSTER, 61, 1, "root", &err), -1);
}

static int find_line(const char *line, bool ok, void *ctx)
{
	void **args = ctx;

	if (ok && strstr(line, "kind=reset") && strstr(line, args[0]))
		(*(int *)args[1])++;
	return 0;
}

/* Spend job id's budget as user 1000, submission sub (NULL: none). */
static int64_t exhaust(fixture *f, uint32_t id, const char *sub)
{
	rb_job_info j = job_info(id, 0);
	rb_err err;

	j.submission = sub;
	start_job(f, &j);
	rbt_report(f->cfg, CLUSTER, id, 0, RB_PHASE_FRESH, CKPT, &err);
	rb_lifecycle_epilog(f->cfg, CLUSTER, id, 1, 0, 0, NULL, 1, &err);
	for (j.attempt = 1;; j.attempt++) {
		rb_start_result res;

		assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), 0);
		if (res.decision == RB_DECISION_REFUSE)
			break;
		rb_lifecycle_epilog(f->cfg, CLUSTER, id, j.attempt, 42, 0, NULL,
				    1, &err);
	}
	/* the refused attempt ends (task_init failed it) */
	rb_lifecycle_epilog(f->cfg, CLUSTER, id, j.attempt, 1, 0, NULL, 1, &err);
	assert_true(read_rec(f, id).budget.exhausted);
	return j.attempt;
}

/* A new job with an old job's id: a fresh budget, and the reset on record. */
static void assert_new_job(fixture *f, uint32_t id, rb_job_info *j,
			   const char *evidence)
{
	rb_start_result res;
	rb_err err;
	char want[64];
	rb_ledger *l;
	int found = 0;

	assert_int_equal(rb_lifecycle_start(f->cfg, j, &res, NULL, &err), 0);
	assert_false(res.duplicate);
	assert_int_equal(res.decision, RB_DECISION_RUN);
	rb_record rec = read_rec(f, id);
	assert_int_equal(rec.uid, j->uid);
	assert_int_equal(rec.budget.failures, 0);
	assert_false(rec.budget.exhausted);
	assert_string_equal(rec.budget.checkpoint, "");
	snprintf(want, sizeof(want), "evidence=%s", evidence);
	assert_int_equal(rb_ledger_open(f->dir, CLUSTER, RB_LEDGER_READ, &l, &err), 0);
	assert_int_equal(rb_ledger_events(l, id, find_line, (void *[]){ want, &found }, &err), 0);
	rb_ledger_close(l);
	assert_int_equal(found, 1);
}

static void test_reused_job_id_of_another_user_starts_a_new_budget(void **state)
{
	fixture *f = *state;
	rb_job_info j;

	exhaust(f, 90, NULL);
	/* Slurm reuses the id for bob's new job */
	j = job_info(90, 0);
	j.uid = 2000;
	j.gid = 2000;
	assert_new_job(f, 90, &j, "uid");
}

/* The same user's new job after the controller lost its state: no
 * identities (submitted where the plugin is not loaded), but attempt 0
 * after attempts that ended cannot be the old job. */
static void test_reused_job_id_of_the_same_user_starts_a_new_budget(void **state)
{
	fixture *f = *state;
	rb_job_info j;

	exhaust(f, 91, NULL);
	j = job_info(91, 0);
	assert_new_job(f, 91, &j, "attempt_below");
}

/* With submission identities the answer needs no attempt numbers: a new
 * submission is a new job even while the old record's attempt looks alive
 * (its node died), and the same submission is never reset. */
static void test_submission_identity_tells_jobs_with_one_id_apart(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(92, 0);
	rb_start_result res;
	rb_err err;

	j.submission = "rb1:aaaa";
	start_job(f, &j);
	/* a repeated start of the same job and attempt: a duplicate */
	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), 0);
	assert_true(res.duplicate);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 92, 0, 0, 0, NULL, 1, &err);
	j.attempt = 1;
	start_job(f, &j); /* attempt 1 starts, never ends (node died) */
	j = job_info(92, 0);
	j.submission = "rb1:bbbb";
	assert_new_job(f, 92, &j, "submission");
	assert_string_equal(read_rec(f, 92).submission, "rb1:bbbb");
}

/* Rule: a reused job id never continues an older submission's record, even
 * when the user sends the old submission identity again (docs/security.md,
 * "Job identity"): its attempts at or below the old record's are a new
 * job's, charged and recorded, never duplicates. */
static void test_reused_job_id_never_continues_an_older_submissions_record(void **state)
{
	fixture *f = *state;
	rb_job_info j;
	int64_t last;

	last = exhaust(f, 93, "rb1:cccc");
	assert_true(last >= 2);
	j = job_info(93, 0);
	j.submission = "rb1:cccc"; /* rebuilt by the user */
	assert_new_job(f, 93, &j, "attempt_below");
	assert_int_equal(read_rec(f, 93).budget.cur.attempt, 0);
}

/* The same, when the new job's attempt equals the old record's ended one. */
static void test_rebuilt_identity_at_the_ended_attempt_is_a_new_job(void **state)
{
	fixture *f = *state;
	rb_job_info j;
	int64_t last = exhaust(f, 95, "rb1:eeee");

	j = job_info(95, last);
	j.submission = "rb1:eeee";
	assert_new_job(f, 95, &j, "attempt_ended");
}

/* The attempt order never resets a legitimate job: a repeated start of the
 * running attempt is a duplicate, and the batch step's catch-up (an
 * attempt Slurm ran without a prolog) continues the record. */
static void test_attempt_order_never_resets_the_same_job(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(96, 0);
	rb_start_result res;
	rb_record rec;
	rb_err err;

	j.submission = "rb1:ffff";
	start_job(f, &j);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 96, 0, 42, 0, NULL, 1, &err);
	j.attempt = 1;
	start_job(f, &j);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), 0);
	assert_true(res.duplicate);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 96, 2, 0, 0, NULL, 1, &err);
	rec = read_rec(f, 96);
	assert_int_equal(rec.budget.failures, 1);
	/* no prolog for the next attempt: the controller says 2 (or is not
	 * reachable: -1) */
	for (int64_t count = -1; count <= 2; count += 3) {
		rec = read_rec(f, 96);
		j.attempt = rb_step_catch_up_attempt(count, &rec);
		assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, &rec, &err), 0);
		assert_false(res.duplicate);
		assert_int_equal(rec.budget.failures, 1);
		assert_int_equal(rec.budget.cur.attempt, j.attempt);
		rb_lifecycle_epilog(f->cfg, CLUSTER, 96, j.attempt + 1, 0, 0,
				    NULL, 1, &err);
	}
	assert_string_equal(read_rec(f, 96).submission, "rb1:ffff");
}

static int find_report(const char *line, bool ok, void *ctx)
{
	void **args = ctx;

	if (ok && strstr(line, "kind=report") && strstr(line, args[0]))
		(*(int *)args[1])++;
	return 0;
}

/* Rule: every text the plugin writes carries any byte, and a value too long
 * for its line keeps the job tracked (docs/security.md, "Names"): a report
 * of two paths at their longest, each escaped to 3 bytes a byte, is
 * recorded (before: "event line too long", the update failed) with the
 * value that does not fit as its digest; the record keeps both whole. */
static void test_event_of_the_longest_names_keeps_the_job_tracked(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(97, 0);
	static char ckpt[RB_PATH_MAX], from[RB_PATH_MAX];
	rb_handed h = { ckpt, { 0 }, from };
	rb_ledger *l;
	rb_err err;
	int found = 0;

	memset(ckpt, '\n', sizeof(ckpt) - 1);
	ckpt[0] = '/';
	memset(from, '\x01', sizeof(from) - 1);
	from[0] = '/';
	j.work_dir = ckpt;
	start_job(f, &j);
	if (rbt_hand(f->cfg, CLUSTER, 97, 0,
				       RB_PHASE_RESTORING, &h, &err) != 0)
		fail_msg("report: %s", err.msg);
	assert_string_equal(read_rec(f, 97).budget.cur.checkpoint, ckpt);
	assert_string_equal(read_rec(f, 97).work_dir, ckpt);
	assert_int_equal(rb_ledger_open(f->dir, CLUSTER, RB_LEDGER_READ, &l, &err), 0);
	assert_int_equal(rb_ledger_events(l, 97, find_report,
					  (void *[]){ "fallback_from=rb-digest:", &found },
					  &err), 0);
	rb_ledger_close(l);
	assert_int_equal(found, 1);
}

static void test_record_names_another_job(void **state)
{
	rb_record *r = calloc(1, sizeof(*r));
	const char *why;

	(void)state;
	rb_record_init(r);
	r->uid = 5;
	r->budget.cur.attempt = 3;
	assert_true(rb_record_names_another_job(r, 6, NULL, 4, &why));
	assert_string_equal(why, "uid");
	assert_false(rb_record_names_another_job(r, 5, NULL, 3, &why));
	/* the same job's attempts only grow */
	assert_true(rb_record_names_another_job(r, 5, NULL, 0, &why));
	assert_string_equal(why, "attempt_below");
	r->budget.cur.end = RB_END_COMPLETED;
	assert_true(rb_record_names_another_job(r, 5, NULL, 3, &why));
	assert_string_equal(why, "attempt_ended");
	assert_false(rb_record_names_another_job(r, 5, NULL, 4, &why));
	strcpy(r->submission, "rb1:x");
	assert_false(rb_record_names_another_job(r, 5, "rb1:x", 4, &why));
	/* the same identity sent again does not undo the attempt order */
	assert_true(rb_record_names_another_job(r, 5, "rb1:x", 0, &why));
	assert_string_equal(why, "attempt_below");
	assert_true(rb_record_names_another_job(r, 5, "rb1:x", 3, &why));
	assert_string_equal(why, "attempt_ended");
	assert_true(rb_record_names_another_job(r, 5, "rb1:y", 9, &why));
	assert_string_equal(why, "submission");
	/* identities of different kinds are not compared */
	assert_false(rb_record_names_another_job(r, 5, "sluid:x", 4, &why));
	/* a malformed identity from the job is no identity */
	assert_true(rb_record_names_another_job(r, 5, "bad id", 3, &why));
	assert_string_equal(why, "attempt_ended");
	free(r);
}

static int count_kind(const char *line, bool ok, void *ctx)
{
	int *counts = ctx;

	if (!ok)
		counts[2]++;
	else if (strstr(line, "kind=start"))
		counts[0]++;
	else if (strstr(line, "kind=end"))
		counts[1]++;
	return 0;
}

static void test_event_log_keeps_every_attempt(void **state)
{
	fixture *f = *state;
	rb_ledger *l;
	rb_err err;
	int counts[3] = { 0 };

	for (int n = 0; n < 5; n++) {
		start(f, 70, n);
		start(f, 70, n); /* a second node: no second event */
		rb_lifecycle_epilog(f->cfg, CLUSTER, 70, n + 1, 0, 0, NULL, 1, &err);
	}
	assert_int_equal(rb_ledger_open(f->dir, CLUSTER, RB_LEDGER_READ, &l, &err), 0);
	assert_int_equal(rb_ledger_events(l, 70, count_kind, counts, &err), 0);
	rb_ledger_close(l);
	assert_int_equal(counts[0], 5);
	assert_int_equal(counts[1], 5);
	assert_int_equal(counts[2], 0);
}

static void test_start_hands_back_the_record_it_wrote(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(31, 0);
	rb_start_result res;
	rb_record got, on_disk;
	rb_err err;

	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, &got, &err), 0);
	assert_int_equal(rb_lifecycle_read(f->cfg, CLUSTER, 31, &on_disk, &err), 0);
	assert_int_equal(got.budget.cur.attempt, 0);
	assert_int_equal(got.budget.cur.attempt, on_disk.budget.cur.attempt);
	assert_int_equal(got.budget.failures, on_disk.budget.failures);
	assert_string_equal(got.user, on_disk.user);
	j = job_info(31, 1);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, &got, &err), 0);
	assert_int_equal(got.budget.cur.attempt, 1);
}

static void test_start_of_recorded_attempt_hands_back_that_record(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(32, 2);
	rb_start_result res;
	rb_record got;
	rb_err err;

	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, NULL, &err), 0);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j, &res, &got, &err), 0);
	assert_true(res.duplicate);
	assert_int_equal(got.budget.cur.attempt, 2);
	assert_int_equal(got.job_id, 32);
}

/* --- an end not written (docs/architecture.md, "An end not written") --- */

/* Attempt 0 restored, acknowledged, then failed (exit 42) while the ledger
 * could not take its end: the epilog keeps it on the node. */
static void fail_with_end_kept(fixture *f, uint32_t id, const rb_node *node)
{
	rb_end_info end = { 0, 42, 0, NULL, NULL, 1100 };
	rb_err err;

	restoring(f, id, 0);
	assert_int_equal(rb_lifecycle_keep_end(f->st, node, id, &end, &err), 0);
	assert_int_equal(read_rec(f, id).budget.cur.end, RB_END_NONE);
}

/* Rule (issue 21): a real failure is never free because its end could not
 * be written. The next start on the batch host records the kept end first,
 * so attempt 0 is charged as FAILED, not as an interruption. */
static void test_an_end_not_written_is_charged_at_the_next_start(void **state)
{
	fixture *f = *state;
	rb_record rec;

	fail_with_end_kept(f, 40, &f->node);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &f->node, 40), 1);
	start(f, 40, 1);
	rec = read_rec(f, 40);
	assert_int_equal(rec.budget.restore_failures, 1);
	assert_int_equal(rec.budget.prev_end, RB_END_FAILED);
	assert_int_equal(rec.budget.prev_end_code, 42);
	/* recorded once: the kept end is gone */
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &f->node, 40), 0);
}

/* Rule (issue 21): a lost final end does not leave the record running
 * forever: a later epilog on the node records every end kept there. */
static void test_a_kept_final_end_is_recorded_by_a_later_epilog(void **state)
{
	fixture *f = *state;
	rb_end_info done = { 0, 0, 0, NULL, NULL, 1200 };
	rb_err err;
	rb_record rec;

	restoring(f, 41, 0);
	assert_int_equal(rb_lifecycle_keep_end(f->st, &f->node, 41, &done, &err), 0);
	fail_with_end_kept(f, 42, &f->node);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &f->node, 0), 2);
	rec = read_rec(f, 41);
	assert_int_equal(rec.budget.cur.end, RB_END_COMPLETED);
	/* exit 0 confirmed the restore: no failed restore stays counted */
	assert_int_equal(rec.budget.cur.confirmed, RB_CONFIRM_EXIT0);
	assert_int_equal(read_rec(f, 42).budget.cur.end, RB_END_FAILED);
}

/* A kept end is its attempt's alone: once a later attempt is on record it
 * is dropped, never applied to the attempt that runs now. */
static void test_a_kept_end_never_ends_a_later_attempt(void **state)
{
	fixture *f = *state;
	rb_note_end kept;

	fail_with_end_kept(f, 43, &f->node);
	start(f, 43, 1);  /* started elsewhere, before the end was carried */
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &f->node, 0), 0);
	assert_int_equal(read_rec(f, 43).budget.cur.attempt, 1);
	assert_int_equal(read_rec(f, 43).budget.cur.end, RB_END_NONE);
	assert_int_equal(rb_note_end_read(f->run_dir, "n1", CLUSTER, 43, &kept), 1);
}

/* The store's state_dir away (renamed) and back, with a run_dir outside
 * it: what a node sees when the shared state_dir is unmounted. */
typedef struct {
	char top[64], run_dir[128], moved[128];
	rb_node node;
} away;

static void away_init(fixture *f, away *a)
{
	assert_int_equal(ut_tmpdir(a->top, sizeof(a->top), "/tmp/rb-run-XXXXXX", 0700), 0);
	snprintf(a->run_dir, sizeof(a->run_dir), "%s/run", a->top);
	a->node = (rb_node){ a->run_dir, "n1", CLUSTER, 1300 };
	snprintf(a->moved, sizeof(a->moved), "%s.gone", f->cfg->state_dir);
}

static void state_dir_gone(fixture *f, away *a)
{
	assert_int_equal(rename(f->cfg->state_dir, a->moved), 0);
}

static void state_dir_back(fixture *f, away *a)
{
	assert_int_equal(rename(a->moved, f->cfg->state_dir), 0);
}

/* While the ledger still cannot take it, the end stays kept. */
static void test_a_kept_end_stays_while_the_ledger_fails(void **state)
{
	fixture *f = *state;
	rb_note_end kept;
	away a;

	away_init(f, &a);
	fail_with_end_kept(f, 44, &a.node);
	state_dir_gone(f, &a);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &a.node, 44), 0);
	assert_int_equal(rb_note_end_read(a.run_dir, "n1", CLUSTER, 44, &kept), 0);
	assert_int_equal(kept.attempt, 0);
	assert_int_equal(kept.exit_code, 42);
	state_dir_back(f, &a);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &a.node, 44), 1);
	assert_int_equal(ut_rmtree(a.top), 0);
}

/* A failing store keeps every end for a later epilog (the sweep stops at
 * its first failure, so a hung state_dir costs an epilog one lock deadline,
 * not one per kept end: rb_lifecycle_carry_ends). */
static void test_a_failing_store_keeps_every_end_for_a_later_epilog(void **state)
{
	fixture *f = *state;
	rb_note_end kept;
	away a;

	away_init(f, &a);
	fail_with_end_kept(f, 46, &a.node);
	fail_with_end_kept(f, 47, &a.node);
	state_dir_gone(f, &a);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &a.node, 0), 0);
	assert_int_equal(rb_note_end_read(a.run_dir, "n1", CLUSTER, 46, &kept), 0);
	assert_int_equal(rb_note_end_read(a.run_dir, "n1", CLUSTER, 47, &kept), 0);
	state_dir_back(f, &a);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &a.node, 0), 2);
	assert_int_equal(ut_rmtree(a.top), 0);
}

/* With state_dir gone (or untrusted) the record cannot be read either: the
 * end is kept for the attempt of the prolog's note the batch step claimed
 * on this node, and recorded once state_dir is back. */
static void test_an_end_is_kept_by_the_claimed_note_when_the_record_is_unreadable(void **state)
{
	fixture *f = *state;
	rb_job_info j = job_info(45, 0);
	rb_end_info end = { 0, 42, 0, NULL, NULL, 1100 };
	rb_note_job note;
	rb_err err;
	away a;

	away_init(f, &a);
	assert_int_equal(rb_note_write(a.run_dir, "n1", &j, &err), 0);
	assert_int_equal(rb_note_claim(a.run_dir, "n1", CLUSTER, 45, &note, &err), 0);
	restoring(f, 45, 0);
	state_dir_gone(f, &a);
	assert_int_equal(rb_lifecycle_keep_end(f->st, &a.node, 45, &end, &err), 0);
	state_dir_back(f, &a);
	assert_int_equal(rb_lifecycle_carry_ends(f->st, &a.node, 45), 1);
	assert_int_equal(read_rec(f, 45).budget.cur.end, RB_END_FAILED);
	assert_int_equal(ut_rmtree(a.top), 0);
}

int main(void)
{

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_start_hands_back_the_record_it_wrote),
		T(test_start_of_recorded_attempt_hands_back_that_record),
		T(test_start_creates_record_with_limits_in_force),
		T(test_epilog_with_bumped_restart_count_is_interruption),
		T(test_epilog_exit_code_is_failure),
		T(test_epilog_signal_is_failure),
		T(test_epilog_on_every_node_records_one_end),
		T(test_epilog_of_untracked_job_creates_nothing),
		T(test_corrupt_checkpoint_exhausts_after_R_times_M_plus_1),
		T(test_ack_path_is_in_the_jobs_checkpoint_or_work_dir),
		T(test_ack_file_confirms_restore),
		T(test_ack_seen_by_the_epilog_confirms_restore),
		T(test_ack_is_looked_for_as_the_job_user),
		T(test_ack_look_ends_at_its_deadline),
		T(test_nothing_in_state_dir_is_writable_by_the_job_user),
		T(test_concurrent_prologs_charge_once),
		T(test_corrupt_record_is_an_error_not_a_fresh_budget),
		T(test_grant_adds_budget_and_is_logged),
		T(test_event_log_keeps_every_attempt),
		T(test_reused_job_id_of_another_user_starts_a_new_budget),
		T(test_reused_job_id_of_the_same_user_starts_a_new_budget),
		T(test_submission_identity_tells_jobs_with_one_id_apart),
		T(test_record_names_another_job),
		T(test_reused_job_id_never_continues_an_older_submissions_record),
		T(test_rebuilt_identity_at_the_ended_attempt_is_a_new_job),
		T(test_attempt_order_never_resets_the_same_job),
		T(test_event_of_the_longest_names_keeps_the_job_tracked),
		T(test_an_end_not_written_is_charged_at_the_next_start),
		T(test_a_kept_final_end_is_recorded_by_a_later_epilog),
		T(test_a_kept_end_never_ends_a_later_attempt),
		T(test_a_kept_end_stays_while_the_ledger_fails),
		T(test_an_end_is_kept_by_the_claimed_note_when_the_record_is_unreadable),
		T(test_a_failing_store_keeps_every_end_for_a_later_epilog),
	};
	return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}
