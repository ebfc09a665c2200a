/*
 * limits.c - a job's limits: the config's defaults, its partition's and
 * account's, the job's own options within the caps (docs/rule.md,
 * "Limits"). config.c reads the file; this applies it to one job.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static const rb_named_overrides *find_named(const rb_named_overrides *arr,
					    size_t n, const char *name,
					    bool ignore_case)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (ignore_case ? !strcasecmp(arr[i].name, name) :
				  !strcmp(arr[i].name, name))
			return &arr[i];
	return NULL;
}

static void apply(rb_limits *out, const rb_overrides *o)
{
	if (o->has_max_failures)
		out->max_failures = o->max_failures;
	if (o->has_restore_retry_num)
		out->restore_retry_num = o->restore_retry_num;
	if (o->has_restore_timeout)
		out->restore_timeout = o->restore_timeout;
}

static void format_mf(int v, char *buf, size_t len)
{
	if (v == RB_UNLIMITED)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%d", v);
}

/* The job's --max-failures within the caps; 1 if clamped (said in warn). */
static int clamp_max_failures(const rb_config *cfg, int v, int *out,
			      char *warn, size_t warnlen)
{
	int cap = cfg->caps.max_failures;
	char asked[32];

	*out = v;
	format_mf(v, asked, sizeof(asked));
	if (v == RB_UNLIMITED && !cfg->caps.allow_unlimited)
		append_line(warn, warnlen,
			    "--max-failures=%s exceeds the cap limits.max_failures = %d set in %s (limits.allow_unlimited is false): using %d",
			    asked, cap, cfg->path, cap);
	else if (v > cap)
		append_line(warn, warnlen,
			    "--max-failures=%s exceeds the cap limits.max_failures = %d set in %s: using %d",
			    asked, cap, cfg->path, cap);
	else if (v < RB_UNLIMITED)
		append_line(warn, warnlen,
			    "--max-failures=%s is below 0: using 0", asked);
	else
		return 0;
	*out = v < RB_UNLIMITED ? 0 : cap;
	return 1;
}

/* The job's --restore-retries within the cap and the accounting's
 * minimum; 1 if clamped. */
static int clamp_retries(const rb_config *cfg, int v, int *out, char *warn,
			 size_t warnlen)
{
	int cap = cfg->caps.restore_retry_num;
	int min = cfg->accounting == RB_ACCOUNTING_GROUPED ? 1 : 0;

	*out = v;
	if (v > cap) {
		append_line(warn, warnlen,
			    "--restore-retries=%d exceeds the cap limits.restore_retry_num = %d set in %s: using %d",
			    v, cap, cfg->path, cap);
		*out = cap;
	} else if (v < min) {
		append_line(warn, warnlen,
			    "--restore-retries=%d is below the minimum %d with restore_accounting = \"%s\" set in %s: using %d",
			    v, min, rb_accounting_name(cfg->accounting),
			    cfg->path, min);
		*out = min;
	}
	return *out != v;
}

/* The job's --restore-timeout within 0..RB_RESTORE_TIMEOUT_MAX. */
static int clamp_timeout(int v, int *out, char *warn, size_t warnlen)
{
	*out = v;
	if (v >= 0 && v <= RB_RESTORE_TIMEOUT_MAX)
		return 0;
	*out = v < 0 ? 0 : RB_RESTORE_TIMEOUT_MAX;
	append_line(warn, warnlen,
		    "--restore-timeout=%d is out of range 0..%d: using %d", v,
		    RB_RESTORE_TIMEOUT_MAX, *out);
	return 1;
}

int rb_config_resolve(const rb_config *cfg, const char *partition,
		      const char *account, const rb_overrides *job,
		      rb_limits *out, char *warn, size_t warnlen)
{
	const rb_named_overrides *p, *a;
	int clamped = 0;

	if (warn && warnlen)
		warn[0] = '\0';
	memset(out, 0, sizeof(*out));
	out->max_failures = cfg->max_failures;
	out->restore_retry_num = cfg->restore_retry_num;
	out->restore_timeout = cfg->restore_timeout;
	out->accounting = cfg->accounting;
	out->count_preemptions = cfg->count_preemptions;
	if ((p = find_named(cfg->partitions, cfg->n_partitions, partition,
			    false)))
		apply(out, &p->values);
	if ((a = find_named(cfg->accounts, cfg->n_accounts, account, true)))
		apply(out, &a->values);
	if (!job)
		return 0;
	if (job->has_max_failures)
		clamped += clamp_max_failures(cfg, job->max_failures,
					      &out->max_failures, warn, warnlen);
	if (job->has_restore_retry_num)
		clamped += clamp_retries(cfg, job->restore_retry_num,
					 &out->restore_retry_num, warn, warnlen);
	if (job->has_restore_timeout)
		clamped += clamp_timeout(job->restore_timeout,
					 &out->restore_timeout, warn, warnlen);
	return clamped;
}

/* ---- job options -------------------------------------------------------- */

typedef enum { NUM_OK = 0, NUM_EMPTY, NUM_GARBAGE, NUM_RANGE } num_status;

/* Strict decimal: digits only; a '-' followed by digits is out of range. */
static num_status parse_decimal(const char *s, long long max, int *out)
{
	const char *p = s;
	bool negative = false;
	long long v = 0;

	if (!s || !*s)
		return NUM_EMPTY;
	if (*p == '-') {
		negative = true;
		p++;
	}
	if (!*p)
		return NUM_GARBAGE;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return NUM_GARBAGE;
	if (negative)
		return NUM_RANGE;
	for (; *p; p++) {
		v = v * 10 + (*p - '0');
		if (v > max)
			return NUM_RANGE;
	}
	*out = (int)v;
	return NUM_OK;
}

/* The job options rb_options_parse() knows. */
typedef enum { OPT_MAX_FAILURES, OPT_RESTORE_RETRIES, OPT_RESTORE_TIMEOUT } opt_id;

static const struct {
	const char *name;
	opt_id id;
	int max;
} job_options[] = {
	{ "max-failures", OPT_MAX_FAILURES, RB_MAX_FAILURES_MAX },
	{ "restore-retries", OPT_RESTORE_RETRIES, RB_RESTORE_RETRY_MAX },
	{ "restore-timeout", OPT_RESTORE_TIMEOUT, RB_RESTORE_TIMEOUT_MAX },
};

/* What an option accepts, for its error messages. */
static void option_expected(opt_id id, char *buf, size_t len)
{
	switch (id) {
	case OPT_MAX_FAILURES:
		snprintf(buf, len, "an integer 0..%d or \"unlimited\"",
			 RB_MAX_FAILURES_MAX);
		break;
	case OPT_RESTORE_RETRIES:
		snprintf(buf, len, "an integer 0..%d", RB_RESTORE_RETRY_MAX);
		break;
	case OPT_RESTORE_TIMEOUT:
		snprintf(buf, len, "a number of seconds 0..%d",
			 RB_RESTORE_TIMEOUT_MAX);
		break;
	}
}

int rb_options_parse(rb_overrides *job, const char *name, const char *value,
		     rb_err *err)
{
	char shown[80], nm[80], expected[96];
	const char *why;
	size_t i, n = sizeof(job_options) / sizeof(job_options[0]);
	int v = 0;

	rb_config_quote(value ? value : "", shown, sizeof(shown));
	rb_config_quote(name ? name : "", nm, sizeof(nm));
	if (!job)
		return rb_err_set(err, "--%s=%s: internal error: nowhere to store it",
				  nm, shown);
	for (i = 0; i < n; i++)
		if (name && strcmp(name, job_options[i].name) == 0)
			break;
	if (i == n)
		return rb_err_set(err,
				  "--%s=%s: unknown option (known: --max-failures, --restore-retries, --restore-timeout)",
				  nm, shown);
	option_expected(job_options[i].id, expected, sizeof(expected));

	if (job_options[i].id == OPT_MAX_FAILURES && value &&
	    (strcmp(value, "unlimited") == 0 || strcmp(value, "-1") == 0)) {
		job->has_max_failures = true;
		job->max_failures = RB_UNLIMITED;
		return 0;
	}
	switch (parse_decimal(value, job_options[i].max, &v)) {
	case NUM_OK:
		break;
	case NUM_EMPTY:
		why = "empty value";
		goto fail;
	case NUM_GARBAGE:
		why = "not a number";
		goto fail;
	default:
		why = "out of range";
		goto fail;
	}
	switch (job_options[i].id) {
	case OPT_MAX_FAILURES:
		job->has_max_failures = true;
		job->max_failures = v;
		break;
	case OPT_RESTORE_RETRIES:
		job->has_restore_retry_num = true;
		job->restore_retry_num = v;
		break;
	case OPT_RESTORE_TIMEOUT:
		job->has_restore_timeout = true;
		job->restore_timeout = v;
		break;
	}
	return 0;

fail:
	return rb_err_set(err, "--%s=%s: %s (expected %s)", nm, shown, why,
			  expected);
}

int rb_config_check_caps(const rb_config *cfg, const rb_overrides *job,
			 rb_err *err)
{
	if (!job)
		return 0;
	if (job->has_max_failures) {
		int v = job->max_failures, cap = cfg->caps.max_failures;

		if (v == RB_UNLIMITED && !cfg->caps.allow_unlimited)
			return rb_err_set(err,
					  "--max-failures=unlimited exceeds the cap limits.max_failures = %d set in %s: limits.allow_unlimited is false (ask your admin, or request at most %d)",
					  cap, cfg->path, cap);
		if (v > cap)
			return rb_err_set(err,
					  "--max-failures=%d exceeds the cap limits.max_failures = %d set in %s (ask your admin, or request at most %d)",
					  v, cap, cfg->path, cap);
		if (v < RB_UNLIMITED)
			return rb_err_set(err,
					  "--max-failures=%d is out of range (request 0..%d)",
					  v, cap);
	}
	if (job->has_restore_retry_num) {
		int v = job->restore_retry_num, cap = cfg->caps.restore_retry_num;
		int min = cfg->accounting == RB_ACCOUNTING_GROUPED ? 1 : 0;

		if (v > cap)
			return rb_err_set(err,
					  "--restore-retries=%d exceeds the cap limits.restore_retry_num = %d set in %s (ask your admin, or request at most %d)",
					  v, cap, cfg->path, cap);
		if (v < min)
			return rb_err_set(err,
					  "--restore-retries=%d is below the minimum %d with restore_accounting = \"%s\" set in %s (request at least %d)",
					  v, min, rb_accounting_name(cfg->accounting),
					  cfg->path, min);
	}
	if (job->has_restore_timeout &&
	    (job->restore_timeout < 0 ||
	     job->restore_timeout > RB_RESTORE_TIMEOUT_MAX))
		return rb_err_set(err,
				  "--restore-timeout=%d is out of range (request 0..%d seconds)",
				  job->restore_timeout, RB_RESTORE_TIMEOUT_MAX);
	return 0;
}
