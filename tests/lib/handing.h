/*
 * handing.h - the tests' "attempt n was handed this checkpoint" as a write
 * of its own after the attempt's start, on the shared-directory ledger of
 * cfg->state_dir: the batch step's one write (rb_lifecycle_begin) for an
 * attempt already on record. Header only, for the unit, reliability, fuzz,
 * bench and CLI test drivers that record a start and its handing apart.
 */
#ifndef RB_TEST_HANDING_H
#define RB_TEST_HANDING_H

#include "lifecycle/lifecycle.h"

/* The batch step's one write on the ledger of cfg->state_dir: the start of
 * job->attempt, then the handing of `handed` in `phase`, chosen on the
 * record as it is now. 0 or -1. */
static inline int rbt_begin(const rb_config *cfg, const rb_job_info *job,
			    rb_phase phase, const rb_handed *handed,
			    rb_start_result *out, rb_err *err)
{
	static rb_record rec; /* 25 KB, off the stack */
	rb_handout h = { job->attempt, phase, *handed, 0 };
	rb_store_dir d;
	rb_store *st = rb_store_dir_init(&d, cfg->state_dir, job->cluster);

	/* as the glue does: no "record changed" warning */
	if (st->ops->load(st, job->job_id, &rec, err) == 0)
		h.seq = rec.seq;
	return rb_lifecycle_begin(st, cfg, job->job_id, job, &h, out, &rec,
				  err);
}

/* The handing alone, of attempt `attempt`: 0 recorded (or this handing was
 * on record), -1 not (err: no record, the attempt is not the one recorded
 * or has ended, or the store failed). */
static inline int rbt_hand(const rb_config *cfg, const char *cluster,
			   uint32_t job_id, int64_t attempt, rb_phase phase,
			   const rb_handed *handed, rb_err *err)
{
	static rb_record rec; /* 25 KB, off the stack */
	rb_handout h = { attempt, phase, *handed, 0 };
	rb_start_result out;
	rb_store_dir d;
	rb_store *st = rb_store_dir_init(&d, cfg->state_dir, cluster);

	/* chosen on the record as it is now: no "record changed" warning */
	if (st->ops->load(st, job_id, &rec, err) == 0)
		h.seq = rec.seq;
	if (rb_lifecycle_begin(st, cfg, job_id, NULL, &h, &out, &rec, err) < 0)
		return -1;
	if (out.report_err[0])
		return rb_err_set(err, "%s", out.report_err);
	return 0;
}

/* The same, handing out a checkpoint alone (no fallback). */
static inline int rbt_report(const rb_config *cfg, const char *cluster,
			     uint32_t job_id, int64_t attempt, rb_phase phase,
			     const char *checkpoint, rb_err *err)
{
	rb_handed h = { .checkpoint = checkpoint };

	return rbt_hand(cfg, cluster, job_id, attempt, phase, &h, err);
}

#endif
