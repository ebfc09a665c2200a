/*
 * ack.c - the job's acknowledgement file and the look for it as the job's
 * user (see ack.h and docs/security.md, "The acknowledgement").
 */
#include "ack.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rule/rule.h"

/* util-linux (essential on Debian) and POSIX sh: present on every node */
#define SETPRIV "/usr/bin/setpriv"
#define SH "/bin/sh"

/* The child's answers; any other status is setpriv or sh failing. */
#define SEEN_YES 10
#define SEEN_NO 11

int rb_ack_path(const char *work_dir, const char *checkpoint_dir,
		const char *cluster, uint32_t job_id, int64_t attempt,
		char *buf, size_t len)
{
	const char *base = work_dir ? work_dir : "";
	const char *sub = checkpoint_dir ? checkpoint_dir : "";
	int n;

	if (sub[0] == '/') {
		base = sub;
		sub = "";
	}
	if (base[0] != '/')
		return -1;
	n = snprintf(buf, len, "%s%s%s/" RB_ACK_PREFIX "%s.%u.%" PRId64, base,
		     sub[0] ? "/" : "", sub, cluster, job_id, attempt);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int rb_ack_seen(const char *path, uint32_t uid, uint32_t gid,
		rb_deadline deadline, rb_err *err)
{
	/* $1 is the path: never part of the script text. The name itself
	 * must be the user's regular file, not a link (test -f and test -O
	 * follow one): in a shared directory another user may plant a link
	 * there to one of the user's files (README, "A shared checkpoint
	 * directory"). */
	static const char script[] =
		"if test -f \"$1\" && ! test -h \"$1\" && test -O \"$1\"; then exit 10; fi; exit 11";
	static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
	char ruid[32], rgid[32], out[64];
	const char *as_user[] = { SETPRIV, ruid, rgid, "--init-groups", "--",
				  SH, "-c", script, "rb-ack", path, NULL };
	const char *as_self[] = { SH, "-c", script, "rb-ack", path, NULL };
	rb_deadline mine = rb_deadline_in(RB_ACK_CHECK_MS);
	int rc;

	if (path[0] != '/')
		return rb_err_set(err, "acknowledgement path %s is not absolute",
				  path);
	snprintf(ruid, sizeof(ruid), "--reuid=%u", uid);
	snprintf(rgid, sizeof(rgid), "--regid=%u", gid);
	/* the tighter of the caller's deadline and our own */
	rc = rb_child_run(geteuid() == uid && getegid() == gid ? as_self :
								 as_user,
			  envp, mine < deadline ? mine : deadline, out,
			  sizeof(out), err);
	if (rc == SEEN_YES)
		return 1;
	if (rc == SEEN_NO)
		return 0;
	if (rc >= 0) {
		char why[sizeof(err->msg)];

		rb_strlcpy(why, err->msg, sizeof(why));
		rb_err_setf(err, "looking for %s as uid %u: %s", path, uid, why);
	}
	return -1;
}

/*
 * The look for the current file runs as the job's user with its own
 * deadline: this runs under the job's lock, which other nodes' prologs and
 * epilogs wait for at most RB_LEDGER_LOCK_WAIT_MS (longer than
 * RB_ACK_CHECK_MS).
 */
bool rb_ack_confirms(const rb_record *rec)
{
	char path[RB_PATH_MAX + 128];
	rb_err err;
	int rc;

	if (rb_ack_path(rec->work_dir, rec->checkpoint_dir, rec->cluster,
			rec->job_id, rec->budget.cur.attempt, path,
			sizeof(path)) < 0)
		return false;
	rc = rb_ack_seen(path, rec->uid, rec->gid,
			 rb_deadline_in(RB_ACK_CHECK_MS), &err);
	if (rc < 0)
		rb_log(RB_LOG_WARNING, "job %u: %s; the attempt counts as not acknowledged",
		       rec->job_id, err.msg);
	return rc == 1;
}
