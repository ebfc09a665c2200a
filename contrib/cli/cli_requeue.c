/*
 * cli_requeue.c - check-config's requeue_exit: the code a job exits with
 * when its restore fails, compared with slurm.conf's RequeueExit where
 * that file is readable (docs/rule.md, "The requeue code").
 */
#include "cli.h"

#include <stdio.h>

#include "config/config.h"

void cli_requeue_check(const rb_config *cfg, cli_requeue *out)
{
	const char *conf = cli_slurm_conf();
	rb_requeue_exit slurm;
	rb_err err;
	bool readable;

	out->value[0] = out->warning[0] = '\0';
	readable = rb_slurmconf_requeue_exit(conf, &slurm, &err) == 0;
	out->code = rb_requeue_exit_of(cfg, readable ? &slurm : NULL);
	if (out->code == 0)
		return;
	if (cfg->requeue_exit == 0)
		snprintf(out->value, sizeof(out->value),
			 "%d (the first of RequeueExit=%s in %s)", out->code,
			 slurm.text, conf);
	else if (!readable)
		snprintf(out->value, sizeof(out->value),
			 "%d (not compared with RequeueExit: %s)", out->code,
			 err.msg);
	else
		snprintf(out->value, sizeof(out->value), "%d", out->code);
	if (readable)
		rb_requeue_exit_warning(cfg, &slurm, conf, out->warning,
					sizeof(out->warning));
}

void cli_requeue_json(json_object *o, const cli_requeue *r)
{
	json_object *arr;

	if (r->code > 0)
		json_object_object_add(o, "requeue_exit",
				       json_object_new_int(r->code));
	if (!r->warning[0])
		return;
	arr = json_object_new_array();
	json_object_array_add(arr, cli_json_string(r->warning));
	json_object_object_add(o, "warnings", arr);
}
