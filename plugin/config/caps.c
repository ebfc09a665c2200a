/*
 * caps.c - the cap rules of the bounded keys, in one table (caps.h;
 * docs/rule.md, "Limits").
 */
#include "caps.h"

#define AT(field) .value_at = offsetof(rb_overrides, field), \
	.has_at = offsetof(rb_overrides, has_##field), \
	.limit_at = offsetof(rb_limits, field)

static const rb_cap_rule rules[] = {
	[RB_CAP_MAX_FAILURES] = {
		.config_key = "max_failures", .option = "max-failures",
		.bound = RB_MAX_FAILURES_MAX, .capped = true, .cap_min = 0,
		.unlimited = true, .unit = "",
		.cap_at = offsetof(rb_config, caps.max_failures), AT(max_failures),
	},
	[RB_CAP_RESTORE_RETRIES] = {
		.config_key = "restore_retry_num", .option = "restore-retries",
		.bound = RB_RESTORE_RETRY_MAX, .capped = true, .cap_min = 1,
		.one_when_grouped = true, .unit = "",
		.cap_at = offsetof(rb_config, caps.restore_retry_num),
		AT(restore_retry_num),
	},
	[RB_CAP_RESTORE_TIMEOUT] = {
		.config_key = "restore_timeout", .option = "restore-timeout",
		.bound = RB_RESTORE_TIMEOUT_MAX, .unit = " seconds",
		AT(restore_timeout),
	},
	[RB_CAP_MAX_INTERRUPTIONS] = {
		.config_key = "max_interruptions",
		.option = "max-interruptions",
		.bound = RB_MAX_INTERRUPTIONS_MAX, .capped = true, .cap_min = 0,
		.unlimited = true, .unlimited_uncapped = true, .unit = "",
		.cap_at = offsetof(rb_config, caps.max_interruptions),
		AT(max_interruptions),
	},
};

/* (caps.h) */
const rb_cap_rule *rb_cap_rule_of(rb_cap_key key)
{
	return &rules[key];
}

/* (caps.h) */
rb_cap_judgement rb_cap_judge(const rb_config *cfg, rb_cap_key key,
			      long long v)
{
	const rb_cap_rule *r = &rules[key];
	rb_cap_judgement j = { .verdict = RB_CAP_FITS };
	/* max_interruptions has no cap while it is -1 (not set) */
	int cap = r->capped ? *(const int *)((const char *)cfg + r->cap_at) : -1;
	/* -1 (unlimited) is allowed with limits.allow_unlimited, or for
	 * max_interruptions (unlimited by default) while no cap is set */
	bool unlimited_ok = cfg->caps.allow_unlimited ||
			    (r->unlimited_uncapped && cap < 0);

	j.min = r->one_when_grouped &&
		cfg->accounting == RB_ACCOUNTING_GROUPED ? 1 : 0;
	j.cap = cap >= 0 ? cap : r->bound;
	if (r->unlimited && v == RB_UNLIMITED) {
		if (!unlimited_ok)
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
	*v = *(const int *)((const char *)o + rules[key].value_at);
	return *(const bool *)((const char *)o + rules[key].has_at);
}

/* (caps.h) */
void rb_cap_set(rb_overrides *o, rb_cap_key key, int v)
{
	*(int *)((char *)o + rules[key].value_at) = v;
	*(bool *)((char *)o + rules[key].has_at) = true;
}

/* (caps.h) */
int *rb_cap_limit(rb_limits *l, rb_cap_key key)
{
	return (int *)((char *)l + rules[key].limit_at);
}
