/*
 * allocator.c - sbatch (the allocator context): refuse option values over
 * the caps, and give the submission its identity.
 */
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "rule/rule.h"

#include "glue.h"

/* Refusing at submission is kinder than clamping at run time. */
static int allocator_check_caps(void)
{
	rb_config *cfg;
	rb_err err;
	int rc = 0;

	if (!submitted_options())
		return 0;
	cfg = load_config(&err);
	if (!cfg)
		return 0; /* unreadable here: clamped at run time instead */
	if (rb_config_check_caps(cfg, submitted_options(), &err) < 0) {
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

int allocator_post_opt(spank_t sp)
{
	allocator_mark_submission(sp);
	return allocator_check_caps();
}
