/*
 * eventsum.c - what a stretch of a job's event log adds up to (eventsum.h).
 * The charges are counted as the engine counts them (engine.c,
 * charge_attempt), from the start events' charge and charged_end.
 */
#include "eventsum.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rule/rule.h"

typedef struct {
	const char *k, *v;
	size_t kl, vl;
} tok;

/* The next "key=value" token of line after *pos ("crc=" included); false
 * at the end. A token without '=' has an empty value. */
static bool next_tok(const char *line, size_t *pos, tok *t)
{
	const char *p = line + *pos, *sp, *eq;

	while (*p == ' ')
		p++;
	if (!*p)
		return false;
	sp = strchr(p, ' ');
	if (!sp)
		sp = p + strlen(p);
	eq = memchr(p, '=', (size_t)(sp - p));
	t->k = p;
	t->kl = eq ? (size_t)(eq - p) : (size_t)(sp - p);
	t->v = eq ? eq + 1 : sp;
	t->vl = eq ? (size_t)(sp - eq - 1) : 0;
	*pos = (size_t)(sp - line);
	return true;
}

static bool key_is(const tok *t, const char *key)
{
	return strlen(key) == t->kl && memcmp(t->k, key, t->kl) == 0;
}

static bool val_is(const tok *t, const char *v)
{
	return strlen(v) == t->vl && memcmp(t->v, v, t->vl) == 0;
}

/* A decimal as the ledger writes it (rb_parse_i64), of at most 18 digits,
 * or -1 if not one. */
static int64_t num(const char *v, size_t n)
{
	const int64_t max = 999999999999999999;
	int64_t x;

	return rb_parse_i64(v, n, -max, max, &x) < 0 ? -1 : x;
}

static void add(int64_t *v, int64_t n)
{
	if (n <= 0)
		return;
	*v = *v > INT64_MAX - n ? INT64_MAX : *v + n;
}

void rb_evsum_init(rb_evsum *s)
{
	memset(s, 0, sizeof(*s));
	s->first = s->last = -1;
	s->refused_attempt = -1;
}

void rb_evsum_free(rb_evsum *s)
{
	for (size_t i = 0; i < s->nckpt; i++)
		free(s->ckpt[i]);
	s->nckpt = 0;
}

static void see_attempt(rb_evsum *s, int64_t a)
{
	if (a < 0)
		return;
	if (s->first < 0 || a < s->first)
		s->first = a;
	if (a > s->last)
		s->last = a;
}

/* Name one more checkpoint handed out (escaped, as stored): a distinct one
 * is appended as the newest, one already named moves to the newest place. */
static void push_ckpt(rb_evsum *s, const char *v, size_t vl)
{
	char *c;

	/* as rb_kv_escape writes it: what else a summary line would carry
	 * could not be appended (rb_ledger_append takes printable ASCII) */
	for (size_t i = 0; i < vl; i++)
		if (v[i] < 0x21 || v[i] > 0x7e)
			return;
	for (size_t i = 0; i < s->nckpt; i++) {
		if (strlen(s->ckpt[i]) != vl || memcmp(s->ckpt[i], v, vl) != 0)
			continue;
		c = s->ckpt[i];
		memmove(s->ckpt + i, s->ckpt + i + 1,
			(s->nckpt - i - 1) * sizeof(*s->ckpt));
		s->ckpt[s->nckpt - 1] = c;
		return;
	}
	c = strndup(v, vl);
	if (!c) {
		s->oom = true;
		add(&s->ckpt_dropped, 1);
		return;
	}
	if (s->nckpt == RB_EVSUM_CKPT_MAX) {
		free(s->ckpt[0]);
		memmove(s->ckpt, s->ckpt + 1, (s->nckpt - 1) * sizeof(*s->ckpt));
		s->nckpt--;
		add(&s->ckpt_dropped, 1);
	}
	s->ckpt[s->nckpt++] = c;
}

/* The counters a summary line carries, by name: summed when one merges. */
#define F(name, field) { name, offsetof(rb_evsum, field) }
static const struct {
	const char *key;
	size_t off;
} counters[] = {
	F("events", events), F("damaged", damaged), F("starts", starts),
	F("refused", refused), F("reports", reports), F("ends", ends),
	F("completed", completed), F("failed", failed),
	F("interrupted", interrupted), F("grants", grants),
	F("resets", resets), F("failures_total", failures_total),
	F("restore_failures_total", restore_failures_total),
	F("interruptions", interruptions), F("fatal_exits", fatal_exits),
	F("granted", granted), F("checkpoints_handed", ckpt_handed),
	F("checkpoints_dropped", ckpt_dropped),
};
#undef F
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static int64_t *counter(rb_evsum *s, size_t i)
{
	return (int64_t *)(void *)((char *)s + counters[i].off);
}

/* An earlier fold's summary: its counts add to ours (it always comes
 * first in a log, so its "since the newest reset" totals are ours too). */
static void merge_folded(rb_evsum *s, const char *line)
{
	size_t pos = 0;
	tok t;

	while (next_tok(line, &pos, &t)) {
		const char *dash;

		if (key_is(&t, "checkpoint") && t.vl > 0)
			push_ckpt(s, t.v, t.vl);
		else if (key_is(&t, "refused_attempt"))
			s->refused_attempt = num(t.v, t.vl);
		else if (key_is(&t, "attempts") &&
			 (dash = memchr(t.v + 1, '-', t.vl ? t.vl - 1 : 0))) {
			see_attempt(s, num(t.v, (size_t)(dash - t.v)));
			see_attempt(s, num(dash + 1, t.vl - (size_t)(dash + 1 - t.v)));
		} else
			for (size_t i = 0; i < NCOUNTERS; i++)
				if (key_is(&t, counters[i].key))
					add(counter(s, i), num(t.v, t.vl));
	}
}

/* What one event line says, for the counts. */
typedef struct {
	tok kind, decision, charge, charged_end, end, granted, checkpoint;
	int64_t attempt, charged;
} ev;

static void read_ev(const char *line, ev *e)
{
	size_t pos = 0;
	tok t;

	memset(e, 0, sizeof(*e));
	e->attempt = e->charged = -1;
	while (next_tok(line, &pos, &t)) {
		/* the first kind= names the event (lifecycle.c writes it
		 * second, after t=; a value never holds ' ' or '=') */
		if (key_is(&t, "kind") && !e->kind.k)
			e->kind = t;
		else if (key_is(&t, "attempt"))
			e->attempt = num(t.v, t.vl);
		else if (key_is(&t, "decision"))
			e->decision = t;
		else if (key_is(&t, "charge"))
			e->charge = t;
		else if (key_is(&t, "charged"))
			e->charged = num(t.v, t.vl);
		else if (key_is(&t, "charged_end"))
			e->charged_end = t;
		else if (key_is(&t, "end"))
			e->end = t;
		else if (key_is(&t, "granted"))
			e->granted = t;
		else if (key_is(&t, "checkpoint"))
			e->checkpoint = t;
	}
}

/* A start charges its previous attempt as engine.c charge_attempt does:
 * interruptions count every end charged as interrupted (a refused attempt
 * is never charged), failures_total every charge that adds to F. */
static void add_start(rb_evsum *s, const ev *e)
{
	const tok *c = &e->charge;

	add(&s->starts, 1);
	if (e->charged >= 0 && e->charged != s->refused_attempt &&
	    val_is(&e->charged_end, "interrupted"))
		add(&s->interruptions, 1);
	if (val_is(c, "restore_failure") ||
	    val_is(c, "restore_failure_converted") ||
	    val_is(c, "restore_failure_over_free"))
		add(&s->restore_failures_total, 1);
	if (val_is(c, "restore_failure_converted") ||
	    val_is(c, "restore_failure_over_free") || val_is(c, "failure") ||
	    val_is(c, "preemption_failure") || val_is(c, "fatal_exit"))
		add(&s->failures_total, 1);
	if (val_is(c, "fatal_exit"))
		add(&s->fatal_exits, 1);
	if (val_is(&e->decision, "refuse")) {
		add(&s->refused, 1);
		s->refused_attempt = e->attempt;
	}
}

static void add_end(rb_evsum *s, const ev *e)
{
	add(&s->ends, 1);
	if (val_is(&e->end, "completed"))
		add(&s->completed, 1);
	else if (val_is(&e->end, "interrupted"))
		add(&s->interrupted, 1);
	else if (e->end.vl > 7 && memcmp(e->end.v, "failed:", 7) == 0)
		add(&s->failed, 1);
}

/* "granted=a->b": b - a more failures. */
static void add_grant(rb_evsum *s, const ev *e)
{
	const tok *g = &e->granted;
	const char *arrow = g->vl > 2 ? memchr(g->v, '>', g->vl) : NULL;
	int64_t a, b;

	add(&s->grants, 1);
	if (!arrow || arrow == g->v || arrow[-1] != '-')
		return;
	a = num(g->v, (size_t)(arrow - 1 - g->v));
	b = num(arrow + 1, g->vl - (size_t)(arrow + 1 - g->v));
	if (a >= 0 && b > a)
		add(&s->granted, b - a);
}

/* A reset starts the record afresh (lifecycle.c, reset_reused): so do the
 * totals the record keeps. */
static void add_reset(rb_evsum *s)
{
	add(&s->resets, 1);
	s->failures_total = s->restore_failures_total = 0;
	s->interruptions = s->fatal_exits = s->granted = 0;
	s->refused_attempt = -1;
}

void rb_evsum_add(rb_evsum *s, const char *line, bool ok)
{
	ev e;

	if (!ok) {
		add(&s->damaged, 1);
		return;
	}
	read_ev(line, &e);
	if (val_is(&e.kind, "folded")) {
		merge_folded(s, line);
		return;
	}
	add(&s->events, 1);
	see_attempt(s, e.attempt);
	if (val_is(&e.kind, "start"))
		add_start(s, &e);
	else if (val_is(&e.kind, "end"))
		add_end(s, &e);
	else if (val_is(&e.kind, "grant"))
		add_grant(s, &e);
	else if (val_is(&e.kind, "reset"))
		add_reset(s);
	else if (val_is(&e.kind, "report")) {
		add(&s->reports, 1);
		if (e.checkpoint.vl > 0) {
			add(&s->ckpt_handed, 1);
			push_ckpt(s, e.checkpoint.v, e.checkpoint.vl);
		}
	}
}

/* ---- the summary line ------------------------------------------------------- */

typedef struct {
	char *buf;
	size_t pos, len;
} out;

static void put(out *o, const char *s, size_t n)
{
	if (n >= o->len - o->pos)
		n = o->len - o->pos - 1;
	memcpy(o->buf + o->pos, s, n);
	o->pos += n;
	o->buf[o->pos] = '\0';
}

static void put_i64(out *o, int64_t v)
{
	char text[24];

	put(o, text, rb_fmt_i64(v, text));
}

static void put_num(out *o, const char *key, int64_t v)
{
	put(o, " ", 1);
	put(o, key, strlen(key));
	put(o, "=", 1);
	put_i64(o, v);
}

/* How many of the newest checkpoints fit in room bytes. */
static size_t ckpt_fit(const rb_evsum *s, size_t room)
{
	size_t k = 0, used = 0;

	while (k < s->nckpt) {
		size_t need = sizeof(" checkpoint=") - 1 +
			      strlen(s->ckpt[s->nckpt - 1 - k]);

		if (used + need > room)
			break;
		used += need;
		k++;
	}
	return k;
}

size_t rb_evsum_format(const rb_evsum *s, char *buf, size_t len)
{
	out o = { buf, 0, len };
	size_t k;

	buf[0] = '\0';
	put(&o, "kind=folded attempts=", 21);
	put_i64(&o, s->first < 0 ? 0 : s->first);
	put(&o, "-", 1);
	put_i64(&o, s->last < 0 ? 0 : s->last);
	for (size_t i = 0; i + 1 < NCOUNTERS; i++)
		put_num(&o, counters[i].key, *counter((rb_evsum *)s, i));
	put_num(&o, "refused_attempt", s->refused_attempt);
	/* the newest checkpoints that fit; the rest are counted */
	k = ckpt_fit(s, len > o.pos + 48 ? len - o.pos - 48 : 0);
	put_num(&o, "checkpoints_dropped",
		s->ckpt_dropped + (int64_t)(s->nckpt - k));
	for (size_t i = s->nckpt - k; i < s->nckpt; i++) {
		put(&o, " checkpoint=", 12);
		put(&o, s->ckpt[i], strlen(s->ckpt[i]));
	}
	return o.pos;
}
