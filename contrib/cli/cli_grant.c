/*
 * cli_grant.c - `restore-budget grant JOB --failures N` (root): more budget
 * for one job or one array task, through the same locked path the plugin
 * uses (rb_lifecycle_grant; docs/rule.md, "Grants").
 */
#include "cli.h"

#include <stdio.h>

#include "lifecycle/lifecycle.h"

/* What the grant left: the new budget, and what to do if it was refused. */
int cli_grant_report(uint32_t job_id, int granted_before,
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

	rc = cli_need_root("grant");
	if (rc == CLI_OK && ctx->cfg->store == RB_STORE_CONTROLLER)
		return cli_ctl_grant(ctx, ref, failures);
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
		rc = cli_grant_report(job_id, granted_before, rec);
	}
	free(rec);
	return rc;
}

