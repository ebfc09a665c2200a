/*
 * cli_ctl_rows.c - store = "controller" (docs/stores.md): the jobs `list`
 * and `metrics` read, from one squeue of every job the controller holds
 * (live, and ended less than MinJobAge ago) with its AdminComment; for
 * `list`, where accounting is on, also one sacct of the jobs the
 * controller no longer holds (each job's last run, with the AdminComment
 * it ended with).
 *
 * An AdminComment may hold any byte (a site's own text, newlines included)
 * and a user names his account freely, so no byte of the output can tell
 * two fields or two rows apart by itself. Every field is closed with a
 * separator drawn at random for this one call (getrandom: nobody can have
 * put it into a comment or an account beforehand); a row is its fields and
 * a newline. Text that does not split into whole rows is an error, never a
 * guess.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rule/rule.h"

#define ROWS_DEADLINE_MS 30000
#define ROWS_TEXT_MAX (64u << 20)   /* 64 MiB: about 100,000 jobs */

/* The fields asked for, in order; the comment is last. squeue's names,
 * then sacct's for the same. */
enum { F_JOB, F_ADDR, F_USER, F_PART, F_STATE, F_ACCOUNT, F_COMMENT, F_N };
static const char *const squeue_fields[F_N] = {
	"JobID", "JobArrayID", "UserName", "Partition", "StateCompact",
	"Account", "admin_comment",
};
#define SACCT_FIELDS "JobIDRaw,JobID,User,Partition,State,Account,AdminComment"

/* The job ids squeue listed (sorted: squeue --sort=i), which sacct's rows
 * must not repeat. */
typedef struct {
	uint32_t *ids;
	size_t n, cap;
} id_set;

/* "--Format=JobID:0S,...,admin_comment:0S" with separator sep. */
static char *format_arg(const char *sep)
{
	size_t n = strlen("--Format=") + F_N * (strlen(sep) + 24);
	char *arg = malloc(n);
	size_t off;

	if (!arg)
		return NULL;
	off = (size_t)snprintf(arg, n, "--Format=");
	for (int i = 0; i < F_N; i++)
		off += (size_t)snprintf(arg + off, n - off, "%s%s:0%s",
					i ? "," : "", squeue_fields[i], sep);
	return arg;
}

/* Run tool (squeue, sacct) with args into a malloc'ed *text. 0, or -1
 * with err set. */
static int ask(const char *tool, const char *const args[], char **text,
	       rb_err *err)
{
	*text = malloc(ROWS_TEXT_MAX);
	if (!*text)
		return rb_err_set(err, "out of memory");
	if (cli_slurm_run(tool, args, rb_deadline_in(ROWS_DEADLINE_MS), *text,
			  ROWS_TEXT_MAX, err) != 0)
		return -1;
	if (strlen(*text) >= ROWS_TEXT_MAX - 1)
		return rb_err_set(err, "more than %u MiB of jobs; list fewer (list JOB)",
				  ROWS_TEXT_MAX >> 20);
	return 0;
}

/* Split the row at *p into its F_N fields (NUL-terminated in place) and
 * step *p past it. 1 a row, 0 no text left, -1 not a whole row. */
static int split_row(char **p, const char *sep, char *field[F_N])
{
	size_t sl = strlen(sep);
	char *at = *p, *end;

	if (!*at)
		return 0;
	for (int i = 0; i < F_N; i++) {
		end = strstr(at, sep);
		if (!end)
			return -1;
		*end = '\0';
		field[i] = at;
		at = end + sl;
	}
	if (*at != '\n')
		return -1;
	*p = at + 1;
	return 1;
}

bool cli_ctl_ended(const char *state)
{
	/* the states whose AdminComment the controller still lets an admin
	 * write (docs/stores.md); COMPLETING and every end refuse it */
	static const char *const live[] = { "PD", "R", "S", "RQ", "RH", "RS",
					    "SE", "CF", "ST", "RD", "RF",
					    NULL };

	for (size_t i = 0; live[i]; i++)
		if (strcmp(state, live[i]) == 0)
			return false;
	return true;
}

/* The job id of a row's first field, or 0 when it is none. */
static uint32_t row_job_id(const char *text)
{
	unsigned long id;
	char *end;

	errno = 0;
	id = strtoul(text, &end, 10);
	if (errno || end == text || *end || !isdigit((unsigned char)*text) ||
	    id > UINT32_MAX)
		return 0;
	return (uint32_t)id;
}

/* The record of one row. 1 a row to give, 0 a job without a budget line
 * (untracked, not started yet). */
static int row_record(char *field[F_N], uint32_t job_id, bool ended,
		      const cli_ctx *ctx, rb_record *rec, cli_row *row,
		      rb_err *err)
{
	rb_job_arg addr;
	const char *at;
	size_t n;

	if (rb_budget_line_find(field[F_COMMENT], &at, &n) != 1)
		return 0;
	rb_record_init(rec);
	rec->job_id = job_id;
	if (rb_job_arg_parse(field[F_ADDR], &addr) == 0 && addr.task) {
		rec->array_job_id = addr.id;
		rec->array_task_id = addr.task_id;
	}
	rb_strlcpy(rec->cluster, ctx->cluster, sizeof(rec->cluster));
	rb_strlcpy(rec->user, field[F_USER], sizeof(rec->user));
	rb_strlcpy(rec->partition, field[F_PART], sizeof(rec->partition));
	rb_strlcpy(rec->account, strcmp(field[F_ACCOUNT], "(null)") ?
		   field[F_ACCOUNT] : "", sizeof(rec->account));
	memset(row, 0, sizeof(*row));
	row->job_id = job_id;
	row->ended = ended;
	if (rb_budget_line_parse(at, n, rec, err) < 0)
		row->corrupt = err->msg;
	else
		row->rec = rec;
	return 1;
}

static int add_id(id_set *seen, uint32_t id)
{
	if (seen->n == seen->cap) {
		size_t cap = seen->cap ? seen->cap * 2 : 256;
		uint32_t *ids = realloc(seen->ids, cap * sizeof(*ids));

		if (!ids)
			return -1;
		seen->ids = ids;
		seen->cap = cap;
	}
	seen->ids[seen->n++] = id;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Give each row of text (tool's output) to fn: squeue's rows are the
 * controller's jobs (their ids into seen), sacct's the ended jobs not in
 * seen. 0, or -1 (message said). */
static int give_rows(const cli_ctx *ctx, char *text, const char *sep,
		     const char *tool, id_set *seen, cli_row_fn fn, void *arg)
{
	static rb_record rec;
	bool from_squeue = strcmp(tool, "squeue") == 0;
	char *p = text, *field[F_N];
	uint32_t id;
	cli_row row;
	rb_err err;
	int r;

	while ((r = split_row(&p, sep, field)) == 1) {
		id = row_job_id(field[F_JOB]);
		if (id == 0) {
			r = -1;
			break;
		}
		if (from_squeue && add_id(seen, id) < 0) {
			cli_error("out of memory");
			return -1;
		}
		if (!from_squeue && seen->n > 0 &&
		    bsearch(&id, seen->ids, seen->n, sizeof(id), cmp_id))
			continue; /* the controller's row of it was given */
		if (row_record(field, id, from_squeue ?
			       cli_ctl_ended(field[F_STATE]) : true,
			       ctx, &rec, &row, &err) == 1 &&
		    fn(&row, arg) != 0)
			return 0;
	}
	if (r < 0) {
		cli_error("%s: unexpected output (not a row of %d fields)", tool, F_N);
		return -1;
	}
	if (from_squeue && seen->n > 1)
		qsort(seen->ids, seen->n, sizeof(*seen->ids), cmp_id);
	return 0;
}

/* The controller's rows (squeue) into fn; their ids into seen. */
static int squeue_rows(const cli_ctx *ctx, const rb_job_arg *job,
		       const char *sep, id_set *seen, cli_row_fn fn, void *arg)
{
	char ids[RB_JOB_ADDR_MAX], *fmt = format_arg(sep), *text = NULL;
	const char *args[] = { "--noheader", "--states=all", "--sort=i", fmt,
			       job ? "--jobs" : NULL,
			       job ? cli_ref_text(job, ids) : NULL, NULL };
	rb_err err;
	int rc = -1;

	if (!fmt)
		cli_error("out of memory");
	else if (ask("squeue", args, &text, &err) == 0)
		rc = give_rows(ctx, text, sep, "squeue", seen, fn, arg);
	else if (job && strstr(err.msg, "Invalid job id"))
		rc = 0; /* the controller no longer holds it */
	else
		cli_error("squeue: %s", err.msg);
	free(text);
	free(fmt);
	return rc;
}

/* Accounting's rows (sacct: each job's last run, since midnight unless
 * job is given) of the jobs not in seen, into fn. 0 also when the cluster
 * keeps no accounting; -1 (message said) when sacct fails. */
static int sacct_rows(const cli_ctx *ctx, const rb_job_arg *job,
		      const char *sep, id_set *seen, cli_row_fn fn, void *arg)
{
	char ids[RB_JOB_ADDR_MAX], delim[96], *text = NULL;
	const char *args[] = { "--noheader", "-X", "-a", "--parsable", delim,
			       "-o", SACCT_FIELDS, job ? "-j" : NULL,
			       job ? cli_ref_text(job, ids) : NULL, NULL };
	rb_err err;
	int rc = 0;

	snprintf(delim, sizeof(delim), "--delimiter=%s", sep);
	if (ask("sacct", args, &text, &err) < 0) {
		if (!strstr(err.msg, "accounting storage is disabled")) {
			cli_error("sacct: %s: the jobs the controller no longer holds are not listed",
				  err.msg);
			rc = -1;
		}
	} else if (!strstr(text, "accounting storage is disabled")) {
		rc = give_rows(ctx, text, sep, "sacct", seen, fn, arg);
	}
	free(text);
	return rc;
}

int cli_ctl_rows(const cli_ctx *ctx, const rb_job_arg *job, bool ended_too,
		 cli_row_fn fn, void *arg)
{
	char nonce[64], sep[72];
	id_set seen = { 0 };
	int rc;

	if (rb_submission_new(nonce, sizeof(nonce)) < 0) {
		cli_error("getrandom: %s", strerror(errno));
		return -1;
	}
	snprintf(sep, sizeof(sep), "\x1f%s\x1f", nonce);
	rc = squeue_rows(ctx, job, sep, &seen, fn, arg);
	if (rc == 0 && ended_too)
		rc = sacct_rows(ctx, job, sep, &seen, fn, arg);
	free(seen.ids);
	return rc;
}
