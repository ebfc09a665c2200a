/*
 * lifecycle.h - a job's life events applied to its ledger record.
 *
 * Each function is one read-modify-write under the job's lock: read the
 * record, apply the engine, write the record atomically, append an event
 * line. The SPANK glue only gathers the inputs (from Slurm) and calls these;
 * everything here runs without Slurm, so the unit tests and benchmarks drive
 * the same code the plugin runs.
 */
#ifndef RB_LIFECYCLE_H
#define RB_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "base/base.h"
#include "rule/rule.h"
#include "store/store.h"

/* What the prolog decided. */
typedef struct {
	rb_decision decision;
	rb_limits limits;
	rb_charge charge;
	bool duplicate;            /* this attempt had already started */
	char reason[RB_REASON_MAX];
	char warnings[RB_ERR_MAX]; /* clamps of job options, for the job's stderr */
} rb_start_result;

/* Batch step (root, from the prolog's note): charge the previous attempt
 * and record attempt n (idempotent). *rec (if not NULL) is the record as
 * written (as found for an attempt already recorded): the batch step
 * exports it, so nothing is read twice. */
int rb_lifecycle_start(const rb_config *cfg, const rb_job_info *job,
		       rb_start_result *out, rb_record *rec, rb_err *err);

/* Batch step (root): attempt n was handed `checkpoint` and starts in `phase`. */
int rb_lifecycle_report(const rb_config *cfg, const char *cluster,
			uint32_t job_id, int64_t attempt, rb_phase phase,
			const char *checkpoint, rb_err *err);

/* The same, with what fallback adds (docs/rule.md, "Checkpoint
 * fallback"): the checkpoint's identity and the bad newest it replaces. */
int rb_lifecycle_report_handed(const rb_config *cfg, const char *cluster,
			       uint32_t job_id, int64_t attempt,
			       rb_phase phase, const rb_handed *h,
			       rb_err *err);

/*
 * Epilog: how did the recorded attempt end? The job's restart count is now
 * `restart_count`; a count above the recorded attempt means the controller
 * requeued it while it ran (INTERRUPTED); otherwise exit_code/signal (from
 * SLURM_JOB_EXIT_CODE2) say FAILED (non-zero, or a signal) or COMPLETED.
 * detail (may be NULL): what the controller says of an interruption
 * ("preempted", "requeued"), kept in the event log only.
 */
int rb_lifecycle_epilog(const rb_config *cfg, const char *cluster,
			uint32_t job_id, int64_t restart_count, int exit_code,
			int signal, const char *detail, int64_t now,
			rb_err *err);

/* The same, with the detail fetched by fn(ctx) only when the end recorded is
 * an interruption (the glue asks the controller: worth it only then). */
typedef const char *(*rb_detail_fn)(void *ctx);
int rb_lifecycle_epilog_fn(const rb_config *cfg, const char *cluster,
			   uint32_t job_id, int64_t restart_count,
			   int exit_code, int signal, rb_detail_fn fn,
			   void *ctx, int64_t now, rb_err *err);

/* Admin: give a job n more failures of budget (recorded in the event log). */
int rb_lifecycle_grant(const rb_config *cfg, const char *cluster,
		       uint32_t job_id, int n, const char *by, rb_err *err);

/* Read a job's record without the lock: 0, 1 = none, -1 = error. */
int rb_lifecycle_read(const rb_config *cfg, const char *cluster,
		      uint32_t job_id, rb_record *rec, rb_err *err);

#endif
