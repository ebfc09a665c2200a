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

#include "child.h"
#include "base/base.h"
#include "rule/rule.h"

#define RB_SLURM_BINDIR_DEFAULT "/usr/bin"

/* How to reach the controller from this process. */
typedef struct {
	const char *bindir;     /* where squeue and scontrol are */
	const char *slurm_conf; /* SLURM_CONF for it, or NULL */
	rb_deadline deadline;   /* the whole callback's deadline */
} rb_controller;

/*
 * One job as the controller is asked about it and acted on (docs/arrays.md):
 * an array task always by "<array_job_id>_<task_id>" (rb_job_addr), never
 * by a bare id: Slurm applies a bare array id to every task of the array,
 * and the last task to start keeps the array's own id as its job id.
 */
typedef struct {
	uint32_t job_id;        /* the job's own id (SLURM_JOB_ID) */
	uint32_t array_job_id;  /* an array task's array id, else 0 */
	uint32_t array_task_id; /* its task id (0 when not a task) */
} rb_job_ref;

/* A ref from what Slurm said (SPANK items or the environment): an array id
 * of 0 or NO_VAL (0xfffffffe), or a task id of NO_VAL, is no array task. */
rb_job_ref rb_job_ref_of(uint32_t job_id, uint32_t array_job_id,
			 uint32_t array_task_id);

/* What squeue says of a job; a field it did not say is left unknown. */
typedef struct {
	bool have_restarts;
	int64_t restarts;
	bool have_preempt;
	bool preempted;          /* PreemptTime is not None */
	char account[RB_NAME_MAX];
	char state[16];          /* StateCompact ("R", "CG", "PD"...), or "" */
	int64_t submit_time;     /* unix seconds (a requeue sets it), 0: unknown */
} rb_ctl_job;

/* Parse `squeue --noheader --Format=JobID:0|,JobArrayID:0|,RestartCnt:0|,
 * PreemptTime:0|,Account:0|` output: the one line of job `job` (its
 * JobID and JobArrayID: rb_squeue_head), whatever other lines there are.
 * 0, or -1 if there is no such line, or two. Pure: no Slurm needed
 * (tests/unit/test_controller.c). */
int rb_squeue_parse_job(const char *text, const rb_job_ref *job,
			rb_ctl_job *out);

/* Ask about job `job` (squeue --jobs <its address>): 0, or -1 with err
 * set. */
int rb_controller_job(const rb_controller *c, const rb_job_ref *job,
		      rb_ctl_job *out, rb_err *err);

/* The job's AdminComment as it is now ("" if none) into out (len bytes,
 * at least RB_ADMIN_COMMENT_MAX + 1). 0, or -1 with err set (also when it
 * is too long to be read whole, or squeue listed other jobs with it: it
 * must not be written back cut). */
int rb_controller_admin_comment(const rb_controller *c, const rb_job_ref *job,
				char *out, size_t len, rb_err *err);

/* store = "controller": the job's AdminComment (as above) and, from the
 * same squeue, its restart count and state (out->restarts, out->state):
 * one question a callback. 0, or -1 with err set. */
int rb_controller_budget_read(const rb_controller *c, const rb_job_ref *job,
			      rb_ctl_job *info, char *out, size_t len,
			      rb_err *err);
/* Split "RestartCnt|StateCompact|SubmitTime|comment" (what rb_admin_comment_parse
 * leaves of the line above) into info and out ("(null)": ""). 0 or -1.
 * Pure (tests/unit/test_controller.c). */
int rb_budget_read_split(const char *text, rb_ctl_job *info, char *out,
			 size_t len);

/* Set the job's AdminComment to `comment` (replacing it; see
 * admin_comment.h for keeping the site's text). 0 or -1. */
int rb_controller_comment(const rb_controller *c, const rb_job_ref *job,
			  const char *comment, rb_err *err);

/* Requeue the job held (scontrol requeuehold). 0 or -1. */
int rb_controller_requeue_hold(const rb_controller *c, const rb_job_ref *job,
			       rb_err *err);

#endif
