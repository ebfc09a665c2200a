/*
 * limits.c - a job's limits: the config's defaults, its partition's and
 * account's, the job's own options within the caps (docs/rule.md,
 * "Limits"). config.c reads the file; this applies it to one job. What
 * fits a cap is caps.c's to say; this words the warning or the refusal.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caps.h"

/* ---- resolving a job's limits ------------------------------------------- */

static void append_line(char *warn, size_t warnlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append_line(char *warn, size_t warnlen, const char *fmt, ...)
{
	size_t o;
	va_list ap;

	if (!warn || warnlen == 0)
		return;
	o = strnlen(warn, warnlen);
	if (o >= warnlen - 1)
		return;
	if (o > 0) {
		warn[o++] = '\n';
		warn[o] = '\0';
	}
	va_start(ap, fmt);
	vsnprintf(warn + o, warnlen - o, fmt, ap);
	va_end(ap);
}

/* The partitions' (accounts false) or accounts' overrides for name. */
static const rb_named_overrides *find_named(const rb_config *cfg,
					    const char *name, bool accounts)
{
	const rb_named_overrides *arr = accounts ? cfg->accounts : cfg->partitions;
	size_t n = accounts ? cfg->n_accounts : cfg->n_partitions;

	for (size_t i = 0; name && i < n; i++)
		if (accounts ? !strcasecmp(arr[i].name, name) :
			       !strcmp(arr[i].name, name))
			return &arr[i];
	return NULL;
}

static void apply(rb_limits *out, const rb_overrides *o)
{
	int v;

	for (rb_cap_key k = 0; k < RB_CAP_KEYS; k++)
		if (rb_cap_get(o, k, &v))
			*rb_cap_limit(out, k) = v;
}

/* The job's value v of key within the cap rules (caps.h): 1 if it was
 * clamped to *out, said in warn. */
static int clamp_value(const rb_config *cfg, rb_cap_key key, int v, int *out,
		       char *warn, size_t warnlen)
{
	const rb_cap_rule *r = rb_cap_rule_of(key);
	rb_cap_judgement j = rb_cap_judge(cfg, key, v);

	*out = j.fit;
	if (j.verdict == RB_CAP_FITS)
		return 0;
	if (j.verdict == RB_CAP_UNLIMITED_REFUSED)
		append_line(warn, warnlen,
			    "--%s=unlimited exceeds the cap limits.%s = %d set in %s (limits.allow_unlimited is false): using %d",
			    r->option, r->config_key, j.cap, cfg->path, j.fit);
	else if (r->capped && rb_cap_over(j.verdict))
		append_line(warn, warnlen,
			    "--%s=%d exceeds the cap limits.%s = %d set in %s: using %d",
			    r->option, v, r->config_key, j.cap, cfg->path, j.fit);
	else if (r->one_when_grouped)
		append_line(warn, warnlen,
			    "--%s=%d is below the minimum %d with restore_accounting = \"%s\" set in %s: using %d",
			    r->option, v, j.min,
			    rb_accounting_name(cfg->accounting), cfg->path, j.fit);
	else if (r->capped)
		append_line(warn, warnlen, "--%s=%d is below %d: using %d",
			    r->option, v, j.min, j.fit);
	else
		append_line(warn, warnlen,
			    "--%s=%d is out of range %d..%d: using %d", r->option,
			    v, j.min, j.cap, j.fit);
	return 1;
}

int rb_config_resolve(const rb_config *cfg, const char *partition,
		      const char *account, const rb_overrides *job,
		      rb_limits *out, char *warn, size_t warnlen)
{
	const rb_named_overrides *p, *a;
	int clamped = 0, v;

	if (warn && warnlen)
		warn[0] = '\0';
	*out = (rb_limits){
		.max_failures = cfg->max_failures,
		.restore_retry_num = cfg->restore_retry_num,
		.restore_timeout = cfg->restore_timeout,
		.accounting = cfg->accounting,
		.count_preemptions = cfg->count_preemptions,
		.max_interruptions = cfg->max_interruptions,
	};
	if ((p = find_named(cfg, partition, false)))
		apply(out, &p->values);
	if ((a = find_named(cfg, account, true)))
		apply(out, &a->values);
	if (!job)
		return 0;
	for (rb_cap_key k = 0; k < RB_CAP_KEYS; k++)
		if (rb_cap_get(job, k, &v))
			clamped += clamp_value(cfg, k, v, rb_cap_limit(out, k),
					       warn, warnlen);
	return clamped;
}

/* (config.h) The account's list replaces the partition's, which replaces
 * the default; the first rule naming code wins (docs/rule.md, "Exit-code
 * rules"). */
rb_exit_rule rb_config_exit_rule(const rb_config *cfg, const char *partition,
				 const char *account, int code)
{
	const rb_named_overrides *p = find_named(cfg, partition, false);
	const rb_named_overrides *a = find_named(cfg, account, true);
	const rb_exit_rules *list = &cfg->exit_rules;

	if (a && a->exit_rules.set)
		list = &a->exit_rules;
	else if (p && p->exit_rules.set)
		list = &p->exit_rules;
	for (size_t i = 0; code >= 0 && code <= RB_EXIT_CODE_MAX && i < list->n; i++)
		if (list->rules[i].codes[code / 8] & (1u << (code % 8)))
			return list->rules[i].action;
	return RB_EXIT_RULE_NONE;
}

/* ---- job options -------------------------------------------------------- */

/* Strict decimal, at most max: digits only (no sign, space or base).
 * NULL, or what is wrong with s. */
static const char *parse_decimal(const char *s, long long max, int *out)
{
	const char *p = s && *s == '-' ? s + 1 : s;
	long long v = 0;

	if (!s || !*s)
		return "empty value";
	if (!*p || p[strspn(p, "0123456789")])
		return "not a number";
	if (p != s)
		return "out of range";
	for (; *p; p++)
		if ((v = v * 10 + (*p - '0')) > max)
			return "out of range";
	*out = (int)v;
	return NULL;
}

int rb_options_parse(rb_overrides *job, const char *name, const char *value,
		     rb_err *err)
{
	char shown[80], nm[80];
	const char *problem;
	const rb_cap_rule *r;
	rb_cap_key key;
	int v = 0;

	rb_config_quote(value ? value : "", shown, sizeof(shown));
	rb_config_quote(name ? name : "", nm, sizeof(nm));
	if (!job)
		return rb_err_set(err, "--%s=%s: internal error: nowhere to store it",
				  nm, shown);
	for (key = 0; key < RB_CAP_KEYS; key++)
		if (name && strcmp(name, rb_cap_rule_of(key)->option) == 0)
			break;
	if (key == RB_CAP_KEYS)
		return rb_err_set(err,
				  "--%s=%s: unknown option (known: --max-failures, --restore-retries, --restore-timeout)",
				  nm, shown);
	r = rb_cap_rule_of(key);
	if (r->unlimited && value &&
	    (strcmp(value, "unlimited") == 0 || strcmp(value, "-1") == 0)) {
		rb_cap_set(job, key, RB_UNLIMITED);
		return 0;
	}
	if ((problem = parse_decimal(value, r->bound, &v)))
		return rb_err_set(err, "--%s=%s: %s (expected %s%d%s)", nm, shown,
				  problem, r->unit[0] ? "a number of seconds 0.." :
				  "an integer 0..", r->bound,
				  r->unlimited ? " or \"unlimited\"" : "");
	rb_cap_set(job, key, v);
	return 0;
}

/* -1 with a refusal when the job's value v of key breaks a cap rule. */
static int refuse_value(const rb_config *cfg, rb_cap_key key, int v,
			rb_err *err)
{
	const rb_cap_rule *r = rb_cap_rule_of(key);
	rb_cap_judgement j = rb_cap_judge(cfg, key, v);

	if (j.verdict == RB_CAP_FITS)
		return 0;
	if (j.verdict == RB_CAP_UNLIMITED_REFUSED)
		return rb_err_set(err,
				  "--%s=unlimited exceeds the cap limits.%s = %d set in %s: limits.allow_unlimited is false (ask your admin, or request at most %d)",
				  r->option, r->config_key, j.cap, cfg->path, j.cap);
	if (r->capped && rb_cap_over(j.verdict))
		return rb_err_set(err,
				  "--%s=%d exceeds the cap limits.%s = %d set in %s (ask your admin, or request at most %d)",
				  r->option, v, r->config_key, j.cap, cfg->path,
				  j.cap);
	if (r->one_when_grouped)
		return rb_err_set(err,
				  "--%s=%d is below the minimum %d with restore_accounting = \"%s\" set in %s (request at least %d)",
				  r->option, v, j.min,
				  rb_accounting_name(cfg->accounting), cfg->path,
				  j.min);
	return rb_err_set(err, "--%s=%d is out of range (request %d..%d%s)",
			  r->option, v, j.min, j.cap, r->unit);
}

int rb_config_check_caps(const rb_config *cfg, const rb_overrides *job,
			 rb_err *err)
{
	int v;

	if (!job)
		return 0;
	for (rb_cap_key k = 0; k < RB_CAP_KEYS; k++)
		if (rb_cap_get(job, k, &v) && refuse_value(cfg, k, v, err) < 0)
			return -1;
	return 0;
}

/* ---- the requeue code (config.h) ----------------------------------------- */

int rb_requeue_exit_of(const rb_config *cfg, const rb_requeue_exit *slurm)
{
	if (cfg->requeue_exit > 0)
		return cfg->requeue_exit;
	if (slurm && slurm->set && slurm->first > 0)
		return slurm->first;
	return 0;
}

int rb_requeue_exit_warning(const rb_config *cfg, const rb_requeue_exit *slurm,
			    const char *slurm_path, char *buf, size_t len)
{
	int code = cfg->requeue_exit;

	buf[0] = '\0';
	if (code <= 0 || !slurm || rb_requeue_exit_has(slurm, code))
		return 0;
	if (!slurm->set)
		snprintf(buf, len,
			 "warning: requeue_exit = %d in %s, but %s sets no RequeueExit: Slurm will not requeue a job that exits %d after a failed restore (add RequeueExit=%d to %s and run scontrol reconfigure, or remove requeue_exit)",
			 code, cfg->path, slurm_path, code, code, slurm_path);
	else
		snprintf(buf, len,
			 "warning: requeue_exit = %d in %s is not in RequeueExit=%s of %s: Slurm will not requeue a job that exits %d after a failed restore (set requeue_exit to one of %s, or add %d to RequeueExit and run scontrol reconfigure)",
			 code, cfg->path, slurm->text, slurm_path, code,
			 slurm->text, code);
	return 1;
}
