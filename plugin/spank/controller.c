/*
 * controller.c - what the glue asks the controller, through squeue and
 * scontrol run with the callback's deadline (plugin/slurm/scontrol.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"

#include "glue.h"

/*
 * Nothing here calls libslurm: on 24.11+ an RPC from the prolog or epilog
 * process is fatal there (libslurm is not initialised in it), and libslurm's
 * RPCs have no deadline. squeue and scontrol run as children instead, killed
 * at the callback's deadline (docs/slurm-facts.md, "Asking the controller").
 */
static rb_deadline callback_deadline;

/* Every callback that may ask the controller starts its clock here. */
void start_clock(void)
{
	callback_deadline = rb_deadline_in(RB_CALLBACK_DEADLINE_MS);
}

static rb_controller controller(void)
{
	rb_controller c = { slurm_bindir, getenv("SLURM_CONF"),
			    callback_deadline };

	return c;
}

/* How the controller's commands and the log name the job: "A_T" for an
 * array task (docs/arrays.md). */
static const char *addr(const rb_job_ref *job, char *buf)
{
	return rb_job_addr(job->job_id, job->array_job_id, job->array_task_id,
			   buf);
}

/* What squeue says of the job: 0, or -1 (logged: its `what` is unknown). */
static int ask_job(const rb_job_ref *job, const char *what, rb_ctl_job *info)
{
	rb_controller c = controller();
	char a[RB_JOB_ADDR_MAX];
	rb_err err;

	if (rb_controller_job(&c, job, info, &err) == 0)
		return 0;
	rb_log(RB_LOG_INFO, "job %s: %s unknown: %s", addr(job, a), what,
	       err.msg);
	return -1;
}

/* The job's account: the prolog's environment has SLURM_JOB_ACCOUNT when
 * the job has one; ask the controller only when it lacks it and the config
 * has accounts to match. */
void controller_account(const rb_job_ref *job, char *buf, size_t len)
{
	rb_ctl_job info;

	buf[0] = '\0';
	if (ask_job(job, "account", &info) == 0)
		rb_strlcpy(buf, info.account, len);
}

/* Preempted, or requeued by someone (scontrol requeue)? For the event log.
 * ctx points at the job's rb_job_ref (an rb_detail_fn). */
const char *controller_interruption(void *ctx)
{
	rb_ctl_job info;

	if (ask_job(ctx, "interruption cause", &info) < 0 ||
	    !info.have_preempt)
		return NULL;
	return info.preempted ? "preempted" : "requeued";
}

/*
 * The reason of a refusal or hold, as the line "restore_budget: <kind>:
 * <reason>" of the job's AdminComment, where `scontrol show job` and, with
 * accounting storage, `sacct -o AdminComment` show it (docs/rule.md, "Where
 * the reason shows"). The rest of the comment is the site's and is kept:
 * it is read first, and if it cannot be read in time nothing is written
 * (never overwrite what could not be seen). An array task's comment is its
 * own: read and written by its address, never the array's (docs/arrays.md).
 */
void controller_note_reason(const rb_job_ref *job, const char *kind,
			    const char *reason)
{
	char old[RB_ADMIN_COMMENT_MAX + 1], merged[RB_ADMIN_COMMENT_MAX + 1];
	char line[RB_ADMIN_LINE_MAX + 1], a[RB_JOB_ADDR_MAX];
	rb_controller c = controller();
	rb_err err;

	addr(job, a);
	if (rb_controller_admin_comment(&c, job, old, sizeof(old), &err) < 0) {
		rb_log(RB_LOG_INFO, "job %s: AdminComment not read, so not set: %s",
		       a, err.msg);
		return;
	}
	rb_admin_comment_line(kind, reason, line, sizeof(line));
	if (rb_admin_comment_merge(old, line, merged, sizeof(merged)) < 0) {
		rb_log(RB_LOG_INFO, "job %s: AdminComment left as it is: with the reason it would exceed %d bytes",
		       a, RB_ADMIN_COMMENT_MAX);
		return;
	}
	if (strcmp(merged, old) == 0)
		return;
	if (rb_controller_comment(&c, job, merged, &err) < 0)
		rb_log(RB_LOG_INFO, "job %s: cannot set AdminComment: %s", a,
		       err.msg);
}

/*
 * on_exhausted = "hold": rather than run an exhausted attempt only to refuse
 * it, the batch step that refuses it requeues the job held (as `scontrol
 * requeuehold` does) with the reason in its AdminComment (merged into the
 * site's text, controller_note_reason), so an admin can
 * `restore-budget grant` and `scontrol release` it. (An epilog cannot do it
 * for a RequeueExit: the job is still COMPLETING then and the controller
 * refuses the update; verified on 22.05.) The refused attempt is never
 * charged, so the released job's next attempt runs on the granted budget.
 * If the controller cannot be reached in time, the attempt is refused in
 * task_init instead, as with on_exhausted = "fail". An array task is held
 * alone, by its address: `scontrol requeuehold <array id>` would hold every
 * task of the array (docs/arrays.md).
 */
void hold_exhausted(const rb_job_ref *job, const char *reason)
{
	rb_controller c = controller();
	char a[RB_JOB_ADDR_MAX];
	rb_ctl_job info;
	rb_err err;

	addr(job, a);
	/* The address must name this job alone: squeue shows its one line
	 * (had the batch step not learnt an array task's ids, its bare id
	 * would be refused here rather than hold every task). */
	if (rb_controller_job(&c, job, &info, &err) < 0)
		goto refuse;
	controller_note_reason(job, "held", reason);
	if (rb_controller_requeue_hold(&c, job, &err) < 0)
		goto refuse;
	rb_log(RB_LOG_WARNING, "job %s held: %s; 'restore-budget grant %s --failures N' then 'scontrol release %s'",
	       a, reason, a, a);
	return;
refuse:
	rb_log(RB_LOG_ERROR, "job %s: requeue-hold failed (%s); the attempt is refused instead",
	       a, err.msg);
	controller_note_reason(job, "refused", reason);
}

static int comment_read(void *ctx, char *out, size_t len, rb_err *err)
{
	controller_job *cj = ctx;
	rb_controller c = controller();

	return rb_controller_budget_read(&c, &cj->job, &cj->info, out, len,
					 err);
}

static int comment_write(void *ctx, const char *comment, rb_err *err)
{
	controller_job *cj = ctx;
	rb_controller c = controller();

	return rb_controller_comment(&c, &cj->job, comment, err);
}

rb_comment_io controller_comment_io(controller_job *cj)
{
	rb_comment_io io = { comment_read, comment_write, cj };

	return io;
}

/* The job's restart count according to the controller, or -1. */
int64_t controller_restart_count(const rb_job_ref *job)
{
	rb_ctl_job info;

	if (ask_job(job, "restart count", &info) < 0 || !info.have_restarts)
		return -1;
	return info.restarts;
}
