/*
 * cli.h - shared pieces of the `restore-budget` command-line tool.
 *
 * main.c parses the command line and dispatches; each command, or group
 * of commands, lives in its own cli_*.c (contrib/cli/README.md lists them)
 * and everything they share - the context, messages, the config and
 * cluster lookup, small parsers and formatters, JSON helpers - is declared
 * here. The core (plugin/: each folder's public header) does the real
 * work; the CLI only reads, formats and, for root, calls the same
 * lifecycle functions the plugin calls.
 */
#ifndef RB_CLI_H
#define RB_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json.h>

#include "config/config.h"
#include "rule/rule.h"
#include "store/store.h"
#include "slurm/slurm.h"

#ifndef RB_CLI_VERSION
#define RB_CLI_VERSION "0.1.0"
#endif

#define CLI_NAME "restore-budget"
#define CLI_PREFIX CLI_NAME ": "
#define CLI_SLURM_CONF "/etc/slurm/slurm.conf"
#define CLI_DEFAULT_CLUSTER "cluster"

/* Exit codes (documented in the usage text and contrib/cli/README.md). */
enum {
	CLI_OK = 0,
	CLI_EDATA = 1,     /* bad data or config: corrupt record, bad file, I/O */
	CLI_EUSAGE = 2,    /* bad command line */
	CLI_ENOTFOUND = 3, /* no record of that job */
	CLI_EPERM = 4,     /* needs root */
};

typedef struct {
	const char *config_path;  /* the file to read, or NULL = built-in */
	bool config_explicit;     /* from --config or $RESTORE_BUDGET_CONFIG */
	char cluster[RB_NAME_MAX];
	bool json;
	rb_config *cfg;           /* loaded by cli_load_config() */
	/* the restore_budget.so line of the plugstack.conf sbatch loads
	 * (docs/rule.md, "Plugstack arguments (configless)"): its arguments, and
	 * "FILE:LINE" for messages; plug_ac 0 when none */
	int plug_ac;
	char *plug_av[64];
	char *plug_line;          /* the line's copy plug_av points into */
	char plug_where[4200];
} cli_ctx;

/* --- messages (cli_util.c) ---------------------------------------------------- */

/* "restore-budget: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with another ending than "\n" (main.c: a usage hint). */
void cli_verror(const char *tail, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Route the core's log messages to stderr (errors and warnings). */
void cli_install_log_sink(void);

/* --- environment (cli_env.c) ---------------------------------------------------- */

/* Find the plugin's plugstack.conf arguments: --plugstack PATH, else
 * PlugStackConfig of slurm.conf ($SLURM_CONF or /etc/slurm/slurm.conf),
 * else plugstack.conf next to slurm.conf, following `include` lines; the
 * line naming restore_budget.so. Then pick the config path: explicit
 * (--config), else $RESTORE_BUDGET_CONFIG, else the line's config=PATH,
 * else the default path if it exists, else none (path NULL): built-in
 * defaults and the arguments. CLI_OK, or CLI_EDATA when --plugstack's
 * file cannot be read (message printed). */
int cli_choose_config(cli_ctx *ctx, const char *opt_config,
		      const char *opt_plugstack);

/* Load ctx->cfg. Returns CLI_OK or CLI_EDATA (message printed). */
int cli_load_config(cli_ctx *ctx);

/* Resolve the cluster name: --cluster, $SLURM_CLUSTER_NAME, ClusterName in
 * $SLURM_CONF or /etc/slurm/slurm.conf, else "cluster". Returns CLI_OK or
 * CLI_EUSAGE for an invalid name (message printed). */
int cli_choose_cluster(cli_ctx *ctx, const char *opt_cluster);

/* slurm.conf: $SLURM_CONF, else /etc/slurm/slurm.conf. */
const char *cli_slurm_conf(void);

/* Where squeue and sacct are: $RESTORE_BUDGET_SLURM_BINDIR (an absolute
 * path), else /usr/bin (the plugin's default, plugstack.conf slurm_bindir=). */
const char *cli_slurm_bindir(void);

/* Run Slurm's `tool` from cli_slurm_bindir() with args (up to their first
 * NULL, at most 14), for cli_slurm_conf() and by deadline: rb_child_run's
 * output and result. */
int cli_slurm_run(const char *tool, const char *const args[],
		  rb_deadline deadline, char *out, size_t len, rb_err *err);

/* Who runs us, for the grant's `by`: $SUDO_USER (when root), the login
 * name, the user name of the real uid, or "uid N". */
void cli_invoking_user(char *buf, size_t len);

/*
 * Open the cluster's ledger. Returns 0 (opened), 1 (no ledger for this
 * cluster yet: nothing was ever recorded; *out is NULL) or -1 (message
 * printed). READ mode never creates anything.
 */
int cli_open_ledger(const cli_ctx *ctx, rb_ledger_mode mode, rb_ledger **out);

/* cli_open_ledger, plus a record to read each job into (*rec, free() it;
 * rb_ledger_close the ledger). Returns as cli_open_ledger; on -1 nothing
 * is left open. */
int cli_open_scan(const cli_ctx *ctx, rb_ledger_mode mode, rb_ledger **out,
		  rb_record **rec);

/* One job's record, read without locking, into *out (malloc'd: free() it).
 * CLI_OK, or CLI_ENOTFOUND (no record) or CLI_EDATA with the message
 * printed and *out NULL. */
int cli_read_job(const cli_ctx *ctx, uint32_t job_id, rb_record **out);

/* --- parsing and formatting (cli_util.c) ----------------------------------------- */

/* A decimal integer in [0, max]. 0 or -1. */
int cli_parse_uint(const char *s, long long max, long long *out);

/* Local time "YYYY-MM-DD HH:MM:SS", or "-" for 0. */
void cli_format_time(int64_t t, char *buf, size_t len);

/* "45s", "12m05s", "3h07m", "2d04h". */
void cli_format_duration(int64_t secs, char *buf, size_t len);

/* Make untrusted text safe for a terminal: control bytes (C0, DEL, C1,
 * bidi overrides) and bytes that are not valid UTF-8 become %XX (as in
 * the ledger), printable UTF-8 is copied. Returns buf. */
const char *cli_safe(const char *s, char *buf, size_t len);

/* Length (1..4) of the valid UTF-8 character at s (its code point in *cp),
 * or 0 if s does not start with one. */
size_t cli_utf8_char(const unsigned char *s, unsigned *cp);

/* A code point a terminal acts on rather than shows: C0, DEL, C1, the bidi
 * marks, overrides and isolates. */
bool cli_cp_is_control(unsigned cp);

/* "2/1" or "2/1+1" (granted) or "2/unlimited": F against M (+granted). */
void cli_format_fm(const rb_budget *b, const rb_limits *l, char *buf,
		   size_t len);

/* restores_left as text: a number or "unlimited"; "-" with no attempt. */
void cli_format_left(const rb_budget *b, char *buf, size_t len);

/* The job's state (list, show, the sweep overview, metrics), from what its
 * record holds, in this order: "exhausted" (the budget is spent: the
 * current attempt was refused, or the record says exhausted), "ended" (the
 * current attempt's end is recorded, or no attempt is), "restoring" (no end
 * yet, phase RESTORING: restoring a checkpoint, not yet confirmed),
 * "running" (no end yet, any other phase). contrib/cli/README.md, "States". */
typedef enum {
	CLI_ST_RUNNING = 0,
	CLI_ST_RESTORING,
	CLI_ST_EXHAUSTED,
	CLI_ST_ENDED,
	CLI_ST_COUNT,
} cli_state;
extern const char *const cli_state_names[CLI_ST_COUNT];
cli_state cli_job_state_id(const rb_record *rec);
const char *cli_job_state(const rb_record *rec);

/* --- JSON (cli_json.c) ------------------------------------------------------------ */

/* A JSON string from untrusted bytes (invalid UTF-8 becomes U+FFFD). */
json_object *cli_json_string(const char *s);

/* A new object of two members, k1 then k2 (each value's reference is
 * taken over, as json_object_object_add does). */
json_object *cli_json_pair(const char *k1, json_object *v1, const char *k2,
			   json_object *v2);


/* A whole record (show --json) or its summary (list --json). */
json_object *cli_json_record(const rb_record *rec);
json_object *cli_json_summary(const rb_record *rec, cli_state state);

/* --- checkpoint fallback (cli_fallback.c) -------------------------------------- */

/* show: the fallback lines, none for a job without any. */
void cli_show_fallback(const rb_record *rec);
/* --json: a "fallback" member of o, none for a job without any. */
void cli_json_add_fallback(json_object *o, const rb_record *rec);

/* Print obj (pretty) and a newline on stdout, then release it.
 * Returns 0, or -1 if stdout failed. */
int cli_json_print(json_object *obj);

/* --- event log lines (cli_events.c) ------------------------------------------------ */

#define CLI_EVENT_PAIRS_MAX 64

/* One intact event line cut into key=value pairs, values unescaped. */
typedef struct {
	char *copy;         /* the line, cut into keys and escaped values */
	struct {
		char *key;
		char *value;
	} pairs[CLI_EVENT_PAIRS_MAX];
	size_t n;
	bool bad_value;     /* a value failed to unescape: it reads "?" */
} cli_event;

/* Parse a line as rb_ledger_events hands it (time first, crc last, which
 * is dropped). 0, or -1 on allocation failure (free it anyway). */
int cli_event_parse(const char *line, cli_event *e);
void cli_event_free(cli_event *e);
/* The value of key, or NULL; cli_event_str gives "?" instead of NULL. */
const char *cli_event_get(const cli_event *e, const char *key);
const char *cli_event_str(const cli_event *e, const char *key);

/* --- jobs and job arrays (cli_array.c) ------------------------------------------- */

/* One record a JOB argument names: its key and, for a task, its task id. */
typedef struct {
	uint32_t job_id;
	uint32_t array_job_id;  /* 0: not an array task */
	uint32_t task_id;
} cli_task;

/* What squeue says of an array's tasks without a record (cli_resolve asks it). */
typedef struct {
	bool asked;              /* the controller answered */
	char why[RB_ERR_MAX];    /* why it was not asked or did not answer */
	rb_squeue_task *tasks;   /* its lines of the array */
	size_t n;
} cli_pending;

/* What a JOB argument ("J" or "A_T") resolved to. */
typedef struct {
	rb_job_arg ref;
	bool array;        /* a bare array id: every task with a record */
	cli_task *tasks;   /* the one record, or the array's by task id */
	size_t n;
	size_t hidden;     /* array: tasks of another group (not readable) */
	size_t corrupt;    /* array: records that could not be read */
	cli_pending pending; /* array: asked when ask_controller */
} cli_target;

/*
 * Resolve ref (docs in contrib/cli/README.md, "Job arrays"): "A_T" is the
 * record whose array_job_id/array_task_id are A and T; a bare id is that
 * job's record, unless it is an array's id (its record is a task of its own
 * array, or there is none but tasks of that array have records): then every
 * task's record, ordered by task id. A bare id with no record at all is an
 * array when the controller lists its tasks (ask_controller). CLI_OK,
 * CLI_ENOTFOUND (nothing; no message: the command words it) or CLI_EDATA
 * (message printed). cli_target_free() it either way.
 */
int cli_resolve(const cli_ctx *ctx, const rb_job_arg *ref, bool ask_controller,
		cli_target *t);
void cli_target_free(cli_target *t);

/* The argument as given: "123_4" or "123" (buf RB_JOB_ADDR_MAX). */
const char *cli_ref_text(const rb_job_arg *ref, char *buf);
/* The record's address: "A_T" for a task, else its job id. */
const char *cli_rec_addr(const rb_record *rec, char *buf);
/* A task's ids in JSON (array_job_id, array_task_id); nothing for a job
 * that is no array task. */
void cli_json_add_task(json_object *o, const rb_record *rec);


/* Does Slurm still list the record's job (squeue, deadline 5 s)? 1 yes,
 * 0 no (it has ended), -1 no answer (why: len bytes). A record whose
 * current attempt has no end, of a job Slurm no longer lists, lost that
 * end (docs/architecture.md, "An end not written"). */
int cli_slurm_lists_job(const rb_record *rec, char *why, size_t len);
/* An array's end (nothing for one job): one line per task squeue knows
 * that has no record (pending ones "123_[5-999%4]  pending, not started"),
 * or the one line saying why the controller was not asked; into o when not
 * NULL, as "not_started" (array, or null) and "controller_error" (or
 * null). Then, on stderr, the records an array's scan could not read
 * (another group's, corrupt), if any. */
void cli_target_end(const cli_target *t, json_object *o);
/* The not-found message for ref ("job 42: no record ...", "array task
 * 123_4: no record ..."). Returns CLI_ENOTFOUND. */
int cli_not_found(const cli_ctx *ctx, const rb_job_arg *ref);
/* Read each of t's records in order and call fn with it. A record that
 * cannot be read now (gone, damaged) is skipped, with a message unless
 * quiet. Returns how many were skipped. */
typedef void (*cli_task_fn)(const rb_record *rec, void *arg);
size_t cli_each_task(const cli_ctx *ctx, const cli_target *t, bool quiet,
		     cli_task_fn fn, void *arg);

/* --- a folded event log (cli_folded.c) ---------------------------------------------- */

/* explain: the summary line of the older attempts ("kind=folded"), as one
 * line of text or an object; the totals the whole log gives (the
 * record's: plugin/store/eventsum.h). */
void cli_folded_text(const cli_event *e);
json_object *cli_folded_json(const cli_event *e);
void cli_totals_text(const rb_evsum *s);
json_object *cli_totals_json(const rb_evsum *s);

/* --- commands ---------------------------------------------------------------------- */

typedef struct {
	const char *user;   /* --user, or NULL */
	const char *state;  /* running | restoring | ended | exhausted | all, or NULL */
	const rb_job_arg *job; /* list JOB: that job, or that array's tasks */
} cli_list_opts;

/* list's header and one row (show on an array prints the same rows). */
void cli_list_header(void);
void cli_list_row(const rb_record *rec, cli_state state);

int cli_cmd_show(cli_ctx *ctx, const rb_job_arg *ref);
int cli_cmd_explain(cli_ctx *ctx, const rb_job_arg *ref);
int cli_cmd_list(cli_ctx *ctx, const cli_list_opts *opts);
int cli_cmd_check_config(cli_ctx *ctx, const char *file);
int cli_cmd_grant(cli_ctx *ctx, const rb_job_arg *ref, int failures);
int cli_cmd_gc(cli_ctx *ctx, long long days, bool dry_run, bool force);

/* Prometheus text format on stdout, or atomically into output (cli_metrics.c). */
int cli_cmd_metrics(cli_ctx *ctx, const char *output);

/* show's text or JSON of one record (cli_show.c); grant's report
 * (cli_grant.c). */
int cli_show_record(cli_ctx *ctx, const rb_record *rec);
int cli_grant_report(uint32_t job_id, int granted_before,
		     const rb_record *rec);

/* --- store = "controller" (cli_controller.c; docs/stores.md) ------------------- */

/* show and grant of one job or task, on its AdminComment's budget line. */
int cli_ctl_show(cli_ctx *ctx, const rb_job_arg *ref);
int cli_ctl_grant(cli_ctx *ctx, const rb_job_arg *ref, int failures);
/* explain: each run from accounting (sacct -D), with its line at its end. */
int cli_ctl_explain(cli_ctx *ctx, const rb_job_arg *ref);
/* gc with store = "controller": nothing to collect (said so), CLI_OK or
 * CLI_EDATA. -1 if the store is "dir" (gc runs). */
int cli_ctl_gc(const cli_ctx *ctx);
/* Has the controller ended a job in this state (StateCompact)? Its line
 * is history then, not a budget: no write is taken any more. */
bool cli_ctl_ended(const char *state);

/* One job of a listing (list, metrics): its record, or why it cannot be
 * read, and whether the controller has ended it. */
typedef struct {
	uint32_t job_id;
	const rb_record *rec;   /* NULL when corrupt */
	const char *corrupt;    /* why the record cannot be read, or NULL */
	bool ended;             /* ended by the controller, its end unrecorded
				 * or not: shown as "ended" */
} cli_row;
/* Called once per row; non-zero stops the listing. */
typedef int (*cli_row_fn)(const cli_row *row, void *arg);
/* Read job_id's record of the shared-directory ledger into rec and give
 * it to fn as a row (a damaged one as corrupt); a record removed since the
 * scan is skipped, another group's counted in *hidden. fn's result, or 0. */
int cli_ledger_row(rb_ledger *ledger, uint32_t job_id, rb_record *rec,
		   cli_row_fn fn, void *arg, size_t *hidden);
/* A row's state: cli_job_state_id, or "ended" once the controller ended
 * the job (a job it ends has no end on its line: docs/stores.md). */
cli_state cli_row_state(const cli_row *row);
/* Every job the controller holds with a budget line (job NULL), or those
 * job names (a job, a task, an array's tasks), by job id; with ended_too
 * and accounting on, then the ended jobs the controller no longer holds
 * (sacct: each one's last run; since midnight unless job is given)
 * (cli_ctl_rows.c). 0, or -1 (message said; the rows given stand). */
int cli_ctl_rows(const cli_ctx *ctx, const rb_job_arg *job, bool ended_too,
		 cli_row_fn fn, void *arg);

/* --- requeue_exit (cli_requeue.c) ------------------------------------------- */

/* The requeue code check-config shows, and its warning. */
typedef struct {
	int code;            /* 0: none known (the job is not told one) */
	char value[RB_PATH_MAX + 256]; /* the summary's words for it */
	char warning[2 * RB_PATH_MAX + 512]; /* "" or the warning line */
} cli_requeue;

/* cfg's requeue_exit against $SLURM_CONF (or /etc/slurm/slurm.conf). */
void cli_requeue_check(const rb_config *cfg, cli_requeue *out);
/* "requeue_exit" and "warnings" in check-config's JSON, where known. */
void cli_requeue_json(json_object *o, const cli_requeue *r);

/* CLI_OK as root; else a message naming `what` and CLI_EPERM. */
int cli_need_root(const char *what);

#endif
