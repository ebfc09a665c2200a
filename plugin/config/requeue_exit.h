/*
 * requeue_exit.h - the code a job exits with when its restore fails, so
 * that Slurm requeues it (RESTORE_BUDGET_REQUEUE_EXIT; docs/rule.md, "The
 * requeue code"), and the check of it against slurm.conf's RequeueExit.
 * Pure: slurm.conf is read by the caller (slurmconf.h).
 */
#ifndef RB_REQUEUE_EXIT_H
#define RB_REQUEUE_EXIT_H

#include <stddef.h>

#include "config.h"
#include "slurm/slurm.h"

/*
 * The code: cfg's requeue_exit if set, else the first code of RequeueExit
 * (slurm NULL: slurm.conf could not be read), else 0 (unknown: the job is
 * not told one).
 */
int rb_requeue_exit_of(const rb_config *cfg, const rb_requeue_exit *slurm);

/*
 * The warning of check-config when cfg sets requeue_exit to a code that
 * slurm.conf (at slurm_path, read into slurm) does not requeue: one line
 * naming both files, the code, the RequeueExit list and what to do. 1 and
 * the line in buf, or 0 (nothing to say: buf is "").
 */
int rb_requeue_exit_warning(const rb_config *cfg, const rb_requeue_exit *slurm,
			    const char *slurm_path, char *buf, size_t len);

#endif
