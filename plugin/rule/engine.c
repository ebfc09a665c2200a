/*
 * engine.c - the rule of docs/rule.md, "The rule".
 *
 * Pure functions over rb_budget. The one invariant everything else rests on:
 * a charge changes F and r only; it never touches the checkpoint pointer.
 * (Ray Tune's bug was clearing the checkpoint on a restore failure, so every
 * later restore crashed although the real checkpoint was fine.)
 */
#include "engine.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

void rb_budget_init(rb_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->last_charged = -1;
	b->cur.attempt = -1;
	b->cur.limits.max_interruptions = RB_UNLIMITED;
}

rb_spent rb_engine_exhaustion(const rb_budget *b, const rb_limits *limits)
{
	if (b->fatal_code != 0)
		return RB_SPENT_FATAL;
	/* a grant lifts this cap too (docs/rule.md, "Interruption cap") */
	if (limits->max_interruptions >= 0 &&
	    b->interruptions > (int64_t)limits->max_interruptions + b->granted)
		return RB_SPENT_INTERRUPTIONS;
	if (limits->max_failures >= 0 &&
	    (int64_t)b->failures > (int64_t)limits->max_failures + b->granted)
		return RB_SPENT_FAILURES;
	return RB_SPENT_NOT;
}

bool rb_engine_is_exhausted(const rb_budget *b, const rb_limits *limits)
{
	return rb_engine_exhaustion(b, limits) != RB_SPENT_NOT;
}

int64_t rb_engine_restores_left(const rb_budget *b, const rb_limits *limits)
{
	int64_t m, r_cap, left;

	if (limits->max_failures < 0)
		return -1;
	m = (int64_t)limits->max_failures + b->granted;
	r_cap = limits->restore_retry_num;
	if (limits->accounting == RB_ACCOUNTING_RAY) {
		/* free restores left, then one attempt per failure left */
		left = (r_cap - b->restore_failures) + (m + 1 - b->failures);
	} else {
		left = (m + 1 - b->failures) * r_cap - b->restore_failures;
	}
	return left < 0 ? 0 : left;
}

/* The phase an attempt was in when it ended: an unconfirmed restore is still
 * RESTORING, whatever ended it. */
static rb_phase phase_at_end(const rb_attempt *a)
{
	if (a->phase == RB_PHASE_RESTORING && a->confirmed != RB_CONFIRM_NONE)
		return RB_PHASE_RUNNING;
	return a->phase;
}

/* How an attempt ended, as the rule sees it: no recorded end, and an exit 0
 * followed by a requeue, are interruptions. */
static rb_end end_as_charged(const rb_attempt *a)
{
	if (a->end == RB_END_FAILED)
		return RB_END_FAILED;
	return RB_END_INTERRUPTED;
}

/* Counters saturate instead of overflowing: a record edited by hand (with
 * a recomputed checksum) may hold INT_MAX; one more charge must not be UB. */
static void bump(int *v)
{
	if (*v < INT_MAX)
		(*v)++;
}

static void bump64(int64_t *v)
{
	if (*v < INT64_MAX)
		(*v)++;
}

static rb_charge_kind charge_restore_failure(rb_budget *b, const rb_limits *l)
{
	bump64(&b->restore_failures_total);
	if (l->accounting == RB_ACCOUNTING_RAY) {
		if (b->restore_failures < l->restore_retry_num) {
			bump(&b->restore_failures);
			return RB_CHARGE_RESTORE_FAILURE;
		}
		bump(&b->failures);
		return RB_CHARGE_RESTORE_OVER;
	}
	bump(&b->restore_failures);
	/* >= rather than ==: an admin may have lowered R since r was counted */
	if (b->restore_failures >= l->restore_retry_num) {
		bump(&b->failures);
		b->restore_failures = 0;
		return RB_CHARGE_RESTORE_CONVERTED;
	}
	return RB_CHARGE_RESTORE_FAILURE;
}

/* What one end costs: an exit-code rule first (docs/rule.md, "Exit-code
 * rules"), then the phase and the cause. */
static rb_charge_kind charge_of(rb_budget *b, const rb_limits *l,
				const rb_charge *c)
{
	switch (c->rule) {
	case RB_EXIT_RULE_IGNORE:
		return RB_CHARGE_IGNORED;
	case RB_EXIT_RULE_FATAL:
		bump(&b->failures);
		bump64(&b->fatal_exits);
		return RB_CHARGE_FATAL;
	case RB_EXIT_RULE_RESTORE_FAILURE:
		return charge_restore_failure(b, l);
	default:
		break;
	}
	if (c->phase == RB_PHASE_RESTORING)
		return charge_restore_failure(b, l);
	if (c->end == RB_END_FAILED) {
		bump(&b->failures);
		return RB_CHARGE_FAILURE;
	}
	if (l->count_preemptions) {
		bump(&b->failures);
		return RB_CHARGE_PREEMPTION;
	}
	return RB_CHARGE_NONE;
}

/* Charge attempt a once, under limits l; rule: what exit_rules made of
 * its FAILED end. */
static void charge_attempt(rb_budget *b, const rb_attempt *a,
			   const rb_limits *l, rb_exit_rule rule, rb_charge *c)
{
	c->attempt = a->attempt;
	c->end = end_as_charged(a);
	c->phase = phase_at_end(a);
	c->rule = c->end == RB_END_FAILED ? rule : RB_EXIT_RULE_NONE;
	c->failures_before = b->failures;
	c->restore_failures_before = b->restore_failures;

	if (c->end == RB_END_INTERRUPTED)
		bump64(&b->interruptions);
	c->kind = charge_of(b, l, c);
	if (c->kind == RB_CHARGE_FATAL)
		b->fatal_code = a->end_code ? a->end_code : 1;
	if (c->kind != RB_CHARGE_NONE && c->kind != RB_CHARGE_RESTORE_FAILURE &&
	    c->kind != RB_CHARGE_IGNORED)
		bump64(&b->failures_total);
	b->last_charged = a->attempt;
	b->prev_end = c->end;
	b->prev_end_code = c->end == RB_END_FAILED ? a->end_code : 0;
	c->end_code = b->prev_end_code;
	c->failures_after = b->failures;
	c->restore_failures_after = b->restore_failures;
}

/* The reason when nothing was charged: a first attempt, a refused one (it
 * never ran) or an interrupted one that preemptions do not count for. */
static void describe_uncharged(const rb_budget *b, const rb_charge *c,
			       const char *m, const char *verdict,
			       char *reason, size_t len)
{
	if (c->attempt < 0)
		snprintf(reason, len, "first recorded attempt: nothing to charge");
	else
		snprintf(reason, len,
			 "attempt %lld %s: nothing charged (failures %d, max_failures %s)%s",
			 (long long)c->attempt,
			 c->refused ? "was refused, never ran" : "was interrupted",
			 b->failures, m, verdict);
}

/* The one-line reason for decision d after charge c, into reason. */
static void describe(const rb_budget *b, const rb_limits *l,
		     const rb_charge *c, rb_decision d,
		     char *reason, size_t len)
{
	char m[32];
	int64_t mplus = (int64_t)l->max_failures + b->granted;
	bool refused = d == RB_DECISION_REFUSE;
	const char *verdict = refused ? ": budget exhausted" : "";
	const char *cmp = refused ? ">" : "<=";

	if (!reason || len == 0)
		return;
	if (l->max_failures < 0)
		snprintf(m, sizeof(m), "unlimited");
	else
		snprintf(m, sizeof(m), "%lld", (long long)mplus);

	switch (c->kind) {
	case RB_CHARGE_RESTORE_FAILURE:
		snprintf(reason, len,
			 "restore %d of %d failed (attempt %lld): failures %d, max_failures %s",
			 c->restore_failures_after, l->restore_retry_num,
			 (long long)c->attempt, c->failures_after, m);
		break;
	case RB_CHARGE_RESTORE_CONVERTED:
		snprintf(reason, len,
			 "restore %d of %d failed (attempt %lld): failures %d %s max_failures %s%s",
			 c->restore_failures_before + 1, l->restore_retry_num,
			 (long long)c->attempt, c->failures_after, cmp, m,
			 verdict);
		break;
	case RB_CHARGE_RESTORE_OVER:
		snprintf(reason, len,
			 "restore failed after %d free retries (attempt %lld): failures %d %s max_failures %s%s",
			 l->restore_retry_num, (long long)c->attempt,
			 c->failures_after, cmp, m, verdict);
		break;
	case RB_CHARGE_FAILURE:
	case RB_CHARGE_PREEMPTION:
		snprintf(reason, len,
			 "attempt %lld %s: failures %d %s max_failures %s%s",
			 (long long)c->attempt,
			 c->kind == RB_CHARGE_FAILURE ? "failed" :
				 "was preempted (count_preemptions)",
			 c->failures_after, cmp, m, verdict);
		break;
	case RB_CHARGE_IGNORED:
		snprintf(reason, len,
			 "attempt %lld exit code %d is ignored (exit_rules): nothing charged (failures %d, max_failures %s)%s",
			 (long long)c->attempt, c->end_code, b->failures, m,
			 verdict);
		break;
	case RB_CHARGE_NONE:
	default:
		describe_uncharged(b, c, m, verdict, reason, len);
		break;
	}
}

/* A refusal for an exit code or the interruption cap says so: the failure
 * count is not why (docs/rule.md, "Exit-code rules"). Counts the cap's
 * refusals, for metrics. */
static void describe_spent(rb_budget *b, const rb_limits *l,
			   char *reason, size_t len)
{
	rb_spent why = rb_engine_exhaustion(b, l);

	if (why == RB_SPENT_INTERRUPTIONS)
		bump64(&b->interruption_cap_refusals);
	if (!reason || len == 0)
		return;
	switch (why) {
	case RB_SPENT_FATAL:
		snprintf(reason, len,
			 "exit code %d is fatal (exit_rules): budget exhausted",
			 b->fatal_code);
		break;
	case RB_SPENT_INTERRUPTIONS:
		snprintf(reason, len,
			 "interruptions %lld > max_interruptions %lld: budget exhausted",
			 (long long)b->interruptions,
			 (long long)l->max_interruptions + b->granted);
		break;
	default:
		break;
	}
}

rb_decision rb_engine_start(rb_budget *b, int64_t n, const rb_limits *limits,
			    int64_t now, rb_charge *charge,
			    char *reason, size_t reasonlen)
{
	return rb_engine_start_ruled(b, n, limits, RB_EXIT_RULE_NONE, now,
				     charge, reason, reasonlen);
}

rb_decision rb_engine_start_ruled(rb_budget *b, int64_t n,
				  const rb_limits *limits, rb_exit_rule rule,
				  int64_t now, rb_charge *charge,
				  char *reason, size_t reasonlen)
{
	rb_charge local;
	rb_charge *c = charge ? charge : &local;
	rb_decision d;

	memset(c, 0, sizeof(*c));
	c->attempt = -1;
	c->failures_before = c->failures_after = b->failures;
	c->restore_failures_before = c->restore_failures_after =
		b->restore_failures;

	/* A repeated start (a retried callback, a replayed note) or a
	 * stale one: nothing changes, the earlier decision stands. */
	if (n <= b->cur.attempt) {
		d = b->cur.refused ? RB_DECISION_REFUSE : RB_DECISION_RUN;
		if (reason && reasonlen)
			snprintf(reason, reasonlen,
				 "attempt %lld already started: %s", (long long)n,
				 d == RB_DECISION_REFUSE ? "refused" : "running");
		return d;
	}

	/* A refused attempt never ran: it is not charged again. */
	if (b->cur.attempt >= 0 && b->cur.attempt > b->last_charged) {
		if (b->cur.refused) {
			b->last_charged = b->cur.attempt;
			c->attempt = b->cur.attempt;
			c->end = end_as_charged(&b->cur);
			c->end_code = c->end == RB_END_FAILED ?
					      b->cur.end_code : 0;
			c->phase = phase_at_end(&b->cur);
			c->refused = true;
		} else
			charge_attempt(b, &b->cur, limits, rule, c);
	}

	d = rb_engine_is_exhausted(b, limits) ? RB_DECISION_REFUSE :
						RB_DECISION_RUN;
	describe(b, limits, c, d, reason, reasonlen);
	if (d == RB_DECISION_REFUSE)
		describe_spent(b, limits, reason, reasonlen);

	memset(&b->cur, 0, sizeof(b->cur));
	b->cur.attempt = n;
	/* Provisional until the batch step reports: if the step never does
	 * (the node died first), a restore was still what this attempt was for. */
	b->cur.phase = rb_engine_start_phase(n, b->checkpoint);
	b->cur.start_time = now;
	b->cur.limits = *limits;
	b->cur.refused = d == RB_DECISION_REFUSE;
	/* Until the batch step reports, the attempt is handed the remembered
	 * checkpoint: the pointer survives every charge. */
	rb_strlcpy(b->cur.checkpoint, b->checkpoint, sizeof(b->cur.checkpoint));
	b->exhausted = b->cur.refused;
	return d;
}

rb_phase rb_engine_start_phase(int64_t n, const char *checkpoint)
{
	bool have = checkpoint && checkpoint[0];

	if (!have)
		return RB_PHASE_FRESH;
	return n >= 1 ? RB_PHASE_RESTORING : RB_PHASE_RUNNING;
}

void rb_engine_set_phase(rb_budget *b, int64_t n, rb_phase phase,
			 const char *checkpoint)
{
	if (n != b->cur.attempt || b->cur.attempt < 0)
		return;
	b->cur.phase = phase;
	if (checkpoint && checkpoint[0]) {
		rb_strlcpy(b->cur.checkpoint, checkpoint,
			   sizeof(b->cur.checkpoint));
		rb_strlcpy(b->checkpoint, checkpoint, sizeof(b->checkpoint));
	}
}

bool rb_engine_confirm(rb_budget *b, int64_t n, rb_confirm how)
{
	if (n != b->cur.attempt || b->cur.attempt < 0 || how == RB_CONFIRM_NONE)
		return false;
	if (b->cur.phase != RB_PHASE_RESTORING ||
	    b->cur.confirmed != RB_CONFIRM_NONE)
		return false;
	b->cur.confirmed = how;
	/* failures must be consecutive: a confirmed restore forgives r */
	b->restore_failures = 0;
	return true;
}

bool rb_engine_end(rb_budget *b, int64_t n, rb_end end, int code, int64_t now)
{
	const rb_attempt *a = &b->cur;

	if (n != a->attempt || a->attempt < 0 || end == RB_END_NONE ||
	    a->end != RB_END_NONE)
		return false;
	b->cur.end = end;
	b->cur.end_code = end == RB_END_FAILED ? code : 0;
	b->cur.end_time = now;
	if (end == RB_END_COMPLETED)
		rb_engine_confirm(b, n, RB_CONFIRM_EXIT0);
	else if (a->limits.restore_timeout > 0 &&
		 now - a->start_time >= a->limits.restore_timeout)
		rb_engine_confirm(b, n, RB_CONFIRM_TIMEOUT);
	return true;
}

/* --- names ---------------------------------------------------------------- */

static const char *const phase_names[] = {
	[RB_PHASE_NONE] = "NONE", [RB_PHASE_FRESH] = "FRESH",
	[RB_PHASE_RESTORING] = "RESTORING", [RB_PHASE_RUNNING] = "RUNNING",
};
static const char *const end_names[] = {
	[RB_END_NONE] = "none", [RB_END_INTERRUPTED] = "interrupted",
	[RB_END_FAILED] = "failed", [RB_END_COMPLETED] = "completed",
};
static const char *const confirm_names[] = {
	[RB_CONFIRM_NONE] = "none", [RB_CONFIRM_ACK] = "ack",
	[RB_CONFIRM_TIMEOUT] = "timeout", [RB_CONFIRM_EXIT0] = "exit0",
};
static const char *const charge_names[] = {
	[RB_CHARGE_NONE] = "none",
	[RB_CHARGE_RESTORE_FAILURE] = "restore_failure",
	[RB_CHARGE_RESTORE_CONVERTED] = "restore_failure_converted",
	[RB_CHARGE_RESTORE_OVER] = "restore_failure_over_free",
	[RB_CHARGE_FAILURE] = "failure",
	[RB_CHARGE_PREEMPTION] = "preemption_failure",
	[RB_CHARGE_FATAL] = "fatal_exit",
	[RB_CHARGE_IGNORED] = "ignored_exit",
};
static const char *const exit_rule_names[] = {
	[RB_EXIT_RULE_NONE] = "none", [RB_EXIT_RULE_FAILURE] = "failure",
	[RB_EXIT_RULE_RESTORE_FAILURE] = "restore_failure",
	[RB_EXIT_RULE_FATAL] = "fatal", [RB_EXIT_RULE_IGNORE] = "ignore",
};
static const char *const accounting_names[] = {
	[RB_ACCOUNTING_GROUPED] = "grouped", [RB_ACCOUNTING_RAY] = "ray",
};

#define NAMES_LEN(t) (sizeof(t) / sizeof((t)[0]))

static const char *name_of(const char *const *names, size_t n, unsigned v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

static int parse_name(const char *const *names, size_t n, const char *s,
		      int *out)
{
	for (size_t i = 0; s && i < n; i++) {
		if (names[i] && strcmp(names[i], s) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -1;
}

#define NAME_FUNCS(type, stem, table)                                      \
	const char *rb_##stem##_name(type v)                               \
	{                                                                  \
		return name_of(table, NAMES_LEN(table), (unsigned)v);      \
	}                                                                  \
	/* `type` is a type name: `(type) *out` would not declare out */   \
	/* NOLINTNEXTLINE(bugprone-macro-parentheses) */                   \
	int rb_##stem##_parse(const char *s, type *out)                    \
	{                                                                  \
		int v;                                                     \
		if (parse_name(table, NAMES_LEN(table), s, &v) < 0)        \
			return -1;                                         \
		*out = (type)v;                                            \
		return 0;                                                  \
	}

NAME_FUNCS(rb_phase, phase, phase_names)
NAME_FUNCS(rb_end, end, end_names)
NAME_FUNCS(rb_confirm, confirm, confirm_names)
NAME_FUNCS(rb_charge_kind, charge, charge_names)
NAME_FUNCS(rb_accounting, accounting, accounting_names)
NAME_FUNCS(rb_exit_rule, exit_rule, exit_rule_names)

void rb_end_format(rb_end e, int code, char *buf, size_t len)
{
	if (e == RB_END_FAILED)
		snprintf(buf, len, "failed:%d", code);
	else
		snprintf(buf, len, "%s", rb_end_name(e));
}
