/*
 * batch.c - the batch step (slurmstepd on the batch host, the one node that
 * does ledger work: docs/architecture.md "Only the batch host"). user_init
 * (uid 0, euid = the job's user) reads the attempt as root from the
 * prolog's note and the record, finds the checkpoint as the user, then
 * records the attempt, its charge, phase and checkpoint as root in one
 * write (docs/architecture.md, "One attempt") and exports the job's
 * environment; task_init (the job's user, in the task) is the one place
 * that refuses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "user/user.h"
#include "rule/rule.h"
#include "slurm/slurm.h"
#include "store/store.h"
#include "config/config.h"

#include "compat.h"
#include "glue.h"

/* What the batch step learned in user_init, for task_init (the forked
 * task inherits it). */
static struct {
	bool tracked;          /* tracked: its record read, its environment set */
	bool refuse;           /* task_init must refuse this attempt */
	char refuse_msg[2 * RB_PATH_MAX + RB_ERR_MAX];
	char cluster[RB_NAME_MAX];
	uint32_t job_id;
	rb_job_ref task;       /* job_id as the controller addresses it */
	int64_t attempt;
	rb_phase phase;
	char checkpoint[RB_PATH_MAX];
	rb_file_id checkpoint_id; /* with checkpoint.fallback only */
	char fallback_from[RB_PATH_MAX];
	bool closed;           /* on_error = "closed" */
	char config_path[RB_PATH_MAX];
	char warning[RB_ERR_MAX + 128]; /* printed to the job's stderr by task_init */
	bool clamps_said;      /* the start's clamp words are in warning */
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

/* requeue_exit, else the first of slurm.conf's RequeueExit (config.h). */
static int requeue_exit_code(const rb_config *cfg)
{
	const char *path = env_or("SLURM_CONF", RB_SLURM_CONF_DEFAULT);
	rb_requeue_exit slurm;
	rb_err err;

	if (cfg->requeue_exit > 0)
		return cfg->requeue_exit;
	if (rb_slurmconf_requeue_exit(path, &slurm, &err) < 0) {
		rb_log(RB_LOG_INFO, "cannot read RequeueExit: %s; RESTORE_BUDGET_REQUEUE_EXIT not set",
		       err.msg);
		return 0;
	}
	return rb_requeue_exit_of(cfg, &slurm);
}

static void export_env(spank_t sp, const rb_config *cfg, const rb_record *rec)
{
	rb_step_env env;

	rb_step_env_of(rec, step.attempt, step.phase, step.checkpoint, &env);
	rb_step_env_set_requeue_exit(&env, requeue_exit_code(cfg));
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++)
		if (env.var[i].set)
			setenv_str(sp, env.var[i].name, env.var[i].value);
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

/* Internal error in the batch step: on_error decides. */
static void step_error(const rb_config *cfg, const char *what)
{
	bool closed = cfg && cfg->on_error == RB_ON_ERROR_CLOSED;

	rb_log(RB_LOG_ERROR, "job %u: %s%s", step.job_id, what,
	       closed ? " (on_error = closed: attempt refused)" :
			" (on_error = open: the job runs untracked)");
	if (closed) {
		/* as root (record_attempt) the reason reaches the AdminComment */
		if (geteuid() == 0)
			controller_note_reason(&step.task, "refused", what);
		step.refuse = true;
		snprintf(step.refuse_msg, sizeof(step.refuse_msg),
			 RB_PREFIX "job %u refused: %s (on_error = \"closed\" "
			 "in %s; ask your admin)\n", step.job_id, what,
			 cfg->path);
	}
}

/* name from the step's environment into buf; "" when it has none. */
static void step_getenv(spank_t sp, const char *name, char *buf, size_t len)
{
	if (spank_getenv(sp, name, buf, (int)len) != ESPANK_SUCCESS)
		buf[0] = '\0';
}

/* The job's submission identity as the batch step sees it (identity.h),
 * into buf (RB_SUBMISSION_MAX); NULL when it has none. */
static const char *step_submission(spank_t sp, char *buf)
{
	char nonce[RB_SUBMISSION_MAX], sluid[RB_SUBMISSION_MAX];

	step_getenv(sp, "SLURM_SPANK_" RB_SUBMISSION_VAR, nonce, sizeof(nonce));
	step_getenv(sp, "SLURM_JOB_SLUID", sluid, sizeof(sluid));
	return rb_submission_of(nonce, sluid, buf, RB_SUBMISSION_MAX);
}

/* Is rec another job's, one that had this id before (identity.h)? A start
 * from a note begins a new record then; without a note, on_error decides. */
static bool record_is_another_jobs(spank_t sp, const rb_record *rec)
{
	char submission[RB_SUBMISSION_MAX];
	const char *why = NULL;
	uid_t uid;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return false;
	/* no attempt number here (user_init cannot see it): uid and
	 * submission only */
	if (!rb_record_names_another_job(rec, (uint32_t)uid,
					 step_submission(sp, submission),
					 INT64_MAX, &why))
		return false;
	rb_log(RB_LOG_ERROR, "job %u: the ledger's record is of another job with this id (uid %u; evidence: %s)",
	       step.job_id, rec->uid, why);
	return true;
}

/* Tell the job what the resolution of its limits clamped
 * (docs/rule.md, "Limits": "a warning in the job's stderr"). */
static void warn_clamped(spank_t sp, const rb_config *cfg,
			 const rb_overrides *opts)
{
	char part[RB_NAME_MAX], acct[RB_NAME_MAX];
	char warn[RB_ERR_MAX] = "";
	rb_limits lim;

	step_getenv(sp, "SLURM_JOB_PARTITION", part, sizeof(part));
	step_getenv(sp, "SLURM_JOB_ACCOUNT", acct, sizeof(acct));
	if (rb_config_resolve(cfg, part[0] ? part : NULL, acct[0] ? acct : NULL,
			      opts, &lim, warn, sizeof(warn)) > 0)
		add_warning("%s", warn);
}

/* The checkpoint to hand out, found as the job's user: the newest in its
 * directory (with checkpoint.fallback, the newest not marked bad and its
 * identity: docs/rule.md, "Checkpoint fallback"), else the last one on
 * record. */
static void choose_checkpoint(const rb_config *cfg, const rb_record *rec,
			      const char *ckpt_dir)
{
	static rb_fallback_choice choice; /* 8 KB, off the step's stack */
	bool fallback = ckpt_dir[0] && cfg->checkpoint_fallback;
	rb_err err;
	int rc = 0;

	memset(&choice, 0, sizeof(choice));
	if (fallback)
		rc = rb_fallback_choose(rec, ckpt_dir, cfg->checkpoint_pattern,
					cfg->checkpoint_latest, &choice, &err);
	else if (ckpt_dir[0])
		rc = rb_checkpoint_find(rec->work_dir, ckpt_dir,
					cfg->checkpoint_pattern,
					cfg->checkpoint_latest, choice.path,
					sizeof(choice.path), &err);
	/* A directory the job has not created yet is no news, unless a
	 * checkpoint was already found in it once. */
	if (rc < 0 && !(errno == ENOENT && !rec->budget.checkpoint[0]))
		add_warning("%s; handing out the last known checkpoint",
			    err.msg);
	if (!choice.path[0]) {
		rb_strlcpy(choice.path, rec->budget.checkpoint,
			   sizeof(choice.path));
		if (fallback)
			rb_file_id_of(choice.path, &choice.id);
	}
	rb_strlcpy(step.checkpoint, choice.path, sizeof(step.checkpoint));
	rb_strlcpy(step.fallback_from, choice.from,
		   sizeof(step.fallback_from));
	step.checkpoint_id = choice.id;
	if (choice.from[0])
		add_warning("checkpoint %s is marked bad: restoring from %s",
			    choice.from, choice.path[0] ? choice.path : "(none)");
}

/* The job as the batch step sees it, for a record it starts: neither a
 * note nor a record (the prolog could not note the job: docs/security.md,
 * "Names"). The work dir is not in the step's view: "" (unknown). */
static void record_of_step(spank_t sp, rb_record *rec)
{
	static const struct {
		const char *var;
		size_t off;
	} names[] = {
		{ "SLURM_JOB_USER", offsetof(rb_record, user) },
		{ "SLURM_JOB_PARTITION", offsetof(rb_record, partition) },
		{ "SLURM_JOB_ACCOUNT", offsetof(rb_record, account) },
	};
	uid_t uid = 0;
	gid_t gid = 0;

	rb_record_init(rec);
	rb_strlcpy(rec->cluster, step.cluster, sizeof(rec->cluster));
	rec->job_id = step.job_id;
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	rec->uid = (uint32_t)uid;
	rec->gid = (uint32_t)gid;
	/* an array task's ids, as user_init read them (get_task) */
	rec->array_job_id = step.task.array_job_id;
	rec->array_task_id = step.task.array_task_id;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		step_getenv(sp, names[i].var, (char *)rec + names[i].off,
			    RB_NAME_MAX);
	step_submission(sp, rec->submission);
	rec->budget.cur.end = RB_END_COMPLETED; /* catch_up_start: a new one */
}

/* This attempt as user_init's first root part finds it, for its second:
 * static, off the step's stack (two records). */
static struct {
	rb_store_dir dir;
	rb_store *st;
	const rb_overrides *opts; /* the job's options */
	const char *ckpt_dir;     /* its checkpoint dir, expanded */
	rb_note_job note;
	char account[RB_NAME_MAX];
	bool from_note;        /* this node's prolog noted the job */
	bool starts;           /* job starts here (else it had started) */
	rb_job_info job;
	rb_record seen;        /* as read (job's strings point into it) */
	uint64_t seq;          /* its write, 0 = none */
	rb_record rec;         /* as the start leaves it, then as written */
	rb_start_result res;
	char kept[RB_PATH_MAX]; /* the checkpoint on record before handing */
	/* store = "controller" (docs/stores.md) */
	bool controller;
	char work_dir[RB_PATH_MAX]; /* user_init's cwd: the job's work dir */
	rb_record ident;       /* who the job is, for the line store */
	controller_job cj;
	rb_store_line line;
} plan;

/* plan.job, attempt `attempt` of the job rec describes (its strings stay
 * rec's), with the batch step's checkpoint dir and options. */
static void job_of_record(const rb_record *rec, int64_t attempt,
			  const char *account)
{
	rb_job_info *job = &plan.job;

	memset(job, 0, sizeof(*job));
	job->cluster = rec->cluster;
	job->job_id = rec->job_id;
	job->array_job_id = step.task.array_job_id;
	job->array_task_id = step.task.array_task_id;
	job->attempt = attempt;
	job->uid = rec->uid;
	job->gid = rec->gid;
	job->user = rec->user;
	job->partition = rec->partition[0] ? rec->partition : NULL;
	job->account = account;
	job->work_dir = rec->work_dir;
	job->submission = rec->submission[0] ? rec->submission : NULL;
	job->checkpoint_dir = plan.ckpt_dir[0] ? plan.ckpt_dir : NULL;
	job->options = *plan.opts;
	job->now = time(NULL);
}

/* Slurm may relaunch a requeued job with no prolog at all (seen on 22.05
 * when the previous attempt was killed while its prolog ran and slurmd
 * still caches the credential; the sign: rb_step_begins_attempt). The new
 * attempt is recorded and charged here (as root), as from a note. */
static void catch_up_job(int64_t controller_count)
{
	const rb_record *rec = &plan.seen;

	job_of_record(rec, rb_step_catch_up_attempt(controller_count, rec),
		      rec->account[0] ? rec->account : NULL);
	plan.starts = true;
}

/* No note: this job's record, caught up if Slurm ran this attempt without
 * a prolog, begun if there is none. 0, or -1 (said why; on_error applied
 * or nothing to export). */
static int plan_without_note(spank_t sp, const rb_config *cfg, int found)
{
	int64_t count;

	if (found > 0) {
		/* no note, no record: a first attempt is never untracked or
		 * refused for that; begin the record here */
		rb_log(RB_LOG_WARNING, "job %u: no note from the prolog and no record: the batch step begins the record",
		       step.job_id);
		record_of_step(sp, &plan.seen);
	} else if (record_is_another_jobs(sp, &plan.seen)) {
		step_error(cfg, "the ledger's record with this job id is another job's (no prolog noted this one)");
		return -1;
	}
	/* the controller is asked once (this path is rare): its restart
	 * count also tells a relaunch after an end that was never recorded */
	count = controller_restart_count(&step.task);
	if (rb_step_begins_attempt(&plan.seen, count))
		catch_up_job(count);
	return 0;
}

/* The job from this node's note (its prolog's), if Slurm ran a prolog
 * here (plan.from_note). */
static void plan_from_note(const rb_config *cfg)
{
	rb_job_info *job = &plan.note.job;
	rb_err err;
	int rc;

	rc = rb_note_claim(run_dir, node_name(), step.cluster, step.job_id,
			   &plan.note, &err);
	if (rc != 0) {
		if (rc < 0)
			rb_log(RB_LOG_ERROR, "job %u: %s; reading the ledger instead",
			       step.job_id, err.msg);
		return;
	}
	job->options = *plan.opts;
	job->array_job_id = step.task.array_job_id;
	job->array_task_id = step.task.array_task_id;
	job->checkpoint_dir = plan.ckpt_dir[0] ? plan.ckpt_dir : NULL;
	job->now = time(NULL);
	if (!job->account && cfg->n_accounts > 0) {
		controller_account(&step.task, plan.account,
				   sizeof(plan.account));
		job->account = plan.account[0] ? plan.account : NULL;
	}
	plan.job = *job;
	plan.from_note = plan.starts = true;
}

/* The note's attempt could not be recorded: its claim goes, on_error
 * decides. */
static void note_failed(const rb_config *cfg, const char *what)
{
	rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 ": %s", step.job_id,
	       plan.job.attempt, what);
	rb_note_forget(run_dir, node_name(), step.cluster, step.job_id);
	step_error(cfg, what);
}

/* The job's account for the limits: Slurm sets SLURM_JOB_ACCOUNT in the
 * step only when the job has one, so a user's own would stand in: with
 * accounts in the config, the controller's is taken. */
static const char *account_for_limits(const rb_config *cfg)
{
	if (cfg->n_accounts == 0)
		return plan.ident.account[0] ? plan.ident.account : NULL;
	controller_account(&step.task, plan.account, sizeof(plan.account));
	return plan.account[0] ? plan.account : NULL;
}

/* store = "controller": this attempt from the controller's record (its
 * restart count is the attempt, its AdminComment's line the budget: one
 * squeue) and the batch step's view of the job; no prolog, no note
 * (docs/stores.md). What load returned, or -1 (said why; on_error
 * applied). */
static int load_in_controller(spank_t sp, const rb_config *cfg)
{
	rb_record *id = &plan.ident;
	rb_comment_io io;
	rb_err err;
	int found;

	record_of_step(sp, id);
	rb_strlcpy(id->work_dir, plan.work_dir, sizeof(id->work_dir));
	rb_strlcpy(id->checkpoint_dir, plan.ckpt_dir, sizeof(id->checkpoint_dir));
	plan.cj.job = step.task;
	io = controller_comment_io(&plan.cj);
	plan.st = rb_store_line_init(&plan.line, id, &io);
	found = plan.st->ops->load(plan.st, step.job_id, &plan.seen, &err);
	if (found < 0) {
		step_error(cfg, err.msg);
		return -1;
	}
	job_of_record(id, plan.cj.info.restarts, account_for_limits(cfg));
	plan.job.requeued_at = plan.cj.info.submit_time;
	plan.starts = plan.controller = true;
	return found;
}

/* First root part: the job (from the note, else from its record) and its
 * record as the start will leave it, for the checkpoint search. 0, or -1
 * (said why; nothing to export). */
static int plan_attempt(spank_t sp, const rb_config *cfg)
{
	rb_node node;
	rb_err err;
	int found;

	plan.from_note = plan.starts = plan.controller = false;
	if (cfg->store == RB_STORE_CONTROLLER) {
		found = load_in_controller(sp, cfg);
	} else {
		plan.st = rb_store_dir_init(&plan.dir, cfg->state_dir,
					    step.cluster);
		/* an end of this job's last attempt kept here goes on record
		 * first */
		node = this_node(step.cluster);
		rb_lifecycle_carry_ends(plan.st, &node, step.job_id);
		plan_from_note(cfg);
		found = plan.st->ops->load(plan.st, step.job_id, &plan.seen,
					   &err);
		if (found < 0 && plan.from_note)
			note_failed(cfg, err.msg);
		else if (found < 0)
			step_error(cfg, err.msg);
	}
	if (found < 0)
		return -1;
	plan.rec = plan.seen;
	plan.seq = found == 0 ? plan.seen.seq : 0;
	if (!plan.from_note && !plan.controller &&
	    plan_without_note(sp, cfg, found) < 0)
		return -1;
	if (plan.starts)
		rb_lifecycle_preview(cfg, &plan.job, found == 0, &plan.res,
				     &plan.rec);
	rb_strlcpy(plan.kept, plan.rec.budget.checkpoint, sizeof(plan.kept));
	return 0;
}

/* What the start decided, said once: the job's stderr, the log, the hold
 * of an exhausted job when the config asks for it, the AdminComment. */
static void report_start(const rb_config *cfg)
{
	const rb_start_result *res = &plan.res;
	const rb_job_info *job = &plan.job;
	bool refused = res->decision == RB_DECISION_REFUSE;
	char addr[RB_JOB_ADDR_MAX];
	bool regular = plan.from_note || plan.controller;

	if (regular && res->warnings[0])
		add_warning("%s", res->warnings);
	step.clamps_said = regular;
	if (!regular)
		rb_log(RB_LOG_INFO, "job %u attempt %" PRId64 " started without a prolog: %s",
		       step.job_id, job->attempt, res->reason);
	if (res->duplicate)
		return;
	/* on_exhausted holds here too: Slurm skips the prolog of a quick
	 * rerun at times, an array task's as any other */
	if (refused && cfg->on_exhausted == RB_ON_EXHAUSTED_HOLD) {
		hold_exhausted(&step.task, res->reason);
		return;
	}
	if (regular)
		rb_log(refused ? RB_LOG_WARNING : RB_LOG_INFO,
		       "job %s attempt %" PRId64 ": %s%s",
		       rb_job_addr(job->job_id, job->array_job_id,
				   job->array_task_id, addr),
		       job->attempt, res->reason,
		       refused ? " (refused in task_init)" : "");
	/* task_init refuses as the user: the comment is written here, as root */
	if (refused)
		controller_note_reason(&step.task, "refused", res->reason);
}

/* Second root part, the one write: the start (unless it had started),
 * the phase and the checkpoint handed out. 0, or -1 (said why; nothing to
 * export). */
static int write_attempt(spank_t sp, const rb_config *cfg)
{
	rb_handout h = { step.attempt, step.phase,
			 { step.checkpoint, step.checkpoint_id,
			   step.fallback_from }, plan.seq };
	rb_err err;
	int rc;

	(void)sp;
	rc = rb_lifecycle_begin(plan.st, cfg, step.job_id,
				plan.starts ? &plan.job : NULL, &h, &plan.res,
				&plan.rec, &err);
	if (rc < 0 && plan.from_note) {
		note_failed(cfg, err.msg);
		return -1;
	}
	if (rc < 0 && plan.starts) {
		rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 "%s: %s",
		       step.job_id, step.attempt,
		       plan.controller ? "" : " (no prolog)", err.msg);
		step_error(cfg, plan.controller ?
			   "this attempt could not be recorded in its AdminComment (see slurmd.log)" :
			   "this attempt could not be recorded in the ledger (see slurmd.log)");
		return -1;
	}
	if (rc < 0) {
		/* the attempt is on record: only its handing is lost, the
		 * job runs as recorded */
		rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 ": %s",
		       step.job_id, step.attempt, err.msg);
		plan.rec = plan.seen;
	} else if (plan.res.report_err[0]) {
		rb_log(RB_LOG_ERROR, "job %u attempt %" PRId64 ": %s",
		       step.job_id, step.attempt, plan.res.report_err);
	}
	if (rc == 0 && plan.starts)
		report_start(cfg);
	/* no note: this node's epilog must still record the end */
	if (!plan.from_note && !plan.controller && rb_note_mark(run_dir, node_name(), step.cluster,
					    step.job_id, &err) < 0)
		rb_log(RB_LOG_ERROR, "job %u: %s", step.job_id, err.msg);
	return 0;
}

typedef int (*root_part)(spank_t sp, const rb_config *cfg);

/* A part of the ledger work, as root (user_init runs with the job user's
 * euid; root is taken for it and given up after). 0, or -1 (said why). */
static int as_root(root_part part, spank_t sp, const rb_config *cfg)
{
	uid_t euid = geteuid();
	gid_t egid = getegid();
	int rc = -1;

	if (seteuid(0) < 0 || setegid(0) < 0) {
		rb_log(RB_LOG_ERROR, "job %u: cannot become root to record this attempt: %s",
		       step.job_id, strerror(errno));
		step_error(cfg, "this attempt could not be recorded in the ledger (see slurmd.log)");
		goto restore;
	}
	rc = part(sp, cfg);
restore:
	if (setegid(egid) < 0 || seteuid(euid) < 0) {
		/* never run the job's checkpoint lookup as root */
		rb_log(RB_LOG_ERROR, "job %u: cannot drop back to uid %u: %s",
		       step.job_id, (unsigned)euid, strerror(errno));
		return -1;
	}
	return rc;
}

/* Is this job tracked here? Says why not to the job when it matters. */
static bool tracked_here(const rb_config *cfg, bool has_options)
{
	if (!job_is_tracked(cfg, has_options))
		return false;
	if (cfg->store != RB_STORE_CONTROLLER &&
	    (prolog_flags() & RB_PF_RUN_IN_JOB)) {
		/* untracked, as slurmd said at start; tell the job too */
		add_warning("this cluster runs PrologFlags=RunInJob, under which Slurm runs no SPANK prolog or epilog: job %u runs without a restore budget",
			    step.job_id);
		return false;
	}
	return true;
}

/* This job as the controller addresses it: an array task by its array id
 * and task id, which the record keeps too (docs/arrays.md). */
static void get_task(spank_t sp)
{
	uint32_t a = 0, t = 0;

	if (spank_get_item(sp, S_JOB_ARRAY_ID, &a) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &t) != ESPANK_SUCCESS)
		a = t = 0;
	step.task = rb_job_ref_of(step.job_id, a, t);
}

/* One checkpoint directory per array task: --checkpoint-dir's %A, %a and
 * %j, as sbatch's --output has them (docs/arrays.md). */
static void expand_checkpoint_dir(char *dir, size_t len)
{
	char out[RB_PATH_MAX];

	if (!dir[0])
		return;
	if (rb_checkpoint_dir_expand(dir, step.job_id, step.task.array_job_id,
				     step.task.array_task_id, out,
				     sizeof(out)) < 0) {
		add_warning("--checkpoint-dir with %%A, %%a or %%j expanded would be %d bytes or longer: taken as given",
			    RB_PATH_MAX);
		return;
	}
	rb_strlcpy(dir, out, len);
}

/* The attempt's phase, from the checkpoint found as the job's user on the
 * record as the start leaves it. */
static void choose_handout(const rb_config *cfg, const char *ckpt_dir)
{
	step.attempt = plan.rec.budget.cur.attempt;
	choose_checkpoint(cfg, &plan.rec, ckpt_dir);
	step.phase = rb_engine_start_phase(step.attempt, step.checkpoint);
}

/* What the job is told: the refusal's words, the environment. */
static void tell_the_job(spank_t sp, const rb_config *cfg)
{
	rb_record *rec = &plan.rec;

	/* as the job was always told: the record as its start left it (the
	 * refusal names the checkpoint kept before this one was handed) */
	rb_strlcpy(rec->budget.checkpoint, plan.kept,
		   sizeof(rec->budget.checkpoint));
	if (rec->budget.cur.refused) {
		step.refuse = true;
		rb_step_refusal(rec, step.attempt, cfg->path, step.refuse_msg,
				sizeof(step.refuse_msg));
	}
	rb_strlcpy(rec->fallback.from, step.fallback_from,
		   sizeof(rec->fallback.from));
	step.closed = cfg->on_error == RB_ON_ERROR_CLOSED;
	rb_strlcpy(step.config_path, cfg->path, sizeof(step.config_path));
	export_env(sp, cfg, rec);
	step.tracked = true;
}

/* Runs with euid = the job's user: the checkpoint is found as the user,
 * between the two parts of the ledger work done as root. */
void batch_user_init(spank_t sp)
{
	rb_overrides opts;
	char ckpt_dir[RB_PATH_MAX];
	rb_config *cfg;
	rb_err err;

	memset(&step, 0, sizeof(step));
	if (spank_get_item(sp, S_JOB_ID, &step.job_id) != ESPANK_SUCCESS)
		return;
	get_task(sp);
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
	expand_checkpoint_dir(ckpt_dir, sizeof(ckpt_dir));
	if (spank_getenv(sp, "SLURM_CLUSTER_NAME", step.cluster,
			 sizeof(step.cluster)) != ESPANK_SUCCESS)
		rb_strlcpy(step.cluster, "cluster", sizeof(step.cluster));
	/* slurmstepd has just changed to the job's work dir (or /tmp) */
	if (!getcwd(plan.work_dir, sizeof(plan.work_dir)))
		plan.work_dir[0] = '\0';
	plan.opts = &opts;
	plan.ckpt_dir = ckpt_dir;
	if (as_root(plan_attempt, sp, cfg) < 0)
		goto out;
	choose_handout(cfg, ckpt_dir);
	if (as_root(write_attempt, sp, cfg) < 0)
		goto out;
	if (!step.clamps_said)
		warn_clamped(sp, cfg, &opts);
	tell_the_job(sp, cfg);
out:
	rb_config_free(cfg);
}

/*
 * The last check, where the attempt number is finally visible: if the ledger
 * is behind (the batch step could not write, state_dir full or read-only), the
 * numbers exported in user_init belong to the previous attempt. closed:
 * refuse; open: run untracked, keeping only the checkpoint path.
 */
static void check_attempt_recorded(spank_t sp)
{
	rb_step_env env;
	rb_record none;
	char buf[32];
	int64_t n = 0;

	if (!step.tracked || step.refuse)
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
	memset(&none, 0, sizeof(none));
	rb_step_env_of(&none, n, RB_PHASE_FRESH, step.checkpoint, &env);
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++)
		if (env.var[i].of_record)
			spank_unsetenv(sp, env.var[i].name);
		else if (strcmp(env.var[i].name, "RESTORE_BUDGET_ATTEMPT") == 0)
			setenv_str(sp, env.var[i].name, env.var[i].value);
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

/* The attempt's end from the batch script's wait status. */
static void end_of_status(int status, rb_end_info *end)
{
	memset(end, 0, sizeof(*end));
	end->restart_count = step.attempt;
	if (WIFEXITED(status))
		end->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		end->signal = WTERMSIG(status);
	end->now = time(NULL);
}

/*
 * store = "controller": the end of an attempt that ended by itself, written
 * here, before the batch step reports completion: the controller refuses
 * the update from COMPLETING on, so no epilog could (docs/stores.md, "Where
 * each event happens"). Only while the controller still has the job
 * RUNNING: a job it requeues, preempts, cancels or times out is COMPLETING
 * by the time its script dies, and that attempt keeps no end: interrupted,
 * as the rule has it. One read, one write.
 */
void batch_task_exit(spank_t sp)
{
	char a[RB_JOB_ADDR_MAX];
	rb_end_info end;
	int status = 0;
	rb_err err;

	if (!plan.controller || !step.tracked ||
	    spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
		return;
	rb_job_addr(step.job_id, step.task.array_job_id,
		    step.task.array_task_id, a);
	start_clock();
	rb_store_line_forget(&plan.line);
	if (plan.st->ops->load(plan.st, step.job_id, &plan.rec, &err) < 0) {
		/* a job being killed (requeued, held, cancelled) takes our
		 * squeue with it: that attempt keeps no end anyway */
		bool killed = strstr(err.msg, "killed by signal") != NULL;

		rb_log(killed ? RB_LOG_INFO : RB_LOG_ERROR,
		       "job %s attempt %" PRId64 ": its end is not recorded (it will count as interrupted): %s",
		       a, step.attempt, err.msg);
		return;
	}
	if (strcmp(plan.cj.info.state, "R") != 0 ||
	    plan.cj.info.restarts != step.attempt) {
		rb_log(RB_LOG_INFO, "job %s attempt %" PRId64 ": ended by the controller (state %s): no end recorded, an interruption",
		       a, step.attempt, plan.cj.info.state);
		return;
	}
	end_of_status(status, &end);
	if (rb_lifecycle_end_in(plan.st, step.job_id, &end, &err) < 0)
		rb_log(RB_LOG_ERROR, "job %s attempt %" PRId64 ": its end is not recorded (it will count as interrupted): %s",
		       a, step.attempt, err.msg);
}
