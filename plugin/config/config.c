/*
 * config.c - the admin's libconfig file: its schema, read key by key
 * (docs/rule.md, "Limits").
 *
 * The text comes through the trusted read and the guard against libconfig
 * 1.5's includes and wrapped integers (config_lex.c), is parsed by
 * libconfig, and every setting is checked against the tables below:
 * unknown keys, wrong types and out-of-range values are errors
 * "file:line: message". The bounded values follow the cap rules of caps.c,
 * the same that clamp and refuse a job's own values.
 *
 * Setting names: libconfig names match [A-Za-z*][-A-Za-z0-9_*]*, so
 * partitions and accounts like "ml-team" or "gpu_a100" are written as-is.
 * A name that libconfig cannot express (starting with a digit, containing a
 * '.', ...) is given with the `name` key inside its group:
 *     accounts = { a2023 = { name = "2023.proj"; max_failures = 4; }; };
 * Account names match case-insensitively (Slurm stores them lowercased),
 * partition names exactly.
 */
#include "config_int.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caps.h"

#define RB_STATE_DIR_MAX 1024
/* the longest partition or account name: record.h's RB_NAME_MAX (256) is
 * the buffer, this plus its NUL */
#define NAME_LEN_MAX 255
/* an integer as a message shows it (read_int) */
#define SHOWN_MAX 64

static const char *const accounting_names[] = { "grouped", "ray", NULL };
static const char *const track_names[] = { "all", "opt-in", NULL };
static const char *const on_error_names[] = { "open", "closed", NULL };
static const char *const on_exhausted_names[] = { "fail", "hold", NULL };
static const char *const store_names[] = { "dir", "controller", NULL };
/* The order of rb_exit_rule from RB_EXIT_RULE_FAILURE on. */
const char *const cf_action_names[] = {
	"failure", "restore_failure", "fatal", "ignore", NULL,
};

#define C(field) offsetof(rb_config, field)
static const section limits_section = {
	"a group { max_failures = N; restore_retry_num = N; allow_unlimited = BOOL; }",
	"max_failures, restore_retry_num, allow_unlimited, max_interruptions",
	(const key_row[]){
		{ "max_failures", K_CAP, RB_CAP_MAX_FAILURES, C(caps.max_failures), NULL },
		{ "restore_retry_num", K_CAP, RB_CAP_RESTORE_RETRIES, C(caps.restore_retry_num), NULL },
		{ "max_interruptions", K_CAP, RB_CAP_MAX_INTERRUPTIONS, C(caps.max_interruptions), NULL },
		{ "allow_unlimited", K_BOOL, 0, C(caps.allow_unlimited), NULL },
		{ NULL, 0, 0, 0, NULL } },
};

/* docs/rule.md, "Checkpoint fallback" */
static const section checkpoint_section = {
	"a group { pattern = \"...\"; latest = \"...\"; }",
	"pattern, latest, fallback",
	(const key_row[]){
		{ "pattern", K_TEXT, T_PATTERN, C(checkpoint_pattern), NULL },
		{ "latest", K_TEXT, T_LATEST, C(checkpoint_latest), NULL },
		{ "fallback", K_BOOL, 0, C(checkpoint_fallback), NULL },
		{ NULL, 0, 0, 0, NULL } },
};

const section cf_top_section = {
	"a group",
	"store, state_dir, max_failures, restore_retry_num, restore_timeout, restore_accounting, count_preemptions, track, on_error, on_exhausted, limits, checkpoint, partitions, accounts, max_interruptions, exit_rules, requeue_exit",
	(const key_row[]){
		{ "restore_accounting", K_ENUM, 0, C(accounting), accounting_names },
		{ "limits", K_GROUP, 0, 0, &limits_section },
		{ "store", K_ENUM, 0, C(store), store_names },
		{ "state_dir", K_TEXT, T_STATE_DIR, C(state_dir), NULL },
		{ "max_failures", K_VALUE, RB_CAP_MAX_FAILURES, C(max_failures), NULL },
		{ "restore_retry_num", K_VALUE, RB_CAP_RESTORE_RETRIES, C(restore_retry_num), NULL },
		{ "max_interruptions", K_VALUE, RB_CAP_MAX_INTERRUPTIONS, C(max_interruptions), NULL },
		{ "restore_timeout", K_VALUE, RB_CAP_RESTORE_TIMEOUT, C(restore_timeout), NULL },
		{ "count_preemptions", K_BOOL, 0, C(count_preemptions), NULL },
		{ "track", K_ENUM, 0, C(track), track_names },
		{ "on_error", K_ENUM, 0, C(on_error), on_error_names },
		{ "on_exhausted", K_ENUM, 0, C(on_exhausted), on_exhausted_names },
		{ "checkpoint", K_GROUP, 0, 0, &checkpoint_section },
		{ "exit_rules", K_RULES, 0, C(exit_rules), NULL },
		/* docs/rule.md, "The requeue code": never 0 */
		{ "requeue_exit", K_REQUEUE, 0, C(requeue_exit), NULL },
		{ "partitions", K_NAMED, 0, 0, NULL },
		{ "accounts", K_NAMED, 1, 0, NULL },
		{ NULL, 0, 0, 0, NULL } },
};
#undef C

#define O(field) offsetof(rb_named_overrides, field)
const section cf_override_section = {
	"a group { max_failures = N; restore_retry_num = N; restore_timeout = SEC; }",
	"name, max_failures, restore_retry_num, restore_timeout, max_interruptions, exit_rules",
	(const key_row[]){
		{ "name", K_TEXT, T_NAME, O(name), NULL },
		{ "max_failures", K_OVERRIDE, RB_CAP_MAX_FAILURES, O(values), NULL },
		{ "restore_retry_num", K_OVERRIDE, RB_CAP_RESTORE_RETRIES, O(values), NULL },
		{ "restore_timeout", K_OVERRIDE, RB_CAP_RESTORE_TIMEOUT, O(values), NULL },
		{ "max_interruptions", K_OVERRIDE, RB_CAP_MAX_INTERRUPTIONS, O(values), NULL },
		{ "exit_rules", K_RULES, 0, O(exit_rules), NULL },
		{ NULL, 0, 0, 0, NULL } },
};
#undef O

/* exit_rules = ( { codes = [3, 4]; action = "fatal"; }, ... ): one rule
 * (docs/rule.md, "Exit-code rules"); read by load_rule. */
static const section rule_section = {
	"a group { codes = [N, ...]; action = \"...\"; }",
	"codes, action",
	(const key_row[]){
		{ "codes", 0, 0, 0, NULL },
		{ "action", 0, 0, 0, NULL },
		{ NULL, 0, 0, 0, NULL } },
};

static int load_section(load_ctx *ctx, const cset *g, const section *sec,
			char *base, rb_config *cfg);

static int replace_string(char **dst, const char *src)
{
	char *copy = strdup(src);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

/* ---- message text ------------------------------------------------------- */

/* (config.h) */
void rb_config_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	int n;

	for (; len >= 4 && *s; s++, o += (size_t)n) {
		unsigned char c = (unsigned char)*s;
		char piece[8];

		n = snprintf(piece, sizeof(piece),
			     c == '"' || c == '\\' ? "\\%c" :
			     c < 0x20 || c == 0x7f ? "\\x%02x" : "%c", c);
		if (o + (size_t)n > len - 4) {
			memcpy(buf + o, "...", 4);
			return;
		}
		memcpy(buf + o, piece, (size_t)n);
	}
	if (len)
		buf[o] = '\0';
}

/* s quoted into buf as "text", its text cut to fit in `room` bytes. */
static const char *quoted(const char *s, size_t room, char *buf, size_t len)
{
	size_t n;

	buf[0] = '"';
	rb_config_quote(s, buf + 1, room < len - 2 ? room : len - 2);
	n = strlen(buf);
	buf[n] = '"';
	buf[n + 1] = '\0';
	return buf;
}

/* "a.b.c" from the root down to s (list elements have no name). */
static void key_path(const cset *s, char *buf, size_t len)
{
	const char *names[16] = { NULL };
	size_t n = 0, o = 0;

	buf[0] = '\0';
	for (; s && n < 16; s = config_setting_parent(s)) {
		const char *name = config_setting_name(s);

		if (name)
			names[n++] = name;
	}
	while (n-- > 0) {
		int w = snprintf(buf + o, len - o, "%s%s", o ? "." : "",
				 names[n]);

		if (w < 0 || (size_t)w >= len - o)
			return;
		o += (size_t)w;
	}
}

/* The value of s as it would appear in the file. */
static const char *describe(const cset *s, char *buf, size_t len)
{
	double d = config_setting_get_float(s);

	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		snprintf(buf, len, "%lld%s", config_setting_get_int64(s),
			 config_setting_type(s) == CONFIG_TYPE_INT64 ? "L" : "");
		break;
	case CONFIG_TYPE_FLOAT:
		/* keep the point: "2.0", not "2", or the message makes no
		 * sense (range first: casting inf or nan is undefined) */
		snprintf(buf, len,
			 d > -1e15 && d < 1e15 && d == (double)(long long)d ?
			 "%.1f" : "%g", d);
		break;
	case CONFIG_TYPE_BOOL:
		snprintf(buf, len, "%s",
			 config_setting_get_bool(s) ? "true" : "false");
		break;
	case CONFIG_TYPE_STRING:
		return quoted(config_setting_get_string(s), 128, buf, len);
	default:
		snprintf(buf, len, "%s",
			 config_setting_type(s) == CONFIG_TYPE_GROUP ? "{ ... }" :
			 config_setting_type(s) == CONFIG_TYPE_ARRAY ? "[ ... ]" :
			 config_setting_type(s) == CONFIG_TYPE_LIST ? "( ... )" : "?");
	}
	return buf;
}

/* "path:line: message" for setting s; with shown, the message starts
 * "key = shown ". Always -1. */
static int fail_at(load_ctx *ctx, const cset *s, const char *shown,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(load_ctx *ctx, const cset *s, const char *shown,
		   const char *fmt, ...)
{
	char msg[RB_ERR_MAX], key[256] = "", at[RB_ERR_MAX], arg[200];
	const cf_arg *a = cf_arg_of(s);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a) /* a plugstack.conf argument set it: name the argument */
		snprintf(at, sizeof(at), "%s: argument %s", ctx->label,
			 quoted(a->arg, 160, arg, sizeof(arg)));
	else if (s && config_setting_source_line(s))
		snprintf(at, sizeof(at), "%s:%u", ctx->path,
			 config_setting_source_line(s));
	else
		snprintf(at, sizeof(at), "%s", ctx->path);
	if (shown)
		key_path(s, key, sizeof(key));
	return rb_err_set(ctx->err, "%s: %s%s%s%s%s", at, key, shown ? " = " : "",
			  shown ? shown : "", shown ? " " : "", msg);
}

static int fail_type(load_ctx *ctx, const cset *s, const char *expected)
{
	char val[160];

	return fail_at(ctx, s, describe(s, val, sizeof(val)),
		       "has the wrong type: expected %s (%s)", expected,
		       FIX_HINT);
}

/* ---- typed reads -------------------------------------------------------- */

/* An integer setting (int, or int64 that fits; a float is a type error):
 * *v, or LLONG_MAX (over any bound) when it does not fit in an int; shown
 * (SHOWN_MAX bytes) is the value as messages show it: the literal as
 * written when libconfig 1.5 wrapped it (config_lex.c). */
static int read_int(load_ctx *ctx, const cset *s, long long *v, char *shown)
{
	const char *name = config_setting_name(s), *big = NULL;
	unsigned int line = config_setting_source_line(s);

	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		fail_type(ctx, s, "an integer");
		return -1;
	}
	for (size_t i = 0; name && i < ctx->n_big && !big; i++) {
		big_literal *b = &ctx->big[i];

		if (!b->used && (b->line == line || b->name_line == line) &&
		    strcmp(b->name, name) == 0) {
			b->used = true;
			big = b->text;
		}
	}
	if (cf_arg_of(s) && cf_arg_of(s)->big) /* an argument past 64 bits */
		big = cf_arg_of(s)->value;
	*v = config_setting_get_int64(s);
	if (big)
		snprintf(shown, SHOWN_MAX, "%s", big);
	else
		snprintf(shown, SHOWN_MAX, "%lld", *v);
	if (big || *v < INT_MIN || *v > INT_MAX)
		*v = LLONG_MAX;
	return 0;
}

static int fail_range(load_ctx *ctx, const cset *s, const char *shown,
		      long long lo, long long hi, const char *unit,
		      const char *tail)
{
	return fail_at(ctx, s, shown,
		       "is out of range: must be %lld..%lld%s%s (%s)", lo, hi,
		       unit, tail, FIX_HINT);
}

/* A bounded value of the file, judged by the cap rules (caps.h): M within
 * its cap or -1 with limits.allow_unlimited, R within its cap and at least
 * 1 when grouped, the timeout within its range. */
static int check_value(load_ctx *ctx, const cset *s, long long v,
		       const char *shown, const rb_config *cfg, rb_cap_key key)
{
	const rb_cap_rule *r = rb_cap_rule_of(key);
	rb_cap_judgement j = rb_cap_judge(cfg, key, v);
	char tail[64] = "";

	if (j.verdict == RB_CAP_FITS)
		return 0;
	if (j.verdict == RB_CAP_UNLIMITED_REFUSED)
		return fail_at(ctx, s, "-1 (unlimited)",
			       "is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..%d, then run restore-budget check-config)",
			       j.cap);
	if (j.verdict == RB_CAP_OVER_CAP)
		return fail_at(ctx, s, shown,
			       "exceeds the cap limits.%s = %d (lower it to at most %d or raise the cap, then run restore-budget check-config)",
			       r->config_key, j.cap, j.cap);
	if (r->unlimited)
		snprintf(tail, sizeof(tail), ", or -1 for unlimited");
	else if (r->one_when_grouped)
		snprintf(tail, sizeof(tail), " with restore_accounting = \"%s\"",
			 rb_accounting_name(cfg->accounting));
	return fail_range(ctx, s, shown, j.min, r->bound, r->unit, tail);
}

static int read_string(load_ctx *ctx, const cset *s, const char **out)
{
	/* -1 spelled out: the analyzer loses fail_at's -1 in its depth */
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		fail_type(ctx, s, "a string in double quotes");
		return -1;
	}
	*out = config_setting_get_string(s);
	return 0;
}

/* One of names: its index in *out. */
static int load_enum(load_ctx *ctx, const cset *s, const char *const *names,
		     int *out)
{
	const char *v = NULL;
	char list[160] = "", shown[170];
	size_t o = 0;

	if (read_string(ctx, s, &v) < 0)
		return -1;
	for (int i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	for (size_t i = 0; names[i] && o < sizeof(list); i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s\"%s\"",
				      i == 0 ? "" : names[i + 1] ? ", " : " or ",
				      names[i]);
	return fail_at(ctx, s, quoted(v, 160, shown, sizeof(shown)),
		       "is not valid: must be %s (%s)", list, FIX_HINT);
}

/* A string of the given rule, copied to *dst. */
static int load_text(load_ctx *ctx, const cset *s, text_rule rule,
		     char **dst)
{
	const char *v = NULL;
	char q[170];
	size_t n;

	if (read_string(ctx, s, &v) < 0)
		return -1;
	n = strlen(v);
	if (rule == T_STATE_DIR && v[0] != '/')
		return fail_at(ctx, s, quoted(v, 160, q, sizeof(q)),
			       "is not an absolute path: must start with '/' (%s)",
			       FIX_HINT);
	if (rule == T_STATE_DIR && n > RB_STATE_DIR_MAX)
		return fail_at(ctx, s, quoted(v, 160, q, sizeof(q)),
			       "is too long: must be at most %d bytes (%s)",
			       RB_STATE_DIR_MAX, FIX_HINT);
	if (rule == T_NAME && (!n || n > NAME_LEN_MAX))
		return fail_at(ctx, s, quoted(v, 160, q, sizeof(q)),
			       "is not valid: must be a non-empty name of at most %d bytes (%s)",
			       NAME_LEN_MAX, FIX_HINT);
	if ((rule == T_PATTERN || rule == T_LATEST) &&
	    (!n || strchr(v, '/') || n > NAME_LEN_MAX ||
	     (rule == T_LATEST && v[0] == '.')))
		return fail_at(ctx, s, quoted(v, 160, q, sizeof(q)),
			       "is not valid: must be a non-empty file name of at most %d bytes without '/'%s (%s)",
			       NAME_LEN_MAX,
			       rule == T_LATEST ? " that does not start with '.'" : "",
			       FIX_HINT);
	if (replace_string(dst, v) < 0)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	return 0;
}

/* ---- exit_rules (docs/rule.md, "Exit-code rules") ----------------------- */

/* The codes array of one rule (`where`: "exit_rules[i]") into its bitmap. */
static int load_codes(load_ctx *ctx, const cset *s, const char *where,
		      rb_exit_rule_entry *r)
{
	int type = config_setting_type(s);
	char shown[SHOWN_MAX];

	if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
		return fail_type(ctx, s, "an array [N, ...] of exit codes");
	if (config_setting_length(s) == 0)
		return fail_at(ctx, s, NULL,
			       "%s.codes is empty: give at least one exit code 0..%d (%s)",
			       where, RB_EXIT_CODE_MAX, FIX_HINT);
	for (int i = 0; i < config_setting_length(s); i++) {
		const cset *e = config_setting_get_elem(s, (unsigned int)i);
		long long v;

		if (read_int(ctx, e, &v, shown) < 0)
			return -1;
		if (v < 0 || v > RB_EXIT_CODE_MAX)
			return fail_at(ctx, e, NULL,
				       "%s.codes: %s is out of range: exit codes are 0..%d (%s)",
				       where, shown, RB_EXIT_CODE_MAX, FIX_HINT);
		r->codes[v / 8] |= (uint8_t)(1u << (v % 8));
	}
	return 0;
}

static int check_group(load_ctx *ctx, const cset *g, const section *sec);

/* One { codes = [...]; action = "..."; } group. */
static int load_rule(load_ctx *ctx, const cset *g, const char *where,
		     rb_exit_rule_entry *r)
{
	const cset *codes, *action;
	int e = 0;

	if (check_group(ctx, g, &rule_section) < 0)
		return -1;
	codes = config_setting_get_member(g, "codes");
	action = config_setting_get_member(g, "action");
	if (!codes || !action)
		return fail_at(ctx, g, NULL,
			       "%s needs both codes = [N, ...] and action = \"failure\", \"restore_failure\", \"fatal\" or \"ignore\" (%s)",
			       where, FIX_HINT);
	if (load_codes(ctx, codes, where, r) < 0 ||
	    load_enum(ctx, action, cf_action_names, &e) < 0)
		return -1;
	r->action = (rb_exit_rule)(RB_EXIT_RULE_FAILURE + e);
	return 0;
}

/* An exit_rules list s into *out (replacing what it held). */
static int load_exit_rules(load_ctx *ctx, const cset *s, rb_exit_rules *out)
{
	int n = config_setting_length(s), type = config_setting_type(s);
	char key[256], where[300];
	rb_exit_rule_entry *rules;

	/* `exit_rules = [];` is how libconfig spells an empty list too */
	if (type != CONFIG_TYPE_LIST && !(type == CONFIG_TYPE_ARRAY && n == 0))
		return fail_type(ctx, s, "a list ( { codes = [N, ...]; action = \"fatal\"; }, ... )");
	/* one entry at least: an empty list is still a list that is set */
	rules = calloc(n > 0 ? (size_t)n : 1, sizeof(*rules));
	if (!rules)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	free(out->rules);
	*out = (rb_exit_rules){ .set = true, .rules = rules };
	key_path(s, key, sizeof(key));
	for (int i = 0; i < n; i++, out->n++) {
		snprintf(where, sizeof(where), "%s[%d]", key, i + 1);
		if (load_rule(ctx, config_setting_get_elem(s, (unsigned int)i),
			      where, &rules[i]) < 0)
			goto fail;
	}
	return 0;
fail:
	free(rules);
	out->rules = NULL;
	out->n = 0;
	return -1;
}

/* ---- sections ----------------------------------------------------------- */

/* (config_int.h) */
const key_row *cf_find_row(const section *sec, const char *name, size_t len)
{
	for (const key_row *r = sec->rows; r->name; r++)
		if (strlen(r->name) == len && strncmp(r->name, name, len) == 0)
			return r;
	return NULL;
}

/* g is a group of sec's keys only. */
static int check_group(load_ctx *ctx, const cset *g, const section *sec)
{
	char where[256], key[256];

	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return fail_type(ctx, g, sec->shape);
	for (int i = 0; i < config_setting_length(g); i++) {
		const cset *s = config_setting_get_elem(g, (unsigned int)i);
		const char *name = config_setting_name(s);

		if (cf_find_row(sec, name, strlen(name)))
			continue;
		key_path(g, where, sizeof(where));
		key_path(s, key, sizeof(key));
		return fail_at(ctx, s, NULL, "unknown key \"%s\" (known keys%s%s: %s)",
			       key, where[0] ? " in " : "", where, sec->known);
	}
	return 0;
}

/* partitions = { NAME = { ... }; ... } or accounts = { ... }. */
static int load_named(load_ctx *ctx, const cset *g, rb_config *cfg,
		      bool ignore_case)
{
	rb_named_overrides **arr = ignore_case ? &cfg->accounts : &cfg->partitions;
	const char *what = config_setting_name(g);
	int n = config_setting_length(g);
	char shown[170];

	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return fail_type(ctx, g, "a group { NAME = { max_failures = N; ... }; ... }");
	if (n == 0)
		return 0;
	if (!(*arr = calloc((size_t)n, sizeof(**arr))))
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	/* every entry, filled or not, is freed by rb_config_free */
	*(ignore_case ? &cfg->n_accounts : &cfg->n_partitions) = (size_t)n;
	for (int i = 0; i < n; i++) {
		const cset *e = config_setting_get_elem(g, (unsigned int)i);
		rb_named_overrides *o = &(*arr)[i];

		if (!(o->name = strdup(config_setting_name(e))))
			return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		if (load_section(ctx, e, &cf_override_section, (char *)o, cfg) < 0)
			return -1;
		for (int k = 0; k < i; k++) {
			const cset *other = config_setting_get_elem(g, (unsigned int)k);

			if (ignore_case ? strcasecmp((*arr)[k].name, o->name) != 0 :
					  strcmp((*arr)[k].name, o->name) != 0)
				continue;
			return fail_at(ctx, e, NULL,
				       "%s.%s: %s is already configured by %s.%s at line %u (%skeep one group for it, then run restore-budget check-config)",
				       what, config_setting_name(e),
				       quoted(o->name, 160, shown, sizeof(shown)), what,
				       config_setting_name(other),
				       config_setting_source_line(other),
				       ignore_case ? "account names match ignoring case; " : "");
		}
	}
	return 0;
}

/* One key of a section, read into base (the struct the section fills). */
static int load_row(load_ctx *ctx, const cset *s, const key_row *r,
		    char *base, rb_config *cfg)
{
	const rb_cap_rule *c = rb_cap_rule_of((rb_cap_key)r->arg);
	void *dst = base + r->off;
	char shown[SHOWN_MAX];
	long long v = 0;
	int e = 0;

	switch (r->kind) {
	case K_ENUM:
		if (load_enum(ctx, s, r->more, &e) < 0)
			return -1;
		*(int *)dst = e;
		return 0;
	case K_BOOL:
		if (config_setting_type(s) != CONFIG_TYPE_BOOL)
			return fail_type(ctx, s, "true or false");
		*(bool *)dst = config_setting_get_bool(s) != 0;
		return 0;
	case K_TEXT:
		return load_text(ctx, s, (text_rule)r->arg, dst);
	case K_GROUP:
		return load_section(ctx, s, r->more, base, cfg);
	case K_RULES:
		return load_exit_rules(ctx, s, dst);
	case K_NAMED:
		return load_named(ctx, s, cfg, r->arg);
	default:
		break;
	}
	if (read_int(ctx, s, &v, shown) < 0)
		return -1;
	if (r->kind == K_REQUEUE && (v < 1 || v > RB_EXIT_CODE_MAX))
		return fail_range(ctx, s, shown, 1, RB_EXIT_CODE_MAX, "", "");
	if (r->kind == K_CAP && (v < c->cap_min || v > c->bound))
		return fail_range(ctx, s, shown, c->cap_min, c->bound, "", "");
	if ((r->kind == K_VALUE || r->kind == K_OVERRIDE) &&
	    check_value(ctx, s, v, shown, cfg, (rb_cap_key)r->arg) < 0)
		return -1;
	if (r->kind == K_OVERRIDE)
		rb_cap_set(dst, (rb_cap_key)r->arg, (int)v);
	else
		*(int *)dst = (int)v;
	return 0;
}

static int load_section(load_ctx *ctx, const cset *g, const section *sec,
			char *base, rb_config *cfg)
{
	if (check_group(ctx, g, sec) < 0)
		return -1;
	for (const key_row *r = sec->rows; r->name; r++) {
		const cset *s = config_setting_get_member(g, r->name);

		if (s && load_row(ctx, s, r, base, cfg) < 0)
			return -1;
	}
	return 0;
}

/* ---- public API --------------------------------------------------------- */

rb_config *rb_config_defaults(void)
{
	rb_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	*cfg = (rb_config){
		.path = strdup("(built-in defaults)"),
		.state_dir = strdup(RB_DEFAULT_STATE_DIR),
		.checkpoint_pattern = strdup("checkpoint*"),
		.checkpoint_latest = strdup("latest"),
		.max_failures = 2, .restore_retry_num = 3,
		.restore_timeout = 300, .accounting = RB_ACCOUNTING_GROUPED,
		.max_interruptions = RB_UNLIMITED, .track = RB_TRACK_ALL,
		.on_error = RB_ON_ERROR_OPEN, .on_exhausted = RB_ON_EXHAUSTED_FAIL,
		.store = RB_STORE_CONTROLLER,
		.caps = { .max_failures = 10, .restore_retry_num = 10,
			  .max_interruptions = -1, .allow_unlimited = false },
	};
	if (cfg->path && cfg->state_dir && cfg->checkpoint_pattern &&
	    cfg->checkpoint_latest)
		return cfg;
	rb_config_free(cfg);
	return NULL;
}

static void free_named(rb_named_overrides *arr, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(arr[i].name);
		free(arr[i].exit_rules.rules);
	}
	free(arr);
}

void rb_config_free(rb_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->state_dir);
	free(cfg->checkpoint_pattern);
	free(cfg->checkpoint_latest);
	free(cfg->exit_rules.rules);
	free_named(cfg->partitions, cfg->n_partitions);
	free_named(cfg->accounts, cfg->n_accounts);
	for (size_t i = 0; i < cfg->n_settings; i++) {
		free(cfg->settings[i].key);
		free(cfg->settings[i].value);
	}
	free(cfg->settings);
	free(cfg->file);
	free(cfg->args_from);
	free(cfg);
}

/* What cfg's settings came from, for messages ("set in %s"): the file,
 * the arguments, both, or the built-in defaults. */
static int describe_sources(load_ctx *ctx, const char *file, rb_config *cfg)
{
	char desc[RB_PATH_MAX + 128];

	if (file && ctx->n_applied)
		snprintf(desc, sizeof(desc), "%s and %s arguments", file,
			 ctx->label);
	else if (ctx->n_applied)
		snprintf(desc, sizeof(desc), "%s arguments", ctx->label);
	else
		snprintf(desc, sizeof(desc), "%s", file ? file : "(built-in defaults)");
	if (replace_string(&cfg->path, desc) < 0 ||
	    (file && replace_string(&cfg->file, file) < 0) ||
	    (ctx->n_applied && replace_string(&cfg->args_from, ctx->label) < 0))
		return -1;
	return 0;
}

/* The checks over libconfig's parse (the file and the arguments merged):
 * a fresh rb_config, or NULL with err set (errno ENOMEM or EINVAL). */
static rb_config *load_root(load_ctx *ctx, const cset *root, const char *file)
{
	rb_config *cfg = rb_config_defaults();

	errno = ENOMEM;
	if (!cfg || describe_sources(ctx, file, cfg) < 0) {
		rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		goto fail;
	}
	errno = EINVAL;
	if (load_section(ctx, root, &cf_top_section, (char *)cfg, cfg) < 0 ||
	    cf_no_big_left(ctx) < 0)
		goto fail;
	/* A built-in default the admin did not write follows a lower cap;
	 * max_interruptions is unlimited by default, but never beyond a cap
	 * the admin set. */
	if (!config_setting_get_member(root, "max_failures") &&
	    cfg->max_failures > cfg->caps.max_failures)
		cfg->max_failures = cfg->caps.max_failures;
	if (!config_setting_get_member(root, "restore_retry_num") &&
	    cfg->restore_retry_num > cfg->caps.restore_retry_num)
		cfg->restore_retry_num = cfg->caps.restore_retry_num;
	if (!config_setting_get_member(root, "max_interruptions") &&
	    cfg->caps.max_interruptions >= 0)
		cfg->max_interruptions = cfg->caps.max_interruptions;
	/* The store is the controller's job record unless the admin named a
	 * state_dir, which only the shared-directory store uses
	 * (docs/stores.md, "Which store"). */
	if (!config_setting_get_member(root, "store") &&
	    config_setting_get_member(root, "state_dir"))
		cfg->store = RB_STORE_DIR;
	errno = ENOMEM;
	if (cf_record_settings(root, cfg) < 0) {
		rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		goto fail;
	}
	return cfg;
fail:
	rb_config_free(cfg);
	return NULL;
}

/* The file into lc, through the trusted read and the guard; -1 with err
 * set and errno the reason. */
static int read_file(load_ctx *ctx, config_t *lc, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int rc = -1;

	errno = EINVAL;
	if (cf_read_text(path, &text, &len, ctx->err) < 0)
		return -1;
	if (cf_prescan(ctx, text, len) < 0)
		goto done;
	if (config_read_string(lc, text) != CONFIG_TRUE) {
		rb_err_set(ctx->err, "%s:%d: syntax error: %s (%s)",
			   config_error_file(lc) ? config_error_file(lc) : path,
			   config_error_line(lc),
			   config_error_text(lc) ? config_error_text(lc) :
						   "unknown error", FILE_HINT);
		goto done;
	}
	rc = 0;
done:
	free(text);
	errno = EINVAL;
	return rc;
}

int rb_config_load_args(const char *path, int ac, char *const *av,
			const char *label, rb_config **out, rb_err *err)
{
	char args_path[RB_PATH_MAX + 32];
	load_ctx ctx = { .path = path, .err = err,
			 .label = label && label[0] ? label : "plugstack.conf" };
	config_t lc;
	int saved = EINVAL;

	*out = NULL;
	snprintf(args_path, sizeof(args_path), "%s arguments", ctx.label);
	if (!path)
		ctx.path = args_path;
	/* No autoconvert: a float is never silently an integer. Includes are
	 * refused by the guard (config_lex.c), so none is ever opened; the
	 * include dir stays unset (config_set_include_dir(NULL) crashes 1.5). */
	config_init(&lc);
	config_set_options(&lc, 0);
	if (path && !path[0]) {
		rb_err_set(err, "(no path): cannot read: no config file given");
		goto done;
	}
	if (path && read_file(&ctx, &lc, path) < 0) {
		saved = errno;
		goto done;
	}
	if (ac > 0 && !(ctx.args = calloc((size_t)ac, sizeof(*ctx.args)))) {
		saved = ENOMEM;
		rb_err_set(err, "%s: out of memory", ctx.path);
		goto done;
	}
	if (cf_apply_args(&ctx, config_root_setting(&lc), ac, av) < 0)
		goto done;
	*out = load_root(&ctx, config_root_setting(&lc), path);
	saved = errno;
done:
	config_destroy(&lc);
	free(ctx.big);
	free(ctx.args);
	errno = saved;
	return *out ? 0 : -1;
}

int rb_config_load(const char *path, rb_config **out, rb_err *err)
{
	/* no path is no file, not the built-in defaults */
	return rb_config_load_args(path ? path : "", 0, NULL, NULL, out, err);
}
