/*
 * cli_list.c - `restore-budget list`: one line per job with a budget (the
 * ledger's records, or with store = "controller" the jobs whose
 * AdminComment has a budget line: cli_ctl_rows.c).
 *
 * A record that cannot be read (corrupt, torn, unknown version) is listed
 * as "corrupt: <reason>" whatever the filters (its user and state are
 * unknown), every other record is still listed, and the exit code is 1 so
 * that a cron job or a monitoring check notices.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const cli_list_opts *opts;
	rb_ledger *ledger;
	rb_record *rec;
	json_object *jobs, *errors;   /* --json */
	size_t shown, corrupt, hidden;
} list_state;

static bool wanted(const list_state *st, const rb_record *rec,
		   cli_state state)
{
	const char *want = st->opts->state;

	if (st->opts->user && strcmp(st->opts->user, rec->user) != 0)
		return false;
	if (want && strcmp(want, "all") != 0 &&
	    strcmp(want, cli_state_names[state]) != 0)
		return false;
	return true;
}

#define ROW_FMT "%-12s %-12s %7s  %-9s  %-9s  %-9s %-5s %s\n"

void cli_list_header(void)
{
	printf(ROW_FMT, "JOB", "USER", "ATTEMPT", "STATE", "PHASE", "F/M",
	       "r/R", "LEFT");
}

/* The JOB column: the job id, or ARRAY_TASK for an array task. */
void cli_list_row(const rb_record *rec, cli_state state)
{
	const rb_budget *b = &rec->budget;
	char user[RB_NAME_MAX * 3], fm[48], rr[32], left[32], attempt[24];
	char addr[RB_JOB_ADDR_MAX];

	cli_format_fm(b, &b->cur.limits, fm, sizeof(fm));
	snprintf(rr, sizeof(rr), "%d/%d", b->restore_failures,
		 b->cur.limits.restore_retry_num);
	cli_format_left(b, left, sizeof(left));
	if (b->cur.attempt >= 0)
		snprintf(attempt, sizeof(attempt), "%" PRId64, b->cur.attempt);
	else
		snprintf(attempt, sizeof(attempt), "-");
	printf(ROW_FMT, cli_rec_addr(rec, addr),
	       cli_safe(rec->user[0] ? rec->user : "?", user, sizeof(user)),
	       attempt, cli_state_names[state], rb_phase_name(b->cur.phase), fm,
	       rr, left);
}

/* One row, shown if wanted; a corrupt one whatever the filters. */
static int take_row(const cli_row *row, void *vctx)
{
	list_state *st = vctx;
	cli_state state;

	if (row->corrupt) {
		st->corrupt++;
		if (st->errors) {
			json_object_array_add(st->errors,
				cli_json_pair("job_id", json_object_new_int64(row->job_id),
					      "corrupt", cli_json_string(row->corrupt)));
		} else {
			char safe[RB_ERR_MAX * 3];

			printf("%-10" PRIu32 " corrupt: %s\n", row->job_id,
			       cli_safe(row->corrupt, safe, sizeof(safe)));
		}
		return 0;
	}
	state = cli_row_state(row);
	if (!wanted(st, row->rec, state))
		return 0;
	st->shown++;
	if (st->jobs)
		json_object_array_add(st->jobs, cli_json_summary(row->rec, state));
	else
		cli_list_row(row->rec, state);
	return 0;
}

/* Count a row without showing it (list JOB's first look). */
static int count_row(const cli_row *row, void *vctx)
{
	list_state *st = vctx;

	if (row->corrupt)
		st->corrupt++;
	else
		st->shown++;
	return 0;
}

/* One job of the shared-directory ledger. */
static int on_job(uint32_t job_id, void *vctx)
{
	list_state *st = vctx;

	return cli_ledger_row(st->ledger, job_id, st->rec, take_row, st,
			      &st->hidden);
}

/* The rows: every record, or (list JOB) the target's, by task id, and
 * its tasks not started yet. */
static int list_rows(list_state *st, const cli_target *t, json_object *out)
{
	rb_err err;

	if (t) {
		for (size_t i = 0; i < t->n; i++)
			on_job(t->tasks[i].job_id, st);
		cli_target_end(t, out);
		return CLI_OK;
	}
	if (rb_ledger_jobs(st->ledger, on_job, st, &err) < 0) {
		cli_error("%s", err.msg);
		return CLI_EDATA;
	}
	return CLI_OK;
}

/* What the listing found: the notes on stderr, the JSON on stdout. */
static int list_finish(cli_ctx *ctx, list_state *st, json_object *out, int rc)
{
	if (st->hidden > 0)
		cli_error("%zu record%s of other users' jobs not shown (readable by root and each job's group only)",
			  st->hidden, st->hidden == 1 ? "" : "s");
	if (st->corrupt > 0) {
		cli_error("%zu record%s could not be read (listed as corrupt)",
			  st->corrupt, st->corrupt == 1 ? "" : "s");
		rc = CLI_EDATA;
	}
	if (ctx->json) {
		json_object_object_add(out, "cluster",
				       cli_json_string(ctx->cluster));
		json_object_object_add(out, "jobs", st->jobs);
		json_object_object_add(out, "corrupt", st->errors);
		if (cli_json_print(out) < 0)
			rc = CLI_EDATA;
	} else if (fflush(stdout) != 0) {
		rc = CLI_EDATA;
	}
	return rc;
}

/* The listing's start: the JSON objects, or the table's header. */
static void list_begin(const cli_ctx *ctx, list_state *st, json_object **out)
{
	if (ctx->json) {
		st->jobs = json_object_new_array();
		st->errors = json_object_new_array();
		*out = json_object_new_object();
	} else {
		cli_list_header();
	}
}

/* store = "controller": the jobs the controller holds (docs/stores.md).
 * list JOB that finds no budget line prints no table. */
static int list_controller(cli_ctx *ctx, list_state *st)
{
	json_object *out = NULL;
	char addr[RB_JOB_ADDR_MAX];
	int rc;

	if (st->opts->job) {
		list_state probe = { .opts = &(cli_list_opts){ .state = "all" } };

		if (cli_ctl_rows(ctx, st->opts->job, true, count_row, &probe) < 0)
			return CLI_EDATA;
		if (probe.shown + probe.corrupt == 0) {
			cli_error("job %s: no budget line for it in the controller or in accounting (not tracked, not started yet, or no such job)",
				  cli_ref_text(st->opts->job, addr));
			return CLI_ENOTFOUND;
		}
	}
	list_begin(ctx, st, &out);
	rc = cli_ctl_rows(ctx, st->opts->job, true, take_row, st) < 0 ? CLI_EDATA :
								  CLI_OK;
	return list_finish(ctx, st, out, rc);
}

int cli_cmd_list(cli_ctx *ctx, const cli_list_opts *opts)
{
	list_state st = { .opts = opts };
	cli_target t = { 0 };
	json_object *out = NULL;
	int r, rc = CLI_OK;

	if (ctx->cfg->store == RB_STORE_CONTROLLER)
		return list_controller(ctx, &st);
	r = cli_open_scan(ctx, RB_LEDGER_READ, &st.ledger, &st.rec);
	if (r < 0)
		return CLI_EDATA;
	/* list JOB: what JOB names first, so that a bad one prints no table */
	if (opts->job) {
		rc = r == 1 ? CLI_ENOTFOUND : cli_resolve(ctx, opts->job, true, &t);
		if (rc == CLI_ENOTFOUND)
			rc = cli_not_found(ctx, opts->job);
	}
	if (rc == CLI_OK) {
		list_begin(ctx, &st, &out);
		if (r == 0)
			rc = list_rows(&st, opts->job ? &t : NULL, out);
		rc = list_finish(ctx, &st, out, rc);
	}
	cli_target_free(&t);
	rb_ledger_close(st.ledger);
	free(st.rec);
	return rc;
}
