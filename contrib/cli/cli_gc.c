/*
 * cli_gc.c - `restore-budget gc` (root): remove the records and logs of
 * jobs that ended long ago, each under its job's lock (rb_ledger_lock +
 * rb_ledger_remove).
 */
#include "cli.h"

#include <stdio.h>
#include <time.h>

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
	char why[RB_ERR_MAX];

	if (!st->force && a->attempt >= 0 && a->end == RB_END_NONE &&
	    !a->refused && cli_slurm_lists_job(rec, why, sizeof(why)) == 0) {
		/* Slurm no longer lists it: it ended, its end was lost
		 * (docs/architecture.md, "An end not written") */
		printf("job %" PRIu32 ": attempt %" PRId64 " has no end on "
		       "record, and Slurm no longer lists the job: it ended\n",
		       rec->job_id, a->attempt);
		return true;
	}
	if (!st->force && a->attempt >= 0 && a->end == RB_END_NONE &&
	    !a->refused) {
		st->kept_running++;
		printf("kept job %" PRIu32 ": attempt %" PRId64 " has no end "
		       "on record (running, or Slurm did not answer; --force "
		       "removes it)\n", rec->job_id, a->attempt);
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
	int only = cli_ctl_gc(ctx);

	if (only >= 0)
		return only;

	rc = cli_need_root("gc");
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
