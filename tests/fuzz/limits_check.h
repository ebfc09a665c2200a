/*
 * limits_check.h - what every resolved rb_limits must satisfy, whatever the
 * config file and the job asked for (docs/rule.md, "Limits": job values are
 * clamped to the caps; config values are validated against them).
 */
#ifndef RB_FUZZ_LIMITS_CHECK_H
#define RB_FUZZ_LIMITS_CHECK_H

#include "config.h"
#include "fuzz.h"

static inline void check_resolved(const rb_config *cfg, const rb_limits *l,
				  const char *what)
{
	int rmin = cfg->accounting == RB_ACCOUNTING_GROUPED ? 1 : 0;

	FUZZ_CHECK(l->max_failures >= -1 &&
		   l->max_failures <= cfg->caps.max_failures,
		   "%s: max_failures %d outside -1..cap %d", what,
		   l->max_failures, cfg->caps.max_failures);
	FUZZ_CHECK(l->max_failures != RB_UNLIMITED || cfg->caps.allow_unlimited,
		   "%s: unlimited without limits.allow_unlimited", what);
	FUZZ_CHECK(l->restore_retry_num >= rmin &&
		   l->restore_retry_num <= cfg->caps.restore_retry_num,
		   "%s: restore_retry_num %d outside %d..cap %d", what,
		   l->restore_retry_num, rmin, cfg->caps.restore_retry_num);
	FUZZ_CHECK(l->restore_timeout >= 0 &&
		   l->restore_timeout <= RB_RESTORE_TIMEOUT_MAX,
		   "%s: restore_timeout %d out of range", what,
		   l->restore_timeout);
	FUZZ_CHECK(l->accounting == cfg->accounting &&
		   l->count_preemptions == cfg->count_preemptions,
		   "%s: accounting/count_preemptions not the config's", what);
}

/* No control byte may reach a terminal or a log through a message. */
static inline void check_printable(const char *msg, const char *what)
{
	const unsigned char *p;

	for (p = (const unsigned char *)msg; *p; p++)
		FUZZ_CHECK(*p >= 0x20 && *p != 0x7f,
			   "%s: control byte 0x%02x in message '%s'", what, *p,
			   msg);
}

#endif
