/*
 * job_script.c - the job prolog and epilog (root, every node of the job).
 * The prolog only notes the job on its node; the epilog does ledger work
 * only on the node whose batch step claimed the note (node_note.h,
 * docs/architecture.md "Only the batch host"). Neither ever fails: a
 * failing prolog or epilog drains the node.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "rule/rule.h"
#include "store/store.h"

#include "glue.h"

/* Buffers the job's description points into. */
typedef struct {
	char ckpt_dir[RB_PATH_MAX];
	char submission[RB_SUBMISSION_MAX];
} job_text;

/* The job as the prolog's environment describes it (docs/slurm-facts.md).
 * false if this is no Slurm prolog environment. */
static bool job_from_env(rb_job_info *job, job_text *t)
{
	if (!env_u32(getenv("SLURM_JOB_ID"), &job->job_id) ||
	    !env_u32(getenv("SLURM_JOB_UID"), &job->uid) ||
	    !env_u32(getenv("SLURM_JOB_GID"), &job->gid))
		return false;
	if (!env_int64(getenv("SLURM_JOB_RESTART_COUNT"), &job->attempt))
		job->attempt = 0;
	job->cluster = cluster_name();
	job->user = env_or("SLURM_JOB_USER", "");
	job->partition = env_or("SLURM_JOB_PARTITION", NULL);
	/* a missing account is asked of the controller by the batch step
	 * alone, not by every node (batch.c) */
	job->account = env_or("SLURM_JOB_ACCOUNT", NULL);
	job->work_dir = env_or("SLURM_JOB_WORK_DIR", "");
	job->checkpoint_dir = t->ckpt_dir[0] ? t->ckpt_dir : NULL;
	job->submission = rb_submission_of(getenv("SPANK_" RB_SUBMISSION_VAR),
					   getenv("SLURM_JOB_SLUID"),
					   t->submission, sizeof(t->submission));
	job->now = time(NULL);
	return true;
}

void prolog(spank_t sp)
{
	job_text t;
	rb_job_info job = { 0 };
	rb_config *cfg;
	rb_err err;

	cfg = load_config(&err);
	if (!cfg) {
		rb_log(RB_LOG_ERROR, "prolog: %s; job %s runs untracked (on_error)",
		       err.msg, env_or("SLURM_JOB_ID", "?"));
		return;
	}
	/* store = "controller": the batch step does it all (docs/stores.md) */
	if (cfg->store == RB_STORE_CONTROLLER ||
	    !job_is_tracked(cfg, read_options(sp, &job.options, t.ckpt_dir,
					      sizeof(t.ckpt_dir))))
		goto out;
	if (!job_from_env(&job, &t)) {
		rb_log(RB_LOG_ERROR, "prolog: SLURM_JOB_ID/UID/GID missing; job untracked");
		goto out;
	}
	/* Without the note the batch step records the attempt as a prolog-less
	 * one would be (batch.c): no count is lost. */
	if (rb_note_write(run_dir, node_name(), &job, &err) < 0)
		rb_log(RB_LOG_ERROR, "prolog: %s", err.msg);
out:
	rb_config_free(cfg);
}

/* SLURM_JOB_EXIT_CODE2 is "EXIT:SIGNAL"; anything else counts as 0:0. */
static void parse_exit_code2(const char *s, int *exit_code, int *sig)
{
	char *end;
	long e, g;

	*exit_code = 0;
	*sig = 0;
	if (!s)
		return;
	errno = 0;
	e = strtol(s, &end, 10);
	if (errno || end == s || *end != ':' || e < 0 || e > 255)
		return;
	s = end + 1;
	g = strtol(s, &end, 10);
	if (errno || end == s || *end || g < 0 || g > 128)
		return;
	*exit_code = (int)e;
	*sig = (int)g;
}

/* What the epilog's interruption question needs: the job as the controller
 * addresses it (an array task by its array id and task id, docs/arrays.md)
 * and the store, to read them from the record when the environment lacks
 * them (22.05's epilog has no SLURM_ARRAY_*; verified). */
typedef struct {
	rb_job_ref ref;
	rb_store *st;
} epilog_job;

static epilog_job epilog_job_of(rb_store *st, uint32_t job_id)
{
	epilog_job e = { rb_job_ref_of(job_id, 0, 0), st };
	uint32_t a = 0, t = 0;

	if (env_u32(getenv("SLURM_ARRAY_JOB_ID"), &a) &&
	    env_u32(getenv("SLURM_ARRAY_TASK_ID"), &t))
		e.ref = rb_job_ref_of(job_id, a, t);
	return e;
}

/* Preempted or requeued? Asked of the controller only for an interruption
 * (an rb_detail_fn), about this one task: the record, which the batch step
 * gave the array ids, is read (without a lock) only then. */
static const char *interruption_of(void *ctx)
{
	epilog_job *e = ctx;
	rb_record rec;
	rb_err err;

	if (!e->ref.array_job_id &&
	    e->st->ops->load(e->st, e->ref.job_id, &rec, &err) == 0)
		e->ref = rb_job_ref_of(e->ref.job_id, rec.array_job_id,
				       rec.array_task_id);
	return controller_interruption(&e->ref);
}

/* The end could not be recorded: it is kept on this node, so that a real
 * failure is never free (docs/architecture.md, "An end not written"). */
static void keep_end(rb_store *st, uint32_t job_id, const rb_end_info *end,
		     const char *why)
{
	rb_node node = this_node(cluster_name());
	rb_err err;

	rb_log(RB_LOG_ERROR, "epilog: job %u: %s", job_id, why);
	if (rb_lifecycle_keep_end(st, &node, job_id, end, &err) < 0)
		rb_log(RB_LOG_ERROR, "epilog: job %u: its end is lost (%s): the attempt will count as interrupted",
		       job_id, err.msg);
	else
		rb_log(RB_LOG_WARNING, "epilog: job %u: its end is kept in %s until the ledger takes it",
		       job_id, run_dir);
}

void epilog(void)
{
	rb_config *cfg;
	rb_err err;
	uint32_t job_id;
	epilog_job ej;
	rb_end_info end = { 0 };
	rb_store_dir dir;
	rb_note_state note;
	rb_node node;

	if (!env_u32(getenv("SLURM_JOB_ID"), &job_id))
		return;
	note = rb_note_look(run_dir, node_name(), cluster_name(), job_id);
	if (note == RB_NOTE_NONE || note == RB_NOTE_NOTED) {
		/* not the batch host (or an untracked job): no ledger work */
		rb_note_forget(run_dir, node_name(), cluster_name(), job_id);
		return;
	}
	/* (Under RunInJob Slurm runs no SPANK epilog: nothing to check here,
	 * and slurm.conf is not read on this hot path.) */
	start_clock();
	cfg = load_config(&err);
	if (!cfg) {
		rb_log(RB_LOG_ERROR, "epilog: job %u: %s", job_id, err.msg);
		return;
	}
	env_int64(getenv("SLURM_JOB_RESTART_COUNT"), &end.restart_count);
	ej = epilog_job_of(rb_store_dir_init(&dir, cfg->state_dir,
					     cluster_name()), job_id);
	parse_exit_code2(getenv("SLURM_JOB_EXIT_CODE2"), &end.exit_code,
			 &end.signal);
	end.detail_fn = interruption_of;
	end.detail_ctx = &ej;
	end.now = time(NULL);
	/* An untracked job has no record: nothing happens. Only an
	 * interruption costs a controller query (it is rare). */
	if (rb_lifecycle_end_in(ej.st, job_id, &end, &err) < 0) {
		/* the store failed just now: no retry of kept ends */
		keep_end(ej.st, job_id, &end, err.msg);
		goto out;
	}
	if (note == RB_NOTE_CLAIMED)
		rb_note_forget(run_dir, node_name(), cluster_name(), job_id);
	/* the store works: ends kept here earlier go on record */
	node = this_node(cluster_name());
	rb_lifecycle_carry_ends(ej.st, &node, 0);
out:
	rb_config_free(cfg);
}
