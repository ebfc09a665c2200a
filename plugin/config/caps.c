/*
 * caps.c - the cap rules of the bounded keys, in one table (caps.h;
 * docs/rule.md, "Limits").
 */
#include "caps.h"

static const rb_cap_rule rules[] = {
	[RB_CAP_MAX_FAILURES] = {
		.config_key = "max_failures", .option = "max-failures",
		.bound = RB_MAX_FAILURES_MAX, .capped = true, .cap_min = 0,
		.unlimited = true, .one_when_grouped = false, .unit = "",
	},
	[RB_CAP_RESTORE_RETRIES] = {
		.config_key = "restore_retry_num", .option = "restore-retries",
		.bound = RB_RESTORE_RETRY_MAX, .capped = true, .cap_min = 1,
		.unlimited = false, .one_when_grouped = true, .unit = "",
	},
	[RB_CAP_RESTORE_TIMEOUT] = {
		.config_key = "restore_timeout", .option = "restore-timeout",
		.bound = RB_RESTORE_TIMEOUT_MAX, .capped = false, .cap_min = 0,
		.unlimited = false, .one_when_grouped = false,
		.unit = " seconds",
	},
	[RB_CAP_MAX_INTERRUPTIONS] = {
		.config_key = "max_interruptions",
		.option = "max-interruptions",
		.bound = RB_MAX_INTERRUPTIONS_MAX, .capped = true, .cap_min = 0,
		.unlimited = true, .unlimited_uncapped = true,
		.one_when_grouped = false, .unit = "",
	},
};

/* (caps.h) */
const rb_cap_rule *rb_cap_rule_of(rb_cap_key key)
{
	return &rules[key];
}

/* The `limits` cap of key (the bound when it has none). */
static int cap_of(const rb_config *cfg, rb_cap_key key)
{
	switch (key) {
	case RB_CAP_MAX_FAILURES:
		return cfg->caps.max_failures;
	case RB_CAP_RESTORE_RETRIES:
		return cfg->caps.restore_retry_num;
	case RB_CAP_MAX_INTERRUPTIONS:
		if (cfg->caps.max_interruptions >= 0)
			return cfg->caps.max_interruptions;
		return rules[key].bound;
	default:
		return rules[key].bound;
	}
}

/* Is -1 (unlimited) allowed for key: with limits.allow_unlimited, or for
 * max_interruptions (unlimited by default) while no cap is set. */
static bool unlimited_allowed(const rb_config *cfg, rb_cap_key key)
{
	if (cfg->caps.allow_unlimited)
		return true;
	return rules[key].unlimited_uncapped && cfg->caps.max_interruptions < 0;
}

/* (caps.h) */
rb_cap_judgement rb_cap_judge(const rb_config *cfg, rb_cap_key key,
			      long long v)
{
	const rb_cap_rule *r = &rules[key];
	rb_cap_judgement j = { .verdict = RB_CAP_FITS };
	bool grouped = cfg->accounting == RB_ACCOUNTING_GROUPED;

	j.min = r->one_when_grouped && grouped ? 1 : 0;
	j.cap = r->capped ? cap_of(cfg, key) : r->bound;
	if (r->unlimited && v == RB_UNLIMITED) {
		if (!unlimited_allowed(cfg, key))
			j.verdict = RB_CAP_UNLIMITED_REFUSED;
	} else if (v < j.min) {
		j.verdict = RB_CAP_BELOW_MIN;
	} else if (v > r->bound) {
		j.verdict = RB_CAP_OVER_BOUND;
	} else if (v > j.cap) {
		j.verdict = RB_CAP_OVER_CAP;
	}
	if (j.verdict == RB_CAP_FITS)
		j.fit = (int)v;
	else
		j.fit = j.verdict == RB_CAP_BELOW_MIN ? j.min : j.cap;
	return j;
}

/* (caps.h) */
bool rb_cap_get(const rb_overrides *o, rb_cap_key key, int *v)
{
	switch (key) {
	case RB_CAP_MAX_FAILURES:
		*v = o->max_failures;
		return o->has_max_failures;
	case RB_CAP_RESTORE_RETRIES:
		*v = o->restore_retry_num;
		return o->has_restore_retry_num;
	case RB_CAP_MAX_INTERRUPTIONS:
		*v = o->max_interruptions;
		return o->has_max_interruptions;
	default:
		*v = o->restore_timeout;
		return o->has_restore_timeout;
	}
}

/* (caps.h) */
void rb_cap_set(rb_overrides *o, rb_cap_key key, int v)
{
	switch (key) {
	case RB_CAP_MAX_FAILURES:
		o->has_max_failures = true;
		o->max_failures = v;
		break;
	case RB_CAP_RESTORE_RETRIES:
		o->has_restore_retry_num = true;
		o->restore_retry_num = v;
		break;
	case RB_CAP_MAX_INTERRUPTIONS:
		o->has_max_interruptions = true;
		o->max_interruptions = v;
		break;
	default:
		o->has_restore_timeout = true;
		o->restore_timeout = v;
		break;
	}
}

/* (caps.h) */
int *rb_cap_limit(rb_limits *l, rb_cap_key key)
{
	switch (key) {
	case RB_CAP_MAX_FAILURES:
		return &l->max_failures;
	case RB_CAP_RESTORE_RETRIES:
		return &l->restore_retry_num;
	case RB_CAP_MAX_INTERRUPTIONS:
		return &l->max_interruptions;
	default:
		return &l->restore_timeout;
	}
}
