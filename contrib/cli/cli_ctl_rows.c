/*
 * cli_ctl_rows.c - store = "controller" (docs/stores.md): the jobs `list`
 * and `metrics` read, from one squeue of every job the controller holds
 * (live, and ended less than MinJobAge ago) with its AdminComment.
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

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rule/rule.h"

#define ROWS_DEADLINE_MS 30000
#define ROWS_TEXT_MAX (64u << 20)   /* 64 MiB: about 100,000 jobs */

/* The fields asked for, in order; the comment is last. */
enum { F_JOB, F_ADDR, F_USER, F_PART, F_STATE, F_ACCOUNT, F_COMMENT, F_N };
static const char *const row_fields[F_N] = {
	"JobID", "JobArrayID", "UserName", "Partition", "StateCompact",
	"Account", "admin_comment",
};

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
					i ? "," : "", row_fields[i], sep);
	return arg;
}

/* squeue's rows of every job (job NULL), or of job (a job, a task, or an
 * array's tasks), into a malloc'ed *text. 0, or -1 (message said). */
static int ask_rows(const rb_job_arg *job, const char *sep, char **text)
{
	const char *conf = getenv("SLURM_CONF");
	const char *bindir = getenv("RESTORE_BUDGET_SLURM_BINDIR");
	char prog[RB_PATH_MAX + 16], env_conf[RB_PATH_MAX + 16];
	char ids[RB_JOB_ADDR_MAX];
	const char *argv[] = { prog, "--noheader", "--states=all", "--sort=i",
			       NULL, NULL, NULL, NULL };
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
			       env_conf, NULL };
	char *fmt = format_arg(sep);
	rb_err err;
	int rc = -1;

	snprintf(prog, sizeof(prog), "%s/squeue",
		 bindir && bindir[0] == '/' ? bindir : "/usr/bin");
	snprintf(env_conf, sizeof(env_conf), "SLURM_CONF=%s",
		 conf && conf[0] ? conf : CLI_SLURM_CONF);
	argv[4] = fmt;
	if (job) {
		argv[5] = "--jobs";
		argv[6] = cli_ref_text(job, ids);
	}
	*text = malloc(ROWS_TEXT_MAX);
	if (!fmt || !*text)
		cli_error("out of memory");
	else if (rb_child_run(argv, envp, rb_deadline_in(ROWS_DEADLINE_MS),
			      *text, ROWS_TEXT_MAX, &err) != 0)
		cli_error("squeue: %s", err.msg);
	else if (strlen(*text) >= ROWS_TEXT_MAX - 1)
		cli_error("squeue: more than %u MiB of jobs; list fewer (list JOB)",
			  ROWS_TEXT_MAX >> 20);
	else
		rc = 0;
	free(fmt);
	return rc;
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

/* The record of one row, or why not. 1 a row to give, 0 a job without a
 * budget line (untracked, not started yet), -1 unexpected output. */
static int row_record(char *field[F_N], const cli_ctx *ctx, rb_record *rec,
		      cli_row *row, rb_err *err)
{
	rb_job_arg addr;
	const char *at;
	size_t n;
	char *end;
	unsigned long id;

	errno = 0;
	id = strtoul(field[F_JOB], &end, 10);
	if (errno || end == field[F_JOB] || *end || id == 0 || id > UINT32_MAX)
		return -1;
	if (rb_budget_line_find(field[F_COMMENT], &at, &n) != 1)
		return 0;
	rb_record_init(rec);
	rec->job_id = (uint32_t)id;
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
	row->job_id = rec->job_id;
	row->ended = cli_ctl_ended(field[F_STATE]);
	if (rb_budget_line_parse(at, n, rec, err) < 0)
		row->corrupt = err->msg;
	else
		row->rec = rec;
	return 1;
}

/* Give each row of text to fn. 0, or -1 (message said). */
static int give_rows(const cli_ctx *ctx, char *text, const char *sep,
		     cli_row_fn fn, void *arg)
{
	static rb_record rec;
	char *p = text, *field[F_N];
	cli_row row;
	rb_err err;
	int r;

	while ((r = split_row(&p, sep, field)) == 1) {
		r = row_record(field, ctx, &rec, &row, &err);
		if (r < 0)
			break;
		if (r == 1 && fn(&row, arg) != 0)
			return 0;
	}
	if (r < 0) {
		cli_error("squeue: unexpected output (not a row of %d fields)",
			  F_N);
		return -1;
	}
	return 0;
}

int cli_ctl_rows(const cli_ctx *ctx, const rb_job_arg *job, cli_row_fn fn,
		 void *arg)
{
	char nonce[64], sep[72], *text = NULL;
	int rc = -1;

	if (rb_submission_new(nonce, sizeof(nonce)) < 0) {
		cli_error("getrandom: %s", strerror(errno));
		return -1;
	}
	snprintf(sep, sizeof(sep), "\x1f%s\x1f", nonce);
	if (ask_rows(job, sep, &text) == 0)
		rc = give_rows(ctx, text, sep, fn, arg);
	free(text);
	return rc;
}
