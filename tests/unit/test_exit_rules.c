/*
 * test_exit_rules.c - exit-code rules and the interruption cap (docs/rule.md,
 * "Exit-code rules", "Interruption cap"), each test named after its rule:
 * the engine's charge, the config's lists and caps, the ledger's events and
 * the job's words.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "engine.h"
#include "ledger.h"
#include "lifecycle.h"
#include "step.h"

#define CKPT "/home/u/ckpt/checkpoint-7"
#define CLUSTER "testc"

/* ---- the engine ---------------------------------------------------------- */

static rb_limits lim(int m, int r, int max_interruptions)
{
	rb_limits l = {
		.max_failures = m, .restore_retry_num = r, .restore_timeout = 0,
		.accounting = RB_ACCOUNTING_GROUPED,
		.max_interruptions = max_interruptions,
	};
	return l;
}

/* Attempt n starts (the previous end matched `rule`) and reports its phase:
 * RESTORING from CKPT when ckpt, else FRESH. */
static rb_decision run(rb_budget *b, int64_t n, const rb_limits *l,
		       rb_exit_rule rule, bool ckpt, rb_charge *c,
		       char *reason)
{
	rb_decision d = rb_engine_start_ruled(b, n, l, rule, 1000 + n * 100, c,
					      reason, reason ? RB_REASON_MAX : 0);

	rb_engine_set_phase(b, n, ckpt ? RB_PHASE_RESTORING : RB_PHASE_FRESH,
			    ckpt ? CKPT : "");
	return d;
}

/* A fresh budget whose attempt 0 (FRESH) ended FAILED with code, then
 * attempt 1 starting under rule, as run() does. */
static rb_decision failed_then(rb_budget *b, const rb_limits *l, int code,
			       rb_exit_rule rule, bool ckpt, rb_charge *c,
			       char *reason)
{
	rb_budget_init(b);
	run(b, 0, l, RB_EXIT_RULE_NONE, false, NULL, NULL);
	rb_engine_end(b, 0, RB_END_FAILED, code, 1050);
	return run(b, 1, l, rule, ckpt, c, reason);
}

static void test_exit_rule_fatal_exhausts_now(void **state)
{
	rb_budget b;
	rb_limits l = lim(5, 3, RB_UNLIMITED);
	rb_charge c;
	char reason[RB_REASON_MAX];

	(void)state;
	assert_int_equal(failed_then(&b, &l, 3, RB_EXIT_RULE_FATAL, false, &c, reason),
			 RB_DECISION_REFUSE);
	assert_int_equal(c.kind, RB_CHARGE_FATAL);
	assert_int_equal(c.rule, RB_EXIT_RULE_FATAL);
	assert_int_equal(b.fatal_code, 3);
	assert_int_equal(b.fatal_exits, 1);
	assert_int_equal(b.failures, 1);
	assert_true(b.exhausted);
	assert_int_equal(rb_engine_exhaustion(&b, &l), RB_SPENT_FATAL);
	assert_string_equal(reason,
			    "exit code 3 is fatal (exit_rules): budget exhausted");
}

static void test_exit_rule_fatal_exhausts_an_unlimited_budget(void **state)
{
	rb_budget b;
	rb_limits l = lim(RB_UNLIMITED, 3, RB_UNLIMITED);

	(void)state;
	assert_int_equal(failed_then(&b, &l, 4, RB_EXIT_RULE_FATAL, false, NULL, NULL),
			 RB_DECISION_REFUSE);
}

static void test_exit_rule_fatal_stays_until_lifted(void **state)
{
	rb_budget b;
	rb_limits l = lim(5, 3, RB_UNLIMITED);

	(void)state;
	failed_then(&b, &l, 3, RB_EXIT_RULE_FATAL, false, NULL, NULL);
	/* the refused attempt is requeued: still refused, charged nothing */
	assert_int_equal(run(&b, 2, &l, RB_EXIT_RULE_NONE, false, NULL, NULL),
			 RB_DECISION_REFUSE);
	assert_int_equal(b.failures, 1);
	/* what a grant does (rb_lifecycle_grant) */
	b.fatal_code = 0;
	assert_int_equal(run(&b, 3, &l, RB_EXIT_RULE_NONE, false, NULL, NULL),
			 RB_DECISION_RUN);
}

static void test_exit_rule_ignore_costs_nothing_in_any_phase(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, RB_UNLIMITED);
	rb_charge c;
	char reason[RB_REASON_MAX];

	(void)state;
	/* RUNNING (nothing to restore) */
	assert_int_equal(failed_then(&b, &l, 75, RB_EXIT_RULE_IGNORE, true, &c, reason),
			 RB_DECISION_RUN);
	assert_int_equal(c.kind, RB_CHARGE_IGNORED);
	assert_string_equal(reason,
			    "attempt 0 exit code 75 is ignored (exit_rules): nothing charged (failures 0, max_failures 1)");
	/* RESTORING, not confirmed */
	rb_engine_end(&b, 1, RB_END_FAILED, 75, 1150);
	run(&b, 2, &l, RB_EXIT_RULE_IGNORE, true, &c, NULL);
	assert_int_equal(c.kind, RB_CHARGE_IGNORED);
	assert_int_equal(c.phase, RB_PHASE_RESTORING);
	assert_int_equal(b.failures, 0);
	assert_int_equal(b.restore_failures, 0);
	assert_int_equal(b.failures_total, 0);
	assert_int_equal(b.restore_failures_total, 0);
	assert_int_equal(b.prev_end, RB_END_FAILED);
	assert_int_equal(b.prev_end_code, 75);
}

static void test_exit_rule_ignore_is_not_an_interruption(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, 0);

	(void)state;
	/* max_interruptions = 0 would refuse after one interruption */
	assert_int_equal(failed_then(&b, &l, 75, RB_EXIT_RULE_IGNORE, false,
				     NULL, NULL),
			 RB_DECISION_RUN);
	assert_int_equal(b.interruptions, 0);
}

static void test_exit_rule_restore_failure_counts_whatever_the_phase(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, RB_UNLIMITED);
	rb_charge c;

	(void)state;
	failed_then(&b, &l, 4, RB_EXIT_RULE_RESTORE_FAILURE, false, &c, NULL);
	assert_int_equal(c.phase, RB_PHASE_FRESH);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_FAILURE);
	assert_int_equal(b.restore_failures, 1);
	assert_int_equal(b.failures, 0);
}

static void test_exit_rule_failure_is_the_default(void **state)
{
	rb_budget a, b;
	rb_limits l = lim(1, 2, RB_UNLIMITED);
	rb_charge ca, cb;

	(void)state;
	rb_budget_init(&a);
	rb_budget_init(&b);
	for (int64_t n = 0; n < 3; n++) {
		run(&a, n, &l, RB_EXIT_RULE_FAILURE, n > 0, &ca, NULL);
		run(&b, n, &l, RB_EXIT_RULE_NONE, n > 0, &cb, NULL);
		assert_int_equal(ca.kind, cb.kind);
		rb_engine_end(&a, n, RB_END_FAILED, 9, 1050 + n * 100);
		rb_engine_end(&b, n, RB_END_FAILED, 9, 1050 + n * 100);
	}
	assert_int_equal(a.failures, b.failures);
	assert_int_equal(a.restore_failures, b.restore_failures);
}

static void test_exit_rule_applies_only_to_a_failed_end(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, RB_UNLIMITED);
	rb_charge c;

	(void)state;
	rb_budget_init(&b);
	run(&b, 0, &l, RB_EXIT_RULE_NONE, false, NULL, NULL);
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1050);
	assert_int_equal(run(&b, 1, &l, RB_EXIT_RULE_FATAL, false, &c, NULL),
			 RB_DECISION_RUN);
	assert_int_equal(c.rule, RB_EXIT_RULE_NONE);
	assert_int_equal(c.kind, RB_CHARGE_NONE);
	assert_int_equal(b.fatal_code, 0);
}

/* n interruptions (preemptions while running), then attempt n starts. */
static rb_decision interrupted_times(rb_budget *b, const rb_limits *l, int n,
				     char *reason)
{
	rb_budget_init(b);
	for (int64_t i = 0; i < n; i++) {
		run(b, i, l, RB_EXIT_RULE_NONE, false, NULL, NULL);
		rb_engine_end(b, i, RB_END_INTERRUPTED, 0, 1050 + i * 100);
	}
	return run(b, n, l, RB_EXIT_RULE_NONE, false, NULL, reason);
}

static void test_interruptions_over_cap_refuse(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, 2);
	char reason[RB_REASON_MAX];

	(void)state;
	assert_int_equal(interrupted_times(&b, &l, 3, reason),
			 RB_DECISION_REFUSE);
	assert_string_equal(reason,
			    "interruptions 3 > max_interruptions 2: budget exhausted");
	assert_int_equal(rb_engine_exhaustion(&b, &l), RB_SPENT_INTERRUPTIONS);
	assert_int_equal(b.interruption_cap_refusals, 1);
	assert_int_equal(b.failures, 0);
}

static void test_interruptions_at_cap_run(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, 2);

	(void)state;
	assert_int_equal(interrupted_times(&b, &l, 2, NULL), RB_DECISION_RUN);
	assert_int_equal(b.interruption_cap_refusals, 0);
}

static void test_interruptions_unlimited_by_default(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, RB_UNLIMITED);

	(void)state;
	assert_int_equal(interrupted_times(&b, &l, 50, NULL), RB_DECISION_RUN);
}

static void test_interruptions_while_restoring_count(void **state)
{
	rb_budget b;
	rb_limits l = lim(5, 5, 2);

	(void)state;
	rb_budget_init(&b);
	run(&b, 0, &l, RB_EXIT_RULE_NONE, false, NULL, NULL);
	rb_engine_end(&b, 0, RB_END_INTERRUPTED, 0, 1050);
	run(&b, 1, &l, RB_EXIT_RULE_NONE, true, NULL, NULL);
	/* no end recorded (the node died) while restoring */
	run(&b, 2, &l, RB_EXIT_RULE_NONE, true, NULL, NULL);
	/* exit 0, then requeued */
	rb_engine_end(&b, 2, RB_END_COMPLETED, 0, 1250);
	assert_int_equal(run(&b, 3, &l, RB_EXIT_RULE_NONE, true, NULL, NULL),
			 RB_DECISION_REFUSE);
	assert_int_equal(b.interruptions, 3);
}

static void test_interruption_cap_is_lifted_by_a_grant(void **state)
{
	rb_budget b;
	rb_limits l = lim(1, 2, 2);

	(void)state;
	interrupted_times(&b, &l, 3, NULL);
	b.granted = 1;
	assert_int_equal(run(&b, 4, &l, RB_EXIT_RULE_NONE, false, NULL, NULL),
			 RB_DECISION_RUN);
}

static void test_exit_rule_names_round_trip(void **state)
{
	(void)state;
	for (int r = RB_EXIT_RULE_NONE; r <= RB_EXIT_RULE_IGNORE; r++) {
		rb_exit_rule back;

		assert_int_equal(rb_exit_rule_parse(rb_exit_rule_name(r), &back), 0);
		assert_int_equal(back, r);
	}
	assert_string_equal(rb_charge_name(RB_CHARGE_FATAL), "fatal_exit");
	assert_string_equal(rb_charge_name(RB_CHARGE_IGNORED), "ignored_exit");
}

/* ---- the config ------------------------------------------------------------ */

typedef struct {
	char dir[64];
	char path[128];
	rb_config *cfg;
	rb_err err;
} conf_fixture;

static int conf_setup(void **state)
{
	conf_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/rb_test_exit.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	chmod(f->dir, 0755);
	snprintf(f->path, sizeof(f->path), "%s/rb.conf", f->dir);
	*state = f;
	return 0;
}

static int conf_teardown(void **state)
{
	conf_fixture *f = *state;
	char cmd[128];

	rb_config_free(f->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* Load text from the fixture's file: 0, or -1 with f->err. */
static int load(conf_fixture *f, const char *text)
{
	FILE *fp = fopen(f->path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	rb_config_free(f->cfg);
	f->cfg = NULL;
	return rb_config_load(f->path, &f->cfg, &f->err);
}

static void assert_loads(conf_fixture *f, const char *text)
{
	if (load(f, text) != 0)
		fail_msg("refused: %s", f->err.msg);
}

/* Refused with "PATH:LINE: " followed by message. */
static void assert_refused(conf_fixture *f, const char *text, int line,
			   const char *message)
{
	char want[RB_ERR_MAX + 256];

	assert_int_equal(load(f, text), -1);
	snprintf(want, sizeof(want), "%s:%d: %s", f->path, line, message);
	assert_string_equal(f->err.msg, want);
}

static void test_exit_rule_first_match_wins(void **state)
{
	conf_fixture *f = *state;

	assert_loads(f,
		"exit_rules = (\n"
		"  { codes = [3]; action = \"fatal\"; },\n"
		"  { codes = [3, 4, 75]; action = \"ignore\"; },\n"
		"  { codes = [5]; action = \"restore_failure\"; },\n"
		"  { codes = [6]; action = \"failure\"; }\n"
		");\n");
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 3),
			 RB_EXIT_RULE_FATAL);
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 4),
			 RB_EXIT_RULE_IGNORE);
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 5),
			 RB_EXIT_RULE_RESTORE_FAILURE);
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 6),
			 RB_EXIT_RULE_FAILURE);
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 7),
			 RB_EXIT_RULE_NONE);
	/* 128+signal is outside the codes a rule can name */
	assert_int_equal(rb_config_exit_rule(f->cfg, NULL, NULL, 300),
			 RB_EXIT_RULE_NONE);
}

static void test_partition_exit_rules_replace_default(void **state)
{
	conf_fixture *f = *state;

	assert_loads(f,
		"exit_rules = ( { codes = [3]; action = \"fatal\"; } );\n"
		"partitions = { gpu = { exit_rules = ( { codes = [75]; action = \"ignore\"; } ); };\n"
		"               cpu = { exit_rules = (); }; };\n"
		"accounts = { ml = { exit_rules = ( { codes = [4]; action = \"fatal\"; } ); }; };\n");
	assert_int_equal(rb_config_exit_rule(f->cfg, "other", NULL, 3),
			 RB_EXIT_RULE_FATAL);
	assert_int_equal(rb_config_exit_rule(f->cfg, "gpu", NULL, 3),
			 RB_EXIT_RULE_NONE);
	assert_int_equal(rb_config_exit_rule(f->cfg, "gpu", NULL, 75),
			 RB_EXIT_RULE_IGNORE);
	/* an empty list replaces too: no rule at all */
	assert_int_equal(rb_config_exit_rule(f->cfg, "cpu", NULL, 3),
			 RB_EXIT_RULE_NONE);
	/* the account's list replaces the partition's */
	assert_int_equal(rb_config_exit_rule(f->cfg, "gpu", "ML", 75),
			 RB_EXIT_RULE_NONE);
	assert_int_equal(rb_config_exit_rule(f->cfg, "gpu", "ml", 4),
			 RB_EXIT_RULE_FATAL);
}

static void test_exit_rule_unknown_action_is_an_error(void **state)
{
	assert_refused(*state,
		"exit_rules = (\n  { codes = [3]; action = \"retry\"; }\n);\n", 2,
		"exit_rules.action = \"retry\" is not valid: must be \"failure\", \"restore_failure\", \"fatal\" or \"ignore\" (fix the value, then run restore-budget check-config)");
}

static void test_exit_rule_code_outside_0_255_is_an_error(void **state)
{
	assert_refused(*state,
		"partitions = { gpu = {\n exit_rules = ( { codes = [3,\n 256]; action = \"fatal\"; } ); }; };\n",
		3,
		"partitions.gpu.exit_rules[1].codes: 256 is out of range: exit codes are 0..255 (fix the value, then run restore-budget check-config)");
	assert_refused(*state,
		"exit_rules = ( { codes = [-1]; action = \"fatal\"; } );\n", 1,
		"exit_rules[1].codes: -1 is out of range: exit codes are 0..255 (fix the value, then run restore-budget check-config)");
}

static void test_exit_rule_empty_codes_is_an_error(void **state)
{
	assert_refused(*state,
		"exit_rules = ( { codes = [3]; action = \"fatal\"; },\n"
		"  { codes = []; action = \"ignore\"; } );\n", 2,
		"exit_rules[2].codes is empty: give at least one exit code 0..255 (fix the value, then run restore-budget check-config)");
}

static void test_exit_rule_needs_codes_and_action(void **state)
{
	assert_refused(*state,
		"exit_rules = (\n { codes = [3]; } );\n", 2,
		"exit_rules[1] needs both codes = [N, ...] and action = \"failure\", \"restore_failure\", \"fatal\" or \"ignore\" (fix the value, then run restore-budget check-config)");
	assert_refused(*state,
		"exit_rules = ( { codes = [3]; action = \"fatal\"; when = 1; } );\n",
		1, "unknown key \"exit_rules.when\" (known keys in exit_rules: codes, action)");
}

static void test_exit_rules_must_be_a_list(void **state)
{
	assert_refused(*state, "exit_rules = 3;\n", 1,
		"exit_rules = 3 has the wrong type: expected a list ( { codes = [N, ...]; action = \"fatal\"; }, ... ) (fix the value, then run restore-budget check-config)");
}

static void test_max_interruptions_is_read_and_capped(void **state)
{
	conf_fixture *f = *state;
	rb_overrides job = { 0 };
	rb_limits l;
	char warn[512];
	rb_err err;

	assert_loads(f, "max_interruptions = 2;\nlimits = { max_interruptions = 5; };\n"
		     "partitions = { gpu = { max_interruptions = 4; }; };\n");
	rb_config_resolve(f->cfg, "cpu", NULL, NULL, &l, NULL, 0);
	assert_int_equal(l.max_interruptions, 2);
	rb_config_resolve(f->cfg, "gpu", NULL, NULL, &l, NULL, 0);
	assert_int_equal(l.max_interruptions, 4);
	assert_int_equal(rb_options_parse(&job, "max-interruptions", "9", &err), 0);
	assert_int_equal(rb_config_resolve(f->cfg, "gpu", NULL, &job, &l, warn,
					   sizeof(warn)), 1);
	assert_int_equal(l.max_interruptions, 5);
	assert_non_null(strstr(warn, "--max-interruptions=9 exceeds the cap limits.max_interruptions = 5"));
	assert_int_equal(rb_config_check_caps(f->cfg, &job, &err), -1);
	/* unlimited asked, a cap set: the cap */
	assert_int_equal(rb_options_parse(&job, "max-interruptions", "unlimited", &err), 0);
	rb_config_resolve(f->cfg, NULL, NULL, &job, &l, NULL, 0);
	assert_int_equal(l.max_interruptions, 5);
}

static void test_max_interruptions_unlimited_without_a_cap(void **state)
{
	conf_fixture *f = *state;
	rb_overrides job = { 0 };
	rb_limits l;
	rb_err err;

	assert_loads(f, "max_interruptions = -1;\n");
	rb_config_resolve(f->cfg, NULL, NULL, NULL, &l, NULL, 0);
	assert_int_equal(l.max_interruptions, RB_UNLIMITED);
	assert_int_equal(rb_options_parse(&job, "max-interruptions", "-1", &err), 0);
	assert_int_equal(rb_config_check_caps(f->cfg, &job, &err), 0);
	/* a cap alone lowers the unlimited built-in default to it */
	assert_loads(f, "limits = { max_interruptions = 3; };\n");
	assert_int_equal(f->cfg->max_interruptions, 3);
	assert_refused(f, "limits = { max_interruptions = 3; };\nmax_interruptions = 4;\n",
		       2, "max_interruptions = 4 exceeds the cap limits.max_interruptions = 3 (lower it to at most 3 or raise the cap, then run restore-budget check-config)");
}

/* ---- through the ledger ------------------------------------------------------ */

static rb_job_info job(int64_t attempt)
{
	rb_job_info j = {
		.cluster = CLUSTER, .job_id = 9, .attempt = attempt,
		.uid = 1000, .gid = 1000, .user = "u", .partition = "gpu",
		.account = "acct", .work_dir = "/home/u", .now = 1000 + attempt,
	};
	return j;
}

/* Append each start event's line of job 9 to ctx (a char[8192]). */
static int collect_start(const char *line, bool ok, void *ctx)
{
	char *all = ctx;

	if (ok && strstr(line, "kind=start"))
		snprintf(all + strlen(all), 8192 - strlen(all), "%s\n", line);
	return 0;
}

static void start_events(conf_fixture *f, char *out)
{
	rb_ledger *l;
	rb_err err;

	out[0] = '\0';
	assert_int_equal(rb_ledger_open_read(f->dir, CLUSTER, &l, &err), 0);
	assert_int_equal(rb_ledger_events(l, 9, collect_start, out, &err), 0);
	rb_ledger_close(l);
}

/* A config of text with the fixture's directory as state_dir. */
static void ledger_config(conf_fixture *f, const char *text)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "state_dir = \"%s\";\n%s", f->dir, text);
	assert_loads(f, buf);
}

static void test_fatal_exit_is_named_in_the_start_event_and_refusal(void **state)
{
	conf_fixture *f = *state;
	rb_start_result res;
	rb_record rec;
	rb_job_info j0 = job(0), j1 = job(1);
	char events[8192], words[2 * RB_PATH_MAX];
	rb_err err;

	ledger_config(f, "max_failures = 5;\nexit_rules = ( { codes = [3]; action = \"fatal\"; } );\n");
	assert_int_equal(rb_lifecycle_start(f->cfg, &j0, &res, NULL, &err), 0);
	assert_int_equal(rb_lifecycle_epilog(f->cfg, CLUSTER, 9, 0, 3, 0, NULL,
					     1050, &err), 0);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j1, &res, &rec, &err), 0);
	assert_int_equal(res.decision, RB_DECISION_REFUSE);
	assert_string_equal(res.reason,
			    "exit code 3 is fatal (exit_rules): budget exhausted");
	start_events(f, events);
	assert_non_null(strstr(events, " charged_end=failed:3 charged_phase=FRESH rule=fatal "));
	rb_step_refusal(&rec, 1, f->path, words, sizeof(words));
	assert_non_null(strstr(words, "attempt 1 refused: exit code 3 is fatal (exit_rules) (limits from "));
}

static void test_grant_lifts_a_fatal_exit(void **state)
{
	conf_fixture *f = *state;
	rb_start_result res;
	rb_job_info j0 = job(0), j1 = job(1), j2 = job(2);
	rb_err err;

	ledger_config(f, "exit_rules = ( { codes = [3]; action = \"fatal\"; } );\n");
	assert_int_equal(rb_lifecycle_start(f->cfg, &j0, &res, NULL, &err), 0);
	rb_lifecycle_epilog(f->cfg, CLUSTER, 9, 0, 3, 0, NULL, 1050, &err);
	rb_lifecycle_start(f->cfg, &j1, &res, NULL, &err);
	assert_int_equal(res.decision, RB_DECISION_REFUSE);
	assert_int_equal(rb_lifecycle_grant(f->cfg, CLUSTER, 9, 1, "admin", &err), 0);
	assert_int_equal(rb_lifecycle_start(f->cfg, &j2, &res, NULL, &err), 0);
	assert_int_equal(res.decision, RB_DECISION_RUN);
}

/* The value of the variable called name ("" if it is not there). */
static const char *env_value(const rb_step_env *env, const char *name)
{
	for (size_t i = 0; i < RB_STEP_VAR_COUNT; i++)
		if (env->var[i].name && strcmp(env->var[i].name, name) == 0)
			return env->var[i].value;
	return "";
}

static void test_refusal_and_env_name_the_interruption_cap(void **state)
{
	rb_record rec;
	rb_step_env env;
	char words[2 * RB_PATH_MAX];

	(void)state;
	rb_record_init(&rec);
	rec.job_id = 5;
	rec.budget.interruptions = 3;
	rec.budget.cur.attempt = 3;
	rec.budget.cur.limits = lim(2, 3, 2);
	rb_step_refusal(&rec, 3, "/etc/rb.conf", words, sizeof(words));
	assert_string_equal(words,
		"restore_budget: job 5 attempt 3 refused: interruptions 3 > "
		"max_interruptions 2 (limits from /etc/rb.conf). The checkpoint "
		"(none) is kept. An admin can lift it with 'restore-budget grant 5 "
		"--failures N' and requeue the job.\n");
	rb_step_env_of(&rec, 3, RB_PHASE_FRESH, "", &env);
	assert_string_equal(env_value(&env, "RESTORE_BUDGET_INTERRUPTIONS"), "3");
	assert_string_equal(env_value(&env, "RESTORE_BUDGET_MAX_INTERRUPTIONS"), "2");
	rec.budget.cur.limits.max_interruptions = RB_UNLIMITED;
	rb_step_env_of(&rec, 3, RB_PHASE_FRESH, "", &env);
	assert_string_equal(env_value(&env, "RESTORE_BUDGET_MAX_INTERRUPTIONS"),
			    "unlimited");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_rule_fatal_exhausts_now),
		cmocka_unit_test(test_exit_rule_fatal_exhausts_an_unlimited_budget),
		cmocka_unit_test(test_exit_rule_fatal_stays_until_lifted),
		cmocka_unit_test(test_exit_rule_ignore_costs_nothing_in_any_phase),
		cmocka_unit_test(test_exit_rule_ignore_is_not_an_interruption),
		cmocka_unit_test(test_exit_rule_restore_failure_counts_whatever_the_phase),
		cmocka_unit_test(test_exit_rule_failure_is_the_default),
		cmocka_unit_test(test_exit_rule_applies_only_to_a_failed_end),
		cmocka_unit_test(test_interruptions_over_cap_refuse),
		cmocka_unit_test(test_interruptions_at_cap_run),
		cmocka_unit_test(test_interruptions_unlimited_by_default),
		cmocka_unit_test(test_interruptions_while_restoring_count),
		cmocka_unit_test(test_interruption_cap_is_lifted_by_a_grant),
		cmocka_unit_test(test_exit_rule_names_round_trip),
		cmocka_unit_test_setup_teardown(test_exit_rule_first_match_wins, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_partition_exit_rules_replace_default, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_exit_rule_unknown_action_is_an_error, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_exit_rule_code_outside_0_255_is_an_error, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_exit_rule_empty_codes_is_an_error, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_exit_rule_needs_codes_and_action, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_exit_rules_must_be_a_list, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_max_interruptions_is_read_and_capped, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_max_interruptions_unlimited_without_a_cap, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_fatal_exit_is_named_in_the_start_event_and_refusal, conf_setup, conf_teardown),
		cmocka_unit_test_setup_teardown(test_grant_lifts_a_fatal_exit, conf_setup, conf_teardown),
		cmocka_unit_test(test_refusal_and_env_name_the_interruption_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
