/*
 * cli_json.c - JSON output with json-c (never hand-built strings).
 *
 * Conventions (also in contrib/cli/README.md): times are unix seconds
 * (0 = none), max_failures is -1 for unlimited as in the config file, and
 * restores_left is null for unlimited.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_object *cli_json_string(const char *s)
{
	static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), o = 0;
	json_object *obj;
	char *buf;

	/* Paths come from users and may be any bytes; JSON must be UTF-8,
	 * and what is not printable (C1 controls, bidi overrides) must not
	 * reach a terminal that shows the JSON: U+FFFD stands for either. */
	buf = malloc(len * 3 + 1);
	if (!buf)
		return NULL;
	while (*p) {
		unsigned cp;
		size_t n = cli_utf8_char(p, &cp);

		if (n == 0 || (n > 1 && cli_cp_is_control(cp))) {
			/* json-c escapes C0 itself (\u00XX) */
			memcpy(buf + o, repl, 3);
			o += 3;
			p += n ? n : 1;
		} else {
			memcpy(buf + o, p, n);
			o += n;
			p += n;
		}
	}
	buf[o] = '\0';
	obj = json_object_new_string_len(buf, (int)o);
	free(buf);
	return obj;
}

static void add_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, cli_json_string(v));
}

static void add_int(json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static void add_bool(json_object *o, const char *key, bool v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

json_object *cli_json_pair(const char *k1, json_object *v1, const char *k2,
			   json_object *v2)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, k1, v1);
	json_object_object_add(o, k2, v2);
	return o;
}

/* The limits in force, as an object. */
static json_object *json_limits(const rb_limits *l)
{
	json_object *o = json_object_new_object();

	add_int(o, "max_failures", l->max_failures);
	add_int(o, "restore_retry_num", l->restore_retry_num);
	add_int(o, "restore_timeout", l->restore_timeout);
	add_str(o, "restore_accounting", rb_accounting_name(l->accounting));
	add_bool(o, "count_preemptions", l->count_preemptions);
	/* only when set: the object stays as it was for configs without it */
	if (l->max_interruptions >= 0)
		add_int(o, "max_interruptions", l->max_interruptions);
	return o;
}

static void add_left(json_object *o, const rb_budget *b)
{
	int64_t left;

	if (b->cur.attempt < 0) {
		json_object_object_add(o, "restores_left", NULL);
		return;
	}
	left = rb_engine_restores_left(b, &b->cur.limits);
	json_object_object_add(o, "restores_left",
			       left < 0 ? NULL : json_object_new_int64(left));
}

json_object *cli_json_summary(const rb_record *rec, cli_state state)
{
	const rb_budget *b = &rec->budget;
	json_object *o = json_object_new_object();

	add_int(o, "job_id", rec->job_id);
	cli_json_add_task(o, rec);
	add_str(o, "user", rec->user);
	add_int(o, "attempt", b->cur.attempt);
	add_str(o, "phase", rb_phase_name(b->cur.phase));
	add_str(o, "state", cli_state_names[state]);
	add_int(o, "failures", b->failures);
	add_int(o, "max_failures", b->cur.limits.max_failures);
	add_int(o, "granted", b->granted);
	add_int(o, "restore_failures", b->restore_failures);
	add_int(o, "restore_retry_num", b->cur.limits.restore_retry_num);
	add_left(o, b);
	add_bool(o, "exhausted", b->exhausted);
	add_int(o, "updated", rec->updated);
	return o;
}

/* The record's lifetime totals (explain and metrics). */
static json_object *json_totals(const rb_budget *b)
{
	json_object *totals = json_object_new_object();

	add_int(totals, "interruptions", b->interruptions);
	add_int(totals, "restore_failures", b->restore_failures_total);
	add_int(totals, "failures", b->failures_total);
	add_int(totals, "fatal_exits", b->fatal_exits);
	add_int(totals, "interruption_cap_refusals",
		b->interruption_cap_refusals);
	return totals;
}

json_object *cli_json_record(const rb_record *rec)
{
	const rb_budget *b = &rec->budget;
	const rb_attempt *a = &b->cur;
	json_object *o = json_object_new_object();
	json_object *cur = json_object_new_object();
	char txt[64];

	add_str(o, "cluster", rec->cluster);
	add_int(o, "job_id", rec->job_id);
	cli_json_add_task(o, rec);
	add_str(o, "user", rec->user);
	add_int(o, "uid", rec->uid);
	add_int(o, "gid", rec->gid);
	add_str(o, "partition", rec->partition);
	add_str(o, "account", rec->account);
	add_str(o, "work_dir", rec->work_dir);
	add_str(o, "checkpoint_dir", rec->checkpoint_dir);
	add_int(o, "attempt", a->attempt);
	add_str(o, "phase", rb_phase_name(a->phase));
	add_str(o, "state", cli_job_state(rec));
	add_int(o, "failures", b->failures);
	add_int(o, "max_failures", a->limits.max_failures);
	add_int(o, "restore_failures", b->restore_failures);
	add_int(o, "restore_retry_num", a->limits.restore_retry_num);
	add_int(o, "granted", b->granted);
	add_left(o, b);
	add_bool(o, "exhausted", b->exhausted);
	/* exhausted under the limits in force now (a grant can lift it
	 * before the next attempt starts) */
	add_bool(o, "exhausted_now", a->attempt >= 0 &&
		 rb_engine_is_exhausted(b, &a->limits));
	add_str(o, "checkpoint", b->checkpoint);
	rb_end_format(b->prev_end, b->prev_end_code, txt, sizeof(txt));
	add_str(o, "last_end", txt);
	add_int(o, "last_charged", b->last_charged);
	json_object_object_add(o, "limits", json_limits(&a->limits));

	add_int(cur, "attempt", a->attempt);
	add_str(cur, "phase", rb_phase_name(a->phase));
	add_str(cur, "confirmed", rb_confirm_name(a->confirmed));
	rb_end_format(a->end, a->end_code, txt, sizeof(txt));
	add_str(cur, "end", txt);
	add_int(cur, "start_time", a->start_time);
	add_int(cur, "end_time", a->end_time);
	add_bool(cur, "refused", a->refused);
	add_str(cur, "checkpoint", a->checkpoint);
	json_object_object_add(o, "current_attempt", cur);

	json_object_object_add(o, "totals", json_totals(b));
	add_int(o, "fatal_code", b->fatal_code);
	cli_json_add_fallback(o, rec);

	add_int(o, "created", rec->created);
	add_int(o, "updated", rec->updated);
	add_int(o, "seq", (int64_t)rec->seq);
	return o;
}

int cli_json_print(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(
		obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			     JSON_C_TO_STRING_NOSLASHESCAPE);
	int rc = 0;

	if (!s || printf("%s\n", s) < 0)
		rc = -1;
	json_object_put(obj);
	if (fflush(stdout) != 0)
		rc = -1;
	return rc;
}
