/*
 * cli_admin.c - the root-only commands: `grant` and `gc`.
 *
 * Both change the ledger, so both go through the core's locked paths
 * (rb_lifecycle_grant; rb_ledger_lock + rb_ledger_remove).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle/lifecycle.h"

static int need_root(const char *what)
{
	if (geteuid() == 0)
		return CLI_OK;
	cli_error("%s changes the ledger and needs root (run it with sudo)",
		  what);
	return CLI_EPERM;
}

/* --- grant --------------------------------------------------------------------- */

/* What the grant left: the new budget, and what to do if it was refused. */
static int grant_report(uint32_t job_id, int granted_before,
			const rb_record *rec)
{
	const rb_budget *b = &rec->budget;
	bool exhausted_now = rb_engine_is_exhausted(b, &b->cur.limits);
	char fm[48], left[32], addr[RB_JOB_ADDR_MAX], who[RB_JOB_ADDR_MAX + 32];

	cli_format_fm(b, &b->cur.limits, fm, sizeof(fm));
	cli_format_left(b, left, sizeof(left));
	/* a task is addressed as A_T: Slurm applies a bare array id to
	 * every task of the array */
	cli_rec_addr(rec, addr);
	if (rec->array_job_id != 0)
		snprintf(who, sizeof(who), "job %" PRIu32 " (array task %s)",
			 job_id, addr);
	else
		snprintf(who, sizeof(who), "job %" PRIu32, job_id);
	printf("%s: granted %d -> %d; failures F/M %s, restores_left %s, "
	       "exhausted %s\n", who, granted_before, b->granted, fm, left,
	       exhausted_now ? "yes" : "no");
	if (b->exhausted && !exhausted_now)
		printf("%s: attempt %" PRId64 " was refused; requeue the job "
		       "(scontrol requeue %s), or release it if on_exhausted = "
		       "\"hold\" held it (scontrol release %s), to run it with "
		       "the new budget\n", who, b->cur.attempt, addr, addr);
	return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
}

/* The one job ref names: a job, or one array task (a grant is per task:
 * each task has its own budget). CLI_OK with *job_id, or the error. */
static int grant_target(cli_ctx *ctx, const rb_job_arg *ref, uint32_t *job_id)
{
	cli_target t;
	int rc = cli_resolve(ctx, ref, false, &t);

	if (rc == CLI_ENOTFOUND) {
		rc = cli_not_found(ctx, ref);
	} else if (rc == CLI_OK && t.array) {
		cli_error("%" PRIu32 " is job array %" PRIu32 " (%zu task%s with a "
			  "record): each task has its own budget; grant one "
			  "task, e.g. %" PRIu32 "_%" PRIu32, ref->id, ref->id, t.n,
			  t.n == 1 ? "" : "s", ref->id, t.tasks[0].task_id);
		rc = CLI_EUSAGE;
	} else if (rc == CLI_OK) {
		*job_id = t.tasks[0].job_id;
	}
	cli_target_free(&t);
	return rc;
}

int cli_cmd_grant(cli_ctx *ctx, const rb_job_arg *ref, int failures)
{
	rb_record *rec = NULL;
	char by[RB_NAME_MAX];
	uint32_t job_id = 0;
	rb_err err;
	int rc, granted_before;

	rc = need_root("grant");
	/* Look first: locking a job that has no record would create its
	 * event log. */
	if (rc == CLI_OK)
		rc = grant_target(ctx, ref, &job_id);
	if (rc == CLI_OK)
		rc = cli_read_job(ctx, job_id, &rec);
	if (rc != CLI_OK)
		return rc;
	granted_before = rec->budget.granted;
	cli_invoking_user(by, sizeof(by));
	if (rb_lifecycle_grant(ctx->cfg, ctx->cluster, job_id, failures, by,
			       &err) < 0) {
		cli_error("job %" PRIu32 ": %s", job_id, err.msg);
		rc = CLI_EDATA;
	} else if (rb_lifecycle_read(ctx->cfg, ctx->cluster, job_id, rec,
				     &err) != 0) {
		cli_error("job %" PRIu32 ": granted, but cannot read it back: %s",
			  job_id, err.msg);
		rc = CLI_EDATA;
	} else {
		rc = grant_report(job_id, granted_before, rec);
	}
	free(rec);
	return rc;
}

/* --- gc ----------------------------------------------------------------------------- */

typedef struct {
	rb_ledger *ledger;
	rb_record *rec;
	int64_t cutoff;
	bool dry_run, force;
	size_t seen, removed, kept_running, corrupt, failed;
} gc_state;

/* Is the record one gc may remove now? Prints why not when it matters. */
static bool gc_eligible(gc_state *st, const rb_record *rec)
{
	const rb_attempt *a = &rec->budget.cur;

	if (rec->updated >= st->cutoff)
		return false;
	/* A current attempt with no end on record may still be running (a
	 * long job updates its record only at its start): removing its
	 * record would give it a fresh budget at its next requeue. */
	if (!st->force && a->attempt >= 0 && a->end == RB_END_NONE &&
	    !a->refused) {
		st->kept_running++;
		printf("kept job %" PRIu32 ": attempt %" PRId64 " has no end "
		       "on record (running, or its node died; --force removes "
		       "it)\n", rec->job_id, a->attempt);
		return false;
	}
	return true;
}

static void gc_report(const char *verb, const rb_record *rec)
{
	char when[32], user[RB_NAME_MAX * 3], task[RB_JOB_ADDR_MAX + 16] = "";
	char addr[RB_JOB_ADDR_MAX];

	cli_format_time(rec->updated, when, sizeof(when));
	if (rec->array_job_id != 0)
		snprintf(task, sizeof(task), "array task %s, ",
			 cli_rec_addr(rec, addr));
	printf("%s job %" PRIu32 " (%suser %s, state %s, updated %s)\n", verb,
	       rec->job_id, task, cli_safe(rec->user[0] ? rec->user : "?", user,
					   sizeof(user)),
	       cli_job_state(rec), when);
}

static int gc_job(uint32_t job_id, void *vctx)
{
	gc_state *st = vctx;
	rb_job *job = NULL;
	rb_err err;
	int rc;

	st->seen++;
	rc = rb_ledger_read(st->ledger, job_id, st->rec, &err);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		/* never removed: an admin should look at it first */
		st->corrupt++;
		cli_error("job %" PRIu32 ": %s (kept)", job_id, err.msg);
		return 0;
	}
	if (!gc_eligible(st, st->rec))
		return 0;
	if (st->dry_run) {
		st->removed++;
		gc_report("would remove", st->rec);
		return 0;
	}
	if (rb_ledger_lock(st->ledger, job_id, &job, &err) < 0) {
		st->failed++;
		cli_error("job %" PRIu32 ": %s", job_id, err.msg);
		return 0;
	}
	/* Under the lock: the record may have changed since we looked. */
	rc = rb_ledger_read(st->ledger, job_id, st->rec, &err);
	if (rc == 0 && gc_eligible(st, st->rec)) {
		if (rb_ledger_remove(job, &err) < 0) {
			st->failed++;
			cli_error("job %" PRIu32 ": %s", job_id, err.msg);
		} else {
			st->removed++;
			gc_report("removed", st->rec);
		}
	} else if (rc < 0) {
		st->corrupt++;
		cli_error("job %" PRIu32 ": %s (kept)", job_id, err.msg);
	}
	rb_ledger_unlock(job);
	return 0;
}

int cli_cmd_gc(cli_ctx *ctx, long long days, bool dry_run, bool force)
{
	gc_state st = { .dry_run = dry_run, .force = force };
	rb_err err;
	int r, rc;

	rc = need_root("gc");
	if (rc != CLI_OK)
		return rc;
	st.cutoff = (int64_t)time(NULL) - (int64_t)days * 86400;
	r = cli_open_scan(ctx, dry_run ? RB_LEDGER_READ : RB_LEDGER_WRITE,
			  &st.ledger, &st.rec);
	if (r < 0)
		return CLI_EDATA;
	rc = CLI_OK;
	if (r == 0 && rb_ledger_jobs(st.ledger, gc_job, &st, &err) < 0) {
		cli_error("%s", err.msg);
		rc = CLI_EDATA;
	}
	rb_ledger_close(st.ledger);
	free(st.rec);
	printf("gc: %s %zu of %zu record%s not updated for %lld day%s",
	       dry_run ? "would remove" : "removed", st.removed, st.seen,
	       st.seen == 1 ? "" : "s", days, days == 1 ? "" : "s");
	if (st.kept_running)
		printf("; kept %zu with an attempt in progress",
		       st.kept_running);
	if (st.corrupt)
		printf("; kept %zu unreadable", st.corrupt);
	printf("\n");
	if (st.corrupt || st.failed)
		rc = CLI_EDATA;
	if (fflush(stdout) != 0)
		rc = CLI_EDATA;
	return rc;
}
