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

#define RB_SHOW_JOB_MAX 16384

/* The value of " key=" in text, if it occurs exactly once: a field forged
 * in a job name or comment makes it occur twice, and then we know nothing. */
static bool field(const char *text, const char *key, char *val, size_t len)
{
	char pat[64];
	const char *hit = NULL, *p = text;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", key);
	while ((p = strstr(p, pat)) != NULL) {
		if (hit)
			return false;
		hit = p;
		p += strlen(pat);
	}
	if (!hit)
		return false;
	hit += strlen(pat);
	n = strcspn(hit, " \n");
	if (n >= len)
		return false;
	memcpy(val, hit, n);
	val[n] = '\0';
	return true;
}

int rb_scontrol_parse_job(const char *text, uint32_t job_id, rb_ctl_job *out)
{
	char head[32], val[RB_NAME_MAX];
	char *end;
	long long n;

	memset(out, 0, sizeof(*out));
	snprintf(head, sizeof(head), "JobId=%" PRIu32 " ", job_id);
	if (strncmp(text, head, strlen(head)) != 0)
		return -1;
	if (field(text, "Restarts", val, sizeof(val))) {
		errno = 0;
		n = strtoll(val, &end, 10);
		if (!errno && end != val && !*end && n >= 0) {
			out->have_restarts = true;
			out->restarts = n;
		}
	}
	if (field(text, "PreemptTime", val, sizeof(val))) {
		out->have_preempt = true;
		out->preempted = strcmp(val, "None") != 0 &&
				 strcmp(val, "Unknown") != 0;
	}
	if (field(text, "Account", val, sizeof(val)) &&
	    strcmp(val, "(null)") != 0)
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
	char id[16];
	const char *argv[] = { c->scontrol, "-o", "show", "job", id, NULL };
	char *text = malloc(RB_SHOW_JOB_MAX);
	int rc = -1;

	if (!text)
		return rb_err_set(err, "out of memory");
	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	if (run(c, argv, text, RB_SHOW_JOB_MAX, err) == 0) {
		rc = rb_scontrol_parse_job(text, job_id, out);
		if (rc < 0)
			rb_err_setf(err, "scontrol show job %s: unexpected output",
				    id);
	}
	free(text);
	return rc;
}

int rb_controller_comment(const rb_controller *c, uint32_t job_id,
			  const char *comment, rb_err *err)
{
	char id[32], arg[RB_REASON_MAX + 64];
	const char *argv[] = { c->scontrol, "update", id, arg, NULL };

	snprintf(id, sizeof(id), "JobId=%" PRIu32, job_id);
	snprintf(arg, sizeof(arg), "AdminComment=%s", comment);
	return run(c, argv, NULL, 0, err);
}

int rb_controller_requeue_hold(const rb_controller *c, uint32_t job_id,
			       rb_err *err)
{
	char id[16];
	const char *argv[] = { c->scontrol, "requeuehold", id, NULL };

	snprintf(id, sizeof(id), "%" PRIu32, job_id);
	return run(c, argv, NULL, 0, err);
}
