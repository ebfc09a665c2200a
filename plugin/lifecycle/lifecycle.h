/*
 * lifecycle.h - a job's life events applied to its record, through the
 * store seam (store/seam.h; docs/architecture.md, "The store seam").
 *
 * Each event is one apply of the store: read the record, apply the rule,
 * save the record, then its event lines; replayed, it changes nothing.
 * The *_in functions and rb_lifecycle_begin take the store; the others
 * work on the shared-directory ledger of cfg->state_dir. The SPANK glue
 * only gathers the inputs (from Slurm) and calls these; everything here
 * runs without Slurm, so the unit tests and benchmarks drive the same code
 * the plugin runs.
 */
#ifndef RB_LIFECYCLE_H
#define RB_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "base/base.h"
#include "rule/rule.h"
#include "store/store.h"

/* What the batch step's start decided. */
typedef struct {
	rb_decision decision;
	rb_limits limits;
	rb_charge charge;
	bool duplicate;            /* this attempt had already started */
	char reason[RB_REASON_MAX];
	char warnings[RB_ERR_MAX]; /* clamps of job options, for the job's stderr */
	/* rb_lifecycle_begin: why the handing was not recorded ("" = it was) */
	char report_err[RB_ERR_MAX];
} rb_start_result;

/* What the batch step hands attempt `attempt`. */
typedef struct {
	int64_t attempt;
	rb_phase phase;
	rb_handed handed;  /* the checkpoint, its identity, the bad one skipped */
	uint64_t seq;      /* the record's seq it was chosen on (0: none) */
} rb_handout;

/* The start alone, on the ledger of cfg->state_dir (tests: the batch step
 * records it with its handing, rb_lifecycle_begin): charge the previous
 * attempt and record attempt n (idempotent). *rec (if not NULL) is the
 * record as written (as found for an attempt already recorded). */
int rb_lifecycle_start(const rb_config *cfg, const rb_job_info *job,
		       rb_start_result *out, rb_record *rec, rb_err *err);

/* What the start would make of rec (found: the store held it),
 * in memory: the batch step chooses the checkpoint on it, as the job's
 * user, before its one write. */
void rb_lifecycle_preview(const rb_config *cfg, const rb_job_info *job,
			  bool found, rb_start_result *out, rb_record *rec);

/*
 * The batch step's one write (root): the start of job->attempt (job NULL:
 * it had started), then what it was handed (h, chosen on the preview).
 * *rec is the record as saved. A handing that cannot be recorded (the
 * attempt ended) leaves the start recorded and says why in
 * out->report_err. Replayed, it changes nothing.
 */
int rb_lifecycle_begin(rb_store *st, const rb_config *cfg, uint32_t job_id,
		       const rb_job_info *job, const rb_handout *h,
		       rb_start_result *out, rb_record *rec, rb_err *err);

/* The epilog's inputs, for rb_lifecycle_end_in. detail_fn(detail_ctx):
 * what the controller says of an interruption ("preempted", "requeued"),
 * kept in the event log only, fetched only when the end recorded is an
 * interruption (the glue asks the controller: worth it only then). */
typedef const char *(*rb_detail_fn)(void *ctx);
typedef struct {
	int64_t restart_count;
	int exit_code, signal;
	rb_detail_fn detail_fn;    /* may be NULL */
	void *detail_ctx;
	int64_t now;
} rb_end_info;

/*
 * Epilog: how did the recorded attempt end? The job's restart count is now
 * `restart_count`; a count above the recorded attempt means the controller
 * requeued it while it ran (INTERRUPTED); otherwise exit_code/signal (from
 * SLURM_JOB_EXIT_CODE2) say FAILED (non-zero, or a signal) or COMPLETED.
 */
int rb_lifecycle_end_in(rb_store *st, uint32_t job_id, const rb_end_info *end,
			rb_err *err);

/* The same on the ledger of cfg->state_dir, with a fixed detail (may be
 * NULL; tests). */
int rb_lifecycle_epilog(const rb_config *cfg, const char *cluster,
			uint32_t job_id, int64_t restart_count, int exit_code,
			int signal, const char *detail, int64_t now,
			rb_err *err);

/* The node a root callback runs on, for the ends kept there. */
typedef struct {
	const char *run_dir, *host, *cluster;
	int64_t now;        /* unix seconds, to age kept ends */
} rb_node;

/* Epilog, its end not recorded: keep it on this node for the attempt on
 * record (read without the lock). 0 kept (or that attempt has an end),
 * -1 not kept (err: the record cannot be read, or run_dir). */
int rb_lifecycle_keep_end(rb_store *st, const rb_node *node,
			  uint32_t job_id, const rb_end_info *end, rb_err *err);

/* The ends kept on this node recorded where they can be: job_id's (not 0)
 * or every one (at most RB_KEPT_ENDS_MAX a call). One is dropped once
 * recorded or past (its attempt is no longer the one on record); it is
 * kept while the store fails or has no record (an unmounted state_dir),
 * for at most RB_KEPT_END_MAX_AGE seconds. How many were recorded. */
#define RB_KEPT_ENDS_MAX 16
#define RB_KEPT_END_MAX_AGE (INT64_C(7) * 86400)
int rb_lifecycle_carry_ends(rb_store *st, const rb_node *node,
			    uint32_t job_id);

/* Admin: give a job n more failures of budget (recorded in the event log). */
int rb_lifecycle_grant(const rb_config *cfg, const char *cluster,
		       uint32_t job_id, int n, const char *by, rb_err *err);
int rb_lifecycle_grant_in(rb_store *st, uint32_t job_id, int n,
			  const char *by, rb_err *err);

/* Read a job's record without the lock: 0, 1 = none, -1 = error. */
int rb_lifecycle_read(const rb_config *cfg, const char *cluster,
		      uint32_t job_id, rb_record *rec, rb_err *err);

#endif
