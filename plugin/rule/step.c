/*
 * step.c - the batch step's words and numbers (step.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "user/user.h"
#include "base/base.h"
#include "step.h"

static void set_str(rb_step_var *v, const char *name, bool of_record,
		    const char *value)
{
	v->name = name;
	v->of_record = of_record;
	v->set = rb_strlcpy(v->value, value, sizeof(v->value)) == 0;
}

static void set_int(rb_step_var *v, const char *name, int64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, value);
	set_str(v, name, true, buf);
}

/* A bound that may be unlimited (negative). */
static void set_bound(rb_step_var *v, const char *name, int64_t value)
{
	if (value < 0)
		set_str(v, name, true, "unlimited");
	else
		set_int(v, name, value);
}

/* The job's --checkpoint-dir as an absolute path (relative to its work
 * dir), or false: none given, or no absolute path to join it to. */
static bool checkpoint_dir_of(const rb_record *rec, char *buf, size_t len)
{
	const char *dir = rec->checkpoint_dir;
	int n;

	if (!dir[0] || (dir[0] != '/' && rec->work_dir[0] != '/'))
		return false;
	if (dir[0] == '/')
		n = snprintf(buf, len, "%s", dir);
	else
		n = snprintf(buf, len, "%s/%s", rec->work_dir, dir);
	return n >= 0 && (size_t)n < len;
}

void rb_step_env_of(const rb_record *rec, int64_t attempt, rb_phase phase,
		    const char *checkpoint, rb_step_env *out)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;
	rb_step_var *v;
	char buf[RB_PATH_MAX + 64];

	memset(out, 0, sizeof(*out));
	v = out->var;
	set_int(&v[0], "RESTORE_BUDGET_ATTEMPT", attempt);
	v[0].of_record = false;
	set_str(&v[1], "RESTORE_BUDGET_PHASE", true, rb_phase_name(phase));
	set_str(&v[2], "RESTORE_BUDGET_CHECKPOINT", false, checkpoint);
	set_int(&v[3], "RESTORE_BUDGET_FAILURES", b->failures);
	set_bound(&v[4], "RESTORE_BUDGET_MAX_FAILURES",
		  l->max_failures < 0 ? -1 :
					(int64_t)l->max_failures + b->granted);
	set_int(&v[5], "RESTORE_BUDGET_RESTORE_FAILURES", b->restore_failures);
	set_int(&v[6], "RESTORE_BUDGET_RESTORE_RETRY_NUM", l->restore_retry_num);
	set_bound(&v[7], "RESTORE_BUDGET_RESTORES_LEFT",
		  rb_engine_restores_left(b, l));
	rb_end_format(b->prev_end, b->prev_end_code, buf, sizeof(buf));
	set_str(&v[8], "RESTORE_BUDGET_LAST_END", true, buf);
	set_str(&v[9], "RESTORE_BUDGET_ACK_FILE", true, "");
	v[9].set = rb_ack_path(rec->work_dir, rec->checkpoint_dir,
			       rec->cluster, rec->job_id, attempt, v[9].value,
			       sizeof(v[9].value)) == 0;
	/* only when an older checkpoint was handed (docs/rule.md,
	 * "Checkpoint fallback") */
	set_str(&v[10], "RESTORE_BUDGET_FALLBACK_FROM", true,
		rec->fallback.from);
	v[10].set = v[10].set && rec->fallback.from[0];
	/* the cap as in force: plus what an admin granted (docs/rule.md,
	 * "Interruption cap") */
	set_int(&v[11], "RESTORE_BUDGET_INTERRUPTIONS", b->interruptions);
	set_bound(&v[12], "RESTORE_BUDGET_MAX_INTERRUPTIONS",
		  l->max_interruptions < 0 ? -1 :
					     (int64_t)l->max_interruptions +
						     b->granted);
	/* the config's and slurm.conf's, not the record's: set by
	 * rb_step_env_set_requeue_exit */
	set_str(&v[RB_STEP_VAR_REQUEUE_EXIT], "RESTORE_BUDGET_REQUEUE_EXIT",
		false, "");
	v[RB_STEP_VAR_REQUEUE_EXIT].set = false;
	/* where the job's own checkpoints go (its --checkpoint-dir, made
	 * absolute), so a helper saves where the plugin looks; the job's
	 * option, not the record's numbers */
	set_str(&v[14], "RESTORE_BUDGET_CHECKPOINT_DIR", false, "");
	v[14].set = checkpoint_dir_of(rec, v[14].value, sizeof(v[14].value));
}

void rb_step_env_set_requeue_exit(rb_step_env *env, int code)
{
	rb_step_var *v = &env->var[RB_STEP_VAR_REQUEUE_EXIT];

	v->set = code > 0;
	snprintf(v->value, sizeof(v->value), "%d", code > 0 ? code : 0);
}

/* The refusal of a budget spent by a fatal exit code or the interruption
 * cap, which name their own cause; false for one spent by failures. */
static bool refusal_by_cause(const rb_record *rec, int64_t attempt,
			     const char *config_path, char *buf, size_t len)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;
	char cause[128];

	switch (rb_engine_exhaustion(b, l)) {
	case RB_SPENT_FATAL:
		snprintf(cause, sizeof(cause),
			 "exit code %d is fatal (exit_rules)", b->fatal_code);
		break;
	case RB_SPENT_INTERRUPTIONS:
		snprintf(cause, sizeof(cause),
			 "interruptions %" PRId64 " > max_interruptions %" PRId64,
			 b->interruptions,
			 (int64_t)l->max_interruptions + b->granted);
		break;
	default:
		return false;
	}
	snprintf(buf, len,
		 RB_PREFIX "job %u attempt %" PRId64 " refused: %s (limits from "
		 "%s). The checkpoint %s is kept. An admin can lift it with "
		 "'restore-budget grant %u --failures N' and requeue the job.\n",
		 rec->job_id, attempt, cause, config_path,
		 b->checkpoint[0] ? b->checkpoint : "(none)", rec->job_id);
	return true;
}

void rb_step_refusal(const rb_record *rec, int64_t attempt,
		     const char *config_path, char *buf, size_t len)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;

	if (refusal_by_cause(rec, attempt, config_path, buf, len))
		return;
	snprintf(buf, len,
		 RB_PREFIX "job %u attempt %" PRId64 " refused: restore budget "
		 "exhausted: failures F=%d > max_failures M=%d (restore failures "
		 "r=%d of R=%d; limits from %s). The checkpoint %s is kept. "
		 "An admin can add budget with 'restore-budget grant %u "
		 "--failures N' and requeue the job.\n",
		 rec->job_id, attempt, b->failures,
		 l->max_failures + b->granted, b->restore_failures,
		 l->restore_retry_num, config_path,
		 b->checkpoint[0] ? b->checkpoint : "(none)", rec->job_id);
}

int64_t rb_step_catch_up_attempt(int64_t controller_count,
				 const rb_record *rec)
{
	int64_t recorded = rec->budget.cur.attempt;

	return controller_count > recorded ? controller_count : recorded + 1;
}

bool rb_step_begins_attempt(const rb_record *rec, int64_t controller_count)
{
	return rec->budget.cur.end != RB_END_NONE ||
	       controller_count > rec->budget.cur.attempt;
}
