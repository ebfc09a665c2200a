/*
 * cli_check_config.c - `restore-budget check-config [FILE]`: validate the admin's
 * file and the plugin's plugstack.conf arguments with the plugin's own
 * loader and show what they mean: a summary, then every setting with its
 * origin (argument, file:line, built-in default).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char *track_name(rb_track t)
{
	return t == RB_TRACK_OPT_IN ? "opt-in" : "all";
}

static const char *on_error_name(rb_on_error e)
{
	return e == RB_ON_ERROR_CLOSED ? "closed" : "open";
}

static const char *on_exhausted_name(rb_on_exhausted e)
{
	return e == RB_ON_EXHAUSTED_HOLD ? "hold" : "fail";
}

static void format_m(int m, char *buf, size_t len)
{
	if (m < 0)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%d", m);
}

/* "max_failures=4 restore_retry_num=2" for the values a group sets. */
static void format_overrides(const rb_overrides *o, char *buf, size_t len)
{
	char m[24];
	size_t n = 0;

	buf[0] = '\0';
	if (o->has_max_failures) {
		format_m(o->max_failures, m, sizeof(m));
		n += (size_t)snprintf(buf + n, len - n, "max_failures=%s ", m);
	}
	if (o->has_restore_retry_num && n < len)
		n += (size_t)snprintf(buf + n, len - n, "restore_retry_num=%d ",
				      o->restore_retry_num);
	if (o->has_restore_timeout && n < len)
		n += (size_t)snprintf(buf + n, len - n, "restore_timeout=%d ",
				      o->restore_timeout);
	if (o->has_max_interruptions && n < len) {
		format_m(o->max_interruptions, m, sizeof(m));
		n += (size_t)snprintf(buf + n, len - n, "max_interruptions=%s ",
				      m);
	}
	if (n > 0 && n < len)
		buf[n - 1] = '\0';
	else if (n == 0)
		snprintf(buf, len, "(nothing set)");
}

static void line(const char *key, const char *value)
{
	int pad = 20 - (int)strlen(key) - 1;

	printf("%s:%*s %s\n", key, pad > 0 ? pad : 0, "", value);
}

/* "3,4 fatal; 75 ignore" (first match wins), or "(none)". */
static void format_rules(const rb_exit_rules *list, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < list->n && n < len; i++) {
		const char *sep = "";

		n += (size_t)snprintf(buf + n, len - n, "%s", i ? "; " : "");
		for (int code = 0; code <= RB_EXIT_CODE_MAX && n < len; code++) {
			if (!(list->rules[i].codes[code / 8] & (1u << (code % 8))))
				continue;
			n += (size_t)snprintf(buf + n, len - n, "%s%d", sep, code);
			sep = ",";
		}
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, " %s",
					      rb_exit_rule_name(list->rules[i].action));
	}
	if (list->n == 0)
		snprintf(buf, len, "(none)");
}

/* The exit rules and the interruption cap, only where the file sets them
 * (the summary of a file without them stays as it was). */
static void print_rules(const char *label, const rb_exit_rules *list)
{
	char buf[2048];

	if (!list->set)
		return;
	format_rules(list, buf, sizeof(buf));
	line(label, buf);
}

static void print_interruptions(const rb_config *c)
{
	char buf[64], m[24];

	if (c->max_interruptions < 0 && c->caps.max_interruptions < 0)
		return;
	format_m(c->max_interruptions, m, sizeof(m));
	if (c->caps.max_interruptions >= 0)
		snprintf(buf, sizeof(buf), "%s (cap %d)", m,
			 c->caps.max_interruptions);
	else
		snprintf(buf, sizeof(buf), "%s", m);
	line("max_interruptions", buf);
}

static void print_named(const char *what, const rb_named_overrides *arr,
			size_t n)
{
	char label[RB_NAME_MAX * 3 + 32], name[RB_NAME_MAX * 3], v[160];

	for (size_t i = 0; i < n; i++) {
		snprintf(label, sizeof(label), "%s %s", what,
			 cli_safe(arr[i].name, name, sizeof(name)));
		format_overrides(&arr[i].values, v, sizeof(v));
		line(label, v);
		snprintf(label + strlen(label), sizeof(label) - strlen(label),
			 " exit_rules");
		print_rules(label, &arr[i].exit_rules);
	}
}

/* The requeue code where one is known (cli_requeue.c). */
static void print_requeue_exit(const cli_requeue *r)
{
	if (r->code > 0)
		line("requeue_exit", r->value);
}

/* "argument (plugstack.conf:3)", "/etc/slurm/restore_budget.conf:4" or
 * "default". */
static void origin_text(const rb_config *c, const rb_setting *s, char *buf,
			size_t len)
{
	char safe[RB_PATH_MAX * 3];

	if (s->from == RB_FROM_ARGUMENT)
		snprintf(buf, len, "argument (%s)",
			 cli_safe(c->args_from, safe, sizeof(safe)));
	else if (s->from == RB_FROM_FILE)
		snprintf(buf, len, "%s:%u", cli_safe(c->file, safe, sizeof(safe)),
			 s->line);
	else
		snprintf(buf, len, "default");
}

/* Every setting as KEY=VALUE (the form of a plugstack.conf argument) and
 * where it comes from. */
static void print_origins(const rb_config *c)
{
	char kv[RB_PATH_MAX * 3 + 256], key[256 * 3], value[RB_PATH_MAX * 3];
	char from[RB_PATH_MAX * 3 + 32];

	printf("\nsettings (KEY=VALUE, origin):\n");
	for (size_t i = 0; i < c->n_settings; i++) {
		snprintf(kv, sizeof(kv), "%s=%s",
			 cli_safe(c->settings[i].key, key, sizeof(key)),
			 cli_safe(c->settings[i].value, value, sizeof(value)));
		origin_text(c, &c->settings[i], from, sizeof(from));
		printf("  %-40s %s\n", kv, from);
	}
}

static void print_text(const rb_config *c, const cli_requeue *r)
{
	char buf[RB_PATH_MAX * 3 + 64], m[24];
	int64_t attempts;

	printf("%s: OK\n", cli_safe(c->path, buf, sizeof(buf)));
	line("store", c->store == RB_STORE_CONTROLLER ? "controller" : "dir");
	line("state_dir", c->store == RB_STORE_CONTROLLER ?
	     "(not used: store = controller)" :
	     cli_safe(c->state_dir, buf, sizeof(buf)));
	format_m(c->max_failures, m, sizeof(m));
	line("max_failures", m);
	snprintf(buf, sizeof(buf), "%d", c->restore_retry_num);
	line("restore_retry_num", buf);
	snprintf(buf, sizeof(buf), "%d%s", c->restore_timeout,
		 c->restore_timeout == 0 ? " (only an ack or exit 0 confirms)" :
					   " s");
	line("restore_timeout", buf);
	line("restore_accounting", rb_accounting_name(c->accounting));
	line("count_preemptions", c->count_preemptions ? "true" : "false");
	line("track", track_name(c->track));
	line("on_error", on_error_name(c->on_error));
	line("on_exhausted", on_exhausted_name(c->on_exhausted));
	snprintf(buf, sizeof(buf),
		 "max_failures <= %d, restore_retry_num <= %d, "
		 "allow_unlimited = %s",
		 c->caps.max_failures, c->caps.restore_retry_num,
		 c->caps.allow_unlimited ? "true" : "false");
	line("limits (caps)", buf);
	{
		char pat[RB_NAME_MAX * 3], lat[RB_NAME_MAX * 3];

		snprintf(buf, sizeof(buf), "pattern \"%s\", latest \"%s\"",
			 cli_safe(c->checkpoint_pattern, pat, sizeof(pat)),
			 cli_safe(c->checkpoint_latest, lat, sizeof(lat)));
	}
	line("checkpoint", buf);
	print_interruptions(c);
	print_rules("exit_rules", &c->exit_rules);
	print_requeue_exit(r);
	print_named("partition", c->partitions, c->n_partitions);
	print_named("account", c->accounts, c->n_accounts);
	/* The design's headline number, for the defaults (section 3). */
	if (c->max_failures >= 0) {
		if (c->accounting == RB_ACCOUNTING_RAY)
			attempts = (int64_t)c->restore_retry_num +
				   c->max_failures + 1;
		else
			attempts = (int64_t)c->restore_retry_num *
				   (c->max_failures + 1);
		snprintf(buf, sizeof(buf),
			 "%lld restore attempts before a job is refused",
			 (long long)attempts);
		line("corrupt checkpoint", buf);
	}
	print_origins(c);
}

static json_object *overrides_json(const rb_overrides *o)
{
	json_object *j = json_object_new_object();

	if (o->has_max_failures)
		json_object_object_add(j, "max_failures",
				       json_object_new_int(o->max_failures));
	if (o->has_restore_retry_num)
		json_object_object_add(j, "restore_retry_num",
				       json_object_new_int(o->restore_retry_num));
	if (o->has_restore_timeout)
		json_object_object_add(j, "restore_timeout",
				       json_object_new_int(o->restore_timeout));
	if (o->has_max_interruptions)
		json_object_object_add(j, "max_interruptions",
				       json_object_new_int(o->max_interruptions));
	return j;
}

/* exit_rules as [ { "codes": [3, 4], "action": "fatal" }, ... ], added to
 * o only where the file sets them (the JSON of a file without them stays as
 * it was). */
static void add_rules_json(json_object *o, const rb_exit_rules *list)
{
	json_object *arr;

	if (!list->set)
		return;
	arr = json_object_new_array();
	for (size_t i = 0; i < list->n; i++) {
		json_object *r = json_object_new_object();
		json_object *codes = json_object_new_array();

		for (int code = 0; code <= RB_EXIT_CODE_MAX; code++)
			if (list->rules[i].codes[code / 8] & (1u << (code % 8)))
				json_object_array_add(codes,
						      json_object_new_int(code));
		json_object_object_add(r, "codes", codes);
		json_object_object_add(r, "action", json_object_new_string(
			rb_exit_rule_name(list->rules[i].action)));
		json_object_array_add(arr, r);
	}
	json_object_object_add(o, "exit_rules", arr);
}

/* The interruption cap and its `limits` cap, where set. */
static void add_interruptions_json(json_object *o, json_object *caps,
				   const rb_config *c)
{
	if (c->max_interruptions >= 0 || c->caps.max_interruptions >= 0)
		json_object_object_add(o, "max_interruptions",
				       json_object_new_int(c->max_interruptions));
	if (c->caps.max_interruptions >= 0)
		json_object_object_add(caps, "max_interruptions",
				       json_object_new_int(c->caps.max_interruptions));
}

static json_object *named_json(const rb_named_overrides *arr, size_t n)
{
	json_object *j = json_object_new_object();

	for (size_t i = 0; i < n; i++) {
		json_object *name = cli_json_string(arr[i].name);
		json_object *group = overrides_json(&arr[i].values);

		add_rules_json(group, &arr[i].exit_rules);
		json_object_object_add(j, json_object_get_string(name), group);
		json_object_put(name);
	}
	return j;
}

/* "settings": [ { "key", "value", "origin": "argument" | "file" |
 * "default", "where": "FILE:LINE" (not for a default) }, ... ] */
static json_object *settings_json(const rb_config *c)
{
	static const char *const kinds[] = { "default", "file", "argument" };
	json_object *arr = json_object_new_array();
	char where[RB_PATH_MAX + 32];

	for (size_t i = 0; i < c->n_settings; i++) {
		const rb_setting *s = &c->settings[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "key", cli_json_string(s->key));
		json_object_object_add(o, "value", cli_json_string(s->value));
		json_object_object_add(o, "origin",
				       json_object_new_string(kinds[s->from]));
		if (s->from == RB_FROM_FILE)
			snprintf(where, sizeof(where), "%s:%u", c->file, s->line);
		if (s->from != RB_FROM_DEFAULT)
			json_object_object_add(o, "where", cli_json_string(
				s->from == RB_FROM_FILE ? where : c->args_from));
		json_object_array_add(arr, o);
	}
	return arr;
}

static json_object *config_json(const rb_config *c, const cli_requeue *r)
{
	json_object *o = json_object_new_object();
	json_object *caps = json_object_new_object();
	json_object *ck = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(true));
	json_object_object_add(o, "path", cli_json_string(c->path));
	json_object_object_add(o, "state_dir", cli_json_string(c->state_dir));
	json_object_object_add(o, "max_failures",
			       json_object_new_int(c->max_failures));
	json_object_object_add(o, "restore_retry_num",
			       json_object_new_int(c->restore_retry_num));
	json_object_object_add(o, "restore_timeout",
			       json_object_new_int(c->restore_timeout));
	json_object_object_add(o, "restore_accounting",
			       json_object_new_string(
				       rb_accounting_name(c->accounting)));
	json_object_object_add(o, "count_preemptions",
			       json_object_new_boolean(c->count_preemptions));
	json_object_object_add(o, "track",
			       json_object_new_string(track_name(c->track)));
	json_object_object_add(o, "on_error",
			       json_object_new_string(on_error_name(c->on_error)));
	json_object_object_add(o, "on_exhausted",
			       json_object_new_string(
				       on_exhausted_name(c->on_exhausted)));
	json_object_object_add(o, "store", json_object_new_string(
		c->store == RB_STORE_CONTROLLER ? "controller" : "dir"));
	json_object_object_add(caps, "max_failures",
			       json_object_new_int(c->caps.max_failures));
	json_object_object_add(caps, "restore_retry_num",
			       json_object_new_int(c->caps.restore_retry_num));
	json_object_object_add(caps, "allow_unlimited",
			       json_object_new_boolean(c->caps.allow_unlimited));
	add_interruptions_json(o, caps, c);
	add_rules_json(o, &c->exit_rules);
	cli_requeue_json(o, r);
	json_object_object_add(o, "limits", caps);
	json_object_object_add(ck, "pattern",
			       cli_json_string(c->checkpoint_pattern));
	json_object_object_add(ck, "latest",
			       cli_json_string(c->checkpoint_latest));
	json_object_object_add(o, "checkpoint", ck);
	json_object_object_add(o, "partitions",
			       named_json(c->partitions, c->n_partitions));
	json_object_object_add(o, "accounts",
			       named_json(c->accounts, c->n_accounts));
	json_object_object_add(o, "settings", settings_json(c));
	return o;
}

int cli_cmd_check_config(cli_ctx *ctx, const char *file)
{
	static cli_requeue requeue;
	rb_config *cfg = NULL;
	rb_err err;
	int rc;

	if (file) {
		ctx->config_path = file;
		ctx->config_explicit = true;
	}
	if (rb_config_load_args(ctx->config_path, ctx->plug_ac, ctx->plug_av,
				ctx->plug_where, &cfg, &err) < 0) {
		char safe[RB_ERR_MAX * 3];

		cli_error("%s", cli_safe(err.msg, safe, sizeof(safe)));
		if (ctx->json) {
			json_object *o = cli_json_pair(
				"ok", json_object_new_boolean(false),
				"path", cli_json_string(ctx->config_path ?
							ctx->config_path :
							ctx->plug_where));

			json_object_object_add(o, "error",
					       cli_json_string(err.msg));
			cli_json_print(o);
		}
		return CLI_EDATA;
	}
	if (!ctx->config_path)
		cli_error("note: %s does not exist: the plugin uses the built-in "
			  "defaults%s shown here", RB_DEFAULT_CONFIG_PATH,
			  cfg->args_from ? " and the plugstack.conf arguments" : "");
	cli_requeue_check(cfg, &requeue);
	if (requeue.warning[0])
		cli_error("%s", requeue.warning);
	if (ctx->json) {
		rc = cli_json_print(config_json(cfg, &requeue)) < 0 ? CLI_EDATA :
								      CLI_OK;
	} else {
		print_text(cfg, &requeue);
		rc = fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
	}
	rb_config_free(cfg);
	return rc;
}
