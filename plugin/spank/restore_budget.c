/*
 * restore_budget.c - the SPANK glue: the only file that knows Slurm.
 *
 * It gathers each callback's inputs from Slurm and hands them to the core
 * (plugin/core/lifecycle.c). Which callback does what (docs/architecture.md,
 * "Where each event happens"):
 *   sbatch         init: register options; init_post_opt: refuse over-cap values
 *   slurmd         init: load and check the config, log loudly
 *   job_prolog     (root, every node) charge the previous attempt, record this one
 *   user_init      (batch step, euid = job user) find the checkpoint, export env
 *   task_post_fork (batch step, root) record the phase and checkpoint handed out
 *   task_init      (job user) refuse an exhausted attempt: the job ends FAILED 1:0
 *   job_epilog     (root, every node) record how the attempt ended
 * Every callback returns 0 except task_init's refusal and sbatch's option
 * checks: a failing prolog, epilog, user_init or slurmd init drains the node
 * or stops slurmd.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "ack.h"
#include "checkpoint.h"
#include "config.h"
#include "diag.h"
#include "engine.h"
#include "identity.h"
#include "lifecycle.h"
#include "record.h"
#include "scontrol.h"
#include "slurmconf.h"

#include "compat.h"

SPANK_PLUGIN(restore_budget, 1);

#define OPT_MAX_FAILURES 1
#define OPT_RESTORE_RETRIES 2
#define OPT_CHECKPOINT_DIR 3
#define OPT_RESTORE_TIMEOUT 4

/* All the controller questions of one callback share this deadline: the
 * prolog and epilog must end well inside any PrologEpilogTimeout a site
 * sets (it is unlimited by default; docs/slurm-facts.md). */
#define RB_CALLBACK_DEADLINE_MS 10000

/* --- state of this process ------------------------------------------------- */

/* plugstack.conf arguments */
static char config_path[RB_PATH_MAX] = RB_DEFAULT_CONFIG_PATH;
static bool config_path_given;
static char slurm_bindir[RB_PATH_MAX] = RB_SLURM_BINDIR_DEFAULT;

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

/* --- logging --------------------------------------------------------------- */

static void slurm_sink(rb_log_level level, const char *msg)
{
	switch (level) {
	case RB_LOG_ERROR:
		slurm_error("%s", msg);
		break;
	case RB_LOG_WARNING:
	case RB_LOG_INFO:
		slurm_info("%s", msg);
		break;
	default:
		slurm_debug("%s", msg);
		break;
	}
}

/* --- options ----------------------------------------------------------------- */

static int option_cb(int val, const char *optarg, int remote);

static struct spank_option options[] = {
	{ "max-failures", "N",
	  "restore_budget: fail the job after N failures; every R failed "
	  "restores count as one (N or 'unlimited'; the admin caps it)",
	  1, OPT_MAX_FAILURES, option_cb },
	{ "restore-retries", "R",
	  "restore_budget: failed restores that count as one failure",
	  1, OPT_RESTORE_RETRIES, option_cb },
	{ "checkpoint-dir", "DIR",
	  "restore_budget: directory the job writes its checkpoints to "
	  "(relative to the working directory); the newest is handed to each "
	  "rerun as RESTORE_BUDGET_CHECKPOINT",
	  1, OPT_CHECKPOINT_DIR, option_cb },
	{ "restore-timeout", "SEC",
	  "restore_budget: a restore that runs SEC seconds counts as "
	  "confirmed (0 = only the job's acknowledgement confirms)",
	  1, OPT_RESTORE_TIMEOUT, option_cb },
	SPANK_OPTIONS_TABLE_END
};

static const char *option_name(int val)
{
	for (size_t i = 0; options[i].name; i++)
		if (options[i].val == val)
			return options[i].name;
	return "?";
}

/* The values sbatch was given: spank_option_getopt does not work in the
 * allocator's init_post_opt, so the option callbacks keep them. */
static rb_overrides submitted;
static bool submitted_any;

/* Checks the syntax; safe to call twice ("Slurm can call us twice"). */
static int option_cb(int val, const char *optarg, int remote)
{
	rb_overrides scratch = { 0 };
	rb_err err;

	if (val == OPT_CHECKPOINT_DIR) {
		if (!optarg || !optarg[0] || strlen(optarg) >= RB_PATH_MAX) {
			slurm_error(RB_PREFIX "--checkpoint-dir needs a directory "
				    "shorter than %d bytes", RB_PATH_MAX);
			return -1;
		}
		return 0;
	}
	if (rb_options_parse(&scratch, option_name(val), optarg, &err) < 0) {
		slurm_error(RB_PREFIX "%s", err.msg);
		return -1;
	}
	if (!remote) {
		rb_options_parse(&submitted, option_name(val), optarg, &err);
		submitted_any = true;
	}
	return 0;
}

/* The job's options, as far as this context can see them. */
static bool read_options(spank_t sp, rb_overrides *job, char *ckpt_dir,
			 size_t len)
{
	bool any = false;

	memset(job, 0, sizeof(*job));
	ckpt_dir[0] = '\0';
	for (size_t i = 0; options[i].name; i++) {
		char *value = NULL;
		rb_err err;

		if (spank_option_getopt(sp, &options[i], &value) !=
		    ESPANK_SUCCESS || !value)
			continue;
		any = true;
		if (options[i].val == OPT_CHECKPOINT_DIR)
			rb_strlcpy(ckpt_dir, value, len);
		else if (rb_options_parse(job, options[i].name, value, &err) < 0)
			rb_log(RB_LOG_ERROR, "%s (ignored)", err.msg);
	}
	return any;
}

/* --- helpers ------------------------------------------------------------------- */

static int parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "config=", 7) == 0) {
			if (rb_strlcpy(config_path, av[i] + 7,
				       sizeof(config_path)) < 0)
				return -1;
			config_path_given = true;
		} else if (strncmp(av[i], "slurm_bindir=", 13) == 0) {
			if (av[i][13] != '/' ||
			    rb_strlcpy(slurm_bindir, av[i] + 13,
				       sizeof(slurm_bindir)) < 0)
				return -1;
		} else {
			rb_log(RB_LOG_ERROR,
			       "plugstack.conf: unknown argument \"%s\" (known: config=PATH, slurm_bindir=/DIR/OF/SQUEUE/AND/SCONTROL)",
			       av[i]);
			return -1;
		}
	}
	return 0;
}

/* Load the config; the default path may be absent (built-in defaults). */
static rb_config *load_config(rb_err *err)
{
	rb_config *cfg = NULL;

	if (!config_path_given && access(config_path, F_OK) < 0 &&
	    errno == ENOENT)
		return rb_config_defaults();
	if (rb_config_load(config_path, &cfg, err) < 0)
		return NULL;
	return cfg;
}

static bool env_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < 0)
		return false;
	*out = v;
	return true;
}

static bool env_u32(const char *s, uint32_t *out)
{
	int64_t v;

	if (!env_int64(s, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v && *v ? v : fallback;
}

/* The cluster's name keys the ledger: the same job id on two clusters
 * sharing a state_dir must not share a budget. */
static const char *cluster_name(void)
{
	return env_or("SLURM_CLUSTER_NAME", "cluster");
}

/* --- the controller (squeue/scontrol, with a deadline) ----------------------- */

/*
 * Nothing here calls libslurm: on 24.11+ an RPC from the prolog or epilog
 * process is fatal there (libslurm is not initialised in it), and libslurm's
 * RPCs have no deadline. squeue and scontrol run as children instead, killed
 * at the callback's deadline (docs/slurm-facts.md, "Asking the controller").
 */
static rb_deadline callback_deadline;

/* Every callback that may ask the controller starts its clock here. */
static void start_clock(void)
{
	callback_deadline = rb_deadline_in(RB_CALLBACK_DEADLINE_MS);
}

static rb_controller controller(void)
{
	rb_controller c = { slurm_bindir, getenv("SLURM_CONF"),
			    callback_deadline };

	return c;
}

/* The job's account: the prolog's environment has SLURM_JOB_ACCOUNT when
 * the job has one; ask the controller only when it lacks it and the config
 * has accounts to match. */
static void controller_account(uint32_t job_id, char *buf, size_t len)
{
	rb_controller c = controller();
	rb_ctl_job info;
	rb_err err;

	buf[0] = '\0';
	if (rb_controller_job(&c, job_id, &info, &err) < 0) {
		rb_log(RB_LOG_INFO, "job %u: account unknown: %s", job_id,
		       err.msg);
		return;
	}
	rb_strlcpy(buf, info.account, len);
}

/* Preempted, or requeued by someone (scontrol requeue)? For the event log.
 * ctx points at the job id (an rb_detail_fn). */
static const char *controller_interruption(void *ctx)
{
	rb_controller c = controller();
	rb_ctl_job info;
	rb_err err;

	if (rb_controller_job(&c, *(uint32_t *)ctx, &info, &err) < 0) {
		rb_log(RB_LOG_INFO, "job %u: interruption cause unknown: %s",
		       *(uint32_t *)ctx, err.msg);
		return NULL;
	}
	if (!info.have_preempt)
		return NULL;
	return info.preempted ? "preempted" : "requeued";
}

/*
 * on_exhausted = "hold": rather than run an exhausted attempt only to refuse
 * it, the prolog that refuses it requeues the job held (as `scontrol
 * requeuehold` does) with the reason in its AdminComment, so an admin can
 * `restore-budget grant` and `scontrol release` it. (An epilog cannot do it
 * for a RequeueExit: the job is still COMPLETING then and the controller
 * refuses the update; verified on 22.05.) The refused attempt is never
 * charged, so the released job's next attempt runs on the granted budget.
 * If the controller cannot be reached in time, the attempt is refused in
 * task_init instead, as with on_exhausted = "fail".
 */
static void hold_exhausted(uint32_t job_id, const char *reason)
{
	char comment[RB_REASON_MAX + 64];
	rb_controller c = controller();
	rb_err err;

	snprintf(comment, sizeof(comment), "restore_budget: held: %s", reason);
	if (rb_controller_comment(&c, job_id, comment, &err) < 0)
		rb_log(RB_LOG_INFO, "job %u: cannot set AdminComment: %s",
		       job_id, err.msg);
	if (rb_controller_requeue_hold(&c, job_id, &err) < 0) {
		rb_log(RB_LOG_ERROR, "job %u: requeue-hold failed (%s); the attempt is refused instead",
		       job_id, err.msg);
		return;
	}
	rb_log(RB_LOG_WARNING, "job %u held: %s; 'restore-budget grant %u --failures N' then 'scontrol release %u'",
	       job_id, reason, job_id, job_id);
}

/* --- sbatch ---------------------------------------------------------------------- */

/* Refusing at submission is kinder than clamping at run time. */
static int allocator_check_caps(void)
{
	rb_config *cfg;
	rb_err err;
	int rc = 0;

	if (!submitted_any)
		return 0;
	cfg = load_config(&err);
	if (!cfg)
		return 0; /* unreadable here: clamped at run time instead */
	if (rb_config_check_caps(cfg, &submitted, &err) < 0) {
		slurm_error(RB_PREFIX "%s", err.msg);
		rc = -1;
	}
	rb_config_free(cfg);
	return rc;
}

/* Give the submission its identity, which Slurm keeps with the job across
 * requeues (identity.h). Without one the job is still tracked: the ledger
 * then tells reused ids apart by uid and ended attempts only. */
static void allocator_mark_submission(spank_t sp)
{
	char id[RB_SUBMISSION_MAX];

	if (rb_submission_new(id, sizeof(id)) < 0 ||
	    spank_job_control_setenv(sp, RB_SUBMISSION_VAR, id, 1) !=
		    ESPANK_SUCCESS)
		rb_log(RB_LOG_INFO, "cannot give this submission an identity; a reused job id is then told apart by uid and attempt only");
}

/* --- prolog and epilog (root, every node of the job) --------------------------- */

static bool job_is_tracked(const rb_config *cfg, bool has_options)
{
	return cfg->track == RB_TRACK_ALL || has_options;
}

static void prolog(spank_t sp)
{
	rb_overrides opts;
	char ckpt_dir[RB_PATH_MAX];
	char account[RB_NAME_MAX];
	char submission[RB_SUBMISSION_MAX];
	rb_job_info job = { 0 };
	rb_start_result res;
	rb_config *cfg;
	rb_err err;
	bool has_options;

	start_clock();
	cfg = load_config(&err);
	if (!cfg) {
		rb_log(RB_LOG_ERROR, "prolog: %s; job %s runs untracked (on_error)",
		       err.msg, env_or("SLURM_JOB_ID", "?"));
		return;
	}
	has_options = read_options(sp, &opts, ckpt_dir, sizeof(ckpt_dir));
	if (!job_is_tracked(cfg, has_options))
		goto out;
	if (!env_u32(getenv("SLURM_JOB_ID"), &job.job_id) ||
	    !env_u32(getenv("SLURM_JOB_UID"), &job.uid) ||
	    !env_u32(getenv("SLURM_JOB_GID"), &job.gid)) {
		rb_log(RB_LOG_ERROR, "prolog: SLURM_JOB_ID/UID/GID missing; job untracked");
		goto out;
	}
	if (!env_int64(getenv("SLURM_JOB_RESTART_COUNT"), &job.attempt))
		job.attempt = 0;
	job.cluster = cluster_name();
	job.user = env_or("SLURM_JOB_USER", "");
	job.partition = env_or("SLURM_JOB_PARTITION", NULL);
	job.account = env_or("SLURM_JOB_ACCOUNT", NULL);
	if (!job.account && cfg->n_accounts > 0) {
		controller_account(job.job_id, account, sizeof(account));
		job.account = account[0] ? account : NULL;
	}
	job.work_dir = env_or("SLURM_JOB_WORK_DIR", "");
	job.checkpoint_dir = ckpt_dir[0] ? ckpt_dir : NULL;
	job.submission = rb_submission_of(getenv("SPANK_" RB_SUBMISSION_VAR),
					  getenv("SLURM_JOB_SLUID"), submission,
					  sizeof(submission));
	job.options = opts;
	job.now = time(NULL);

	if (rb_lifecycle_start(cfg, &job, &res, &err) < 0) {
		rb_log(RB_LOG_ERROR, "prolog: job %u attempt %" PRId64 ": %s",
		       job.job_id, job.attempt, err.msg);
		goto out;
	}
	if (res.duplicate)
		goto out;
	if (res.decision == RB_DECISION_REFUSE &&
	    cfg->on_exhausted == RB_ON_EXHAUSTED_HOLD) {
		hold_exhausted(job.job_id, res.reason);
		goto out;
	}
	rb_log(res.decision == RB_DECISION_REFUSE ? RB_LOG_WARNING : RB_LOG_INFO,
	       "job %u attempt %" PRId64 ": %s%s", job.job_id, job.attempt,
	       res.reason,
	       res.decision == RB_DECISION_REFUSE ? " (refused in task_init)" : "");
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

/* PrologFlags from slurm.conf, read once per process (slurmconf.h). */
static unsigned prolog_flags(void)
{
	static int flags = -1;
	const char *path = env_or("SLURM_CONF", RB_SLURM_CONF_DEFAULT);
	rb_err err;

	if (flags < 0) {
		flags = rb_slurmconf_prolog_flags(path, &err);
		if (flags < 0) {
			rb_log(RB_LOG_INFO, "cannot read PrologFlags: %s; assuming none",
			       err.msg);
			flags = 0;
		}
	}
	return (unsigned)flags;
}

static void epilog(void)
{
	rb_config *cfg;
	rb_err err;
	uint32_t job_id;
	int64_t count = 0;
	int exit_code, sig;

	if (!env_u32(getenv("SLURM_JOB_ID"), &job_id))
		return;
	/* (Under RunInJob Slurm runs no SPANK epilog: nothing to check here,
	 * and slurm.conf is not read on this hot path.) */
	start_clock();
	cfg = load_config(&err);
	if (!cfg) {
		rb_log(RB_LOG_ERROR, "epilog: job %u: %s", job_id, err.msg);
		return;
	}
	env_int64(getenv("SLURM_JOB_RESTART_COUNT"), &count);
	parse_exit_code2(getenv("SLURM_JOB_EXIT_CODE2"), &exit_code, &sig);
	/* An untracked job has no record: nothing happens. Only an
	 * interruption costs a controller query (it is rare). */
	if (rb_lifecycle_epilog_fn(cfg, cluster_name(), job_id, count,
				   exit_code, sig, controller_interruption,
				   &job_id, time(NULL), &err) < 0)
		rb_log(RB_LOG_ERROR, "epilog: job %u: %s", job_id, err.msg);
	rb_config_free(cfg);
}

/* --- batch step ------------------------------------------------------------------ */

static bool is_batch_step(spank_t sp)
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

/* The job's restart count according to the controller, or -1. */
static int64_t controller_restart_count(uint32_t job_id)
{
	rb_controller c = controller();
	rb_ctl_job info;
	rb_err err;

	if (rb_controller_job(&c, job_id, &info, &err) < 0) {
		rb_log(RB_LOG_INFO, "job %u: restart count unknown: %s", job_id,
		       err.msg);
		return -1;
	}
	return info.have_restarts ? info.restarts : -1;
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

/* Runs with euid = the job's user: the checkpoint is found as the user. */
static void batch_user_init(spank_t sp)
{
	rb_overrides opts;
	char ckpt_dir[RB_PATH_MAX];
	char found[RB_PATH_MAX] = "";
	rb_record rec;
	rb_config *cfg;
	rb_err err;
	bool has_options;
	int rc;

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
	has_options = read_options(sp, &opts, ckpt_dir, sizeof(ckpt_dir));
	if (!job_is_tracked(cfg, has_options))
		goto out;
	if (prolog_flags() & RB_PF_RUN_IN_JOB) {
		/* untracked, as slurmd said at start; tell the job too */
		add_warning("this cluster runs PrologFlags=RunInJob, under which Slurm runs no SPANK prolog or epilog: job %u runs without a restore budget",
			    step.job_id);
		goto out;
	}
	{
		char name[RB_NAME_MAX];

		if (spank_getenv(sp, "SLURM_CLUSTER_NAME", name, sizeof(name)) !=
		    ESPANK_SUCCESS)
			rb_strlcpy(name, "cluster", sizeof(name));
		rb_strlcpy(step.cluster, name, sizeof(step.cluster));
	}
	rc = rb_lifecycle_read(cfg, step.cluster, step.job_id, &rec, &err);
	if (rc != 0) {
		step_error(cfg, rc > 0 ? "no ledger record (the prolog did not record this attempt)" :
					 err.msg);
		goto out;
	}
	if (record_is_another_jobs(sp, &rec)) {
		step_error(cfg, "the ledger's record with this job id is another job's (the prolog did not record this one)");
		goto out;
	}
	if (rec.budget.cur.end != RB_END_NONE) {
		rc = catch_up_start(cfg, &rec, &opts, ckpt_dir);
		if (rc == -2)
			goto out; /* could not give up root: export nothing */
		if (rc < 0) {
			step_error(cfg, "this attempt could not be recorded in the ledger (see slurmd.log)");
			goto out;
		}
	}
	step.attempt = rec.budget.cur.attempt;
	{
		/* The same resolution the prolog made: tell the job what was
		 * clamped (docs/rule.md, "Limits": "a warning in the job's stderr"). */
		char part[RB_NAME_MAX] = "", acct[RB_NAME_MAX] = "";
		char warn[RB_ERR_MAX] = "";
		rb_limits lim;

		if (spank_getenv(sp, "SLURM_JOB_PARTITION", part,
				 sizeof(part)) != ESPANK_SUCCESS)
			part[0] = '\0';
		if (spank_getenv(sp, "SLURM_JOB_ACCOUNT", acct,
				 sizeof(acct)) != ESPANK_SUCCESS)
			acct[0] = '\0';
		if (rb_config_resolve(cfg, part[0] ? part : NULL,
				      acct[0] ? acct : NULL, &opts, &lim, warn,
				      sizeof(warn)) > 0)
			add_warning("%s", warn);
	}
	if (rec.budget.cur.refused) {
		step.refuse = true;
		refuse_message(cfg, &rec);
	}
	if (ckpt_dir[0]) {
		rc = rb_checkpoint_find(rec.work_dir, ckpt_dir,
					cfg->checkpoint_pattern,
					cfg->checkpoint_latest, found,
					sizeof(found), &err);
		/* A directory the job has not created yet is no news, unless
		 * a checkpoint was already found in it once. */
		if (rc < 0 && !(errno == ENOENT && !rec.budget.checkpoint[0])) {
			add_warning("%s; handing out the last known checkpoint",
				    err.msg);
		}
		if (rc < 0)
			found[0] = '\0';
	}
	rb_strlcpy(step.checkpoint, found[0] ? found : rec.budget.checkpoint,
		   sizeof(step.checkpoint));
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
static void batch_post_fork(void)
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

/* Said at slurmd start: what the PrologFlags in force mean here, and what
 * asking the controller needs
 * (README "Slurm releases"). */
static void log_slurm_setup(void)
{
	unsigned flags = prolog_flags();

	if (flags & RB_PF_RUN_IN_JOB)
		rb_log(RB_LOG_ERROR, "PrologFlags=RunInJob is not supported: Slurm runs no SPANK prolog or epilog under it, so no attempt can be counted; every job runs untracked (no budget, no refusal) until RunInJob is removed from slurm.conf");
	else if (flags & RB_PF_ALLOC)
		rb_log(RB_LOG_INFO, "PrologFlags=%s: supported",
		       flags & RB_PF_CONTAIN ? "Contain" : "Alloc");
	for (size_t i = 0; i < 2; i++) {
		static const char *const tools[] = { "squeue", "scontrol" };
		char path[RB_PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/%s", slurm_bindir, tools[i]);
		if (access(path, X_OK) < 0)
			rb_log(RB_LOG_ERROR, "%s: %s: interruption causes, accounts missing from the prolog's environment and on_exhausted = \"hold\" need it (plugstack.conf argument slurm_bindir=DIR)",
			       path, strerror(errno));
	}
	rb_log(RB_LOG_INFO, "every controller question has a %d s deadline; set %s above it",
	       RB_CALLBACK_DEADLINE_MS / 1000, RB_SLURM_TIMEOUT_KEYS);
}

/* --- SPANK entry points -------------------------------------------------------- */

/* Every callback starts here: the prolog and epilog processes never run
 * slurm_spank_init (verified on 22.05), so nothing may depend on it. */
static void enter(int ac, char **av)
{
	static bool entered;

	if (entered)
		return;
	entered = true;
	rb_log_set_sink(slurm_sink);
	if (parse_args(ac, av) < 0)
		rb_log(RB_LOG_ERROR, "bad plugstack.conf arguments; using %s",
		       config_path);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	enter(ac, av);
	for (size_t i = 0; options[i].name; i++)
		if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS)
			rb_log(RB_LOG_ERROR, "cannot register --%s",
			       options[i].name);

	if (ctx == S_CTX_SLURMD) {
		/* A typo shows at daemon start; slurmd must stay up regardless. */
		rb_err err;
		rb_config *cfg = load_config(&err);

		if (!cfg)
			rb_log(RB_LOG_ERROR, "%s: jobs will run untracked or be refused (on_error) until it is fixed",
			       err.msg);
		else
			rb_log(RB_LOG_INFO, "config %s loaded (state_dir %s)",
			       cfg->path, cfg->state_dir);
		rb_config_free(cfg);
		log_slurm_setup();
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_context() != S_CTX_ALLOCATOR)
		return 0;
	allocator_mark_submission(sp);
	return allocator_check_caps();
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	prolog(sp);
	return 0; /* never: a failing prolog drains the node */
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_remote(sp) && is_batch_step(sp))
		batch_user_init(sp);
	return 0; /* never: a failing user_init drains the node */
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_remote(sp))
		batch_post_fork();
	return 0;
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

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	enter(ac, av);
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

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	(void)sp; /* the epilog reads only its environment */
	enter(ac, av);
	epilog();
	return 0; /* never: a failing epilog drains the node */
}
