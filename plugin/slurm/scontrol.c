/*
 * scontrol.c - questions to the controller, each with a deadline
 * (scontrol.h; docs/slurm-facts.md, "Asking the controller").
 */
#define _XOPEN_SOURCE 700 /* strptime */
#include "scontrol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"

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

rb_job_ref rb_job_ref_of(uint32_t job_id, uint32_t array_job_id,
			 uint32_t array_task_id)
{
	const uint32_t no_val = 0xfffffffe; /* Slurm's NO_VAL */
	rb_job_ref r = { job_id, array_job_id, array_task_id };

	if (array_job_id == 0 || array_job_id == no_val ||
	    array_task_id == no_val) {
		r.array_job_id = 0;
		r.array_task_id = 0;
	}
	return r;
}

static const char *addr_of(const rb_job_ref *job, char *out)
{
	return rb_job_addr(job->job_id, job->array_job_id, job->array_task_id,
			   out);
}

/* The fields after the head of the job's line. */
static int parse_fields(const char *p, rb_ctl_job *out)
{
	char val[RB_NAME_MAX];
	char *end;
	long long n;

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

int rb_squeue_parse_job(const char *text, const rb_job_ref *job,
			rb_ctl_job *out)
{
	char addr[RB_JOB_ADDR_MAX];
	const char *line = NULL;
	size_t h;

	memset(out, 0, sizeof(*out));
	addr_of(job, addr);
	/* one line a job (no field here holds a newline) */
	for (const char *p = text; p; p = strchr(p, '\n')) {
		p += *p == '\n';
		h = rb_squeue_head(p, job->job_id, addr);
		if (h && line)
			return -1; /* listed twice: which is it? */
		if (h)
			line = p + h;
	}
	if (!line || parse_fields(line, out) < 0) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
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

int rb_controller_job(const rb_controller *c, const rb_job_ref *job,
		      rb_ctl_job *out, rb_err *err)
{
	char id[RB_JOB_ADDR_MAX], prog[RB_PATH_MAX + 16];
	/* squeue, not scontrol: scontrol prints PreemptTime only for a job
	 * that is running, and the epilog asks while it is being requeued.
	 * --jobs A_T lists that task alone (a bare array id: every task) */
	const char *argv[] = { prog, "--noheader", "--states=all", "--jobs", id,
			       "--Format=JobID:0|,JobArrayID:0|,RestartCnt:0|,PreemptTime:0|,Account:0|",
			       NULL };
	char text[RB_NAME_MAX * 2];
	int rc = -1;

	snprintf(prog, sizeof(prog), "%s/squeue", c->bindir);
	addr_of(job, id);
	if (run(c, argv, text, sizeof(text), err) == 0) {
		rc = rb_squeue_parse_job(text, job, out);
		if (rc < 0)
			rb_err_setf(err, "squeue --jobs %s: no such job, or unexpected output",
				    id);
	}
	return rc;
}

/* squeue's line of the job with `format` (its last field the comment:
 * it may hold spaces, '|' and newlines, which `scontrol show job` cannot
 * delimit; docs/slurm-facts.md), what follows the job's head into out
 * (len bytes; the text is static: one question at a time). 0 or -1. */
static int ask_comment(const rb_controller *c, const rb_job_ref *job,
		       const char *format, char *out, size_t len, rb_err *err)
{
	char id[RB_JOB_ADDR_MAX], prog[RB_PATH_MAX + 16];
	const char *argv[] = { prog, "--noheader", "--states=all", "--jobs", id,
			       format, NULL };
	static char text[RB_ADMIN_COMMENT_MAX + 128];
	int rc;

	snprintf(prog, sizeof(prog), "%s/squeue", c->bindir);
	addr_of(job, id);
	if (run(c, argv, text, sizeof(text), err) < 0)
		return -1;
	if (strlen(text) >= sizeof(text) - 1)
		return rb_err_set(err, "squeue --jobs %s: AdminComment longer than %d bytes",
				  id, RB_ADMIN_COMMENT_MAX);
	rc = rb_admin_comment_parse(text, job->job_id, id, out, len);
	if (rc > 0)
		return rb_err_set(err, "squeue --jobs %s listed other jobs too",
				  id);
	if (rc < 0)
		return rb_err_set(err, "squeue --jobs %s: no such job, or unexpected output",
				  id);
	return 0;
}

int rb_controller_admin_comment(const rb_controller *c, const rb_job_ref *job,
				char *out, size_t len, rb_err *err)
{
	return ask_comment(c, job,
			   "--Format=JobID:0|,JobArrayID:0|,admin_comment:0|",
			   out, len, err);
}

/* "2026-12-02T16:21:53|" (SLURM_TIME_FORMAT=standard, local time) at p:
 * past its '|', *t its unix time (0 for "Unknown" or "None"). NULL if p
 * holds no field. */
static const char *submit_time_of(const char *p, int64_t *t)
{
	const char *bar = strchr(p, '|');
	struct tm tm;
	char *end;

	*t = 0;
	if (!bar)
		return NULL;
	memset(&tm, 0, sizeof(tm));
	end = strptime(p, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == bar) {
		tm.tm_isdst = -1;
		*t = (int64_t)mktime(&tm);
		if (*t < 0)
			*t = 0;
	}
	return bar + 1;
}

int rb_budget_read_split(const char *text, rb_ctl_job *info, char *out,
			 size_t len)
{
	const char *p = text, *q;
	char *end;
	long long n;
	size_t s;

	memset(info, 0, sizeof(*info));
	errno = 0;
	n = strtoll(p, &end, 10);
	if (errno || end == p || *end != '|' || n < 0 || *p == '-' || *p == '+')
		return -1;
	info->have_restarts = true;
	info->restarts = n;
	q = end + 1;
	s = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
	if (s == 0 || s >= sizeof(info->state) || q[s] != '|')
		return -1;
	memcpy(info->state, q, s);
	info->state[s] = '\0';
	q += s + 1;
	q = submit_time_of(q, &info->submit_time);
	if (!q)
		return -1;
	if (strcmp(q, "(null)") == 0)
		q = "";
	return rb_strlcpy(out, q, len) < 0 ? -1 : 0;
}

int rb_controller_budget_read(const rb_controller *c, const rb_job_ref *job,
			      rb_ctl_job *info, char *out, size_t len,
			      rb_err *err)
{
	/* before the comment only fields no user names: a number, a state,
	 * a time */
	static char rest[RB_ADMIN_COMMENT_MAX + 64];
	char id[RB_JOB_ADDR_MAX];

	if (ask_comment(c, job, "--Format=JobID:0|,JobArrayID:0|,RestartCnt:0|,StateCompact:0|,SubmitTime:0|,admin_comment:0|",
			rest, sizeof(rest), err) < 0)
		return -1;
	if (rb_budget_read_split(rest, info, out, len) < 0)
		return rb_err_set(err, "squeue --jobs %s: unexpected output",
				  addr_of(job, id));
	return 0;
}

int rb_controller_comment(const rb_controller *c, const rb_job_ref *job,
			  const char *comment, rb_err *err)
{
	char id[RB_JOB_ADDR_MAX + 8], arg[RB_ADMIN_COMMENT_MAX + 64];
	char addr[RB_JOB_ADDR_MAX], prog[RB_PATH_MAX + 16];
	const char *argv[] = { prog, "update", id, arg, NULL };

	snprintf(prog, sizeof(prog), "%s/scontrol", c->bindir);
	snprintf(id, sizeof(id), "JobId=%s", addr_of(job, addr));
	snprintf(arg, sizeof(arg), "AdminComment=%s", comment);
	return run(c, argv, NULL, 0, err);
}

int rb_controller_requeue_hold(const rb_controller *c, const rb_job_ref *job,
			       rb_err *err)
{
	char id[RB_JOB_ADDR_MAX], prog[RB_PATH_MAX + 16];
	const char *argv[] = { prog, "requeuehold", id, NULL };

	snprintf(prog, sizeof(prog), "%s/scontrol", c->bindir);
	addr_of(job, id);
	return run(c, argv, NULL, 0, err);
}
