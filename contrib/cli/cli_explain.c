/*
 * cli_explain.c - `restore-budget explain JOB`: the event log in words.
 *
 * A stored line is "t=<unix time> kind=<k> attempt=<n> key=value ...
 * crc=<hex>", values %XX-escaped (rb_kv_escape). Which keys each kind
 * writes is lifecycle.c's business; unknown keys are kept (JSON) and
 * ignored (text), so an older CLI still reads a newer log.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/lifecycle.h"

#define SAFE_MAX (3 * RB_PATH_MAX + 1)

typedef cli_event event;
#define ev_get cli_event_get
#define ev_s cli_event_str

typedef struct {
	json_object *events;   /* --json */
	size_t n, torn;
	bool oom;
	rb_evsum sum;          /* the totals (a folded log's too) */
} explain_state;

/* Append to a bounded line buffer. */
typedef struct {
	char *buf;
	size_t len, cap;
} line_buf;

static void lb_add(line_buf *lb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void lb_add(line_buf *lb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (lb->len + 1 >= lb->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(lb->buf + lb->len, lb->cap - lb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	lb->len += (size_t)n;
	if (lb->len >= lb->cap)
		lb->len = lb->cap - 1;
}

/* Untrusted text (paths, reasons, user names) made terminal-safe. */
static void lb_safe(line_buf *lb, const char *s)
{
	char *safe = malloc(SAFE_MAX);

	if (!safe)
		return;
	lb_add(lb, "%s", cli_safe(s, safe, SAFE_MAX));
	free(safe);
}

static const char *charge_words(const char *kind)
{
	static const struct {
		const char *name, *words;
	} table[] = {
		{ "none", "nothing" },
		{ "restore_failure", "a failed restore (r += 1)" },
		{ "restore_failure_converted",
		  "a failed restore that completed a group of R (F += 1, r := 0)" },
		{ "restore_failure_over_free",
		  "a failed restore beyond the free ones (F += 1)" },
		{ "failure", "a failure after a confirmed restore (F += 1)" },
		{ "preemption_failure",
		  "a preemption, count_preemptions is on (F += 1)" },
		{ "fatal_exit",
		  "a fatal exit code (exit_rules: F += 1, exhausted now)" },
		{ "ignored_exit", "an ignored exit code (exit_rules: nothing)" },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(kind, table[i].name) == 0)
			return table[i].words;
	return kind;
}

static void text_limits(line_buf *lb, const event *e)
{
	const char *m = ev_s(e, "max_failures");

	lb_add(lb, "; limits M=%s R=%s timeout=%ss %s%s",
	       strcmp(m, "-1") == 0 ? "unlimited" : m,
	       ev_s(e, "restore_retry_num"), ev_s(e, "restore_timeout"),
	       ev_s(e, "accounting"),
	       strcmp(ev_s(e, "count_preemptions"), "1") == 0 ?
		       " count_preemptions" : "");
	if (ev_get(e, "granted") && strcmp(ev_s(e, "granted"), "0") != 0)
		lb_add(lb, " +%s granted", ev_s(e, "granted"));
	if (ev_get(e, "max_interruptions"))
		lb_add(lb, " max_interruptions=%s", ev_s(e, "max_interruptions"));
}

static void text_start(line_buf *lb, const event *e)
{
	const char *charged = ev_s(e, "charged");
	const char *ckpt = ev_get(e, "checkpoint");
	bool refused = strcmp(ev_s(e, "decision"), "refuse") == 0;

	if (ev_get(e, "confirmed_previous"))
		lb_add(lb, "attempt %s's restore confirmed by %s; ",
		       ev_s(e, "charged"), ev_s(e, "confirmed_previous"));
	lb_add(lb, "%s", refused ? "REFUSED" : "run");
	if (strcmp(charged, "-1") == 0)
		lb_add(lb, "; nothing to charge (first recorded attempt)");
	else
		lb_add(lb, "; charged attempt %s (ended %s while %s) as %s",
		       charged, ev_s(e, "charged_end"),
		       ev_s(e, "charged_phase"),
		       charge_words(ev_s(e, "charge")));
	if (ev_get(e, "rule"))
		lb_add(lb, " (exit_rules: rule=%s)", ev_s(e, "rule"));
	lb_add(lb, "; failures %s, restore_failures %s",
	       ev_s(e, "failures"), ev_s(e, "restore_failures"));
	text_limits(lb, e);
	/* logs before the cap named the checkpoint here too; the report
	 * names the one handed out (once per attempt) */
	if (ckpt) {
		lb_add(lb, "; checkpoint ");
		lb_safe(lb, ckpt[0] ? ckpt : "(none)");
	}
	if (ev_get(e, "marked_bad")) {
		lb_add(lb, "; checkpoint fallback: attempt %s's checkpoint ",
		       charged);
		lb_safe(lb, ev_s(e, "marked_bad"));
		lb_add(lb, " marked bad");
	}
	if (refused && ev_get(e, "reason")) {
		lb_add(lb, "; reason: ");
		lb_safe(lb, ev_s(e, "reason"));
	}
	if (ev_get(e, "warnings")) {
		lb_add(lb, "; warnings: ");
		lb_safe(lb, ev_s(e, "warnings"));
	}
}

static void text_report(line_buf *lb, const event *e)
{
	const char *ckpt = ev_get(e, "checkpoint");

	lb_add(lb, "phase %s, checkpoint ", ev_s(e, "phase"));
	lb_safe(lb, ckpt && ckpt[0] ? ckpt : "(none)");
	if (ev_get(e, "fallback_from")) {
		lb_add(lb, " (fallback: the newest, ");
		lb_safe(lb, ev_s(e, "fallback_from"));
		lb_add(lb, ", is marked bad)");
	}
}

static void text_end(line_buf *lb, const event *e)
{
	const char *ran = ev_get(e, "ran");
	long long secs;
	char d[32];

	if (ran && cli_parse_uint(ran, INT64_MAX / 2, &secs) == 0)
		cli_format_duration(secs, d, sizeof(d));
	else
		rb_strlcpy(d, ran ? ran : "?", sizeof(d));
	lb_add(lb, "%s", ev_s(e, "end"));
	if (ev_get(e, "detail")) {
		lb_add(lb, " (");
		lb_safe(lb, ev_s(e, "detail"));
		lb_add(lb, ")");
	}
	lb_add(lb, " after %s (phase %s, restore confirmed: %s)", d,
	       ev_s(e, "phase"), ev_s(e, "confirmed"));
	if (ev_get(e, "confirmed_previous"))
		lb_add(lb, "; confirmed by %s before its end",
		       ev_s(e, "confirmed_previous"));
}

static void text_grant(line_buf *lb, const event *e)
{
	lb_add(lb, "extra failures granted %s by ", ev_s(e, "granted"));
	lb_safe(lb, ev_s(e, "by"));
}

static void print_event_text(const event *e)
{
	char line[2 * SAFE_MAX], when[32];
	line_buf lb = { line, 0, sizeof(line) };
	const char *kind = ev_s(e, "kind");
	long long t = 0;

	line[0] = '\0';
	if (ev_get(e, "t"))
		cli_parse_uint(ev_get(e, "t"), INT64_MAX, &t);
	cli_format_time(t, when, sizeof(when));
	lb_add(&lb, "%s  attempt %-3s %-7s", when, ev_s(e, "attempt"), kind);
	if (strcmp(kind, "start") == 0)
		text_start(&lb, e);
	else if (strcmp(kind, "report") == 0)
		text_report(&lb, e);
	else if (strcmp(kind, "end") == 0)
		text_end(&lb, e);
	else if (strcmp(kind, "grant") == 0)
		text_grant(&lb, e);
	else
		lb_add(&lb, "(unknown event kind)");
	if (e->bad_value)
		lb_add(&lb, " [some values malformed]");
	/* line (and the %-7s column) may end in blanks when fields are
	 * missing: trim them */
	while (lb.len > 0 && line[lb.len - 1] == ' ')
		line[--lb.len] = '\0';
	puts(line);
}

/* --- JSON ------------------------------------------------------------------ */

static const char *const int_keys[] = {
	"t", "attempt", "charged", "max_failures", "restore_retry_num",
	"restore_timeout", "ran", NULL,
};
static const char *const pair_keys[] = {
	"failures", "restore_failures", NULL,
};

static bool in_list(const char *const *list, const char *key)
{
	for (; *list; list++)
		if (strcmp(*list, key) == 0)
			return true;
	return false;
}

static int64_t parse_i64(const char *s, bool *ok)
{
	bool neg = s[0] == '-';
	long long v;

	*ok = cli_parse_uint(s + neg, INT64_MAX, &v) == 0;
	return neg ? -(int64_t)v : (int64_t)v;
}

/* "a->b" as {"before": a, "after": b}; anything else stays a string. */
static json_object *json_pair(const char *v)
{
	const char *arrow = strstr(v, "->");
	json_object *o;
	char before[32];
	int64_t a, b;
	bool ok1, ok2;

	if (!arrow || (size_t)(arrow - v) >= sizeof(before))
		return cli_json_string(v);
	memcpy(before, v, (size_t)(arrow - v));
	before[arrow - v] = '\0';
	a = parse_i64(before, &ok1);
	b = parse_i64(arrow + 2, &ok2);
	if (!ok1 || !ok2)
		return cli_json_string(v);
	o = json_object_new_object();
	json_object_object_add(o, "before", json_object_new_int64(a));
	json_object_object_add(o, "after", json_object_new_int64(b));
	return o;
}

static json_object *event_json(const event *e)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(true));
	for (size_t i = 0; i < e->n; i++) {
		const char *k = e->pairs[i].key, *v = e->pairs[i].value;
		json_object *val;
		bool ok;

		if (in_list(int_keys, k)) {
			int64_t n = parse_i64(v, &ok);

			val = ok ? json_object_new_int64(n) : cli_json_string(v);
		} else if (in_list(pair_keys, k) ||
			   (strcmp(k, "granted") == 0 && strstr(v, "->"))) {
			val = json_pair(v);
		} else if (strcmp(k, "granted") == 0) {
			int64_t n = parse_i64(v, &ok);

			val = ok ? json_object_new_int64(n) : cli_json_string(v);
		} else if (strcmp(k, "count_preemptions") == 0 &&
			   (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)) {
			val = json_object_new_boolean(v[0] == '1');
		} else {
			val = cli_json_string(v);
		}
		json_object_object_add(o, strcmp(k, "t") == 0 ? "time" : k,
				       val);
	}
	return o;
}

/* --- the walk ----------------------------------------------------------------- */

static int on_event(const char *line, bool ok, void *vctx)
{
	explain_state *st = vctx;
	event e;

	st->n++;
	rb_evsum_add(&st->sum, line, ok);
	if (!ok) {
		/* A torn append (crash mid-write) or damage: its content is
		 * not trusted and not shown. */
		st->torn++;
		if (st->events)
			json_object_array_add(st->events,
				cli_json_pair("ok", json_object_new_boolean(false),
					      "line",
					      json_object_new_int64((int64_t)st->n)));
		else
			printf("line %zu: (torn line ignored)\n", st->n);
		return 0;
	}
	if (cli_event_parse(line, &e) < 0) {
		cli_event_free(&e);
		st->oom = true;
		return 1;
	}
	if (strcmp(ev_s(&e, "kind"), "folded") == 0 && st->events)
		json_object_array_add(st->events, cli_folded_json(&e));
	else if (strcmp(ev_s(&e, "kind"), "folded") == 0)
		cli_folded_text(&e);
	else if (st->events)
		json_object_array_add(st->events, event_json(&e));
	else
		print_event_text(&e);
	cli_event_free(&e);
	return 0;
}

/* Walk job_id's event log into st. 0, 1 (no log), or -1 (message
 * printed; st->events released). */
static int walk(cli_ctx *ctx, uint32_t job_id, explain_state *st)
{
	rb_ledger *l = NULL;
	rb_err err;
	int rc, r;

	rb_evsum_init(&st->sum);
	r = cli_open_ledger(ctx, RB_LEDGER_READ, &l);
	if (r < 0)
		rc = -2;
	else
		rc = r == 1 ? 1 : rb_ledger_events(l, job_id, on_event, st, &err);
	rb_ledger_close(l);
	rb_evsum_free(&st->sum); /* its totals stay (eventsum.h) */
	if (rc == -2 || st->oom || rc < 0) {
		if (st->oom)
			cli_error("out of memory");
		else if (rc == -1)
			cli_error("job %" PRIu32 ": %s", job_id, err.msg);
		json_object_put(st->events);
		st->events = NULL;
		return -1;
	}
	return rc;
}

/* The JSON of one job's log (its task ids, for a task). */
static json_object *log_json(const cli_task *task, uint32_t job_id,
			     explain_state *st)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "job_id", json_object_new_int64(job_id));
	if (task && task->array_job_id) {
		json_object_object_add(o, "array_job_id",
				       json_object_new_int64(task->array_job_id));
		json_object_object_add(o, "array_task_id",
				       json_object_new_int64(task->task_id));
	}
	json_object_object_add(o, "torn_lines",
			       json_object_new_int64((int64_t)st->torn));
	json_object_object_add(o, "events", st->events);
	json_object_object_add(o, "totals", cli_totals_json(&st->sum));
	return o;
}

/* One job's log; task: its ids when it is an array task (else NULL). */
static int explain_one(cli_ctx *ctx, uint32_t job_id, const cli_task *task)
{
	explain_state st = { 0 };
	int rc;

	if (ctx->json)
		st.events = json_object_new_array();
	else if (task && task->array_job_id)
		printf("job %" PRIu32 " (array task %" PRIu32 "_%" PRIu32 ")\n",
		       job_id, task->array_job_id, task->task_id);
	rc = walk(ctx, job_id, &st);
	if (rc < 0)
		return CLI_EDATA;
	if (rc == 1) {
		json_object_put(st.events);
		cli_error("job %" PRIu32 ": no event log on cluster %s (not "
			  "tracked, removed by gc, or another cluster: see "
			  "--cluster)", job_id, ctx->cluster);
		return CLI_ENOTFOUND;
	}
	if (ctx->json) {
		json_object *o = log_json(task, job_id, &st);

		json_object_object_add(o, "cluster",
				       cli_json_string(ctx->cluster));
		return cli_json_print(o) < 0 ? CLI_EDATA : CLI_OK;
	}
	if (st.n == 0)
		printf("(no events recorded for job %" PRIu32 ")\n", job_id);
	else
		cli_totals_text(&st.sum);
	return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
}

/* Every task's log, by task id: a heading line per task, then its events
 * (JSON: one object per task), then the tasks not started yet. */
static int explain_array(cli_ctx *ctx, const cli_target *t)
{
	json_object *tasks = ctx->json ? json_object_new_array() : NULL;
	int rc = CLI_OK;

	for (size_t i = 0; i < t->n; i++) {
		const cli_task *k = &t->tasks[i];
		explain_state st = { 0 };
		int r;

		if (tasks)
			st.events = json_object_new_array();
		else
			printf("== %" PRIu32 "_%" PRIu32 " (job %" PRIu32 ") ==\n",
			       k->array_job_id, k->task_id, k->job_id);
		r = walk(ctx, k->job_id, &st);
		if (r < 0)
			rc = CLI_EDATA;
		else if (tasks)
			json_object_array_add(tasks, log_json(k, k->job_id, &st));
		else if (r == 1 || st.n == 0)
			printf("(no events recorded for job %" PRIu32 ")\n",
			       k->job_id);
		else
			cli_totals_text(&st.sum);
	}
	if (tasks) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "cluster", cli_json_string(ctx->cluster));
		json_object_object_add(o, "array_job_id",
				       json_object_new_int64(t->ref.id));
		json_object_object_add(o, "tasks", tasks);
		cli_target_end(t, o);
		return cli_json_print(o) < 0 ? CLI_EDATA : rc;
	}
	cli_target_end(t, NULL);
	return fflush(stdout) == 0 ? rc : CLI_EDATA;
}

int cli_cmd_explain(cli_ctx *ctx, const rb_job_arg *ref)
{
	cli_target t;
	int rc;

	if (ctx->cfg->store == RB_STORE_CONTROLLER)
		return cli_ctl_explain(ctx, ref);
	rc = cli_resolve(ctx, ref, true, &t);

	/* a bare id without a record: its event log, if any, as before */
	if (rc == CLI_ENOTFOUND && !ref->task)
		rc = explain_one(ctx, ref->id, NULL);
	else if (rc == CLI_ENOTFOUND)
		rc = cli_not_found(ctx, ref);
	else if (rc == CLI_OK && t.array)
		rc = explain_array(ctx, &t);
	else if (rc == CLI_OK)
		rc = explain_one(ctx, t.tasks[0].job_id, &t.tasks[0]);
	cli_target_free(&t);
	return rc;
}
