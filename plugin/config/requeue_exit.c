/*
 * requeue_exit.c - the requeue code and its check (requeue_exit.h).
 */
#include "requeue_exit.h"

#include <stdio.h>

int rb_requeue_exit_of(const rb_config *cfg, const rb_requeue_exit *slurm)
{
	if (cfg->requeue_exit > 0)
		return cfg->requeue_exit;
	if (slurm && slurm->set && slurm->first > 0)
		return slurm->first;
	return 0;
}

int rb_requeue_exit_warning(const rb_config *cfg, const rb_requeue_exit *slurm,
			    const char *slurm_path, char *buf, size_t len)
{
	int code = cfg->requeue_exit;

	buf[0] = '\0';
	if (code <= 0 || !slurm || rb_requeue_exit_has(slurm, code))
		return 0;
	if (!slurm->set)
		snprintf(buf, len,
			 "warning: requeue_exit = %d in %s, but %s sets no "
			 "RequeueExit: Slurm will not requeue a job that exits "
			 "%d after a failed restore (add RequeueExit=%d to %s "
			 "and run scontrol reconfigure, or remove requeue_exit)",
			 code, cfg->path, slurm_path, code, code, slurm_path);
	else
		snprintf(buf, len,
			 "warning: requeue_exit = %d in %s is not in "
			 "RequeueExit=%s of %s: Slurm will not requeue a job "
			 "that exits %d after a failed restore (set requeue_exit "
			 "to one of %s, or add %d to RequeueExit and run "
			 "scontrol reconfigure)",
			 code, cfg->path, slurm->text, slurm_path, code,
			 slurm->text, code);
	return 1;
}
