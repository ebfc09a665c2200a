/*
 * scontrol.c - questions to the controller, each with a deadline
 * (scontrol.h; docs/slurm-facts.md, "Asking the controller").
 */
#include "scontrol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next '|'-terminated field of squeue's output, or NULL. */
static const char *next_field(const char *p, char *val, size_t len)
{
	size_t n = strcspn(p, "|\n");

	if (p[n] != '|' || n >= len)
		return NULL;
	memcpy(val, p, n);
	val[n] = '\0';
	return p + n + 1;
}

int rb_squeue_parse_job(const char *text, uint32_t job_id, rb_ctl_job *out)
{
	char val[RB_NAME_MAX], id[16];
	const char *p = text;
	char *end;
	long long n;

	memset(out, 0, sizeof(*out));
	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	p = next_field(p, val, sizeof(val));
	if (!p || strcmp(val, id) != 0)
		return -1;
	p = next_field(p, val, sizeof(val));
	if (!p)
		return -1;
	errno = 0;
	n = strtoll(val, &end, 10);
	if (!errno && end != val && !*end && n >= 0) {
		out->have_restarts = true;
		out->restarts = n;
	}
	p = next_field(p, val, sizeof(val));
	if (!p)
		return -1;
	/* a time ("2026-12-01T10:00:05"), or N/A, None, NOT_SET, UNLIMITED */
	out->have_preempt = true;
	out->preempted = val[0] >= '0' && val[0] <= '9';
	/* the account is last: the only field a user names freely */
	if (next_field(p, val, sizeof(val)) && strcmp(val, "(null)") != 0)
		rb_strlcpy(out->account, val, sizeof(out->account));
	return 0;
}

static int run(const rb_controller *c, const char *const argv[], char *out,
	       size_t outlen, rb_err *err)
{
	char conf[RB_PATH_MAX + 16];
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
			       "SLURM_TIME_FORMAT=standard", NULL, NULL };
	char scratch[256];

	if (c->slurm_conf && c->slurm_conf[0]) {
		snprintf(conf, sizeof(conf), "SLURM_CONF=%s", c->slurm_conf);
		envp[3] = conf;
	}
	if (!out) {
		out = scratch;
		outlen = sizeof(scratch);
	}
	if (rb_deadline_left(c->deadline) <= 0)
		return rb_err_set(err, "no time left to ask the controller");
	return rb_child_run(argv, envp, c->deadline, out, outlen, err) == 0 ?
		       0 : -1;
}

int rb_controller_job(const rb_controller *c, uint32_t job_id,
		      rb_ctl_job *out, rb_err *err)
{
	char id[16], prog[RB_PATH_MAX + 16];
	/* squeue, not scontrol: scontrol prints PreemptTime only for a job
	 * that is running, and the epilog asks while it is being requeued */
	const char *argv[] = { prog, "--noheader", "--states=all", "--jobs", id,
			       "--Format=JobID:0|,RestartCnt:0|,PreemptTime:0|,Account:0|",
			       NULL };
	char text[RB_NAME_MAX * 2];
	int rc = -1;

	snprintf(prog, sizeof(prog), "%s/squeue", c->bindir);
	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	if (run(c, argv, text, sizeof(text), err) == 0) {
		rc = rb_squeue_parse_job(text, job_id, out);
		if (rc < 0)
			rb_err_setf(err, "squeue --jobs %s: no such job, or unexpected output",
				    id);
	}
	return rc;
}

int rb_controller_admin_comment(const rb_controller *c, uint32_t job_id,
				char *out, size_t len, rb_err *err)
{
	char id[16], prog[RB_PATH_MAX + 16];
	/* squeue, the comment last: it may hold spaces, '|' and newlines,
	 * which `scontrol show job` cannot delimit (docs/slurm-facts.md) */
	const char *argv[] = { prog, "--noheader", "--states=all", "--jobs", id,
			       "--Format=JobID:0|,admin_comment:0|", NULL };
	char text[RB_ADMIN_COMMENT_MAX + 64];

	snprintf(prog, sizeof(prog), "%s/squeue", c->bindir);
	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	if (run(c, argv, text, sizeof(text), err) < 0)
		return -1;
	if (strlen(text) >= sizeof(text) - 1)
		return rb_err_set(err, "squeue --jobs %s: AdminComment longer than %d bytes",
				  id, RB_ADMIN_COMMENT_MAX);
	if (rb_admin_comment_parse(text, job_id, out, len) < 0)
		return rb_err_set(err, "squeue --jobs %s: no such job, or unexpected output",
				  id);
	return 0;
}

int rb_controller_comment(const rb_controller *c, uint32_t job_id,
			  const char *comment, rb_err *err)
{
	char id[32], arg[RB_ADMIN_COMMENT_MAX + 64], prog[RB_PATH_MAX + 16];
	const char *argv[] = { prog, "update", id, arg, NULL };

	snprintf(prog, sizeof(prog), "%s/scontrol", c->bindir);

	snprintf(id, sizeof(id), "JobId=%" PRIu32, job_id);
	snprintf(arg, sizeof(arg), "AdminComment=%s", comment);
	return run(c, argv, NULL, 0, err);
}

int rb_controller_requeue_hold(const rb_controller *c, uint32_t job_id,
			       rb_err *err)
{
	char id[16], prog[RB_PATH_MAX + 16];
	const char *argv[] = { prog, "requeuehold", id, NULL };

	snprintf(prog, sizeof(prog), "%s/scontrol", c->bindir);

	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	return run(c, argv, NULL, 0, err);
}
