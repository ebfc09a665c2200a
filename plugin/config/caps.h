/*
 * caps.h - the one statement of the cap rules (docs/rule.md, "Limits").
 *
 * Three places judge a bounded value: validating the config file
 * (config.c), clamping a job's requested limits at run time and refusing
 * them at sbatch (limits.c). Each words its own message (a config error, a
 * warning, a refusal), but all ask rb_cap_judge, so one value gets the same
 * verdict at all three.
 */
#ifndef RB_CAPS_H
#define RB_CAPS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* The bounded keys, in the order of rb_overrides. */
typedef enum {
	RB_CAP_MAX_FAILURES = 0,   /* M */
	RB_CAP_RESTORE_RETRIES,    /* R */
	RB_CAP_RESTORE_TIMEOUT,    /* seconds */
	RB_CAP_MAX_INTERRUPTIONS,  /* docs/rule.md, "Interruption cap" */
	RB_CAP_KEYS                /* how many there are */
} rb_cap_key;

/* The rules of one key. */
typedef struct {
	const char *config_key;    /* "max_failures", as in the file */
	const char *option;        /* "max-failures", the job option */
	int bound;                 /* highest value ever accepted */
	bool capped;               /* also bounded by its `limits` cap */
	int cap_min;               /* the lowest cap `limits` accepts */
	bool unlimited;            /* -1 allowed with limits.allow_unlimited */
	bool unlimited_uncapped;   /* ... and while its `limits` cap is unset */
	bool one_when_grouped;     /* at least 1 with restore_accounting "grouped" */
	const char *unit;          /* after its range in messages: " seconds" */
	size_t cap_at;             /* its cap in rb_config (capped only) */
	size_t value_at, has_at;   /* its value and flag in rb_overrides */
	size_t limit_at;           /* its value in rb_limits */
} rb_cap_rule;

typedef enum {
	RB_CAP_FITS = 0,
	RB_CAP_UNLIMITED_REFUSED,  /* -1 while limits.allow_unlimited is false */
	RB_CAP_BELOW_MIN,          /* below min (R: 1 when grouped, else 0) */
	RB_CAP_OVER_BOUND,         /* above the rule's bound */
	RB_CAP_OVER_CAP,           /* within the bound, above the cap */
} rb_cap_verdict;

typedef struct {
	rb_cap_verdict verdict;
	int min;                   /* the lowest value allowed */
	int cap;                   /* the highest: the cap, else the bound */
	int fit;                   /* the value to use: v if it fits, else the
				    * nearest allowed (cap for -1 refused) */
} rb_cap_judgement;

/* The rules of key. */
const rb_cap_rule *rb_cap_rule_of(rb_cap_key key);

/* Judge value v of key against cfg's caps and accounting. */
rb_cap_judgement rb_cap_judge(const rb_config *cfg, rb_cap_key key,
			      long long v);

/* The value of key in o: false when o does not set it. */
bool rb_cap_get(const rb_overrides *o, rb_cap_key key, int *v);
/* Set key in o to v. */
void rb_cap_set(rb_overrides *o, rb_cap_key key, int v);
/* Where rb_limits holds key. */
int *rb_cap_limit(rb_limits *l, rb_cap_key key);

/* Over the bound or the cap: what a job is told "exceeds the cap". */
static inline bool rb_cap_over(rb_cap_verdict v)
{
	return v == RB_CAP_OVER_BOUND || v == RB_CAP_OVER_CAP;
}

#endif
