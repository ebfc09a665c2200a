/*
 * config.c - the admin's libconfig file: its schema, read key by key
 * (docs/rule.md, "Limits").
 *
 * The text comes through the trusted read and the guard against libconfig
 * 1.5's includes and wrapped integers (config_lex.c), is parsed into a
 * setting tree (config_tree.c) and every setting is checked here with the
 * typed reads of config_read.c: unknown keys, wrong types and out-of-range
 * values are errors "file:line: message". The bounded values follow the cap
 * rules of caps.c, the same that clamp and refuse a job's own values.
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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caps.h"

#define RB_STATE_DIR_MAX 1024
/* the longest partition or account name: record.h's RB_NAME_MAX (256) is
 * the buffer, this plus its NUL */
#define NAME_LEN_MAX 255

static const char *const top_keys[] = {
	"state_dir", "max_failures", "restore_retry_num", "restore_timeout",
	"restore_accounting", "count_preemptions", "track", "on_error",
	"on_exhausted", "limits", "checkpoint", "partitions", "accounts",
	"max_interruptions", "exit_rules", "requeue_exit", NULL,
};
static const char *const limits_keys[] = {
	"max_failures", "restore_retry_num", "allow_unlimited",
	"max_interruptions", NULL,
};
static const char *const checkpoint_keys[] = { "pattern", "latest", "fallback",
						NULL };
static const char *const override_keys[] = {
	"name", "max_failures", "restore_retry_num", "restore_timeout",
	"max_interruptions", "exit_rules", NULL,
};

static const char *const accounting_names[] = { "grouped", "ray", NULL };
static const char *const track_names[] = { "all", "opt-in", NULL };
static const char *const on_error_names[] = { "open", "closed", NULL };
static const char *const on_exhausted_names[] = { "fail", "hold", NULL };

static int replace_string(char **dst, const char *src)
{
	char *copy = strdup(src);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

/* ---- value rules -------------------------------------------------------- */

/* "out of range" for key: its lowest and highest, and what else it may be. */
static int fail_range(load_ctx *ctx, const int_value *iv, const rb_config *cfg,
		      const rb_cap_rule *r, const rb_cap_judgement *j)
{
	char tail[64] = "";
	iv_text t;

	if (r->unlimited)
		snprintf(tail, sizeof(tail), ", or -1 for unlimited");
	else if (r->one_when_grouped)
		snprintf(tail, sizeof(tail), " with restore_accounting = \"%s\"",
			 rb_accounting_name(cfg->accounting));
	return cf_fail_at(ctx, iv->s,
			  "%s = %s is out of range: must be %d..%d%s%s (%s)",
			  cf_iv_describe(iv, &t)->key, t.shown, j->min, r->bound,
			  r->unit, tail, FIX_HINT);
}

/* A bounded value of the file, judged by the cap rules (caps.h): M within
 * its cap or -1 with limits.allow_unlimited, R within its cap and at least
 * 1 when grouped, the timeout within its range. */
static int check_value(load_ctx *ctx, const int_value *iv,
		       const rb_config *cfg, rb_cap_key key)
{
	const rb_cap_rule *r = rb_cap_rule_of(key);
	/* one that does not fit in an int is over any bound */
	rb_cap_judgement j = rb_cap_judge(cfg, key,
					  iv->overflow ? LLONG_MAX : iv->v);
	iv_text t;

	switch (j.verdict) {
	case RB_CAP_FITS:
		return 0;
	case RB_CAP_UNLIMITED_REFUSED:
		return cf_fail_at(ctx, iv->s,
				  "%s = -1 (unlimited) is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..%d, then run restore-budget check-config)",
				  cf_iv_describe(iv, &t)->key, j.cap);
	case RB_CAP_OVER_CAP:
		return cf_fail_at(ctx, iv->s,
				  "%s = %s exceeds the cap limits.%s = %d (lower it to at most %d or raise the cap, then run restore-budget check-config)",
				  cf_iv_describe(iv, &t)->key, t.shown,
				  r->config_key, j.cap, j.cap);
	default:
		return fail_range(ctx, iv, cfg, r, &j);
	}
}

/* A file name (checkpoint.pattern / checkpoint.latest), stored in *dst. */
static int load_file_name(load_ctx *ctx, const cnode *s, bool no_dot,
			  char **dst)
{
	char key[256], shown[160];
	const char *v = NULL;

	if (cf_read_string(ctx, s, &v) < 0)
		return -1;
	if (!v[0] || strchr(v, '/') || strlen(v) > NAME_LEN_MAX ||
	    (no_dot && v[0] == '.')) {
		cf_key_path(s, key, sizeof(key));
		rb_config_quote(v, shown, sizeof(shown));
		return cf_fail_at(ctx, s,
				  "%s = \"%s\" is not valid: must be a non-empty file name of at most %d bytes without '/'%s (%s)",
				  key, shown, NAME_LEN_MAX,
				  no_dot ? " that does not start with '.'" : "",
				  FIX_HINT);
	}
	if (replace_string(dst, v) < 0)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	return 0;
}

/* ---- sections ----------------------------------------------------------- */

/* limits.KEY: a cap, within the range its rule gives caps. */
static int load_cap(load_ctx *ctx, const cnode *s, rb_cap_key key, int *cap)
{
	const rb_cap_rule *r = rb_cap_rule_of(key);
	int_value iv;

	if (cf_read_int(ctx, s, &iv) < 0 ||
	    cf_check_range(ctx, &iv, r->cap_min, r->bound, "") < 0)
		return -1;
	*cap = (int)iv.v;
	return 0;
}

static int load_limits(load_ctx *ctx, const cnode *g, rb_config *cfg)
{
	int *caps[RB_CAP_KEYS] = {
		[RB_CAP_MAX_FAILURES] = &cfg->caps.max_failures,
		[RB_CAP_RESTORE_RETRIES] = &cfg->caps.restore_retry_num,
		[RB_CAP_MAX_INTERRUPTIONS] = &cfg->caps.max_interruptions,
	};
	const cnode *s, *m[sizeof(limits_keys) / sizeof(*limits_keys)];

	if (cf_require_group(ctx, g, "a group { max_failures = N; restore_retry_num = N; allow_unlimited = BOOL; }") < 0 ||
	    cf_check_known(ctx, g, limits_keys, m) < 0)
		return -1;
	for (rb_cap_key k = 0; k < RB_CAP_KEYS; k++) {
		s = caps[k] ? cf_member(limits_keys, m,
					rb_cap_rule_of(k)->config_key) : NULL;
		if (s && load_cap(ctx, s, k, caps[k]) < 0)
			return -1;
	}
	if ((s = cf_member(limits_keys, m, "allow_unlimited")) &&
	    cf_read_bool(ctx, s, &cfg->caps.allow_unlimited) < 0)
		return -1;
	return 0;
}

static int load_checkpoint(load_ctx *ctx, const cnode *g, rb_config *cfg)
{
	const cnode *s, *m[sizeof(checkpoint_keys) / sizeof(*checkpoint_keys)];

	if (cf_require_group(ctx, g, "a group { pattern = \"...\"; latest = \"...\"; }") < 0 ||
	    cf_check_known(ctx, g, checkpoint_keys, m) < 0)
		return -1;
	if ((s = cf_member(checkpoint_keys, m, "pattern")) &&
	    load_file_name(ctx, s, false, &cfg->checkpoint_pattern) < 0)
		return -1;
	if ((s = cf_member(checkpoint_keys, m, "latest")) &&
	    load_file_name(ctx, s, true, &cfg->checkpoint_latest) < 0)
		return -1;
	/* docs/rule.md, "Checkpoint fallback" */
	if ((s = cf_member(checkpoint_keys, m, "fallback")) &&
	    cf_read_bool(ctx, s, &cfg->checkpoint_fallback) < 0)
		return -1;
	return 0;
}

/* The name key of a partition or account group. */
static int load_name(load_ctx *ctx, const cnode *s, const char **name)
{
	char key[256], shown[160];

	if (cf_read_string(ctx, s, name) < 0)
		return -1;
	if ((*name)[0] && strlen(*name) <= NAME_LEN_MAX)
		return 0;
	cf_key_path(s, key, sizeof(key));
	rb_config_quote(*name, shown, sizeof(shown));
	return cf_fail_at(ctx, s,
			  "%s = \"%s\" is not valid: must be a non-empty name of at most %d bytes (%s)",
			  key, shown, NAME_LEN_MAX, FIX_HINT);
}

/* One partition or account group. out->name is set by the caller. */
static int load_overrides(load_ctx *ctx, const cnode *g,
			  const rb_config *cfg, rb_named_overrides *named,
			  const char **name)
{
	rb_overrides *out = &named->values;
	const cnode *s, *m[sizeof(override_keys) / sizeof(*override_keys)];
	int_value iv;

	*name = cn_name(g);
	if (cf_require_group(ctx, g, "a group { max_failures = N; restore_retry_num = N; restore_timeout = SEC; }") < 0 ||
	    cf_check_known(ctx, g, override_keys, m) < 0)
		return -1;
	if ((s = cf_member(override_keys, m, "name")) &&
	    load_name(ctx, s, name) < 0)
		return -1;
	for (rb_cap_key k = 0; k < RB_CAP_KEYS; k++) {
		s = cf_member(override_keys, m, rb_cap_rule_of(k)->config_key);
		if (!s)
			continue;
		if (cf_read_int(ctx, s, &iv) < 0 ||
		    check_value(ctx, &iv, cfg, k) < 0)
			return -1;
		rb_cap_set(out, k, (int)iv.v);
	}
	if ((s = cf_member(override_keys, m, "exit_rules")))
		return cf_load_exit_rules(ctx, s, &named->exit_rules);
	return 0;
}

/* partitions = { NAME = { ... }; ... } or accounts = { ... }. */
static int load_named(load_ctx *ctx, const cnode *g,
		      const rb_config *cfg, bool ignore_case,
		      rb_named_overrides **arr, size_t *count)
{
	int n;
	const char *what = cn_name(g);

	if (cf_require_group(ctx, g, "a group { NAME = { max_failures = N; ... }; ... }") < 0)
		return -1;
	n = cn_length(g);
	if (n == 0)
		return 0;
	*arr = calloc((size_t)n, sizeof(**arr));
	if (!*arr)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	*count = 0; /* the groups filled so far: the names to compare with */
	for (int i = 0; i < n; i++) {
		const cnode *e = cn_elem(g, i);
		rb_named_overrides *o = &(*arr)[*count];
		const char *name;

		if (load_overrides(ctx, e, cfg, o, &name) < 0)
			return -1;
		for (size_t k = 0; k < *count; k++) {
			const char *other = (*arr)[k].name;
			char shown[160];

			if (ignore_case ? strcasecmp(other, name) != 0 :
					  strcmp(other, name) != 0)
				continue;
			rb_config_quote(name, shown, sizeof(shown));
			return cf_fail_at(ctx, e,
				       "%s.%s: \"%s\" is already configured by %s.%s at line %u (%skeep one group for it, then run restore-budget check-config)",
				       what, cn_name(e), shown, what,
				       cn_name(cn_elem(g, (unsigned int)k)),
				       cn_line(cn_elem(g, (unsigned int)k)),
				       ignore_case ? "account names match ignoring case; " : "");
		}
		o->name = strdup(name);
		if (!o->name)
			return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		(*count)++;
	}
	return 0;
}

/* state_dir: an absolute path of at most RB_STATE_DIR_MAX bytes. */
static int load_state_dir(load_ctx *ctx, const cnode *s, rb_config *cfg)
{
	const char *v = NULL;
	char shown[160];

	if (cf_read_string(ctx, s, &v) < 0)
		return -1;
	if (v[0] != '/') {
		rb_config_quote(v, shown, sizeof(shown));
		return cf_fail_at(ctx, s,
			       "state_dir = \"%s\" is not an absolute path: must start with '/' (%s)",
			       shown, FIX_HINT);
	}
	if (strlen(v) > RB_STATE_DIR_MAX) {
		rb_config_quote(v, shown, sizeof(shown));
		return cf_fail_at(ctx, s,
			       "state_dir = \"%s\" is too long: must be at most %d bytes (%s)",
			       shown, RB_STATE_DIR_MAX, FIX_HINT);
	}
	if (replace_string(&cfg->state_dir, v) < 0)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	return 0;
}

/* A top-level number (its default stays when the file does not set it). */
static int load_number(load_ctx *ctx, const cnode *const *m,
		       const rb_config *cfg, rb_cap_key key, int *out,
		       bool *set)
{
	const cnode *s = cf_member(top_keys, m, rb_cap_rule_of(key)->config_key);
	int_value iv;

	*set = s != NULL;
	if (!s)
		return 0;
	if (cf_read_int(ctx, s, &iv) < 0 || check_value(ctx, &iv, cfg, key) < 0)
		return -1;
	*out = (int)iv.v;
	return 0;
}

/* The top-level budget numbers (after limits: the caps bound them). */
static int load_numbers(load_ctx *ctx, const cnode *const *m, rb_config *cfg)
{
	bool has_m, has_r, has_t, has_i;

	if (load_number(ctx, m, cfg, RB_CAP_MAX_FAILURES, &cfg->max_failures,
			&has_m) < 0 ||
	    load_number(ctx, m, cfg, RB_CAP_RESTORE_RETRIES,
			&cfg->restore_retry_num, &has_r) < 0)
		return -1;
	/* A built-in default the admin did not write follows a lower cap. */
	if (!has_m && cfg->max_failures > cfg->caps.max_failures)
		cfg->max_failures = cfg->caps.max_failures;
	if (!has_r && cfg->restore_retry_num > cfg->caps.restore_retry_num)
		cfg->restore_retry_num = cfg->caps.restore_retry_num;
	if (load_number(ctx, m, cfg, RB_CAP_MAX_INTERRUPTIONS,
			&cfg->max_interruptions, &has_i) < 0)
		return -1;
	/* unlimited by default, but never beyond a cap the admin set */
	if (!has_i && cfg->caps.max_interruptions >= 0)
		cfg->max_interruptions = cfg->caps.max_interruptions;
	return load_number(ctx, m, cfg, RB_CAP_RESTORE_TIMEOUT,
			   &cfg->restore_timeout, &has_t);
}

/* The top-level choices: count_preemptions, track, on_error, on_exhausted. */
static int load_choices(load_ctx *ctx, const cnode *const *m, rb_config *cfg)
{
	const cnode *s;
	int e = 0;

	if ((s = cf_member(top_keys, m, "count_preemptions")) &&
	    cf_read_bool(ctx, s, &cfg->count_preemptions) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "track"))) {
		if (cf_read_enum(ctx, s, track_names, &e) < 0)
			return -1;
		cfg->track = (rb_track)e;
	}
	if ((s = cf_member(top_keys, m, "on_error"))) {
		if (cf_read_enum(ctx, s, on_error_names, &e) < 0)
			return -1;
		cfg->on_error = (rb_on_error)e;
	}
	if ((s = cf_member(top_keys, m, "on_exhausted"))) {
		if (cf_read_enum(ctx, s, on_exhausted_names, &e) < 0)
			return -1;
		cfg->on_exhausted = (rb_on_exhausted)e;
	}
	return 0;
}

/* The top level, in dependency order: accounting and caps first. */
static int load_root(load_ctx *ctx, const cnode *root,
		     rb_config *cfg)
{
	const cnode *s, *m[sizeof(top_keys) / sizeof(*top_keys)];
	int e = 0;

	if (cf_check_known(ctx, root, top_keys, m) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "restore_accounting"))) {
		if (cf_read_enum(ctx, s, accounting_names, &e) < 0)
			return -1;
		cfg->accounting = (rb_accounting)e;
	}
	if ((s = cf_member(top_keys, m, "limits")) &&
	    load_limits(ctx, s, cfg) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "state_dir")) &&
	    load_state_dir(ctx, s, cfg) < 0)
		return -1;
	if (load_numbers(ctx, m, cfg) < 0 || load_choices(ctx, m, cfg) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "checkpoint")) &&
	    load_checkpoint(ctx, s, cfg) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "exit_rules")) &&
	    cf_load_exit_rules(ctx, s, &cfg->exit_rules) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "requeue_exit")) &&
	    cf_load_requeue_exit(ctx, s, cfg) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "partitions")) &&
	    load_named(ctx, s, cfg, false, &cfg->partitions,
		       &cfg->n_partitions) < 0)
		return -1;
	if ((s = cf_member(top_keys, m, "accounts")) &&
	    load_named(ctx, s, cfg, true, &cfg->accounts,
		       &cfg->n_accounts) < 0)
		return -1;
	return cf_no_big_left(ctx);
}

/* ---- public API --------------------------------------------------------- */

rb_config *rb_config_defaults(void)
{
	rb_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	cfg->path = strdup("(built-in defaults)");
	cfg->state_dir = strdup(RB_DEFAULT_STATE_DIR);
	cfg->checkpoint_pattern = strdup("checkpoint*");
	cfg->checkpoint_latest = strdup("latest");
	if (!cfg->path || !cfg->state_dir || !cfg->checkpoint_pattern ||
	    !cfg->checkpoint_latest)
		goto fail;
	cfg->max_failures = 2;
	cfg->restore_retry_num = 3;
	cfg->restore_timeout = 300;
	cfg->accounting = RB_ACCOUNTING_GROUPED;
	cfg->count_preemptions = false;
	cfg->max_interruptions = RB_UNLIMITED;
	cfg->track = RB_TRACK_ALL;
	cfg->on_error = RB_ON_ERROR_OPEN;
	cfg->on_exhausted = RB_ON_EXHAUSTED_FAIL;
	cfg->caps.max_failures = 10;
	cfg->caps.restore_retry_num = 10;
	cfg->caps.max_interruptions = -1;
	cfg->caps.allow_unlimited = false;
	return cfg;

fail:
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
	free(cfg);
}

/* The checks over a parsed tree: a fresh rb_config, or NULL with err set
 * (*saved: the errno to leave). */
static rb_config *load_tree(load_ctx *ctx, const cnode *root, int *saved)
{
	rb_config *cfg = rb_config_defaults();

	if (!cfg || replace_string(&cfg->path, ctx->path) < 0) {
		rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		*saved = ENOMEM;
		rb_config_free(cfg);
		return NULL;
	}
	if (load_root(ctx, root, cfg) < 0) {
		rb_config_free(cfg);
		return NULL;
	}
	return cfg;
}

int rb_config_load(const char *path, rb_config **out, rb_err *err)
{
	load_ctx ctx = { .path = path, .err = err };
	cf_tree tree = { .lc_init = false };
	char *text = NULL;
	size_t len = 0;
	rb_config *cfg = NULL;
	int saved = 0;

	*out = NULL;
	if (!path || !path[0]) {
		saved = EINVAL;
		rb_err_set(err, "(no path): cannot read: no config file given");
		goto done;
	}
	if (cf_read_text(path, &text, &len, err) < 0) {
		saved = errno;
		goto done;
	}
	saved = EINVAL;
	if (cf_prescan(&ctx, text, len) < 0)
		goto done;
	if (cf_tree_parse(&tree, path, text, err) < 0) {
		saved = errno;
		goto done;
	}
	cfg = load_tree(&ctx, tree.root, &saved);
	*out = cfg;

done:
	cf_tree_free(&tree);
	free(text);
	free(ctx.big);
	if (cfg)
		return 0;
	errno = saved;
	return -1;
}
