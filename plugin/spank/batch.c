/*
 * batch.c - the batch step (slurmstepd on the job's first node): user_init
 * (euid = the job's user) finds the checkpoint and exports the job's
 * environment, task_post_fork (root) records what the attempt was handed,
 * task_init (the job's user, in the task) is the one place that refuses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "ack.h"
#include "checkpoint.h"
#include "identity.h"
#include "record.h"
#include "slurmconf.h"

#include "compat.h"
#include "glue.h"

/* What the batch step learned in user_init, for task_post_fork and
 * task_init (the forked task inherits it). */
static struct {
	bool tracked;          /* this job is tracked and its record was read */
	bool refuse;           /* task_init must refuse this attempt */
	char refuse_msg[2 * RB_PATH_MAX + RB_ERR_MAX];
	char cluster[RB_NAME_MAX];
	uint32_t job_id;
	int64_t attempt;
	rb_phase phase;
	char checkpoint[RB_PATH_MAX];
	rb_config *cfg;        /* user_init's, kept for task_post_fork */
	bool exported;         /* the job's environment was set */
	bool closed;           /* on_error = "closed" */
	char config_path[RB_PATH_MAX];
	char warning[RB_ERR_MAX + 128]; /* printed to the job's stderr by task_init */
} step;

bool is_batch_step(spank_t sp)
{
	uint32_t stepid = 0;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return false;
	return stepid == SLURM_BATCH_SCRIPT;
}

static void setenv_str(spank_t sp, const char *name, const char *value)
{
	if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS)
		rb_log(RB_LOG_ERROR, "cannot set %s in the job's environment", name);
}

static void setenv_int(spank_t sp, const char *name, int64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, value);
	setenv_str(sp, name, buf);
}

static void export_env(spank_t sp, const rb_record *rec)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;
	int64_t left = rb_engine_restores_left(b, l);
	char buf[RB_PATH_MAX + 64];

	setenv_int(sp, "RESTORE_BUDGET_ATTEMPT", step.attempt);
	setenv_str(sp, "RESTORE_BUDGET_PHASE", rb_phase_name(step.phase));
	setenv_str(sp, "RESTORE_BUDGET_CHECKPOINT", step.checkpoint);
	setenv_int(sp, "RESTORE_BUDGET_FAILURES", b->failures);
	if (l->max_failures < 0)
		setenv_str(sp, "RESTORE_BUDGET_MAX_FAILURES", "unlimited");
	else
		setenv_int(sp, "RESTORE_BUDGET_MAX_FAILURES",
			   (int64_t)l->max_failures + b->granted);
	setenv_int(sp, "RESTORE_BUDGET_RESTORE_FAILURES", b->restore_failures);
	setenv_int(sp, "RESTORE_BUDGET_RESTORE_RETRY_NUM", l->restore_retry_num);
	if (left < 0)
		setenv_str(sp, "RESTORE_BUDGET_RESTORES_LEFT", "unlimited");
	else
		setenv_int(sp, "RESTORE_BUDGET_RESTORES_LEFT", left);
	rb_end_format(b->prev_end, b->prev_end_code, buf, sizeof(buf));
	setenv_str(sp, "RESTORE_BUDGET_LAST_END", buf);
	if (rb_ack_path(rec->work_dir, rec->checkpoint_dir, step.cluster,
			step.job_id, step.attempt, buf, sizeof(buf)) == 0)
		setenv_str(sp, "RESTORE_BUDGET_ACK_FILE", buf);
}

static void refuse_message(const rb_config *cfg, const rb_record *rec)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;

	snprintf(step.refuse_msg, sizeof(step.refuse_msg),
		 RB_PREFIX "job %u attempt %" PRId64 " refused: restore budget "
		 "exhausted: failures F=%d > max_failures M=%d (restore failures "
		 "r=%d of R=%d; limits from %s). The checkpoint %s is kept. "
		 "An admin can add budget with 'restore-budget grant %u "
		 "--failures N' and requeue the job.\n",
		 step.job_id, step.attempt, b->failures,
		 l->max_failures + b->granted, b->restore_failures,
		 l->restore_retry_num, cfg->path,
		 b->checkpoint[0] ? b->checkpoint : "(none)", step.job_id);
}

/* A line for the job's stderr, printed by task_init (the job's own fd 2). */
static void add_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add_warning(const char *fmt, ...)
{
	size_t used = strlen(step.warning);
	int n;
	va_list ap;

	n = snprintf(step.warning + used, sizeof(step.warning) - used, "%s",
		     RB_PREFIX);
	if (n < 0 || (size_t)n >= sizeof(step.warning) - used)
		return;
	used += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(step.warning + used, sizeof(step.warning) - used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(step.warning) - used - 1)
		return;
	used += (size_t)n;
	memcpy(step.warning + used, "\n", sizeof("\n"));
}

/*
 * Slurm may relaunch a requeued job with no prolog at all (seen on 22.05
 * when the previous attempt was killed while its prolog ran and slurmd still
 * caches the credential). The sign: the recorded attempt already ended.
 * Record and charge the new attempt here, as its prolog would have. The
 * ledger is written only as root: user_init runs with uid 0 and the job
 * user's euid, so root is taken back for the write and given up after.
 */
static int catch_up_start(const rb_config *cfg, rb_record *rec,
			  const rb_overrides *opts, const char *ckpt_dir)
{
	uid_t euid = geteuid();
	gid_t egid = getegid();
	int64_t count = controller_restart_count(step.job_id);
	rb_job_info job = { 0 };
	rb_start_result res;
	rb_err err;
	int rc = -1;

	job.cluster = rec->cluster;
	job.job_id = rec->job_id;
	job.attempt = count > rec->budget.cur.attempt ? count :
						      rec->budget.cur.attempt + 1;
	job.uid = rec->uid;
	job.gid = rec->gid;
	job.user = rec->user;
	job.partition = rec->partition[0] ? rec->partition : NULL;
	job.account = rec->account[0] ? rec->account : NULL;
	job.work_dir = rec->work_dir;
	job.checkpoint_dir = ckpt_dir[0] ? ckpt_dir : NULL;
	job.options = *opts;
	job.now = time(NULL);

	if (seteuid(0) < 0 || setegid(0) < 0) {
		rb_log(RB_LOG_ERROR, "job %u: cannot record attempt %" PRId64 " started without a prolog: %s",
		       step.job_id, job.attempt, strerror(errno));
		goto restore;
	}
	if (rb_lifecycle_start(cfg, &job, &res, &err) < 0)
		rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 " (no prolog): %s",
		       step.job_id, job.attempt, err.msg);
	else
		rc = 0;
restore:
	if (setegid(egid) < 0 || seteuid(euid) < 0) {
		/* never run the job's checkpoint lookup as root */
		rb_log(RB_LOG_ERROR, "job %u: cannot drop back to uid %u: %s",
		       step.job_id, (unsigned)euid, strerror(errno));
		return -2;
	}
	if (rc == 0) {
		rb_log(RB_LOG_INFO, "job %u attempt %" PRId64 " started without a prolog: %s",
		       step.job_id, job.attempt, res.reason);
		rc = rb_lifecycle_read(cfg, rec->cluster, rec->job_id, rec, &err);
	}
	return rc;
}

/* Internal error in the batch step: on_error decides. */
static void step_error(const rb_config *cfg, const char *what)
{
	bool closed = cfg && cfg->on_error == RB_ON_ERROR_CLOSED;

	rb_log(RB_LOG_ERROR, "job %u: %s%s", step.job_id, what,
	       closed ? " (on_error = closed: attempt refused)" :
			" (on_error = open: the job runs untracked)");
	if (closed) {
		step.refuse = true;
		snprintf(step.refuse_msg, sizeof(step.refuse_msg),
			 RB_PREFIX "job %u refused: %s (on_error = \"closed\" "
			 "in %s; ask your admin)\n", step.job_id, what,
			 cfg->path);
	}
}

/* Is rec another job's, one that had this id before (identity.h)? The
 * prolog starts a new record then; finding one here means it did not. */
static bool record_is_another_jobs(spank_t sp, const rb_record *rec)
{
	char nonce[RB_SUBMISSION_MAX] = "", sluid[RB_SUBMISSION_MAX] = "";
	char submission[RB_SUBMISSION_MAX];
	const char *why = NULL;
	uid_t uid;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return false;
	if (spank_getenv(sp, "SLURM_SPANK_" RB_SUBMISSION_VAR, nonce,
			 sizeof(nonce)) != ESPANK_SUCCESS)
		nonce[0] = '\0';
	if (spank_getenv(sp, "SLURM_JOB_SLUID", sluid, sizeof(sluid)) !=
	    ESPANK_SUCCESS)
		sluid[0] = '\0';
	/* no attempt number here (user_init cannot see it): uid and
	 * submission only */
	if (!rb_record_names_another_job(rec, (uint32_t)uid,
					 rb_submission_of(nonce, sluid,
							  submission,
							  sizeof(submission)),
					 INT64_MAX, &why))
		return false;
	rb_log(RB_LOG_ERROR, "job %u: the ledger's record is of another job with this id (uid %u; evidence: %s)",
	       step.job_id, rec->uid, why);
	return true;
}

/* Tell the job what the prolog's resolution of its limits clamped
 * (docs/rule.md, "Limits": "a warning in the job's stderr"). */
static void warn_clamped(spank_t sp, const rb_config *cfg,
			 const rb_overrides *opts)
{
	char part[RB_NAME_MAX] = "", acct[RB_NAME_MAX] = "";
	char warn[RB_ERR_MAX] = "";
	rb_limits lim;

	if (spank_getenv(sp, "SLURM_JOB_PARTITION", part, sizeof(part)) !=
	    ESPANK_SUCCESS)
		part[0] = '\0';
	if (spank_getenv(sp, "SLURM_JOB_ACCOUNT", acct, sizeof(acct)) !=
	    ESPANK_SUCCESS)
		acct[0] = '\0';
	if (rb_config_resolve(cfg, part[0] ? part : NULL, acct[0] ? acct : NULL,
			      opts, &lim, warn, sizeof(warn)) > 0)
		add_warning("%s", warn);
}

/* The checkpoint to hand out, found as the job's user: the newest in its
 * directory, else the last one on record. */
static void choose_checkpoint(const rb_config *cfg, const rb_record *rec,
			      const char *ckpt_dir)
{
	char found[RB_PATH_MAX] = "";
	rb_err err;
	int rc;

	if (ckpt_dir[0]) {
		rc = rb_checkpoint_find(rec->work_dir, ckpt_dir,
					cfg->checkpoint_pattern,
					cfg->checkpoint_latest, found,
					sizeof(found), &err);
		/* A directory the job has not created yet is no news, unless
		 * a checkpoint was already found in it once. */
		if (rc < 0 && !(errno == ENOENT && !rec->budget.checkpoint[0]))
			add_warning("%s; handing out the last known checkpoint",
				    err.msg);
		if (rc < 0)
			found[0] = '\0';
	}
	rb_strlcpy(step.checkpoint, found[0] ? found : rec->budget.checkpoint,
		   sizeof(step.checkpoint));
}

/* This job's record, caught up if Slurm ran this attempt without a
 * prolog. 0, or -1 (said why; on_error applied or nothing to export). */
static int read_this_jobs_record(spank_t sp, const rb_config *cfg,
				 const rb_overrides *opts,
				 const char *ckpt_dir, rb_record *rec)
{
	rb_err err;
	int rc;

	rc = rb_lifecycle_read(cfg, step.cluster, step.job_id, rec, &err);
	if (rc != 0) {
		step_error(cfg, rc > 0 ? "no ledger record (the prolog did not record this attempt)" :
					 err.msg);
		return -1;
	}
	if (record_is_another_jobs(sp, rec)) {
		step_error(cfg, "the ledger's record with this job id is another job's (the prolog did not record this one)");
		return -1;
	}
	if (rec->budget.cur.end == RB_END_NONE)
		return 0;
	rc = catch_up_start(cfg, rec, opts, ckpt_dir);
	if (rc == -1)
		step_error(cfg, "this attempt could not be recorded in the ledger (see slurmd.log)");
	/* -2: could not give up root: export nothing */
	return rc < 0 ? -1 : 0;
}

/* Is this job tracked here? Says why not to the job when it matters. */
static bool tracked_here(const rb_config *cfg, bool has_options)
{
	if (!job_is_tracked(cfg, has_options))
		return false;
	if (prolog_flags() & RB_PF_RUN_IN_JOB) {
		/* untracked, as slurmd said at start; tell the job too */
		add_warning("this cluster runs PrologFlags=RunInJob, under which Slurm runs no SPANK prolog or epilog: job %u runs without a restore budget",
			    step.job_id);
		return false;
	}
	return true;
}

/* Runs with euid = the job's user: the checkpoint is found as the user. */
void batch_user_init(spank_t sp)
{
	rb_overrides opts;
	char ckpt_dir[RB_PATH_MAX], name[RB_NAME_MAX];
	rb_record rec;
	rb_config *cfg;
	rb_err err;

	memset(&step, 0, sizeof(step));
	if (spank_get_item(sp, S_JOB_ID, &step.job_id) != ESPANK_SUCCESS)
		return;
	start_clock();
	cfg = load_config(&err);
	if (!cfg) {
		/* config unreadable: with no config there is no on_error to
		 * consult; the error is in slurmd's log and the prolog's */
		rb_log(RB_LOG_ERROR, "job %u: %s; the job runs untracked",
		       step.job_id, err.msg);
		return;
	}
	if (!tracked_here(cfg, read_options(sp, &opts, ckpt_dir,
					    sizeof(ckpt_dir))))
		goto out;
	if (spank_getenv(sp, "SLURM_CLUSTER_NAME", name, sizeof(name)) !=
	    ESPANK_SUCCESS)
		rb_strlcpy(name, "cluster", sizeof(name));
	rb_strlcpy(step.cluster, name, sizeof(step.cluster));
	if (read_this_jobs_record(sp, cfg, &opts, ckpt_dir, &rec) < 0)
		goto out;
	step.attempt = rec.budget.cur.attempt;
	warn_clamped(sp, cfg, &opts);
	if (rec.budget.cur.refused) {
		step.refuse = true;
		refuse_message(cfg, &rec);
	}
	choose_checkpoint(cfg, &rec, ckpt_dir);
	step.phase = rb_engine_start_phase(step.attempt, step.checkpoint);
	step.tracked = true;
	step.closed = cfg->on_error == RB_ON_ERROR_CLOSED;
	rb_strlcpy(step.config_path, cfg->path, sizeof(step.config_path));
	export_env(sp, &rec);
	step.exported = true;
	step.cfg = cfg; /* task_post_fork records with the same config */
	return;
out:
	rb_config_free(cfg);
}

/* Root again: record what the attempt was handed. */
void batch_post_fork(void)
{
	rb_config *cfg = step.cfg;
	rb_err err;

	if (!step.tracked || !cfg)
		return;
	step.tracked = false; /* once per step, not once per task */
	step.cfg = NULL;
	if (rb_lifecycle_report(cfg, step.cluster, step.job_id, step.attempt,
				step.phase, step.checkpoint, &err) < 0)
		rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 ": %s",
		       step.job_id, step.attempt, err.msg);
	rb_config_free(cfg);
}

/*
 * The last check, where the attempt number is finally visible: if the ledger
 * is behind (the prolog could not write, state_dir full or read-only), the
 * numbers exported in user_init belong to the previous attempt. closed:
 * refuse; open: run untracked, keeping only the checkpoint path.
 */
static void check_attempt_recorded(spank_t sp)
{
	static const char *const stale[] = {
		"RESTORE_BUDGET_PHASE", "RESTORE_BUDGET_FAILURES",
		"RESTORE_BUDGET_MAX_FAILURES", "RESTORE_BUDGET_RESTORE_FAILURES",
		"RESTORE_BUDGET_RESTORE_RETRY_NUM", "RESTORE_BUDGET_RESTORES_LEFT",
		"RESTORE_BUDGET_LAST_END", "RESTORE_BUDGET_ACK_FILE",
	};
	char buf[32];
	int64_t n = 0;

	if (!step.exported || step.refuse)
		return;
	if (spank_getenv(sp, "SLURM_RESTART_COUNT", buf, sizeof(buf)) ==
	    ESPANK_SUCCESS && !env_int64(buf, &n))
		return;
	if (n == step.attempt)
		return;
	if (step.closed) {
		step.refuse = true;
		snprintf(step.refuse_msg, sizeof(step.refuse_msg),
			 RB_PREFIX "job %u refused: attempt %" PRId64 " could not be recorded in the ledger (see slurmd.log) (on_error = \"closed\" in %s; ask your admin)\n",
			 step.job_id, n, step.config_path);
		return;
	}
	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++)
		spank_unsetenv(sp, stale[i]);
	setenv_int(sp, "RESTORE_BUDGET_ATTEMPT", n);
	fprintf(stderr, RB_PREFIX "attempt %" PRId64 " could not be recorded in the ledger (see slurmd.log): it runs untracked; RESTORE_BUDGET_CHECKPOINT still names the last known checkpoint\n",
		n);
}

int batch_task_init(spank_t sp)
{
	check_attempt_recorded(sp);
	if (step.warning[0])
		fputs(step.warning, stderr);
	if (!step.refuse)
		return 0;
	/* The one safe refusal: the job ends FAILED 1:0, the node is fine. */
	fputs(step.refuse_msg, stderr);
	fflush(stderr);
	return -1;
}
