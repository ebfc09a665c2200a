/*
 * config.h - the admin's libconfig file (docs/rule.md, "Limits").
 *
 * Strict: unknown keys, wrong types and out-of-range values are errors
 * reported as "file:line: message". Values are resolved per job with the
 * precedence job option > account > partition > top-level default, and job
 * values are clamped to the `limits` caps.
 */
#ifndef RB_CONFIG_H
#define RB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "rule/rule.h"
#include "slurm/slurm.h"

#define RB_DEFAULT_CONFIG_PATH "/etc/slurm/restore_budget.conf"
#define RB_DEFAULT_STATE_DIR "/var/spool/slurm/restore_budget"

/* Bounds of the accepted values (an out-of-range value is an error). */
#define RB_MAX_FAILURES_MAX 1000000
#define RB_RESTORE_RETRY_MAX 1000000
#define RB_RESTORE_TIMEOUT_MAX (30 * 24 * 3600)
#define RB_MAX_INTERRUPTIONS_MAX 1000000
#define RB_EXIT_CODE_MAX 255

typedef enum { RB_TRACK_ALL = 0, RB_TRACK_OPT_IN } rb_track;
typedef enum { RB_ON_ERROR_OPEN = 0, RB_ON_ERROR_CLOSED } rb_on_error;
typedef enum { RB_ON_EXHAUSTED_FAIL = 0, RB_ON_EXHAUSTED_HOLD } rb_on_exhausted;
/* Where the budget lives (DESIGN 14; docs/stores.md): the shared state_dir
 * ledger, or one line of the job's AdminComment in the controller. */
typedef enum { RB_STORE_DIR = 0, RB_STORE_CONTROLLER } rb_store_kind;

/* A partial set of limits: a partition's, an account's, or a job's options. */
typedef struct {
	bool has_max_failures;
	int max_failures;       /* may be RB_UNLIMITED */
	bool has_restore_retry_num;
	int restore_retry_num;
	bool has_restore_timeout;
	int restore_timeout;
	bool has_max_interruptions;
	int max_interruptions;  /* may be RB_UNLIMITED */
} rb_overrides;

/* One entry of exit_rules: the exit statuses it names (a bit per status
 * 0..RB_EXIT_CODE_MAX) and what they mean. */
typedef struct {
	uint8_t codes[(RB_EXIT_CODE_MAX + 1) / 8];
	rb_exit_rule action;
} rb_exit_rule_entry;

/* A list of exit_rules, first match wins; a partition's or account's list
 * replaces the default one (docs/rule.md, "Exit-code rules"). */
typedef struct {
	bool set;               /* written in the file (even empty) */
	size_t n;
	rb_exit_rule_entry *rules;
} rb_exit_rules;

typedef struct {
	char *name;
	rb_overrides values;
	rb_exit_rules exit_rules;
} rb_named_overrides;

/* Where a setting's value comes from (check-config shows it). */
typedef enum { RB_FROM_DEFAULT = 0, RB_FROM_FILE, RB_FROM_ARGUMENT } rb_origin;

/* One setting in force, as a plugstack.conf argument would give it:
 * key "limits.max_failures", value "10" (exit rules: key
 * "exit_rules.fatal", value "3,4"). Strings are raw: quote to print. */
typedef struct {
	char *key;
	char *value;
	rb_origin from;
	unsigned int line;        /* RB_FROM_FILE: the file's line */
} rb_setting;

typedef struct {
	char *path;               /* what the settings came from, for
				   * messages: the file, "LABEL arguments",
				   * both, or "(built-in defaults)" */
	char *state_dir;
	int max_failures;         /* default M */
	int restore_retry_num;    /* default R */
	int restore_timeout;
	rb_accounting accounting;
	bool count_preemptions;
	int max_interruptions;    /* default; RB_UNLIMITED */
	rb_exit_rules exit_rules; /* the default list */
	int requeue_exit;         /* 1..255; 0: not set (docs/rule.md,
				   * "The requeue code") */
	rb_track track;
	rb_on_error on_error;
	rb_on_exhausted on_exhausted;
	rb_store_kind store;
	struct {
		int max_failures;
		int restore_retry_num;
		int max_interruptions; /* -1: not set (no cap) */
		bool allow_unlimited;
	} caps;                   /* the `limits` group */
	char *checkpoint_pattern; /* checkpoint.pattern, default "checkpoint*" */
	char *checkpoint_latest;  /* checkpoint.latest, default "latest" */
	bool checkpoint_fallback; /* checkpoint.fallback, default false */
	rb_named_overrides *partitions;
	size_t n_partitions;
	rb_named_overrides *accounts;
	size_t n_accounts;
	/* every setting in force with its origin, in the order of the keys
	 * (empty from rb_config_defaults) */
	rb_setting *settings;
	size_t n_settings;
	char *file;               /* the file read, or NULL */
	char *args_from;          /* the arguments' label, or NULL if none */
} rb_config;

/* Built-in defaults (used when the default path does not exist).
 * Returns NULL only on allocation failure. */
rb_config *rb_config_defaults(void);

/*
 * Read and validate `path`. On success returns 0 and *out (free with
 * rb_config_free). On error returns -1, *out is NULL and err holds
 * "file:line: message" (or "file: message" when there is no line), naming the
 * key, the bad value, the allowed range and what to do.
 */
int rb_config_load(const char *path, rb_config **out, rb_err *err);

/* The plugstack.conf arguments the plugin itself takes; the loader skips
 * them. */
#define RB_PLUGIN_ARGS "config=PATH, slurm_bindir=DIR, run_dir=DIR"

/*
 * The file at `path` (NULL: none, so the built-in defaults), then the
 * plugstack.conf arguments av[0..ac) over it (DESIGN 14, docs/rule.md
 * "Plugstack arguments"): each "key=value" sets one key of the file, nested
 * keys with dots ("limits.max_failures=10",
 * "partitions.preempt.max_failures=5"), exit rules one argument per action
 * ("exit_rules.fatal=3,4"). An argument overrides the file's value; the
 * merged settings pass the file's checks once, so the rules and messages
 * are the same. The plugin's own arguments (RB_PLUGIN_ARGS) are skipped.
 * `label` names where the arguments are ("plugstack.conf", or
 * "/etc/slurm/plugstack.conf:4"); messages about an argument read
 * "LABEL: argument \"key=value\": ...". cfg->settings lists every setting
 * with its origin. Returns as rb_config_load.
 */
int rb_config_load_args(const char *path, int ac, char *const *av,
			const char *label, rb_config **out, rb_err *err);

void rb_config_free(rb_config *cfg);

/*
 * The limits for a job: job > account > partition > default, job values
 * clamped to the caps. partition, account and job may be NULL. Each clamp
 * appends a human line to `warn` (may be NULL) naming the asked value, the
 * cap and the config file. Returns the number of values clamped.
 */
int rb_config_resolve(const rb_config *cfg, const char *partition,
		      const char *account, const rb_overrides *job,
		      rb_limits *out, char *warn, size_t warnlen);

/*
 * What exit_rules make of a FAILED end with exit status `code` for a job of
 * this partition and account: the account's list if it has one, else the
 * partition's, else the default; the first rule naming code, or
 * RB_EXIT_RULE_NONE.
 */
rb_exit_rule rb_config_exit_rule(const rb_config *cfg, const char *partition,
				 const char *account, int code);

/*
 * Parse one job option value into `job`. `name` is the option's name
 * without dashes: "max-failures" (N >= 0, or -1 / "unlimited"),
 * "restore-retries" (N >= 0), "restore-timeout" (seconds >= 0),
 * "max-interruptions" (N >= 0, or -1 / "unlimited"). Garbage,
 * signs, overflow and out-of-range values are errors naming the option.
 */
int rb_options_parse(rb_overrides *job, const char *name, const char *value,
		     rb_err *err);

/*
 * Refuse job values over the caps (used by sbatch, where refusing is kinder
 * than clamping): -1 with a message naming the option, the value, the cap
 * and cfg->path.
 */
int rb_config_check_caps(const rb_config *cfg, const rb_overrides *job,
			 rb_err *err);

/* Copy s into buf as printable text for a message (control bytes, '"' and
 * '\\' escaped), truncated with "..." when it does not fit. */
void rb_config_quote(const char *s, char *buf, size_t len);

/*
 * The code a job exits with when its restore fails, so that Slurm requeues
 * it (RESTORE_BUDGET_REQUEUE_EXIT; docs/rule.md, "The requeue code"): cfg's
 * requeue_exit if set, else the first code of RequeueExit (slurm NULL:
 * slurm.conf could not be read), else 0 (unknown: the job is not told one).
 * Pure: slurm.conf is read by the caller (slurmconf.h).
 */
int rb_requeue_exit_of(const rb_config *cfg, const rb_requeue_exit *slurm);

/*
 * The warning of check-config when cfg sets requeue_exit to a code that
 * slurm.conf (at slurm_path, read into slurm) does not requeue: one line
 * naming both files, the code, the RequeueExit list and what to do. 1 and
 * the line in buf, or 0 (nothing to say: buf is "").
 */
int rb_requeue_exit_warning(const rb_config *cfg, const rb_requeue_exit *slurm,
			    const char *slurm_path, char *buf, size_t len);

#endif
