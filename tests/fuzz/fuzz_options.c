/*
 * fuzz_options.c - libFuzzer target for the per-job sbatch option values
 * (rb_options_parse, config.c): untrusted input typed by any user.
 *
 * Input: byte 0 picks the option name (the three real ones, or a wrong
 * one), the rest is the value (cut at the first NUL, as argv would be).
 *
 * Properties:
 *   - accepted: the value is "unlimited", "-1" (max-failures only) or plain
 *     decimal digits whose value is the one stored and within the option's
 *     range; parsing it again into the same struct gives the same result
 *     (Slurm may call the option callback twice);
 *   - refused: the message names the option and holds no control byte
 *     (it is printed by sbatch on the user's terminal);
 *   - rb_config_check_caps (sbatch) accepting the job implies
 *     rb_config_resolve (the batch step) clamps nothing; resolved limits are always
 *     within the caps, for a grouped and a ray config, with and without
 *     allow_unlimited.
 */
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "limits_check.h"

static const char *const names[] = {
	"max-failures", "restore-retries", "restore-timeout",
	"max_failures", "", "checkpoint-dir",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static rb_config *cfgs[3];

static void setup(void)
{
	int i;

	for (i = 0; i < 3; i++)
		cfgs[i] = rb_config_defaults();
	cfgs[1]->accounting = RB_ACCOUNTING_RAY;
	cfgs[1]->caps.allow_unlimited = true;
	cfgs[1]->caps.max_failures = 1000000;
	cfgs[1]->caps.restore_retry_num = 1000000;
	cfgs[2]->caps.max_failures = 0;
	cfgs[2]->caps.restore_retry_num = 1;
	cfgs[2]->max_failures = 0;
	cfgs[2]->restore_retry_num = 1;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static long long decimal(const char *s)
{
	long long v = 0;

	for (; *s && v <= 100000000LL; s++)
		v = v * 10 + (*s - '0');
	return v;
}

static void check_accepted(const char *name, const char *value,
			   const rb_overrides *o)
{
	int v;
	long long want, max;

	if (!strcmp(name, "max-failures")) {
		FUZZ_CHECK(o->has_max_failures, "not stored");
		v = o->max_failures;
		max = RB_MAX_FAILURES_MAX;
		if (!strcmp(value, "unlimited") || !strcmp(value, "-1")) {
			FUZZ_CHECK(v == RB_UNLIMITED, "unlimited stored as %d", v);
			return;
		}
	} else if (!strcmp(name, "restore-retries")) {
		FUZZ_CHECK(o->has_restore_retry_num, "not stored");
		v = o->restore_retry_num;
		max = RB_RESTORE_RETRY_MAX;
	} else {
		FUZZ_CHECK(!strcmp(name, "restore-timeout"),
			   "unknown option '%s' accepted", name);
		FUZZ_CHECK(o->has_restore_timeout, "not stored");
		v = o->restore_timeout;
		max = RB_RESTORE_TIMEOUT_MAX;
	}
	FUZZ_CHECK(all_digits(value), "--%s=%s accepted: not plain digits",
		   name, value);
	want = decimal(value);
	FUZZ_CHECK(want <= max && v == want, "--%s=%s stored as %d", name,
		   value, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rb_overrides o, again;
	rb_limits l;
	rb_err err;
	char warn[RB_ERR_MAX];
	char *value;
	const char *name;
	int rc, i;

	fuzz_quiet();
	if (!cfgs[0])
		setup();
	if (size < 1)
		return 0;
	name = names[data[0] % N_NAMES];
	value = malloc(size);
	memcpy(value, data + 1, size - 1);
	value[size - 1] = '\0';

	memset(&o, 0, sizeof(o));
	memset(&err, 0, sizeof(err));
	rc = rb_options_parse(&o, name, value, &err);
	if (rc < 0) {
		char want[32];

		FUZZ_CHECK(fuzz_err_ok(&err), "refused without a message");
		snprintf(want, sizeof(want), "--%s", name);
		FUZZ_CHECK(strncmp(err.msg, want, strlen(want)) == 0,
			   "message does not name the option: '%s'", err.msg);
		check_printable(err.msg, "option error");
		FUZZ_CHECK(!o.has_max_failures && !o.has_restore_retry_num &&
			   !o.has_restore_timeout, "refused value was stored");
	} else {
		check_accepted(name, value, &o);
		again = o;
		FUZZ_CHECK(rb_options_parse(&again, name, value, &err) == 0 &&
			   !memcmp(&again, &o, sizeof(o)),
			   "parsing twice differs");
	}

	for (i = 0; i < 3; i++) {
		int caps_ok = rb_config_check_caps(cfgs[i], &o, &err) == 0;
		int clamped = rb_config_resolve(cfgs[i], "p", "a", &o, &l,
						warn, sizeof(warn));

		check_resolved(cfgs[i], &l, "job options");
		check_printable(warn, "clamp warning");
		FUZZ_CHECK(!caps_ok || clamped == 0,
			   "sbatch accepted --%s=%s but the prolog clamps it: %s",
			   name, value, warn);
		FUZZ_CHECK(caps_ok || clamped > 0,
			   "sbatch refused --%s=%s (%s) but the prolog would "
			   "use it as is", name, value, err.msg);
	}
	free(value);
	return 0;
}
