/*
 * main.c - `restore-budget`: command line, usage and dispatch.
 *
 * Options may come before or after the command ("--json show 42" and
 * "show 42 --json" are the same); "--opt=value" and "--opt value" both
 * work; "--" ends the options. An option the command does not take is a
 * usage error (exit 2), as is a missing or extra argument.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"Usage: restore-budget [OPTIONS] COMMAND [ARGS]\n"
"\n"
"Show and manage the restore-retry budgets that the restore_budget SPANK\n"
"plugin keeps for requeued Slurm batch jobs.\n"
"\n"
"Commands:\n"
"  show JOB                 a job's counters (F/M, r/R), restores left, phase,\n"
"                           checkpoint, last end and the limits in force; an\n"
"                           array's id: one row per task, and its tasks not\n"
"                           started yet\n"
"  explain JOB              one line per recorded event: each attempt's start\n"
"                           (decision, what was charged and why), report, end,\n"
"                           and every grant (an array's id: each task's;\n"
"                           attempts older than the log's cap: one summary\n"
"                           line), then the totals\n"
"  list [JOB] [--user NAME] [--exhausted]\n"
"       [--state running|restoring|exhausted|ended|all]\n"
"                           one line per job with a budget (JOB: that job,\n"
"                           or an array's tasks)\n"
"  check-config [FILE]      validate the config file and the plugstack.conf\n"
"                           arguments; print the effective settings, each\n"
"                           with its origin (argument, file:line, default)\n"
"  grant JOB --failures N   (root) give a job N more failures of budget\n"
"  gc --older-than DAYS [--dry-run] [--force]\n"
"                           (root) remove the records of jobs not updated\n"
"                           for DAYS days;\n"
"                           a job whose attempt has no end on record is kept\n"
"                           unless --force\n"
"  metrics [--output FILE]  Prometheus metrics (node_exporter textfile format):\n"
"                           jobs tracked and exhausted, interruption, restore\n"
"                           failure and failure totals, corrupt records, the\n"
"                           tasks of each job array per state; --output\n"
"                           replaces FILE atomically\n"
"\n"
"Options:\n"
"  --config FILE   the plugin's config file (default: $RESTORE_BUDGET_CONFIG,\n"
"                  else config=PATH of the plugstack.conf line, else\n"
"                  /etc/slurm/restore_budget.conf, else built-in defaults\n"
"                  if that file does not exist)\n"
"  --plugstack FILE  the plugstack.conf whose restore_budget.so line gives\n"
"                  the plugin's arguments (default: PlugStackConfig of\n"
"                  slurm.conf, else plugstack.conf next to slurm.conf);\n"
"                  each KEY=VALUE argument sets a config key over the file\n"
"  --cluster NAME  whose ledger to read (default: $SLURM_CLUSTER_NAME, else\n"
"                  ClusterName in $SLURM_CONF or /etc/slurm/slurm.conf, else\n"
"                  \"cluster\")\n"
"  --json          JSON output (show, explain, list, check-config)\n"
"\n"
"JOB is a job id (123), or an array task ARRAY_TASK (123_4); an array's own\n"
"id means all its tasks (grant takes one task).\n"
"  -h, --help      show this help\n"
"  --version       show the version\n"
"\n"
"Exit status: 0 ok; 1 bad data or config (corrupt record, invalid config\n"
"file, unreadable ledger); 2 usage error; 3 job not found; 4 permission\n"
"denied (grant and gc need root).\n";

typedef enum {
	CMD_NONE = 0,
	CMD_SHOW,
	CMD_EXPLAIN,
	CMD_LIST,
	CMD_CHECK_CONFIG,
	CMD_GRANT,
	CMD_GC,
	CMD_METRICS,
	CMD_HELP,
} command;

#define C(x) (1u << (x))
#define ALL_CMDS 0xffffu
#define READ_CMDS (C(CMD_SHOW) | C(CMD_EXPLAIN) | C(CMD_LIST) | \
		   C(CMD_CHECK_CONFIG))

static const struct {
	const char *name;
	command cmd;
	int min_args, max_args;   /* positional arguments after the command */
} commands[] = {
	{ "show", CMD_SHOW, 1, 1 },
	{ "explain", CMD_EXPLAIN, 1, 1 },
	{ "list", CMD_LIST, 0, 1 },
	{ "check-config", CMD_CHECK_CONFIG, 0, 1 },
	{ "grant", CMD_GRANT, 1, 1 },
	{ "gc", CMD_GC, 0, 0 },
	{ "metrics", CMD_METRICS, 0, 0 },
	{ "help", CMD_HELP, 0, 0 },
};

typedef enum {
	OPT_CONFIG, OPT_CLUSTER, OPT_JSON, OPT_HELP, OPT_VERSION, OPT_USER,
	OPT_STATE, OPT_EXHAUSTED, OPT_FAILURES, OPT_OLDER_THAN, OPT_DRY_RUN,
	OPT_FORCE, OPT_OUTPUT, OPT_PLUGSTACK, OPT_COUNT,
} opt_id;

static const struct {
	const char *name;
	bool has_value;
	unsigned cmds;  /* the commands that take it */
} options[OPT_COUNT] = {
	[OPT_CONFIG] = { "config", true, ALL_CMDS },
	[OPT_CLUSTER] = { "cluster", true, ALL_CMDS },
	[OPT_JSON] = { "json", false, READ_CMDS | C(CMD_NONE) },
	[OPT_HELP] = { "help", false, ALL_CMDS },
	[OPT_VERSION] = { "version", false, ALL_CMDS },
	[OPT_USER] = { "user", true, C(CMD_LIST) },
	[OPT_STATE] = { "state", true, C(CMD_LIST) },
	[OPT_EXHAUSTED] = { "exhausted", false, C(CMD_LIST) },
	[OPT_FAILURES] = { "failures", true, C(CMD_GRANT) },
	[OPT_OLDER_THAN] = { "older-than", true, C(CMD_GC) },
	[OPT_DRY_RUN] = { "dry-run", false, C(CMD_GC) },
	[OPT_FORCE] = { "force", false, C(CMD_GC) },
	[OPT_OUTPUT] = { "output", true, C(CMD_METRICS) },
	[OPT_PLUGSTACK] = { "plugstack", true, ALL_CMDS },
};

typedef struct {
	command cmd;
	const char *cmd_name;
	const char *args[4];
	int nargs;
	bool set[OPT_COUNT];
	const char *value[OPT_COUNT];
} cli_args;

/* Untrusted text (an argument) made terminal-safe, for one message. */
static const char *safe_arg(const char *s)
{
	static char buf[256];

	return cli_safe(s ? s : "", buf, sizeof(buf));
}

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_verror("\nTry 'restore-budget --help'.\n", fmt, ap);
	va_end(ap);
	return CLI_EUSAGE;
}

static int find_option(const char *name, size_t len)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (strlen(options[i].name) == len &&
		    strncmp(options[i].name, name, len) == 0)
			return i;
	return -1;
}

/* A word that is not an option: the command, then its arguments. */
static int take_positional(const char *arg, cli_args *a)
{
	size_t c;

	if (a->cmd != CMD_NONE) {
		if (a->nargs >= 4)
			return usage_error("too many arguments ('%s')",
					   safe_arg(arg));
		a->args[a->nargs++] = arg;
		return CLI_OK;
	}
	for (c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
		if (!strcmp(commands[c].name, arg))
			break;
	if (c == sizeof(commands) / sizeof(commands[0]))
		return usage_error("unknown command '%s'", safe_arg(arg));
	a->cmd = commands[c].cmd;
	a->cmd_name = commands[c].name;
	return CLI_OK;
}

/* The long option argv[*i] ("--opt", "--opt=value" or "--opt value", the
 * last taking argv[*i + 1] too). */
static int take_option(int argc, char **argv, int *i, cli_args *a)
{
	const char *arg = argv[*i];
	const char *eq = strchr(arg + 2, '=');
	size_t len = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
	int id = find_option(arg + 2, len);

	if (id < 0)
		return usage_error("unknown option '%s'", safe_arg(arg));
	if (options[id].has_value) {
		if (eq)
			a->value[id] = eq + 1;
		else if (*i + 1 < argc)
			a->value[id] = argv[++*i];
		else
			return usage_error("option '%s' needs a value",
					   safe_arg(arg));
	} else if (eq) {
		return usage_error("option '%s' takes no value", safe_arg(arg));
	}
	a->set[id] = true;
	return CLI_OK;
}

static int parse_args(int argc, char **argv, cli_args *a)
{
	bool only_positional = false;
	int rc = CLI_OK;

	memset(a, 0, sizeof(*a));
	for (int i = 1; i < argc && rc == CLI_OK; i++) {
		const char *arg = argv[i];

		if (only_positional || arg[0] != '-' || arg[1] == '\0')
			rc = take_positional(arg, a);
		else if (!strcmp(arg, "--"))
			only_positional = true;
		else if (!strcmp(arg, "-h"))
			a->set[OPT_HELP] = true;
		else if (arg[1] != '-')
			rc = usage_error("unknown option '%s'", safe_arg(arg));
		else
			rc = take_option(argc, argv, &i, a);
	}
	return rc;
}

/* Every option given must be one the command takes. */
static int check_options(const cli_args *a)
{
	char msg[128];

	for (int i = 0; i < OPT_COUNT; i++) {
		if (!a->set[i] || (options[i].cmds & C(a->cmd)))
			continue;
		if (a->cmd == CMD_NONE)
			snprintf(msg, sizeof(msg), "--%s needs a command",
				 options[i].name);
		else
			snprintf(msg, sizeof(msg), "%s does not take --%s",
				 a->cmd_name, options[i].name);
		return usage_error("%s", msg);
	}
	return CLI_OK;
}

static int check_arg_count(const cli_args *a)
{
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		if (commands[c].cmd != a->cmd)
			continue;
		if (a->nargs < commands[c].min_args)
			return usage_error("%s: missing JOB argument",
					   a->cmd_name);
		if (a->nargs > commands[c].max_args)
			return usage_error("unexpected argument '%s'",
					   safe_arg(a->args[commands[c].max_args]));
	}
	return CLI_OK;
}

static int job_arg(const char *s, rb_job_arg *ref)
{
	if (rb_job_arg_parse(s, ref) < 0)
		return usage_error("'%s' is not a job id (a job id is a decimal "
				   "number 1..4294967295; an array task is "
				   "ARRAY_TASK, e.g. 123_4)", safe_arg(s));
	return CLI_OK;
}

static int run_list(cli_ctx *ctx, const cli_args *a, const rb_job_arg *ref)
{
	cli_list_opts lo = { a->value[OPT_USER], a->value[OPT_STATE],
			     a->nargs ? ref : NULL };
	static const char *const states[] = {
		"running", "restoring", "exhausted", "ended", "all",
	};
	bool ok = !lo.state;

	for (size_t i = 0; lo.state && i < sizeof(states) / sizeof(states[0]);
	     i++)
		ok = ok || !strcmp(lo.state, states[i]);
	if (!ok)
		return usage_error("--state %s: expected running, restoring, "
				   "exhausted, ended or all", safe_arg(lo.state));
	if (a->set[OPT_EXHAUSTED]) {
		if (lo.state && strcmp(lo.state, "exhausted") != 0)
			return usage_error("%s", "--exhausted contradicts "
					   "--state");
		lo.state = "exhausted";
	}
	if (lo.user && !lo.user[0])
		return usage_error("%s", "--user needs a name");
	return cli_cmd_list(ctx, &lo);
}

static int dispatch(cli_ctx *ctx, const cli_args *a)
{
	rb_job_arg ref = { 0 };
	long long n = 0;
	int rc;

	/* Usage errors first (2), then permission (4), then the data. */
	if ((a->cmd == CMD_SHOW || a->cmd == CMD_EXPLAIN ||
	     a->cmd == CMD_GRANT || (a->cmd == CMD_LIST && a->nargs)) &&
	    (rc = job_arg(a->args[0], &ref)) != CLI_OK)
		return rc;
	if (a->cmd == CMD_GRANT) {
		if (!a->set[OPT_FAILURES])
			return usage_error("%s", "grant needs --failures N");
		if (cli_parse_uint(a->value[OPT_FAILURES], RB_MAX_FAILURES_MAX,
				   &n) < 0 || n == 0)
			return usage_error("--failures %s: expected a number "
					   "from 1 to 1000000",
					   safe_arg(a->value[OPT_FAILURES]));
	}
	if (a->cmd == CMD_GC) {
		if (!a->set[OPT_OLDER_THAN])
			return usage_error("%s", "gc needs --older-than DAYS");
		if (cli_parse_uint(a->value[OPT_OLDER_THAN], 100000, &n) < 0)
			return usage_error("--older-than %s: expected a whole "
					   "number of days (0..100000)",
					   safe_arg(a->value[OPT_OLDER_THAN]));
	}
	if (a->cmd == CMD_METRICS && a->set[OPT_OUTPUT] &&
	    !a->value[OPT_OUTPUT][0])
		return usage_error("%s", "--output needs a file name");
	if (a->cmd == CMD_CHECK_CONFIG)
		return cli_cmd_check_config(ctx, a->nargs ? a->args[0] : NULL);

	if ((rc = cli_load_config(ctx)) != CLI_OK)
		return rc;
	switch (a->cmd) {
	case CMD_SHOW:
		return cli_cmd_show(ctx, &ref);
	case CMD_EXPLAIN:
		return cli_cmd_explain(ctx, &ref);
	case CMD_LIST:
		return run_list(ctx, a, &ref);
	case CMD_GRANT:
		return cli_cmd_grant(ctx, &ref, (int)n);
	case CMD_GC:
		return cli_cmd_gc(ctx, n, a->set[OPT_DRY_RUN], a->set[OPT_FORCE]);
	case CMD_METRICS:
		return cli_cmd_metrics(ctx, a->value[OPT_OUTPUT]);
	default:
		return usage_error("%s", "no command given");
	}
}

int main(int argc, char **argv)
{
	cli_ctx ctx;
	cli_args a;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	cli_install_log_sink();
	rc = parse_args(argc, argv, &a);
	if (rc != CLI_OK)
		return rc;
	if (a.set[OPT_HELP] || a.cmd == CMD_HELP) {
		fputs(usage_text, stdout);
		return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
	}
	if (a.set[OPT_VERSION]) {
		printf("restore-budget %s (ledger record format %d)\n",
		       RB_CLI_VERSION, RB_RECORD_VERSION);
		return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
	}
	if (a.cmd == CMD_NONE) {
		fputs(usage_text, stderr);
		return CLI_EUSAGE;
	}
	if ((rc = check_options(&a)) != CLI_OK ||
	    (rc = check_arg_count(&a)) != CLI_OK)
		return rc;
	/* --config has_value: take_option() sets value[] with set[] (the
	 * analyzer cannot tie options[id].has_value to OPT_CONFIG) */
	// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
	if (a.set[OPT_CONFIG] && !a.value[OPT_CONFIG][0])
		return usage_error("%s", "--config needs a file name");
	// NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
	if (a.set[OPT_PLUGSTACK] && !a.value[OPT_PLUGSTACK][0])
		return usage_error("%s", "--plugstack needs a file name");
	ctx.json = a.set[OPT_JSON];
	if ((rc = cli_choose_config(&ctx, a.value[OPT_CONFIG],
				    a.value[OPT_PLUGSTACK])) == CLI_OK &&
	    (rc = cli_choose_cluster(&ctx, a.value[OPT_CLUSTER])) == CLI_OK)
		rc = dispatch(&ctx, &a);
	rb_config_free(ctx.cfg);
	free(ctx.plug_line);
	return rc;
}
