/*
 * lifecycle.c - apply a job's life events to its ledger record.
 *
 * Every update is: lock, read, engine, write, append, unlock. A record that
 * cannot be read (corrupt, torn, unknown version) is an error, never a fresh
 * budget: the caller applies on_error.
 */
#include "lifecycle.h"

#include "user/user.h"
#include "rule/rule.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

#define EVENT_MAX (3 * RB_PATH_MAX + 2048)

/* --- event lines ------------------------------------------------------------ */

typedef struct {
	char buf[EVENT_MAX];
	size_t len;
	bool overflow;
} event_line;

/* Not `= { 0 }`: zeroing the 14 KB buffer on every event costs more than
 * the rest of the line building. */
static void ev_init(event_line *e)
{
	e->len = 0;
	e->overflow = false;
	e->buf[0] = '\0';
}

/* Appends "[ ]key=value" (what snprintf "%s%s=%s" gave, without its cost:
 * a line is a dozen of these on every event). */
static void ev_raw(event_line *e, const char *key, const char *value)
{
	size_t klen, vlen, need;

	if (e->overflow)
		return;
	klen = strlen(key);
	vlen = strlen(value);
	need = (e->len ? 1 : 0) + klen + 1 + vlen;
	/* keep one byte for the NUL */
	if (need >= sizeof(e->buf) - e->len) {
		e->overflow = true;
		return;
	}
	if (e->len)
		e->buf[e->len++] = ' ';
	memcpy(e->buf + e->len, key, klen);
	e->len += klen;
	e->buf[e->len++] = '=';
	memcpy(e->buf + e->len, value, vlen);
	e->len += vlen;
	e->buf[e->len] = '\0';
}

/* Bytes an event keeps for its fields after its last string value. */
#define EV_RESERVE 1024

/* A string value, escaped (any byte round-trips). One that would leave the
 * line no room for the fields after it (two longest paths, each escaped to
 * 3 bytes a byte) is replaced by its digest and logged: an event that does
 * not fit would fail the update, and the job must stay tracked
 * (docs/security.md, "Names"). */
static void ev_str(event_line *e, const char *key, const char *value)
{
	const char *v = value ? value : "";
	char esc[3 * RB_PATH_MAX + 1];
	ssize_t n = rb_kv_escape(v, esc, sizeof(esc));

	if (n < 0 || e->len + strlen(key) + (size_t)n + 2 + EV_RESERVE >=
			     sizeof(e->buf)) {
		snprintf(esc, sizeof(esc), "rb-digest:%016" PRIx64 ":%zu",
			 rb_checksum(v, strlen(v)), strlen(v));
		rb_log(RB_LOG_WARNING, "an event's %s of %zu bytes does not fit its line: logged as %s",
		       key, strlen(v), esc);
	}
	ev_raw(e, key, esc);
}

static void ev_int(event_line *e, const char *key, int64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, v);
	ev_raw(e, key, num);
}

static void ev_pair(event_line *e, const char *key, int64_t from, int64_t to)
{
	char num[64];

	snprintf(num, sizeof(num), "%" PRId64 "->%" PRId64, from, to);
	ev_raw(e, key, num);
}

static void ev_limits(event_line *e, const rb_limits *l)
{
	ev_int(e, "max_failures", l->max_failures);
	ev_int(e, "restore_retry_num", l->restore_retry_num);
	ev_int(e, "restore_timeout", l->restore_timeout);
	ev_raw(e, "accounting", rb_accounting_name(l->accounting));
	ev_int(e, "count_preemptions", l->count_preemptions);
	/* only when set: events of configs without it stay as they were */
	if (l->max_interruptions >= 0)
		ev_int(e, "max_interruptions", l->max_interruptions);
}

/* --- one locked update ------------------------------------------------------- */

typedef struct {
	rb_ledger *ledger;
	rb_job *job;
	rb_record rec;
	bool found;
} locked_record;

static int lock_and_read(const rb_config *cfg, const char *cluster,
			 uint32_t job_id, locked_record *lr, rb_err *err)
{
	int rc;

	/* Not memset: lr->rec (about 25 KB) is filled by the read (the record,
	 * or rb_record_init when there is none). */
	lr->ledger = NULL;
	lr->job = NULL;
	lr->found = false;
	if (rb_ledger_open(cfg->state_dir, cluster, RB_LEDGER_WRITE,
			   &lr->ledger, err) < 0)
		return -1;
	if (rb_ledger_lock(lr->ledger, job_id, &lr->job, err) < 0)
		goto fail;
	rc = rb_ledger_read_locked(lr->job, &lr->rec, err);
	if (rc < 0)
		goto fail;
	lr->found = rc == 0;
	return 0;
fail:
	if (lr->job)
		rb_ledger_unlock(lr->job);
	rb_ledger_close(lr->ledger);
	lr->job = NULL;
	lr->ledger = NULL;
	lr->found = false;
	return -1;
}

static void unlock_close(locked_record *lr)
{
	if (lr->job)
		rb_ledger_unlock(lr->job);
	if (lr->ledger)
		rb_ledger_close(lr->ledger);
	lr->job = NULL;
	lr->ledger = NULL;
}

/* Write the record first, then the event: a crash between them leaves a
 * record that is right and an event log that is one line short, never an
 * event for a change that did not happen. */
static int commit(locked_record *lr, const event_line *e, rb_err *err)
{
	if (rb_ledger_write(lr->job, &lr->rec, err) < 0)
		return -1;
	if (e->overflow)
		return rb_err_set(err, "event line too long for job %u",
				  lr->rec.job_id);
	return rb_ledger_append(lr->job, e->buf, err);
}

/* --- events -------------------------------------------------------------------- */

static void fill_job_fields(rb_record *rec, const rb_job_info *job)
{
	rb_strlcpy(rec->cluster, job->cluster, sizeof(rec->cluster));
	rec->job_id = job->job_id;
	rec->array_job_id = job->array_job_id;
	rec->array_task_id = job->array_job_id ? job->array_task_id : 0;
	rec->uid = job->uid;
	rec->gid = job->gid;
	rb_strlcpy(rec->user, job->user ? job->user : "", sizeof(rec->user));
	rb_strlcpy(rec->partition, job->partition ? job->partition : "",
		   sizeof(rec->partition));
	rb_strlcpy(rec->account, job->account ? job->account : "",
		   sizeof(rec->account));
	rb_strlcpy(rec->work_dir, job->work_dir ? job->work_dir : "",
		   sizeof(rec->work_dir));
	rb_strlcpy(rec->checkpoint_dir,
		   job->checkpoint_dir ? job->checkpoint_dir : "",
		   sizeof(rec->checkpoint_dir));
	/* kept once known: every prolog of one job sees the same value */
	if (rb_submission_ok(job->submission))
		rb_strlcpy(rec->submission, job->submission,
			   sizeof(rec->submission));
}

/* The ledger holds an older job with this id: log it, note it in the job's
 * event log and start the record afresh. */
static int reset_reused(locked_record *lr, const rb_job_info *job,
			const char *why, rb_err *err)
{
	event_line e;

	ev_init(&e);
	rb_log(RB_LOG_WARNING,
	       "job %u: the ledger holds an older job with this id (uid %u, attempt %" PRId64 ", evidence: %s); starting a new record",
	       job->job_id, lr->rec.uid, lr->rec.budget.cur.attempt, why);
	ev_raw(&e, "kind", "reset");
	ev_raw(&e, "reason", "job_id_reused");
	ev_raw(&e, "evidence", why);
	ev_int(&e, "old_uid", lr->rec.uid);
	ev_int(&e, "old_attempt", lr->rec.budget.cur.attempt);
	if (lr->rec.submission[0])
		ev_raw(&e, "old_submission", lr->rec.submission);
	if (rb_ledger_append(lr->job, e.buf, err) < 0)
		return -1;
	rb_record_init(&lr->rec);
	lr->found = false;
	return 0;
}

/* The job's acknowledgement of a restoring attempt counts when its epilog
 * records the end, and at the next prolog if no epilog ever ran (the node
 * died): an attempt whose end is on record was already looked at. */
static void confirm_by_ack(locked_record *lr, event_line *e)
{
	rb_attempt *cur = &lr->rec.budget.cur;

	if (cur->attempt < 0 || cur->phase != RB_PHASE_RESTORING ||
	    cur->confirmed != RB_CONFIRM_NONE || cur->end != RB_END_NONE)
		return;
	if (rb_ack_confirms(&lr->rec) &&
	    rb_engine_confirm(&lr->rec.budget, cur->attempt, RB_CONFIRM_ACK))
		ev_raw(e, "confirmed_previous", "ack");
}

/* The start event's account of what was decided and charged. */
static void ev_decision(event_line *e, const rb_start_result *out,
			const rb_budget *b)
{
	ev_raw(e, "decision",
	       out->decision == RB_DECISION_REFUSE ? "refuse" : "run");
	ev_int(e, "charged", out->charge.attempt);
	ev_raw(e, "charge", rb_charge_name(out->charge.kind));
	if (out->charge.attempt >= 0) {
		char end[32];

		rb_end_format(out->charge.end, out->charge.end_code, end,
			      sizeof(end));
		ev_raw(e, "charged_end", end);
		ev_raw(e, "charged_phase", rb_phase_name(out->charge.phase));
		if (out->charge.rule != RB_EXIT_RULE_NONE)
			ev_raw(e, "rule", rb_exit_rule_name(out->charge.rule));
	}
	ev_pair(e, "failures", out->charge.failures_before,
		out->charge.failures_after);
	ev_pair(e, "restore_failures", out->charge.restore_failures_before,
		out->charge.restore_failures_after);
	ev_int(e, "granted", b->granted);
	ev_limits(e, &out->limits);
	/* No checkpoint here: the report event names the one handed out, once
	 * per attempt (docs/architecture.md, "The ledger": a path of up to
	 * 3 x 4 KiB escaped, twice per attempt, grew the log for nothing). */
	ev_str(e, "reason", out->reason);
	if (out->warnings[0])
		ev_str(e, "warnings", out->warnings);
}

/* What exit_rules make of the end this start charges (docs/rule.md,
 * "Exit-code rules"): only a FAILED end has an exit code to match. */
static rb_exit_rule prev_rule(const rb_config *cfg, const rb_job_info *job,
			      const rb_budget *b)
{
	if (b->cur.end != RB_END_FAILED)
		return RB_EXIT_RULE_NONE;
	return rb_config_exit_rule(cfg, job->partition, job->account,
				   b->cur.end_code);
}

/* The record found is this job's (an old job's with the same id is reset:
 * it is not this job's budget), or a new one is begun. 0 or -1. */
static int this_jobs_record(locked_record *lr, const rb_job_info *job,
			    rb_err *err)
{
	const char *why;

	if (lr->found &&
	    rb_record_names_another_job(&lr->rec, job->uid, job->submission,
					job->attempt, &why) &&
	    reset_reused(lr, job, why, err) < 0)
		return -1;
	if (!lr->found)
		lr->rec.created = job->now;
	return 0;
}

int rb_lifecycle_start(const rb_config *cfg, const rb_job_info *job,
		       rb_start_result *out, rb_record *rec, rb_err *err)
{
	rb_fallback_prev prev;
	locked_record lr;
	event_line e;
	rb_budget *b;

	ev_init(&e);
	memset(out, 0, sizeof(*out));
	if (lock_and_read(cfg, job->cluster, job->job_id, &lr, err) < 0)
		return -1;
	if (this_jobs_record(&lr, job, err) < 0)
		goto fail;
	b = &lr.rec.budget;
	rb_config_resolve(cfg, job->partition, job->account, &job->options,
			  &out->limits, out->warnings, sizeof(out->warnings));

	out->duplicate = job->attempt <= b->cur.attempt;
	if (out->duplicate) {
		out->decision = rb_engine_start(b, job->attempt, &out->limits,
						job->now, &out->charge,
						out->reason, sizeof(out->reason));
		goto done;
	}

	ev_raw(&e, "kind", "start");
	ev_int(&e, "attempt", job->attempt);
	confirm_by_ack(&lr, &e);
	fill_job_fields(&lr.rec, job);
	rb_fallback_before_start(&lr.rec, &prev);
	out->decision = rb_engine_start_ruled(b, job->attempt, &out->limits,
					      prev_rule(cfg, job, b), job->now,
					      &out->charge, out->reason,
					      sizeof(out->reason));
	ev_decision(&e, out, b);
	if (rb_fallback_after_charge(&lr.rec, &prev, &out->charge,
				     &out->limits, cfg->checkpoint_fallback))
		ev_str(&e, "marked_bad", prev.path);
	if (commit(&lr, &e, err) < 0)
		goto fail;
done:
	if (rec)
		*rec = lr.rec;
	unlock_close(&lr);
	return 0;
fail:
	unlock_close(&lr);
	return -1;
}

int rb_lifecycle_report(const rb_config *cfg, const char *cluster,
			uint32_t job_id, int64_t attempt, rb_phase phase,
			const char *checkpoint, rb_err *err)
{
	rb_handed h = { .checkpoint = checkpoint };

	return rb_lifecycle_report_handed(cfg, cluster, job_id, attempt, phase,
					  &h, err);
}

int rb_lifecycle_report_handed(const rb_config *cfg, const char *cluster,
			       uint32_t job_id, int64_t attempt,
			       rb_phase phase, const rb_handed *h, rb_err *err)
{
	locked_record lr;
	event_line e;

	ev_init(&e);
	int rc = -1;

	if (lock_and_read(cfg, cluster, job_id, &lr, err) < 0)
		return -1;
	if (!lr.found || lr.rec.budget.cur.attempt != attempt) {
		rb_err_set(err, "job %u attempt %" PRId64 " was not recorded at its start (prolog)",
			   job_id, attempt);
		goto out;
	}
	/* an attempt that already ended is history: never rewrite it */
	if (lr.rec.budget.cur.end != RB_END_NONE) {
		rb_err_set(err, "job %u attempt %" PRId64 " already ended; not recording its phase",
			   job_id, attempt);
		goto out;
	}
	rb_engine_set_phase(&lr.rec.budget, attempt, phase, h->checkpoint);
	rb_fallback_record_handed(&lr.rec, h);
	ev_raw(&e, "kind", "report");
	ev_int(&e, "attempt", attempt);
	ev_raw(&e, "phase", rb_phase_name(phase));
	ev_str(&e, "checkpoint", lr.rec.budget.cur.checkpoint);
	if (lr.rec.fallback.from[0])
		ev_str(&e, "fallback_from", lr.rec.fallback.from);
	rc = commit(&lr, &e, err);
out:
	unlock_close(&lr);
	return rc;
}

/* Does the job have a record? One lstat, before anything takes the lock
 * (which would create the job's event log). false with err->msg set on an
 * error other than "no such file". */
static bool record_exists(const rb_config *cfg, const char *cluster,
			  uint32_t job_id, rb_err *err)
{
	char path[RB_PATH_MAX + 128];
	struct stat st;

	err->msg[0] = '\0';
	if (rb_ledger_record_path(cfg->state_dir, cluster, job_id, path,
				  sizeof(path)) < 0) {
		rb_err_set(err, "%s/%s: path too long", cfg->state_dir, cluster);
		return false;
	}
	if (lstat(path, &st) == 0)
		return true;
	if (errno != ENOENT && errno != ENOTDIR)
		rb_err_set(err, "%s: %s", path, strerror(errno));
	return false;
}

/* The end an epilog sees, given the attempt the prolog recorded. */
static rb_end epilog_end(int64_t recorded, int64_t restart_count,
			 int exit_code, int sig, int *code)
{
	*code = 0;
	if (restart_count > recorded)
		return RB_END_INTERRUPTED;
	if (sig != 0) {
		*code = 128 + sig;
		return RB_END_FAILED;
	}
	if (exit_code != 0) {
		*code = exit_code;
		return RB_END_FAILED;
	}
	return RB_END_COMPLETED;
}

int rb_lifecycle_epilog_fn(const rb_config *cfg, const char *cluster,
			   uint32_t job_id, int64_t restart_count,
			   int exit_code, int signal, rb_detail_fn detail_fn,
			   void *detail_ctx, int64_t now, rb_err *err)
{
	locked_record lr;
	event_line e;
	rb_attempt *cur;
	char endtxt[32];
	int64_t attempt;
	int code, rc = 0;
	rb_end end;

	ev_init(&e);
	/* Untracked jobs (no record) leave no trace: look before locking,
	 * since the lock creates the job's event log. */
	if (!record_exists(cfg, cluster, job_id, err))
		return err->msg[0] ? -1 : 0;
	if (lock_and_read(cfg, cluster, job_id, &lr, err) < 0)
		return -1;
	cur = &lr.rec.budget.cur;
	attempt = cur->attempt;
	end = epilog_end(attempt, restart_count, exit_code, signal, &code);
	ev_raw(&e, "kind", "end");
	ev_int(&e, "attempt", attempt);
	if (lr.found)
		confirm_by_ack(&lr, &e);
	/* another node's epilog already recorded it, or a stale call */
	if (!lr.found || !rb_engine_end(&lr.rec.budget, attempt, end, code, now))
		goto out;
	rb_end_format(cur->end, cur->end_code, endtxt, sizeof(endtxt));
	ev_raw(&e, "end", endtxt);
	if (detail_fn && cur->end == RB_END_INTERRUPTED) {
		const char *detail = detail_fn(detail_ctx);

		if (detail)
			ev_str(&e, "detail", detail);
	}
	ev_raw(&e, "phase", rb_phase_name(cur->phase));
	ev_raw(&e, "confirmed", rb_confirm_name(cur->confirmed));
	ev_int(&e, "ran", cur->end_time - cur->start_time);
	rc = commit(&lr, &e, err);
out:
	unlock_close(&lr);
	return rc;
}

static const char *fixed_detail(void *ctx)
{
	return ctx;
}

int rb_lifecycle_epilog(const rb_config *cfg, const char *cluster,
			uint32_t job_id, int64_t restart_count, int exit_code,
			int signal, const char *detail, int64_t now,
			rb_err *err)
{
	return rb_lifecycle_epilog_fn(cfg, cluster, job_id, restart_count,
				      exit_code, signal, detail ? fixed_detail : NULL,
				      (void *)detail, now, err);
}

int rb_lifecycle_grant(const rb_config *cfg, const char *cluster,
		       uint32_t job_id, int n, const char *by, rb_err *err)
{
	locked_record lr;
	event_line e;

	ev_init(&e);
	int before, rc = -1;

	if (n <= 0 || n > RB_MAX_FAILURES_MAX)
		return rb_err_set(err, "--failures %d: must be 1..%d", n,
				  RB_MAX_FAILURES_MAX);
	/* no record: say so without creating the job's event log */
	if (rb_lifecycle_read(cfg, cluster, job_id, &lr.rec, err) == 1)
		return rb_err_set(err, "job %u has no record in %s/%s", job_id,
				  cfg->state_dir, cluster);
	if (lock_and_read(cfg, cluster, job_id, &lr, err) < 0)
		return -1;
	if (!lr.found) {
		rb_err_set(err, "job %u has no record in %s/%s", job_id,
			   cfg->state_dir, cluster);
		goto out;
	}
	before = lr.rec.budget.granted;
	if (before > RB_MAX_FAILURES_MAX - n) {
		rb_err_set(err, "job %u: granted would exceed %d", job_id,
			   RB_MAX_FAILURES_MAX);
		goto out;
	}
	lr.rec.budget.granted = before + n;
	ev_raw(&e, "kind", "grant");
	ev_int(&e, "attempt", lr.rec.budget.cur.attempt);
	ev_pair(&e, "granted", before, before + n);
	/* a grant lifts a fatal exit code like any exhaustion (docs/rule.md) */
	if (lr.rec.budget.fatal_code) {
		ev_int(&e, "fatal_lifted", lr.rec.budget.fatal_code);
		lr.rec.budget.fatal_code = 0;
	}
	ev_str(&e, "by", by);
	rc = commit(&lr, &e, err);
out:
	unlock_close(&lr);
	return rc;
}

int rb_lifecycle_read(const rb_config *cfg, const char *cluster,
		      uint32_t job_id, rb_record *rec, rb_err *err)
{
	rb_ledger *l;
	int rc;

	/* One open of state_dir (O_NOFOLLOW, owned by root, not writable by
	 * group or others) and of <state_dir>/<cluster>. No job of this
	 * cluster was ever recorded (no such directory): not an error. An
	 * unusable state_dir is one, even before any job of this cluster was
	 * recorded (the caller's on_error needs the ledger's reason). */
	rc = rb_ledger_open_read(cfg->state_dir, cluster, &l, err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		rb_record_init(rec);
		return 1;
	}
	rc = rb_ledger_read(l, job_id, rec, err);
	rb_ledger_close(l);
	return rc;
}
