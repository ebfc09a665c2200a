/*
 * options.c - the job options (sbatch --max-failures ...): registered in
 * every context, checked in sbatch, read in the prolog and the batch step.
 */
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "glue.h"

#define OPT_MAX_FAILURES 1
#define OPT_RESTORE_RETRIES 2
#define OPT_CHECKPOINT_DIR 3
#define OPT_RESTORE_TIMEOUT 4
#define OPT_MAX_INTERRUPTIONS 5

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
	  "(relative to the working directory; %a the array task id, %A the "
	  "array's job id, %j the job id); the newest is handed to each "
	  "rerun as RESTORE_BUDGET_CHECKPOINT",
	  1, OPT_CHECKPOINT_DIR, option_cb },
	{ "restore-timeout", "SEC",
	  "restore_budget: a restore that runs SEC seconds counts as "
	  "confirmed (0 = only the job's acknowledgement confirms)",
	  1, OPT_RESTORE_TIMEOUT, option_cb },
	{ "max-interruptions", "N",
	  "restore_budget: refuse the rerun after more than N interruptions "
	  "(preemptions, requeues; N or 'unlimited'; the admin caps it)",
	  1, OPT_MAX_INTERRUPTIONS, option_cb },
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

const rb_overrides *submitted_options(void)
{
	return submitted_any ? &submitted : NULL;
}

void register_options(spank_t sp)
{
	for (size_t i = 0; options[i].name; i++)
		if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS)
			rb_log(RB_LOG_ERROR, "cannot register --%s",
			       options[i].name);
}

/* The job's options, as far as this context can see them. */
bool read_options(spank_t sp, rb_overrides *job, char *ckpt_dir,
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
