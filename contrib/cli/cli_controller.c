/*
 * cli_controller.c - store = "controller" (docs/stores.md): `show` and
 * `grant` on the budget line of one job's AdminComment, read with squeue
 * and written with `scontrol update` as the person running the command
 * (the controller lets only root, SlurmUser and admins write it); `gc` has
 * nothing to collect. Every question has a deadline.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/lifecycle.h"

#define CTL_DEADLINE_MS 10000

/* One job of the controller, as a store. */
typedef struct {
	rb_controller c;
	rb_job_ref job;
	rb_ctl_job info;       /* from the budget read: restarts, state */
	rb_record ident;
	rb_store_line line;
	rb_store *st;
	char addr[RB_JOB_ADDR_MAX];
} ctl_job;

static int ctl_read(void *ctx, char *out, size_t len, rb_err *err)
{
	ctl_job *j = ctx;

	return rb_controller_budget_read(&j->c, &j->job, &j->info, out, len,
					 err);
}

static int ctl_write(void *ctx, const char *comment, rb_err *err)
{
	ctl_job *j = ctx;

	return rb_controller_comment(&j->c, &j->job, comment, err);
}

/* "JobID|UserName|Partition|Account|" of the job: its own id (an array
 * task's differs from its address) and who it is. The account, which a
 * user may name freely, is last. 0 or -1. */
static int parse_ident(char *text, rb_record *id)
{
	char *f[3], *p = text, *bar, *end;
	unsigned long v;

	for (int i = 0; i < 3; i++) {
		bar = strchr(p, '|');
		if (!bar)
			return -1;
		*bar = '\0';
		f[i] = p;
		p = bar + 1;
	}
	errno = 0;
	v = strtoul(f[0], &end, 10);
	if (errno || end == f[0] || *end || v == 0 || v > UINT32_MAX)
		return -1;
	id->job_id = (uint32_t)v;
	rb_strlcpy(id->user, f[1], sizeof(id->user));
	rb_strlcpy(id->partition, f[2], sizeof(id->partition));
	p[strcspn(p, "\n")] = '\0';
	if (*p && p[strlen(p) - 1] == '|')
		p[strlen(p) - 1] = '\0';
	rb_strlcpy(id->account, strcmp(p, "(null)") ? p : "", sizeof(id->account));
	return 0;
}

/* Ask who the job at j->addr is. CLI_OK, CLI_ENOTFOUND or CLI_EDATA. */
static int ask_ident(ctl_job *j)
{
	char out[4 * RB_NAME_MAX];
	const char *args[] = { "--noheader", "--states=all", "--jobs", j->addr,
			       "--Format=JobID:0|,UserName:0|,Partition:0|,Account:0|",
			       NULL };
	rb_err err;

	if (cli_slurm_run("squeue", args, j->c.deadline, out, sizeof(out),
			  &err) < 0) {
		if (strstr(err.msg, "Invalid job id"))
			return CLI_ENOTFOUND;
		cli_error("job %s: squeue: %s", j->addr, err.msg);
		return CLI_EDATA;
	}
	if (!out[0])
		return CLI_ENOTFOUND;
	if (strchr(out, '\n') && strchr(out, '\n')[1] != '\0') {
		cli_error("job %s: squeue listed more than one job", j->addr);
		return CLI_EDATA;
	}
	if (parse_ident(out, &j->ident) < 0) {
		cli_error("job %s: unexpected squeue output", j->addr);
		return CLI_EDATA;
	}
	return CLI_OK;
}

/* How to reach the controller, and the job's address (a job, or one task
 * "A_T"). */
static void ctl_setup(ctl_job *j, const cli_ctx *ctx, const rb_job_arg *ref)
{
	j->c.bindir = cli_slurm_bindir();
	j->c.slurm_conf = cli_slurm_conf();
	j->c.deadline = rb_deadline_in(CTL_DEADLINE_MS);
	if (ref->task)
		snprintf(j->addr, sizeof(j->addr), "%" PRIu32 "_%" PRIu32,
			 ref->id, ref->task_id);
	else
		snprintf(j->addr, sizeof(j->addr), "%" PRIu32, ref->id);
	rb_record_init(&j->ident);
	rb_strlcpy(j->ident.cluster, ctx->cluster, sizeof(j->ident.cluster));
}

/* The job ref names (a job, or one task "A_T"), opened as a store, and its
 * record read into rec. CLI_OK; CLI_ENOTFOUND (message said) or CLI_EDATA. */
static int ctl_open(const cli_ctx *ctx, const rb_job_arg *ref, ctl_job *j,
		    rb_record *rec)
{
	rb_comment_io io = { ctl_read, ctl_write, j };
	rb_err err;
	int rc;

	memset(j, 0, sizeof(*j));
	ctl_setup(j, ctx, ref);
	rc = ask_ident(j);
	if (rc == CLI_ENOTFOUND)
		cli_error("job %s: the controller does not list it (no such job, or it ended more than MinJobAge ago; where accounting is on, its last line is in `sacct -j %s -o AdminComment%%1000`)",
			  j->addr, j->addr);
	if (rc != CLI_OK)
		return rc;
	if (ref->task) {
		j->ident.array_job_id = ref->id;
		j->ident.array_task_id = ref->task_id;
	}
	j->job = rb_job_ref_of(j->ident.job_id, j->ident.array_job_id,
			       j->ident.array_task_id);
	j->st = rb_store_line_init(&j->line, &j->ident, &io);
	rc = j->st->ops->load(j->st, j->ident.job_id, rec, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return CLI_EDATA;
	}
	if (rc == 1) {
		cli_error("job %s: no budget line in its AdminComment (not tracked, or not started yet)",
			  j->addr);
		return CLI_ENOTFOUND;
	}
	return CLI_OK;
}

int cli_ctl_show(cli_ctx *ctx, const rb_job_arg *ref)
{
	static ctl_job j;
	static rb_record rec;
	int rc = ctl_open(ctx, ref, &j, &rec);

	return rc == CLI_OK ? cli_show_record(ctx, &rec) : rc;
}

int cli_ctl_grant(cli_ctx *ctx, const rb_job_arg *ref, int failures)
{
	static ctl_job j;
	static rb_record rec;
	char by[RB_NAME_MAX];
	int before, rc;
	rb_err err;

	rc = ctl_open(ctx, ref, &j, &rec);
	if (rc != CLI_OK)
		return rc;
	if (cli_ctl_ended(j.info.state)) {
		cli_error("job %s has ended (state %s): there is no budget left to grant",
			  j.addr, j.info.state);
		return CLI_EDATA;
	}
	before = rec.budget.granted;
	cli_invoking_user(by, sizeof(by));
	if (rb_lifecycle_grant_in(j.st, j.ident.job_id, failures, by, &err) < 0 ||
	    j.st->ops->load(j.st, j.ident.job_id, &rec, &err) != 0) {
		cli_error("job %s: %s", j.addr, err.msg);
		return CLI_EDATA;
	}
	return cli_grant_report(j.ident.job_id, before, &rec);
}

int cli_ctl_gc(const cli_ctx *ctx)
{
	if (ctx->cfg->store != RB_STORE_CONTROLLER)
		return -1;
	printf("store = \"controller\": nothing to collect (each budget is a line of its job's AdminComment and goes with the job's record)\n");
	return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
}

/* --- explain: one row per run, from accounting --------------------------------- */

/* One run as sacct keeps it: its state and exit code, and the record its
 * AdminComment's budget line held when the run ended (found: it had one). */
typedef struct {
	char state[32], exit_code[16];
	bool found;
	rb_record rec;
} ctl_run;

/* Run sacct for the job at j->addr into out: 0, 1 (no accounting), -1. */
static int ask_sacct(ctl_job *j, char *out, size_t len)
{
	const char *args[] = { "--noheader", "-D", "-X", "-P", "-j", j->addr,
			       "-o", "JobID,State,ExitCode,AdminComment", NULL };
	rb_err err;

	if (cli_slurm_run("sacct", args, j->c.deadline, out, len, &err) == 0)
		return strstr(out, "accounting storage is disabled") ? 1 : 0;
	if (strstr(err.msg, "accounting storage is disabled"))
		return 1;
	cli_error("job %s: sacct: %s", j->addr, err.msg);
	return -1;
}

/* rec's budget from the budget line in comment: found and whole? */
static bool budget_of(const char *comment, rb_record *rec)
{
	const char *at;
	size_t n;
	rb_err err;

	return rb_budget_line_find(comment, &at, &n) == 1 &&
	       rb_budget_line_parse(at, n, rec, &err) == 0;
}

/* The next run's row in text at *p ("ADDR|STATE|EXIT|comment", the
 * comment up to the next row's head or the end): 1 read, 0 none left. */
static int next_run(const ctl_job *j, char **p, ctl_run *run)
{
	size_t hn = strlen(j->addr);
	char *row = *p, *end, *f, *bar;

	while (*row && !(strncmp(row, j->addr, hn) == 0 && row[hn] == '|')) {
		char *nl = strchr(row, '\n');

		row = nl ? nl + 1 : row + strlen(row);
	}
	if (!*row)
		return 0;
	for (end = strchr(row, '\n'); end; end = strchr(end + 1, '\n'))
		if (strncmp(end + 1, j->addr, hn) == 0 && end[1 + hn] == '|')
			break;
	*p = end ? end + 1 : row + strlen(row);
	if (end)
		*end = '\0';
	memset(run, 0, sizeof(*run));
	f = row + hn + 1;
	for (int i = 0; i < 2 && (bar = strchr(f, '|')); i++, f = bar + 1) {
		*bar = '\0';
		rb_strlcpy(i == 0 ? run->state : run->exit_code, f,
			   i == 0 ? sizeof(run->state) : sizeof(run->exit_code));
	}
	run->rec = j->ident;
	run->found = budget_of(f, &run->rec);
	return 1;
}

/* One run as a text row: what its line held when it ended. */
static void print_run(int i, const ctl_run *run)
{
	const rb_budget *b = &run->rec.budget;
	const rb_attempt *a = &b->cur;
	char end[48], fm[48];

	if (!run->found) {
		printf("%-4d %-12s %-7s (no budget line: untracked, or not readable)\n",
		       i, run->state, run->exit_code);
		return;
	}
	if (a->end == RB_END_NONE)
		snprintf(end, sizeof(end), "none (the controller ended it)");
	else
		rb_end_format(a->end, a->end_code, end, sizeof(end));
	cli_format_fm(b, &a->limits, fm, sizeof(fm));
	printf("%-4d %-12s %-7s %-8" PRId64 " %-10s %-9s %-31s %-7s %d/%d%s\n", i,
	       run->state, run->exit_code, a->attempt, rb_phase_name(a->phase),
	       rb_confirm_name(a->confirmed), end, fm, b->restore_failures,
	       a->limits.restore_retry_num, a->refused ? "  refused" : "");
}

static json_object *json_run(int i, const ctl_run *run)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "run", json_object_new_int(i));
	json_object_object_add(o, "state", cli_json_string(run->state));
	json_object_object_add(o, "exit_code", cli_json_string(run->exit_code));
	json_object_object_add(o, "record", run->found ?
			       cli_json_record(&run->rec) : NULL);
	return o;
}

/* Every run sacct keeps of the job, oldest first. */
static int explain_runs(cli_ctx *ctx, ctl_job *j, char *text)
{
	static ctl_run run;
	json_object *o = NULL, *runs = NULL;
	char *p = text;
	int i = 0;

	if (ctx->json) {
		o = json_object_new_object();
		runs = json_object_new_array();
		json_object_object_add(o, "job", cli_json_string(j->addr));
		json_object_object_add(o, "cluster", cli_json_string(ctx->cluster));
		json_object_object_add(o, "store", cli_json_string("controller"));
	} else {
		printf("job %s on cluster %s: each run as accounting keeps it, with its budget line at the run's end (store = \"controller\")\n",
		       j->addr, ctx->cluster);
		printf("%-4s %-12s %-7s %-8s %-10s %-9s %-31s %-7s %s\n", "run",
		       "state", "exit", "attempt", "phase", "confirmed",
		       "end", "F/M", "r/R");
	}
	while (next_run(j, &p, &run)) {
		i++;
		if (runs)
			json_object_array_add(runs, json_run(i, &run));
		else
			print_run(i, &run);
	}
	if (o) {
		json_object_object_add(o, "runs", runs);
		return cli_json_print(o) < 0 ? CLI_EDATA : CLI_OK;
	}
	if (i == 0)
		printf("(accounting has no run of it yet: a running job's row appears when that run ends)\n");
	return fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
}

int cli_ctl_explain(cli_ctx *ctx, const rb_job_arg *ref)
{
	static ctl_job j;
	static char text[256 * 1024];
	int rc;

	memset(&j, 0, sizeof(j));
	ctl_setup(&j, ctx, ref);
	rc = ask_ident(&j);
	if (rc == CLI_EDATA)
		return rc;
	rc = ask_sacct(&j, text, sizeof(text));
	if (rc < 0)
		return CLI_EDATA;
	if (rc == 1) {
		cli_error("job %s: this cluster keeps no accounting (AccountingStorageType): no run but the current one is known; `restore-budget show %s` gives it",
			  j.addr, j.addr);
		return CLI_ENOTFOUND;
	}
	return explain_runs(ctx, &j, text);
}
