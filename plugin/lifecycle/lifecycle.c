/*
 * lifecycle.c - a job's life events (lifecycle.h), each a step (an
 * rb_apply_fn) the store applies. A record that cannot be read (corrupt,
 * torn, unknown version) is an error, never a fresh budget: the caller
 * applies on_error.
 */
#include "lifecycle.h"

#include "user/user.h"
#include "rule/rule.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"

/* --- event lines (seam.h's rb_events: one or more per step) ---------------- */

/* Begin a new line after the ones ev holds. */
static void ev_line(rb_events *e)
{
	if (e->overflow)
		return;
	if (e->n > 0) {
		if (e->len + 2 >= sizeof(e->buf)) {
			e->overflow = true;
			return;
		}
		e->len++; /* past the previous line's NUL */
	}
	e->line = e->len;
	e->buf[e->len] = '\0';
	e->n++;
}

/* Appends "[ ]key=value" to the current line (what snprintf "%s%s=%s"
 * gave, without its cost: a line is a dozen of these on every event). */
static void ev_raw(rb_events *e, const char *key, const char *value)
{
	size_t klen, vlen, need, cur;

	if (e->overflow)
		return;
	cur = e->len - e->line;
	klen = strlen(key);
	vlen = strlen(value);
	need = (cur ? 1 : 0) + klen + 1 + vlen;
	/* keep one byte for the NUL */
	if (need >= RB_EVENT_LINE_MAX - cur || need >= sizeof(e->buf) - e->len) {
		e->overflow = true;
		return;
	}
	if (cur)
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
static void ev_str(rb_events *e, const char *key, const char *value)
{
	const char *v = value ? value : "";
	char esc[3 * RB_PATH_MAX + 1];
	ssize_t n = rb_kv_escape(v, esc, sizeof(esc));

	if (n < 0 || (e->len - e->line) + strlen(key) + (size_t)n + 2 +
			     EV_RESERVE >= RB_EVENT_LINE_MAX) {
		snprintf(esc, sizeof(esc), "rb-digest:%016" PRIx64 ":%zu",
			 rb_checksum(v, strlen(v)), strlen(v));
		rb_log(RB_LOG_WARNING, "an event's %s of %zu bytes does not fit its line: logged as %s",
		       key, strlen(v), esc);
	}
	ev_raw(e, key, esc);
}

static void ev_int(rb_events *e, const char *key, int64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, v);
	ev_raw(e, key, num);
}

static void ev_pair(rb_events *e, const char *key, int64_t from, int64_t to)
{
	char num[64];

	snprintf(num, sizeof(num), "%" PRId64 "->%" PRId64, from, to);
	ev_raw(e, key, num);
}

static void ev_limits(rb_events *e, const rb_limits *l)
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

/* --- the start ------------------------------------------------------------- */

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
	/* kept once known: every start of one job sees the same value */
	if (rb_submission_ok(job->submission))
		rb_strlcpy(rec->submission, job->submission,
			   sizeof(rec->submission));
}

/* The store holds an older job with this id: log it, note it in the job's
 * event log and start the record afresh. */
static void reset_reused(rb_record *rec, const rb_job_info *job,
			 const char *why, bool quiet, rb_events *e)
{
	if (!quiet)
		rb_log(RB_LOG_WARNING,
		       "job %u: the ledger holds an older job with this id (uid %u, attempt %" PRId64 ", evidence: %s); starting a new record",
		       job->job_id, rec->uid, rec->budget.cur.attempt, why);
	ev_line(e);
	ev_raw(e, "kind", "reset");
	ev_raw(e, "reason", "job_id_reused");
	ev_raw(e, "evidence", why);
	ev_int(e, "old_uid", rec->uid);
	ev_int(e, "old_attempt", rec->budget.cur.attempt);
	if (rec->submission[0])
		ev_raw(e, "old_submission", rec->submission);
	rb_record_init(rec);
}

/* The job's acknowledgement of a restoring attempt counts when its epilog
 * records the end, and at the next start if no epilog ever ran (the node
 * died): an attempt whose end is on record was already looked at. */
static void confirm_by_ack(rb_record *rec, rb_events *e)
{
	rb_attempt *cur = &rec->budget.cur;

	if (cur->attempt < 0 || cur->phase != RB_PHASE_RESTORING ||
	    cur->confirmed != RB_CONFIRM_NONE || cur->end != RB_END_NONE)
		return;
	if (rb_ack_confirms(rec) &&
	    rb_engine_confirm(&rec->budget, cur->attempt, RB_CONFIRM_ACK))
		ev_raw(e, "confirmed_previous", "ack");
}

/* store = "controller": an attempt the controller requeued has no end on
 * record (no epilog writes one); it ends when the requeue finished, so
 * that restore_timeout confirms it as an epilog's end would (a few
 * seconds late at most: docs/stores.md, "Confirmations"). */
static void end_by_requeue(rb_record *rec, const rb_job_info *job,
			   rb_events *e)
{
	rb_attempt *cur = &rec->budget.cur;

	if (job->requeued_at <= 0 || cur->attempt < 0 ||
	    cur->attempt >= job->attempt || cur->end != RB_END_NONE ||
	    job->requeued_at < cur->start_time)
		return;
	if (rb_engine_end(&rec->budget, cur->attempt, RB_END_INTERRUPTED, 0,
			  job->requeued_at))
		ev_int(e, "previous_requeued_at", job->requeued_at);
}

/* The start event's account of what was decided and charged. */
static void ev_decision(rb_events *e, const rb_start_result *out,
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

typedef struct {
	const rb_config *cfg;
	const rb_job_info *job;
	rb_start_result *out;
	bool quiet;            /* a preview: nothing to log */
} start_ctx;

/*
 * The start of job->attempt on rec (found: the store held it; ctx: a
 * start_ctx): charge the previous attempt and record this one. A record of
 * an older job with this id is reset first (it is not this job's budget).
 * 1 changed, 0 the attempt had started (out->duplicate: nothing changes).
 */
static int start_fn(rb_record *rec, bool found, rb_events *e, void *ctx,
		    rb_err *err)
{
	const start_ctx *c = ctx;
	const rb_config *cfg = c->cfg;
	const rb_job_info *job = c->job;
	rb_start_result *out = c->out;
	rb_fallback_prev prev;
	rb_budget *b = &rec->budget;
	const char *why;

	(void)err;
	memset(out, 0, sizeof(*out));
	if (found && rb_record_names_another_job(rec, job->uid, job->submission,
						 job->attempt, &why)) {
		reset_reused(rec, job, why, c->quiet, e);
		found = false;
	}
	if (!found)
		rec->created = job->now;
	rb_config_resolve(cfg, job->partition, job->account, &job->options,
			  &out->limits, out->warnings, sizeof(out->warnings));
	out->duplicate = job->attempt <= b->cur.attempt;
	if (out->duplicate) {
		out->decision = rb_engine_start(b, job->attempt, &out->limits,
						job->now, &out->charge,
						out->reason, sizeof(out->reason));
		return 0;
	}
	ev_line(e);
	ev_raw(e, "kind", "start");
	ev_int(e, "attempt", job->attempt);
	confirm_by_ack(rec, e);
	end_by_requeue(rec, job, e);
	fill_job_fields(rec, job);
	rb_fallback_before_start(rec, &prev);
	out->decision = rb_engine_start_ruled(b, job->attempt, &out->limits,
					      prev_rule(cfg, job, b), job->now,
					      &out->charge, out->reason,
					      sizeof(out->reason));
	ev_decision(e, out, b);
	if (rb_fallback_after_charge(rec, &prev, &out->charge, &out->limits,
				     cfg->checkpoint_fallback))
		ev_str(e, "marked_bad", prev.path);
	return 1;
}

void rb_lifecycle_preview(const rb_config *cfg, const rb_job_info *job,
			  bool found, rb_start_result *out, rb_record *rec)
{
	static rb_events ev;
	start_ctx c = { cfg, job, out, true };

	rb_events_clear(&ev);
	start_fn(rec, found, &ev, &c, NULL);
}

/* --- what the attempt was handed --------------------------------------------- */

/* Attempt h->attempt was handed h's checkpoint and starts in h->phase.
 * 1 changed, -1 it cannot be (err: not started, or ended). */
static int hand_out(rb_record *rec, bool found, rb_events *e, uint32_t job_id,
		    const rb_handout *h, rb_err *err)
{
	if (!found || rec->budget.cur.attempt != h->attempt)
		return rb_err_set(err, "job %u attempt %" PRId64 " was not recorded at its start (batch step)",
				  job_id, h->attempt);
	/* an attempt that already ended is history: never rewrite it */
	if (rec->budget.cur.end != RB_END_NONE)
		return rb_err_set(err, "job %u attempt %" PRId64 " already ended; not recording its phase",
				  job_id, h->attempt);
	rb_engine_set_phase(&rec->budget, h->attempt, h->phase,
			    h->handed.checkpoint);
	rb_fallback_record_handed(rec, &h->handed);
	ev_line(e);
	ev_raw(e, "kind", "report");
	ev_int(e, "attempt", h->attempt);
	ev_raw(e, "phase", rb_phase_name(h->phase));
	ev_str(e, "checkpoint", rec->budget.cur.checkpoint);
	if (rec->fallback.from[0])
		ev_str(e, "fallback_from", rec->fallback.from);
	return 1;
}

/* Is exactly this handing on the record already (a replayed begin)? */
static bool handed_already(const rb_record *rec, const rb_handout *h)
{
	const char *ck = h->handed.checkpoint ? h->handed.checkpoint : "";
	const char *from = h->handed.from ? h->handed.from : "";
	char id[RB_FILE_ID_TEXT_MAX] = "";

	if (h->handed.id.ino != 0 &&
	    rb_file_id_format(&h->handed.id, id, sizeof(id)) < 0)
		id[0] = '\0';
	return rec->budget.cur.attempt == h->attempt &&
	       rec->budget.cur.phase == h->phase &&
	       (!ck[0] || strcmp(rec->budget.cur.checkpoint, ck) == 0) &&
	       strcmp(rec->fallback.cur_id, id) == 0 &&
	       (!from[0] || strcmp(rec->fallback.from, from) == 0);
}

typedef struct {
	const rb_config *cfg;
	const rb_job_info *job;     /* NULL: the attempt had started */
	uint32_t job_id;
	const rb_handout *h;
	rb_start_result *out;
} begin_ctx;

/* The batch step's one write: the start (unless it is on record), then
 * what the attempt was handed. A handing that cannot be recorded leaves
 * the start recorded (out->report_err says why). */
static int begin_fn(rb_record *rec, bool found, rb_events *e, void *ctx,
		    rb_err *err)
{
	begin_ctx *c = ctx;
	start_ctx sc = { c->cfg, c->job, c->out, false };
	uint64_t seen = found ? rec->seq : 0;
	int started = 0;
	rb_err rerr;

	/* the checkpoint was chosen on the record of write h->seq: another
	 * write since is rare (a late epilog, a grant) and logged */
	if (seen != c->h->seq)
		rb_log(RB_LOG_WARNING, "job %u: its record changed while the checkpoint was chosen (write %" PRIu64 ", now %" PRIu64 "): handing out the one chosen",
		       c->job_id, c->h->seq, seen);
	if (c->job)
		started = start_fn(rec, found, e, &sc, err);
	else
		memset(c->out, 0, sizeof(*c->out));
	found = found || started;
	if (!started && found && handed_already(rec, c->h))
		return 0;
	if (hand_out(rec, found, e, c->job_id, c->h, &rerr) < 0) {
		rb_strlcpy(c->out->report_err, rerr.msg,
			   sizeof(c->out->report_err));
		return started;
	}
	return 1;
}

int rb_lifecycle_begin(rb_store *st, const rb_config *cfg, uint32_t job_id,
		       const rb_job_info *job, const rb_handout *h,
		       rb_start_result *out, rb_record *rec, rb_err *err)
{
	static rb_events ev;
	begin_ctx c = { cfg, job, job_id, h, out };

	return st->ops->apply(st, job_id, 0, begin_fn, &c, &ev, rec, err);
}

/* --- the end ------------------------------------------------------------------ */

/* The end an epilog sees, given the attempt the batch step recorded. */
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

typedef struct {
	rb_end_info end;
	int64_t only_attempt;  /* a kept end: this attempt's alone (else -1) */
	bool recorded;         /* fn's result: the end goes on record */
} end_ctx;

/* How the recorded attempt ended; 0 when its end is on record already
 * (another node's epilog, or a stale call). */
static int end_fn(rb_record *rec, bool found, rb_events *e, void *ctx,
		  rb_err *err)
{
	end_ctx *c = ctx;
	rb_attempt *cur = &rec->budget.cur;
	char endtxt[32];
	int code;
	rb_end end;

	(void)err;
	c->recorded = false;
	if (!found)
		return 0;
	/* a kept end is that attempt's: a later one is not touched */
	if (c->only_attempt >= 0 &&
	    (cur->attempt != c->only_attempt || cur->end != RB_END_NONE))
		return 0;
	end = epilog_end(cur->attempt, c->end.restart_count, c->end.exit_code,
			 c->end.signal, &code);
	ev_line(e);
	ev_raw(e, "kind", "end");
	ev_int(e, "attempt", cur->attempt);
	confirm_by_ack(rec, e);
	if (!rb_engine_end(&rec->budget, cur->attempt, end, code, c->end.now))
		return 0;
	rb_end_format(cur->end, cur->end_code, endtxt, sizeof(endtxt));
	ev_raw(e, "end", endtxt);
	if (c->only_attempt >= 0)
		ev_int(e, "late", 1); /* carried by the batch host's note */
	if (c->end.detail_fn && cur->end == RB_END_INTERRUPTED) {
		const char *detail = c->end.detail_fn(c->end.detail_ctx);

		if (detail)
			ev_str(e, "detail", detail);
	}
	ev_raw(e, "phase", rb_phase_name(cur->phase));
	ev_raw(e, "confirmed", rb_confirm_name(cur->confirmed));
	ev_int(e, "ran", cur->end_time - cur->start_time);
	c->recorded = true;
	return 1;
}

int rb_lifecycle_end_in(rb_store *st, uint32_t job_id, const rb_end_info *end,
			rb_err *err)
{
	static rb_events ev;
	static rb_record rec;
	end_ctx c = { *end, -1, false };

	/* Untracked jobs (no record) leave no trace: nothing is created. */
	return st->ops->apply(st, job_id, RB_APPLY_IF_RECORDED, end_fn, &c,
			      &ev, &rec, err) < 0 ? -1 : 0;
}

/*
 * An end the epilog could not record, kept on the batch host (node_note.h)
 * and recorded later: only if `kept->attempt` is still the recorded attempt
 * and has no end (docs/architecture.md, "An end not written"). 1 recorded,
 * 0 past (another attempt, or an end on record), 2 no record, -1 error.
 */
static int late_end(rb_store *st, uint32_t job_id, const rb_note_end *kept,
		    rb_err *err)
{
	static rb_events ev;
	static rb_record rec;
	end_ctx c = { { kept->restart_count, kept->exit_code, kept->signal,
			NULL, NULL, kept->now },
		      kept->attempt, false };
	int rc = st->ops->apply(st, job_id, RB_APPLY_IF_RECORDED, end_fn, &c,
				&ev, &rec, err);

	if (rc < 0)
		return -1;
	if (rc == 1)
		return 2; /* no record (yet: an unmounted state_dir looks so) */
	return c.recorded ? 1 : 0;
}

/* --- an end not written (docs/architecture.md, "An end not written") -------- */

int rb_lifecycle_keep_end(rb_store *st, const rb_node *node,
			  uint32_t job_id, const rb_end_info *end, rb_err *err)
{
	static rb_record rec;
	rb_note_end kept = { 0, end->restart_count, end->exit_code,
			     end->signal, end->now };
	int found;

	/* the attempt that ran: the record's, which can still be read when
	 * only writing fails (read-only, full); else the prolog's note that
	 * the batch step claimed here (state_dir gone or untrusted); with
	 * neither, the end cannot be tied to an attempt and is not kept */
	found = st->ops->load(st, job_id, &rec, err);
	if (found == 0) {
		if (rec.budget.cur.end != RB_END_NONE)
			return 0;
		kept.attempt = rec.budget.cur.attempt;
	} else if (rb_note_claimed_attempt(node->run_dir, node->host,
					   node->cluster, job_id,
					   &kept.attempt) < 0) {
		if (found > 0)
			rb_err_set(err, "job %u has no record here", job_id);
		return -1;
	}
	return rb_note_end_keep(node->run_dir, node->host, node->cluster,
				job_id, &kept, err);
}

/* job_id's kept end recorded if it can be; it goes once recorded or no
 * longer its attempt's to record. 1 recorded, 0 nothing recorded, -1 the
 * store failed (the end stays kept). */
static int carry_end(rb_store *st, const rb_node *node, uint32_t job_id)
{
	rb_note_end kept;
	rb_err err;
	int rc;

	rc = rb_note_end_read(node->run_dir, node->host, node->cluster,
			      job_id, &kept);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		rb_log(RB_LOG_ERROR, "job %u: a kept end in %s is not this plugin's: removed",
		       job_id, node->run_dir);
		goto drop;
	}
	rc = late_end(st, job_id, &kept, &err);
	if (rc < 0 && node->now - kept.now <= RB_KEPT_END_MAX_AGE) {
		rb_log(RB_LOG_ERROR, "job %u: the end of attempt %" PRId64 " stays kept on this node: %s",
		       job_id, kept.attempt, err.msg);
		return -1;
	}
	if (rc == 2 && node->now - kept.now <= RB_KEPT_END_MAX_AGE)
		return 0; /* no record to take it yet */
	if (rc == 1)
		rb_log(RB_LOG_INFO, "job %u: the end of attempt %" PRId64 ", kept on this node, is recorded",
		       job_id, kept.attempt);
	else
		rb_log(RB_LOG_WARNING, "job %u: the end of attempt %" PRId64 ", kept on this node, is past (%s): dropped",
		       job_id, kept.attempt, rc == 0 ? "its attempt is no longer the one on record, or has an end" : "not recorded within a week");
drop:
	rb_note_end_drop(node->run_dir, node->host, node->cluster, job_id);
	return rc == 1;
}

int rb_lifecycle_carry_ends(rb_store *st, const rb_node *node,
			    uint32_t job_id)
{
	uint32_t jobs[RB_KEPT_ENDS_MAX];
	int n, recorded = 0, rc;

	if (job_id)
		return carry_end(st, node, job_id) > 0;
	n = rb_note_end_list(node->run_dir, node->host, node->cluster, jobs,
			     RB_KEPT_ENDS_MAX);
	/* the store failing for one fails for all: stop there, so a hung
	 * state_dir costs a root callback one lock deadline, not 16 */
	for (int i = 0; i < n; i++) {
		rc = carry_end(st, node, jobs[i]);
		if (rc < 0)
			break;
		recorded += rc;
	}
	return recorded;
}

/* --- the grant ---------------------------------------------------------------- */

typedef struct {
	uint32_t job_id;
	int n;
	const char *by;
	const char *where;
} grant_ctx;

static int grant_fn(rb_record *rec, bool found, rb_events *e, void *ctx,
		    rb_err *err)
{
	grant_ctx *c = ctx;
	int before = rec->budget.granted;

	if (!found)
		return rb_err_set(err, "job %u has no record in %s", c->job_id,
				  c->where);
	if (before > RB_MAX_FAILURES_MAX - c->n)
		return rb_err_set(err, "job %u: granted would exceed %d",
				  c->job_id, RB_MAX_FAILURES_MAX);
	rec->budget.granted = before + c->n;
	ev_line(e);
	ev_raw(e, "kind", "grant");
	ev_int(e, "attempt", rec->budget.cur.attempt);
	ev_pair(e, "granted", before, before + c->n);
	/* a grant lifts a fatal exit code like any exhaustion (docs/rule.md) */
	if (rec->budget.fatal_code) {
		ev_int(e, "fatal_lifted", rec->budget.fatal_code);
		rec->budget.fatal_code = 0;
	}
	ev_str(e, "by", c->by);
	return 1;
}

int rb_lifecycle_grant_in(rb_store *st, uint32_t job_id, int n,
			  const char *by, rb_err *err)
{
	static rb_events ev;
	static rb_record rec;
	grant_ctx c = { job_id, n, by, st->where };

	if (n <= 0 || n > RB_MAX_FAILURES_MAX)
		return rb_err_set(err, "--failures %d: must be 1..%d", n,
				  RB_MAX_FAILURES_MAX);
	/* no record: say so without creating the job's event log */
	if (st->ops->load(st, job_id, &rec, err) == 1)
		return rb_err_set(err, "job %u has no record in %s", job_id,
				  st->where);
	return st->ops->apply(st, job_id, 0, grant_fn, &c, &ev, &rec, err);
}

/* --- the shared-directory ledger: the config's state_dir ---------------------- */

int rb_lifecycle_start(const rb_config *cfg, const rb_job_info *job,
		       rb_start_result *out, rb_record *rec, rb_err *err)
{
	static rb_events ev; /* 42 KB, off the stack */
	start_ctx c = { cfg, job, out, false };
	rb_store_dir d;
	rb_store *st = rb_store_dir_init(&d, cfg->state_dir, job->cluster);
	rb_record own;

	return st->ops->apply(st, job->job_id, 0, start_fn, &c, &ev,
			      rec ? rec : &own, err);
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
	rb_end_info end = { restart_count, exit_code, signal,
			    detail ? fixed_detail : NULL, (void *)detail, now };
	rb_store_dir d;

	return rb_lifecycle_end_in(rb_store_dir_init(&d, cfg->state_dir,
						     cluster),
				   job_id, &end, err);
}

int rb_lifecycle_grant(const rb_config *cfg, const char *cluster,
		       uint32_t job_id, int n, const char *by, rb_err *err)
{
	rb_store_dir d;

	return rb_lifecycle_grant_in(rb_store_dir_init(&d, cfg->state_dir,
						       cluster),
				     job_id, n, by, err);
}

int rb_lifecycle_read(const rb_config *cfg, const char *cluster,
		      uint32_t job_id, rb_record *rec, rb_err *err)
{
	rb_store_dir d;
	rb_store *st = rb_store_dir_init(&d, cfg->state_dir, cluster);

	return st->ops->load(st, job_id, rec, err);
}
