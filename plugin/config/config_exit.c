/*
 * config_exit.c - the config file's exit_rules lists (docs/rule.md,
 * "Exit-code rules"):
 *
 *   exit_rules = ( { codes = [3, 4]; action = "fatal"; },
 *                  { codes = [75]; action = "ignore"; } );
 *
 * at the top level (the default list) and in a partition's or account's
 * group (a list that replaces the default). Checked like every other key:
 * an unknown action, a code outside 0..255 or an empty codes array is an
 * error "file:line: message".
 *
 * Also requeue_exit = N, the exit code that makes Slurm requeue the job
 * (one of slurm.conf's RequeueExit; docs/rule.md, "The requeue code").
 */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rule_keys[] = { "codes", "action", NULL };
/* The order of rb_exit_rule from RB_EXIT_RULE_FAILURE on. */
static const char *const action_names[] = {
	"failure", "restore_failure", "fatal", "ignore", NULL,
};

#define RULES_SHAPE "a list ( { codes = [N, ...]; action = \"fatal\"; }, ... )"

/* "exit_rules[i]" under its parent's path, for messages. */
static void rule_name(const cnode *list, int i, char *buf, size_t len)
{
	char key[256];

	cf_key_path(list, key, sizeof(key));
	snprintf(buf, len, "%s[%d]", key, i + 1);
}

/* The codes array of one rule into its bitmap. */
static int load_codes(load_ctx *ctx, const cnode *s, const char *where,
		      rb_exit_rule_entry *r)
{
	int type = cn_type(s);

	if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
		return cf_fail_type(ctx, s, "an array [N, ...] of exit codes");
	if (cn_length(s) == 0)
		return cf_fail_at(ctx, s,
				  "%s.codes is empty: give at least one exit code 0..%d (%s)",
				  where, RB_EXIT_CODE_MAX, FIX_HINT);
	for (const cnode *e = s->first; e; e = e->next) {
		int_value iv;
		iv_text t;

		if (cf_read_int(ctx, e, &iv) < 0)
			return -1;
		if (iv.overflow || iv.v < 0 || iv.v > RB_EXIT_CODE_MAX)
			return cf_fail_at(ctx, e,
					  "%s.codes: %s is out of range: exit codes are 0..%d (%s)",
					  where, cf_iv_describe(&iv, &t)->shown,
					  RB_EXIT_CODE_MAX, FIX_HINT);
		r->codes[iv.v / 8] |= (uint8_t)(1u << (iv.v % 8));
	}
	return 0;
}

/* One { codes = [...]; action = "..."; } group. */
static int load_rule(load_ctx *ctx, const cnode *g, const char *where,
		     rb_exit_rule_entry *r)
{
	const cnode *m[sizeof(rule_keys) / sizeof(*rule_keys)];
	const cnode *codes, *action;
	int e = 0;

	if (cf_require_group(ctx, g, "a group { codes = [N, ...]; action = \"...\"; }") < 0 ||
	    cf_check_known(ctx, g, rule_keys, m) < 0)
		return -1;
	codes = cf_member(rule_keys, m, "codes");
	action = cf_member(rule_keys, m, "action");
	if (!codes || !action)
		return cf_fail_at(ctx, g,
				  "%s needs both codes = [N, ...] and action = \"failure\", \"restore_failure\", \"fatal\" or \"ignore\" (%s)",
				  where, FIX_HINT);
	if (load_codes(ctx, codes, where, r) < 0 ||
	    cf_read_enum(ctx, action, action_names, &e) < 0)
		return -1;
	r->action = (rb_exit_rule)(RB_EXIT_RULE_FAILURE + e);
	return 0;
}

/* (config_int.h) */
int cf_load_exit_rules(load_ctx *ctx, const cnode *s, rb_exit_rules *out)
{
	int n = cn_length(s);
	rb_exit_rule_entry *rules;

	/* `exit_rules = [];` is how libconfig spells an empty list too */
	if (cn_type(s) != CONFIG_TYPE_LIST &&
	    !(cn_type(s) == CONFIG_TYPE_ARRAY && n == 0))
		return cf_fail_type(ctx, s, RULES_SHAPE);
	/* one entry at least: an empty list is still a list that is set */
	rules = calloc(n > 0 ? (size_t)n : 1, sizeof(*rules));
	if (!rules)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	free(out->rules);
	out->rules = rules;
	out->n = 0;
	out->set = true;
	for (int i = 0; i < n; i++) {
		char where[300];

		rule_name(s, i, where, sizeof(where));
		if (load_rule(ctx, cn_elem(s, (unsigned int)i), where,
			      &rules[i]) < 0)
			goto fail;
		out->n++;
	}
	return 0;
fail:
	/* a partition's group that failed is not counted, so never freed by
	 * rb_config_free: leave nothing behind */
	free(rules);
	out->rules = NULL;
	out->n = 0;
	return -1;
}

/* (config_int.h) The code a job exits with when its restore fails
 * (docs/rule.md, "The requeue code"): never 0, which Slurm does not
 * requeue. */
int cf_load_requeue_exit(load_ctx *ctx, const cnode *s, rb_config *cfg)
{
	int_value iv;

	if (cf_read_int(ctx, s, &iv) < 0 ||
	    cf_check_range(ctx, &iv, 1, RB_EXIT_CODE_MAX, "") < 0)
		return -1;
	cfg->requeue_exit = (int)iv.v;
	return 0;
}

/* (config.h) The first rule of list naming code. */
rb_exit_rule rb_exit_rules_match(const rb_exit_rules *list, int code)
{
	if (code < 0 || code > RB_EXIT_CODE_MAX)
		return RB_EXIT_RULE_NONE;
	for (size_t i = 0; i < list->n; i++)
		if (list->rules[i].codes[code / 8] & (1u << (code % 8)))
			return list->rules[i].action;
	return RB_EXIT_RULE_NONE;
}
