/* cli_show.c - `restore-budget show JOB`: one job's budget at a glance. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_MAX (3 * RB_PATH_MAX + 1)

static void kv(const char *key, const char *value)
{
	int pad = 16 - (int)strlen(key) - 1;

	printf("%s:%*s %s\n", key, pad > 0 ? pad : 0, "", value);
}

static void kv_safe(const char *key, const char *value, const char *empty)
{
	char *safe = malloc(SAFE_MAX);

	if (!safe) {
		kv(key, "?");
		return;
	}
	kv(key, value && value[0] ? cli_safe(value, safe, SAFE_MAX) : empty);
	free(safe);
}

static void format_limits(const rb_limits *l, char *buf, size_t len)
{
	char m[24];

	if (l->max_failures < 0)
		snprintf(m, sizeof(m), "unlimited");
	else
		snprintf(m, sizeof(m), "%d", l->max_failures);
	snprintf(buf, len,
		 "max_failures=%s restore_retry_num=%d restore_timeout=%d "
		 "accounting=%s count_preemptions=%s",
		 m, l->restore_retry_num, l->restore_timeout,
		 rb_accounting_name(l->accounting),
		 l->count_preemptions ? "true" : "false");
	/* only when set: the line stays as it was for configs without it */
	if (l->max_interruptions >= 0 && strlen(buf) + 32 < len)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 " max_interruptions=%d", l->max_interruptions);
}

/* Why a spent budget is spent, when it is not the failure count:
 * ": exit code 3 is fatal (exit_rules)", or "". */
static void spent_cause(const rb_budget *b, char *buf, size_t len)
{
	switch (rb_engine_exhaustion(b, &b->cur.limits)) {
	case RB_SPENT_FATAL:
		snprintf(buf, len, ": exit code %d is fatal (exit_rules)",
			 b->fatal_code);
		break;
	case RB_SPENT_INTERRUPTIONS:
		snprintf(buf, len, ": interruptions %" PRId64 " > max_interruptions %" PRId64,
			 b->interruptions,
			 (int64_t)b->cur.limits.max_interruptions + b->granted);
		break;
	default:
		buf[0] = '\0';
		break;
	}
}

static const char *exhausted_text(const rb_record *rec, char *buf, size_t len)
{
	const rb_budget *b = &rec->budget;
	bool now = b->cur.attempt >= 0 &&
		   rb_engine_is_exhausted(b, &b->cur.limits);
	char cause[128];

	spent_cause(b, cause, sizeof(cause));

	if (b->exhausted && !now)
		snprintf(buf, len, "yes (attempt %" PRId64 " was refused; a "
			 "grant since leaves budget: requeue the job to go on)",
			 b->cur.attempt);
	else if (b->exhausted)
		snprintf(buf, len, "yes (attempt %" PRId64 " was refused%s)",
			 b->cur.attempt, cause);
	else
		snprintf(buf, len, "no");
	return buf;
}

/*
 * How the previous attempt ended, as charged ("interrupted", "failed:1"),
 * or "none": the record's prev_end, written by the charge (engine.c).
 */
static void last_end(const rb_record *rec, char *buf, size_t len)
{
	const rb_budget *b = &rec->budget;

	if (b->prev_end != RB_END_NONE)
		rb_end_format(b->prev_end, b->prev_end_code, buf, len);
	else
		snprintf(buf, len, "none");
}

static const char *last_end_text(const rb_record *rec,
				 char *buf, size_t len)
{
	char what[48];

	last_end(rec, what, sizeof(what));
	if (strcmp(what, "none") == 0)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s (attempt %" PRId64 ")", what,
			 rec->budget.cur.attempt - 1);
	return buf;
}

/* Whose job it is and where it runs. */
static void print_identity(const rb_record *rec)
{
	char buf[512];
	char user[RB_NAME_MAX * 3], part[RB_NAME_MAX * 3], acct[RB_NAME_MAX * 3];

	kv_safe("cluster", rec->cluster, "-");
	if (rec->array_job_id != 0)
		snprintf(buf, sizeof(buf), "%" PRIu32 " (array task %" PRIu32
			 "_%" PRIu32 ")", rec->job_id, rec->array_job_id,
			 rec->array_task_id);
	else
		snprintf(buf, sizeof(buf), "%" PRIu32, rec->job_id);
	kv("job", buf);
	snprintf(buf, sizeof(buf), "%s (uid %" PRIu32 ")",
		 cli_safe(rec->user[0] ? rec->user : "?", user, sizeof(user)),
		 rec->uid);
	kv("user", buf);
	snprintf(buf, sizeof(buf), "%s / %s",
		 cli_safe(rec->partition[0] ? rec->partition : "-", part,
			  sizeof(part)),
		 cli_safe(rec->account[0] ? rec->account : "-", acct,
			  sizeof(acct)));
	kv("partition/acct", buf);
}

/* Is the record's current attempt without an end, of a job Slurm no longer
 * lists? Then its end was lost (docs/architecture.md, "An end not
 * written"): the job is not running, whatever the record says. Asked only
 * of such a record; no answer counts as no. */
static bool end_lost(const rb_record *rec)
{
	const rb_attempt *a = &rec->budget.cur;
	char why[RB_ERR_MAX];

	if (a->attempt < 0 || a->end != RB_END_NONE || a->refused)
		return false;
	return cli_slurm_lists_job(rec, why, sizeof(why)) == 0;
}

/* The current attempt: its number and start, phase, and how it ended. */
static void print_attempt(const rb_attempt *a, bool lost)
{
	char buf[512], t1[32], t2[32], d[32], end[96];

	if (a->attempt < 0) {
		kv("attempt", "none recorded");
		return;
	}
	cli_format_time(a->start_time, t1, sizeof(t1));
	snprintf(buf, sizeof(buf), "%" PRId64 " (started %s)", a->attempt, t1);
	kv("attempt", buf);
	if (a->confirmed != RB_CONFIRM_NONE)
		snprintf(buf, sizeof(buf), "%s (restore confirmed: %s)",
			 rb_phase_name(a->phase), rb_confirm_name(a->confirmed));
	else
		snprintf(buf, sizeof(buf), "%s", rb_phase_name(a->phase));
	kv("phase", buf);
	if (a->end == RB_END_NONE) {
		kv("ended", a->refused ? "no end recorded (refused)" :
			    lost ? "its end was lost: no end recorded, and Slurm no longer lists the job" :
				   "no end recorded (running, or its node died)");
		return;
	}
	rb_end_format(a->end, a->end_code, end, sizeof(end));
	cli_format_time(a->end_time, t2, sizeof(t2));
	cli_format_duration(a->end_time - a->start_time, d, sizeof(d));
	snprintf(buf, sizeof(buf), "%s at %s (ran %s)", end, t2, d);
	kv("ended", buf);
}

/* The budget: counters, what is left, the checkpoint, limits and totals. */
static void print_budget(const rb_record *rec)
{
	const rb_budget *b = &rec->budget;
	const rb_limits *l = &b->cur.limits;
	char buf[512], end[96], t1[32];

	cli_format_fm(b, l, buf, sizeof(buf));
	kv("failures F/M", buf);
	snprintf(buf, sizeof(buf), "%d/%d", b->restore_failures,
		 l->restore_retry_num);
	kv("restores r/R", buf);
	snprintf(buf, sizeof(buf), "%d", b->granted);
	kv("granted", buf);
	cli_format_left(b, buf, sizeof(buf));
	kv("restores_left", buf);
	kv("exhausted", exhausted_text(rec, buf, sizeof(buf)));
	kv_safe("checkpoint", b->checkpoint, "(none found yet)");
	cli_show_fallback(rec);
	kv("last end", last_end_text(rec, end, sizeof(end)));
	format_limits(l, buf, sizeof(buf));
	kv("limits", buf);
	snprintf(buf, sizeof(buf), "%" PRId64 " interruptions, %" PRId64
		 " failed restores, %" PRId64 " failures charged",
		 b->interruptions, b->restore_failures_total, b->failures_total);
	if (b->fatal_exits || b->interruption_cap_refusals)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
			 ", %" PRId64 " fatal exit codes, %" PRId64
			 " interruption cap refusals", b->fatal_exits,
			 b->interruption_cap_refusals);
	kv("totals", buf);
	cli_format_time(rec->updated, t1, sizeof(t1));
	kv("updated", t1);
}

static int show_one(cli_ctx *ctx, uint32_t job_id)
{
	rb_record *rec;
	int rc = cli_read_job(ctx, job_id, &rec);

	if (rc != CLI_OK)
		return rc;
	rc = cli_show_record(ctx, rec);
	free(rec);
	return rc;
}

int cli_show_record(cli_ctx *ctx, const rb_record *rec)
{
	bool lost = end_lost(rec);
	int rc;

	if (ctx->json) {
		json_object *o = cli_json_record(rec);
		char end[48];

		last_end(rec, end, sizeof(end));
		json_object_object_add(o, "last_end", cli_json_string(end));
		json_object_object_add(o, "end_lost", json_object_new_boolean(lost));
		if (lost)
			json_object_object_add(o, "state", cli_json_string("ended"));
		rc = cli_json_print(o) < 0 ? CLI_EDATA : CLI_OK;
	} else {
		print_identity(rec);
		print_attempt(&rec->budget.cur, lost);
		print_budget(rec);
		rc = fflush(stdout) == 0 ? CLI_OK : CLI_EDATA;
	}
	return rc;
}

/* --- a job array: the sweep overview -------------------------------------------- */

typedef struct {
	int64_t counts[CLI_ST_COUNT];
	json_object *tasks;  /* --json */
} overview;

static void count_task(const rb_record *rec, void *arg)
{
	overview *ov = arg;

	ov->counts[cli_job_state_id(rec)]++;
}

static void row_task(const rb_record *rec, void *arg)
{
	overview *ov = arg;

	if (ov->tasks)
		json_object_array_add(ov->tasks,
				      cli_json_summary(rec, cli_job_state_id(rec)));
	else
		cli_list_row(rec, cli_job_state_id(rec));
}

static json_object *json_counts(const int64_t *counts)
{
	json_object *o = json_object_new_object();

	for (int s = 0; s < CLI_ST_COUNT; s++)
		json_object_object_add(o, cli_state_names[s],
				       json_object_new_int64(counts[s]));
	return o;
}

/* One row per task with a record, by task id, then the tasks squeue
 * lists as not started (contrib/cli/README.md, "Job arrays"). */
static int show_array(cli_ctx *ctx, const cli_target *t)
{
	overview ov = { { 0 }, NULL };
	json_object *o;
	size_t bad;

	cli_each_task(ctx, t, true, count_task, &ov);
	if (ctx->json) {
		ov.tasks = json_object_new_array();
		bad = cli_each_task(ctx, t, false, row_task, &ov);
		o = json_object_new_object();
		json_object_object_add(o, "cluster", cli_json_string(ctx->cluster));
		json_object_object_add(o, "array_job_id",
				       json_object_new_int64(t->ref.id));
		json_object_object_add(o, "counts", json_counts(ov.counts));
		json_object_object_add(o, "tasks", ov.tasks);
		cli_target_end(t, o);
		return cli_json_print(o) < 0 || bad ? CLI_EDATA : CLI_OK;
	}
	printf("array %" PRIu32 " on cluster %s: %zu task%s with a record: "
	       "%" PRId64 " running, %" PRId64 " restoring, %" PRId64
	       " exhausted, %" PRId64 " ended\n", t->ref.id, ctx->cluster,
	       t->n, t->n == 1 ? "" : "s", ov.counts[CLI_ST_RUNNING],
	       ov.counts[CLI_ST_RESTORING], ov.counts[CLI_ST_EXHAUSTED],
	       ov.counts[CLI_ST_ENDED]);
	cli_list_header();
	bad = cli_each_task(ctx, t, false, row_task, &ov);
	cli_target_end(t, NULL);
	return fflush(stdout) != 0 || bad ? CLI_EDATA : CLI_OK;
}

int cli_cmd_show(cli_ctx *ctx, const rb_job_arg *ref)
{
	cli_target t;
	int rc;

	if (ctx->cfg->store == RB_STORE_CONTROLLER)
		return cli_ctl_show(ctx, ref);
	rc = cli_resolve(ctx, ref, true, &t);

	if (rc == CLI_ENOTFOUND)
		rc = cli_not_found(ctx, ref);
	else if (rc == CLI_OK)
		rc = t.array ? show_array(ctx, &t) :
			       show_one(ctx, t.tasks[0].job_id);
	cli_target_free(&t);
	return rc;
}
