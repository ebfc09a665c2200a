/*
 * scontrol.h - what the plugin asks the controller, through Slurm's own
 * commands (squeue to read, scontrol to act).
 *
 * Every question has a deadline (child.h): a stopped controller answers
 * "connection refused" at once, a frozen one is cut off at the deadline, and
 * either way the caller gets -1 and degrades as docs/slurm-facts.md says
 * ("Asking the controller"). No libslurm function is called in-process.
 */
#ifndef RB_SCONTROL_H
#define RB_SCONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin_comment.h"
#include "child.h"
#include "diag.h"
#include "record.h"

#define RB_SLURM_BINDIR_DEFAULT "/usr/bin"

/* How to reach the controller from this process. */
typedef struct {
	const char *bindir;     /* where squeue and scontrol are */
	const char *slurm_conf; /* SLURM_CONF for it, or NULL */
	rb_deadline deadline;   /* the whole callback's deadline */
} rb_controller;

/* What squeue says of a job; a field it did not say is left unknown. */
typedef struct {
	bool have_restarts;
	int64_t restarts;
	bool have_preempt;
	bool preempted;          /* PreemptTime is not None */
	char account[RB_NAME_MAX];
} rb_ctl_job;

/* Parse `squeue --noheader --Format=JobID:0|,RestartCnt:0|,PreemptTime:0|,
 * Account:0|` output for one job. 0, or -1 if it is not job job_id's line.
 * Pure: no Slurm needed (tests/unit/test_controller.c). */
int rb_squeue_parse_job(const char *text, uint32_t job_id, rb_ctl_job *out);

/* Ask for job job_id: 0, or -1 with err set. */
int rb_controller_job(const rb_controller *c, uint32_t job_id,
		      rb_ctl_job *out, rb_err *err);

/* The job's AdminComment as it is now ("" if none) into out (len bytes,
 * at least RB_ADMIN_COMMENT_MAX + 1). 0, or -1 with err set (also when it
 * is too long to be read whole: it must not be written back cut). */
int rb_controller_admin_comment(const rb_controller *c, uint32_t job_id,
				char *out, size_t len, rb_err *err);

/* Set the job's AdminComment to `comment` (replacing it; see
 * admin_comment.h for keeping the site's text). 0 or -1. */
int rb_controller_comment(const rb_controller *c, uint32_t job_id,
			  const char *comment, rb_err *err);

/* Requeue the job held (scontrol requeuehold). 0 or -1. */
int rb_controller_requeue_hold(const rb_controller *c, uint32_t job_id,
			       rb_err *err);

#endif
