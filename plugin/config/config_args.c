/*
 * config_args.c - the plugstack.conf arguments (DESIGN 14, docs/rule.md
 * "Plugstack arguments") and the origin of every setting.
 *
 * In a configless cluster slurmd gets slurm.conf and plugstack.conf from
 * the controller, never our file, so every key may also be an argument
 * "key=value". Each argument is set into the tree libconfig parsed from
 * the file (an empty one without a file), replacing the file's value, with
 * the argument as the setting's hook; then the one schema walk of config.c
 * checks the merged tree. So an argument gets the same types, ranges and
 * cross-key rules as the file, and its messages name the argument where
 * the file's name a line. Slurm splits arguments at white space, so no
 * value holds one; a partition or account whose name holds a '.' cannot be
 * told from the key's own dots and must be set in the file.
 */
#include "config_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caps.h"

#define ARG_HINT "fix the argument in plugstack.conf, then run restore-budget check-config"

/* "LABEL: argument "key=value": message". Always -1. */
static int fail_arg(load_ctx *ctx, const cf_arg *a, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_arg(load_ctx *ctx, const cf_arg *a, const char *fmt, ...)
{
	char msg[RB_ERR_MAX], arg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rb_config_quote(a->arg, arg, sizeof(arg));
	return rb_err_set(ctx->err, "%s: argument \"%s\": %s", ctx->label, arg,
			  msg);
}

static int out_of_memory(load_ctx *ctx)
{
	return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
}

/* A new member name of g of type, made by argument a. NULL when libconfig
 * refuses the name (it checks names since 1.5). */
static cset *add_member(cset *g, const char *name, int type, const cf_arg *a)
{
	cset *s = config_setting_add(g, name, type);

	if (s)
		config_setting_set_hook(s, (void *)a);
	return s;
}

/* ---- values ------------------------------------------------------------- */

/* Strict decimal with an optional '-': 1 and *v; 2 when it does not fit in
 * 64 bits; 0 when it is no integer (then the schema's type check words it). */
static int parse_integer(const char *s, long long *v)
{
	const char *p = *s == '-' ? s + 1 : s;
	char *end;

	if (!*p || p[strspn(p, "0123456789")])
		return 0;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno == ERANGE ? 2 : 1;
}

/* ---- where an argument goes --------------------------------------------- */

/* The member `name` of g as a group, made by a if missing. */
static int child_group(load_ctx *ctx, cset *g, const char *name,
		       const cf_arg *a, cset **out)
{
	cset *s = config_setting_get_member(g, name);

	if (!s)
		s = add_member(g, name, CONFIG_TYPE_GROUP, a);
	if (!s)
		return out_of_memory(ctx);
	if (config_setting_type(s) != CONFIG_TYPE_GROUP)
		return fail_arg(ctx, a,
				"%s is not a group in %s (line %u): fix the file, then run restore-budget check-config",
				name, ctx->path, config_setting_source_line(s));
	*out = s;
	return 0;
}

/* The name a partition's or account's group stands for: its `name` key,
 * else its own name. */
static const char *group_name(const cset *e)
{
	const cset *n = config_setting_get_member(e, "name");

	if (n && config_setting_type(n) == CONFIG_TYPE_STRING)
		return config_setting_get_string(n);
	return config_setting_name(e);
}

/* The group of partition or account `name` in g (partitions or accounts):
 * the file's, matched as the plugin matches jobs (accounts ignoring case),
 * else a new one; a name libconfig cannot hold gets a `name` key. */
static int named_group(load_ctx *ctx, cset *g, const char *name,
		       bool ignore_case, const cf_arg *a, cset **out)
{
	char made[32];
	cset *n;

	for (int i = 0; i < config_setting_length(g); i++) {
		*out = config_setting_get_elem(g, (unsigned int)i);
		if (config_setting_type(*out) == CONFIG_TYPE_GROUP &&
		    (ignore_case ? strcasecmp(group_name(*out), name) :
				   strcmp(group_name(*out), name)) == 0)
			return 0;
	}
	if ((*out = add_member(g, name, CONFIG_TYPE_GROUP, a)))
		return 0;
	snprintf(made, sizeof(made), "arg%d", config_setting_length(g) + 1);
	if (!(*out = add_member(g, made, CONFIG_TYPE_GROUP, a)) ||
	    !(n = add_member(*out, "name", CONFIG_TYPE_STRING, a)) ||
	    !config_setting_set_string(n, name))
		return out_of_memory(ctx);
	return 0;
}

/* The libconfig type that carries text for a key of kind, and *v its
 * integer: the key's own type when the text is of that type, else a
 * string, which the schema then reports as the wrong type. *big: an
 * integer past 64 bits, kept as the largest int64 (its text is the
 * message's). */
static int leaf_type(key_kind kind, const char *text, long long *v,
		     bool *big)
{
	int integer;

	*v = 0;
	*big = false;
	if (kind == K_BOOL)
		return strcmp(text, "true") == 0 || strcmp(text, "false") == 0 ?
			       CONFIG_TYPE_BOOL : CONFIG_TYPE_STRING;
	if (kind == K_ENUM || kind == K_TEXT)
		return CONFIG_TYPE_STRING;
	integer = parse_integer(text, v);
	if (integer == 0)
		return CONFIG_TYPE_STRING;
	if ((*big = integer == 2))
		*v = LLONG_MAX;
	return *v < INT_MIN || *v > INT_MAX ? CONFIG_TYPE_INT64 :
					      CONFIG_TYPE_INT;
}

/* A leaf key: replace the file's value, refuse a second argument. */
static int set_leaf(load_ctx *ctx, cset *g, const key_row *r, cf_arg *a)
{
	cset *s = config_setting_get_member(g, r->name);
	char other[200];
	long long v;
	int type, ok;

	if (cf_arg_of(s)) {
		rb_config_quote(cf_arg_of(s)->arg, other, sizeof(other));
		return fail_arg(ctx, a,
				"this key is already set by argument \"%s\": give each key once (%s)",
				other, ARG_HINT);
	}
	if (s && config_setting_remove(g, r->name) != CONFIG_TRUE)
		return out_of_memory(ctx);
	type = leaf_type(r->kind, a->value, &v, &a->big);
	if (!(s = add_member(g, r->name, type, a)))
		return out_of_memory(ctx);
	switch (type) {
	case CONFIG_TYPE_BOOL:
		ok = config_setting_set_bool(s, strcmp(a->value, "true") == 0);
		break;
	case CONFIG_TYPE_INT:
		ok = config_setting_set_int(s, (int)v);
		break;
	case CONFIG_TYPE_INT64:
		ok = config_setting_set_int64(s, v);
		break;
	default:
		ok = config_setting_set_string(s, a->value);
	}
	if (!ok)
		return out_of_memory(ctx);
	ctx->n_applied++;
	return 0;
}

/* ---- exit rules: one argument per action -------------------------------- */

/* -1 if code is already under another action of list (a code goes under
 * one action only, or the first match would depend on the arguments'
 * order). */
static int code_free(load_ctx *ctx, const cset *list, long long code,
		     const cf_arg *a)
{
	char other[200];

	for (int i = 0; i < config_setting_length(list); i++) {
		const cset *e = config_setting_get_elem(list, (unsigned int)i);
		const cset *codes = config_setting_get_member(e, "codes");

		for (int k = 0; codes && k < config_setting_length(codes); k++) {
			const cset *c = config_setting_get_elem(codes, (unsigned int)k);

			if (config_setting_type(c) != CONFIG_TYPE_INT64 ||
			    config_setting_get_int64(c) != code || !cf_arg_of(e))
				continue;
			rb_config_quote(cf_arg_of(e)->arg, other, sizeof(other));
			return fail_arg(ctx, a,
					"exit code %lld is already under argument \"%s\": put each code under one action only (%s)",
					code, other, ARG_HINT);
		}
	}
	return 0;
}

/* The codes "3,4" of a as elements of codes (a list: an element that is
 * no integer stays a string for the schema to report). */
static int add_codes(load_ctx *ctx, const cset *list, cset *codes, cf_arg *a)
{
	const char *p = a->value;

	while (*p) {
		size_t n = strcspn(p, ",");
		char text[32];
		long long v = 0;
		int kind;
		cset *c;

		snprintf(text, sizeof(text), "%.*s", (int)(n < 31 ? n : 31), p);
		kind = n < 31 ? parse_integer(text, &v) : 0;
		if (kind == 1 && code_free(ctx, list, v, a) < 0)
			return -1;
		c = config_setting_add(codes, NULL,
				       kind == 1 ? CONFIG_TYPE_INT64 : CONFIG_TYPE_STRING);
		if (!c || (kind == 1 ? !config_setting_set_int64(c, v) :
				       !config_setting_set_string(c, text)))
			return out_of_memory(ctx);
		config_setting_set_hook(c, a);
		p += n + (p[n] == ',');
	}
	return 0;
}

/* exit_rules.ACTION=CODES at g: the arguments' list replaces the file's. */
static int set_rule(load_ctx *ctx, cset *g, const char *action, cf_arg *a)
{
	cset *list = config_setting_get_member(g, "exit_rules"), *e, *s;
	bool known = false;

	for (int i = 0; cf_action_names[i]; i++)
		known |= strcmp(action, cf_action_names[i]) == 0;
	if (!known)
		return fail_arg(ctx, a,
				"unknown exit rule action (known: exit_rules.failure, exit_rules.restore_failure, exit_rules.fatal, exit_rules.ignore, each =CODE,CODE...; %s)",
				ARG_HINT);
	if (list && !cf_arg_of(list) &&
	    config_setting_remove(g, "exit_rules") != CONFIG_TRUE)
		return out_of_memory(ctx);
	if (!list || !cf_arg_of(list))
		list = add_member(g, "exit_rules", CONFIG_TYPE_LIST, a);
	if (!list)
		return out_of_memory(ctx);
	/* the list is the arguments': each rule has the action it was given */
	for (int i = 0; i < config_setting_length(list); i++) {
		e = config_setting_get_elem(list, (unsigned int)i);
		s = config_setting_get_member(e, "action");
		if (s && strcmp(config_setting_get_string(s), action) == 0)
			return fail_arg(ctx, a,
					"exit_rules.%s is already set: give each action once, its codes comma-separated (%s)",
					action, ARG_HINT);
	}
	if (!(e = add_member(list, NULL, CONFIG_TYPE_GROUP, a)) ||
	    !(s = add_member(e, "action", CONFIG_TYPE_STRING, a)) ||
	    !config_setting_set_string(s, action) ||
	    !(s = add_member(e, "codes", CONFIG_TYPE_LIST, a)))
		return out_of_memory(ctx);
	ctx->n_applied++;
	return add_codes(ctx, list, s, a);
}

/* ---- one argument ------------------------------------------------------- */

/* partitions.NAME.KEY or accounts.NAME.KEY (rest is "NAME.KEY", KEY maybe
 * exit_rules.ACTION): into the group of NAME. */
static int set_named(load_ctx *ctx, cset *g, const key_row *r,
		     const char *rest, cf_arg *a)
{
	const char *what = r->arg ? "account" : "partition";
	const char *end = strstr(rest, ".exit_rules.");
	const char *key;
	char name[RB_NAME_MAX], q[200];
	const key_row *row;
	cset *group;

	if (!end)
		end = strrchr(rest, '.');
	key = end ? end + 1 : NULL;
	if (!end || end == rest || !*key)
		return fail_arg(ctx, a,
				"give a %s's key as %s.NAME.KEY=VALUE (keys: %s; %s)",
				what, r->name, cf_override_section.known, ARG_HINT);
	snprintf(name, sizeof(name), "%.*s", (int)(end - rest), rest);
	rb_config_quote(name, q, sizeof(q));
	if ((size_t)(end - rest) >= sizeof(name) || strchr(name, '.'))
		return fail_arg(ctx, a,
				"the %s name \"%s\" holds a '.' (or is too long), which an argument cannot tell from the key's dots: set this %s in the config file (%s = { x = { name = \"...\"; ... }; }), then run restore-budget check-config",
				what, q, what, r->name);
	if (strcmp(key, "name") == 0)
		return fail_arg(ctx, a, "the %s's name is the part between %s. and the key: %s.%s.KEY=VALUE (%s)",
				what, r->name, r->name, q, ARG_HINT);
	if (child_group(ctx, g, r->name, a, &g) < 0 ||
	    named_group(ctx, g, name, r->arg, a, &group) < 0)
		return -1;
	if (strncmp(key, "exit_rules.", 11) == 0)
		return set_rule(ctx, group, key + 11, a);
	row = cf_find_row(&cf_override_section, key, strlen(key));
	if (!row)
		return fail_arg(ctx, a, "unknown key \"%s\" of %s \"%s\" (known keys: %s; %s)",
				key, what, q, cf_override_section.known, ARG_HINT);
	return set_leaf(ctx, group, row, a);
}

/* The key a->arg names, from section sec down (g its group). */
static int set_key(load_ctx *ctx, cset *g, const section *sec,
		   const char *key, cf_arg *a)
{
	size_t n = strcspn(key, ".");
	const key_row *r = cf_find_row(sec, key, n);
	const char *rest = key[n] ? key + n + 1 : NULL;

	if (!r && sec == &cf_top_section)
		return fail_arg(ctx, a,
				"unknown key \"%.*s\" (known: %s, and the plugin's own %s; %s)",
				(int)n, key, sec->known, RB_PLUGIN_ARGS, ARG_HINT);
	if (!r)
		return fail_arg(ctx, a, "unknown key \"%.*s\" (known keys here: %s; %s)",
				(int)n, key, sec->known, ARG_HINT);
	if ((r->kind == K_GROUP || r->kind == K_NAMED || r->kind == K_RULES) &&
	    (!rest || !*rest))
		return fail_arg(ctx, a,
				"%s is a group: give its keys as %s.%s=VALUE (%s)",
				r->name, r->name,
				r->kind == K_NAMED ? "NAME.KEY" :
				r->kind == K_RULES ? "ACTION" : "KEY", ARG_HINT);
	if (r->kind == K_GROUP) {
		if (child_group(ctx, g, r->name, a, &g) < 0)
			return -1;
		return set_key(ctx, g, r->more, rest, a);
	}
	if (r->kind == K_NAMED)
		return set_named(ctx, g, r, rest, a);
	if (r->kind == K_RULES)
		return set_rule(ctx, g, rest, a);
	if (rest)
		return fail_arg(ctx, a, "%s holds a value, not keys (%s)",
				r->name, ARG_HINT);
	if (r->kind == K_TEXT && r->arg == T_NAME)
		return fail_arg(ctx, a, "unknown key \"name\" (%s)", ARG_HINT);
	return set_leaf(ctx, g, r, a);
}

/* The plugin's own arguments (plugin/spank/plugin.c), not config keys. */
static bool plugin_arg(const char *arg)
{
	return strncmp(arg, "config=", 7) == 0 ||
	       strncmp(arg, "slurm_bindir=", 13) == 0 ||
	       strncmp(arg, "run_dir=", 8) == 0;
}

/* (config_int.h) */
int cf_apply_args(load_ctx *ctx, cset *root, int ac, char *const *av)
{
	char key[256];

	for (int i = 0; i < ac; i++) {
		cf_arg *a = &ctx->args[i];
		const char *eq = av[i] ? strchr(av[i], '=') : NULL;

		*a = (cf_arg){ .arg = av[i] ? av[i] : "", .value = eq ? eq + 1 : "" };
		if (!av[i] || plugin_arg(av[i]))
			continue;
		if (!eq || eq == av[i] || (size_t)(eq - av[i]) >= sizeof(key))
			return fail_arg(ctx, a,
					"not KEY=VALUE (known: %s, and every key of the config file, nested keys with dots: limits.max_failures=10; %s)",
					RB_PLUGIN_ARGS, ARG_HINT);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - av[i]), av[i]);
		if (set_key(ctx, root, &cf_top_section, key, a) < 0)
			return -1;
	}
	return 0;
}

/* ---- the settings in force and their origins ---------------------------- */

/* Append key = value from s (NULL: a built-in default) to cfg->settings. */
static int record(rb_config *cfg, const char *key, const char *value,
		  const cset *s)
{
	rb_setting *e = realloc(cfg->settings,
				(cfg->n_settings + 1) * sizeof(*e));

	if (!e)
		return -1;
	cfg->settings = e;
	e = &cfg->settings[cfg->n_settings];
	*e = (rb_setting){ .key = strdup(key), .value = strdup(value),
			   .from = !s ? RB_FROM_DEFAULT :
				   cf_arg_of(s) ? RB_FROM_ARGUMENT : RB_FROM_FILE,
			   .line = s && !cf_arg_of(s) ? config_setting_source_line(s) : 0 };
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return -1;
	}
	cfg->n_settings++;
	return 0;
}

/* The value of row r in base, as an argument would give it. */
static void row_value(const key_row *r, const char *base, char *buf,
		      size_t len)
{
	const void *at = base + r->off;
	int v = 0;

	switch (r->kind) {
	case K_ENUM:
		snprintf(buf, len, "%s", ((const char *const *)r->more)[*(const int *)at]);
		break;
	case K_BOOL:
		snprintf(buf, len, "%s", *(const bool *)at ? "true" : "false");
		break;
	case K_TEXT:
		snprintf(buf, len, "%s", *(char *const *)at ? *(char *const *)at : "");
		break;
	case K_OVERRIDE:
		rb_cap_get(at, (rb_cap_key)r->arg, &v);
		snprintf(buf, len, "%d", v);
		break;
	case K_REQUEUE: /* 0: not set, taken from slurm.conf's RequeueExit */
		if (*(const int *)at == 0)
			snprintf(buf, len, "unset");
		else
			snprintf(buf, len, "%d", *(const int *)at);
		break;
	default:
		snprintf(buf, len, "%d", *(const int *)at);
	}
}

/* "3,4": the codes of rule r. */
static void codes_text(const rb_exit_rule_entry *r, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int code = 0; code <= RB_EXIT_CODE_MAX && o < len; code++)
		if (r->codes[code / 8] & (1u << (code % 8)))
			o += (size_t)snprintf(buf + o, len - o, "%s%d",
					      o ? "," : "", code);
}

/* An exit_rules list (s its setting, NULL when not written): one setting
 * per rule, "exit_rules.fatal" = "3,4"; "(none)" for a list set empty. */
static int record_rules(rb_config *cfg, const cset *s, const rb_exit_rules *l,
			const char *prefix, bool defaults)
{
	char key[RB_NAME_MAX + 64], codes[1024];

	snprintf(key, sizeof(key), "%sexit_rules", prefix);
	if (!l->set)
		return defaults ? record(cfg, key, "(none)", NULL) : 0;
	if (l->n == 0)
		return record(cfg, key, "(none)", s);
	for (size_t i = 0; i < l->n; i++) {
		snprintf(key, sizeof(key), "%sexit_rules.%s", prefix,
			 cf_action_names[l->rules[i].action - RB_EXIT_RULE_FAILURE]);
		codes_text(&l->rules[i], codes, sizeof(codes));
		if (record(cfg, key, codes,
			   config_setting_get_elem(s, (unsigned int)i)) < 0)
			return -1;
	}
	return 0;
}

/* Every key of sec (with defaults, also those not written). */
static int record_section(rb_config *cfg, const cset *g, const section *sec,
			  const char *base, const char *prefix, bool defaults)
{
	char key[RB_NAME_MAX + 64], value[RB_PATH_MAX + 16];

	for (const key_row *r = sec->rows; r->name; r++) {
		const cset *s = g ? config_setting_get_member(g, r->name) : NULL;
		int err = 0;

		snprintf(key, sizeof(key), "%s%s", prefix, r->name);
		if (r->kind == K_GROUP) {
			snprintf(key, sizeof(key), "%s%s.", prefix, r->name);
			err = record_section(cfg, s, r->more, base, key, defaults);
		} else if (r->kind == K_NAMED) { /* in the order of g's groups */
			const rb_named_overrides *arr = r->arg ? cfg->accounts :
								 cfg->partitions;
			size_t n = r->arg ? cfg->n_accounts : cfg->n_partitions;
			char group[RB_NAME_MAX + 32];

			for (size_t i = 0; s && i < n && err == 0; i++) {
				snprintf(group, sizeof(group), "%s.%s.", r->name, arr[i].name);
				err = record_section(cfg, config_setting_get_elem(s, (unsigned int)i),
						     &cf_override_section, (const char *)&arr[i],
						     group, false);
			}
		} else if (r->kind == K_RULES) {
			err = record_rules(cfg, s, (const rb_exit_rules *)(base + r->off),
					   prefix, defaults);
		} else if ((s || defaults) &&
			   !(r->kind == K_TEXT && r->arg == T_NAME)) {
			row_value(r, base, value, sizeof(value));
			err = record(cfg, key, value, s);
		}
		if (err < 0)
			return -1;
	}
	return 0;
}

/* (config_int.h) */
int cf_record_settings(const cset *root, rb_config *cfg)
{
	return record_section(cfg, root, &cf_top_section, (const char *)cfg, "",
			      true);
}
