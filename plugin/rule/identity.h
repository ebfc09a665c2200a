/*
 * identity.h - which submission a job is, across its requeues.
 *
 * Slurm reuses job ids (a controller that lost its state, MaxJobId
 * wrapping), and nothing Slurm puts in the prolog's environment before
 * 26.05 tells two jobs with one id apart (submit_time is rewritten on every
 * requeue). So sbatch, where the plugin is loaded, gives each submission a
 * random identity through spank_job_control_setenv; Slurm keeps it with the
 * job and hands it to every prolog, epilog and batch step of every attempt.
 * 26.05's SLURM_JOB_SLUID is used where that is missing. Both come from the
 * submitter's side, so they only ever tell a user's own jobs apart: the
 * record's uid does the rest (docs/security.md, "Job identity").
 */
#ifndef RB_IDENTITY_H
#define RB_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* The job control variable sbatch sets; the prolog and epilog see it as
 * SPANK_<name>, the job as SLURM_SPANK_<name>. */
#define RB_SUBMISSION_VAR "RESTORE_BUDGET_SUBMISSION"

/* A new identity, "rb1:" and 32 hex digits of getrandom(). 0, or -1. */
int rb_submission_new(char *buf, size_t len);

/*
 * The job's identity from what its context shows: the plugin's own (nonce,
 * from sbatch) if well formed, else "sluid:" + Slurm's SLUID, else none.
 * Returns buf, or NULL (buf empty) when there is none.
 */
const char *rb_submission_of(const char *nonce, const char *sluid, char *buf,
			     size_t len);

/*
 * Is rec (the ledger's record for this job id) another job's? Yes when its
 * uid differs; when attempt is below the recorded one, or equal to it once
 * that attempt ended (the same job never runs an attempt again, and never
 * goes back: its attempts only grow, docs/security.md "Job identity"); or
 * when both it and the job carry a submission identity and they differ.
 * attempt INT64_MAX (the batch step, which cannot see it) leaves uid and
 * identity. *why names the evidence.
 */
bool rb_record_names_another_job(const rb_record *rec, uint32_t uid,
				 const char *submission, int64_t attempt,
				 const char **why);

#endif
