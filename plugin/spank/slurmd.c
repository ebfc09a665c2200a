/*
 * slurmd.c - slurmd start: load and check the config, say what the
 * PrologFlags and the controller tools in force mean. Never fails: an
 * error here would stop slurmd.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "slurm/slurm.h"

#include "compat.h"
#include "glue.h"

/* Said at slurmd start: what the PrologFlags in force mean here, and what
 * asking the controller needs (README "Slurm releases"). */
static void log_slurm_setup(const rb_config *cfg)
{
	unsigned flags = prolog_flags();

	if ((flags & RB_PF_RUN_IN_JOB) && cfg && cfg->store == RB_STORE_CONTROLLER)
		rb_log(RB_LOG_INFO, "PrologFlags=RunInJob: supported (store = \"controller\" needs no prolog or epilog)");
	else if (flags & RB_PF_RUN_IN_JOB)
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

void slurmd_init(void)
{
	/* A typo shows at daemon start; slurmd must stay up regardless. */
	rb_err err;
	rb_config *cfg = load_config(&err);

	if (!cfg)
		rb_log(RB_LOG_ERROR, "%s: jobs will run untracked or be refused (on_error) until it is fixed",
		       err.msg);
	else if (cfg->store == RB_STORE_CONTROLLER)
		rb_log(RB_LOG_INFO, "config %s loaded (store controller: each job's budget in its AdminComment)",
		       cfg->path);
	else
		rb_log(RB_LOG_INFO, "config %s loaded (state_dir %s)",
		       cfg->path, cfg->state_dir);
	log_slurm_setup(cfg);
	rb_config_free(cfg);
}
