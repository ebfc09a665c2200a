/*
 * cli_array.c - job arrays as first-class citizens of the CLI: "A_T"
 * wherever a job id is taken, a bare array id as every task with a record,
 * and the array's tasks that have not started yet, from the controller.
 *
 * A task is its own job with its own record, keyed like every record by its
 * own job id; the record holds array_job_id/array_task_id (docs/
 * architecture.md, "The ledger"). So "A_T" and a bare array id are found by
 * reading records: the one of job A first (the task that keeps the array's
 * id), then, if needed, every record of the cluster (a directory scan, as
 * `list` does). A plain job id never costs a scan.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/slurm.h"
#include "lifecycle/lifecycle.h"

/* squeue's deadline: a frozen controller costs the command this, once. */
#define ASK_DEADLINE_MS 5000
/* squeue's answer for one array: a line is ~40 bytes, MaxArraySize is at
 * most 4000001; more than this is read and dropped (the overview then
 * lists what fit). */
#define ASK_OUT_MAX ((size_t)1024 * 1024)

/* Ask the controller (squeue, with a deadline) for array_id's tasks. Never
 * fails: p->asked false and p->why say why not. */
static void ask_array(uint32_t array_id, cli_pending *p);

const char *cli_ref_text(const rb_job_arg *ref, char *buf)
{
	return rb_job_addr(ref->id, ref->task ? ref->id : 0, ref->task_id, buf);
}

const char *cli_rec_addr(const rb_record *rec, char *buf)
{
	return rb_job_addr(rec->job_id, rec->array_job_id, rec->array_task_id,
			   buf);
}

void cli_json_add_task(json_object *o, const rb_record *rec)
{
	if (rec->array_job_id == 0)
		return;
	json_object_object_add(o, "array_job_id",
			       json_object_new_int64(rec->array_job_id));
	json_object_object_add(o, "array_task_id",
			       json_object_new_int64(rec->array_task_id));
}

void cli_target_free(cli_target *t)
{
	free(t->tasks);
	free(t->pending.tasks);
	t->tasks = NULL;
	t->pending.tasks = NULL;
	t->n = t->pending.n = 0;
}

static int add_task(cli_target *t, uint32_t job_id, uint32_t array_job_id,
		    uint32_t task_id)
{
	cli_task *n = realloc(t->tasks, (t->n + 1) * sizeof(*n));

	if (!n)
		return -1;
	t->tasks = n;
	t->tasks[t->n].job_id = job_id;
	t->tasks[t->n].array_job_id = array_job_id;
	t->tasks[t->n].task_id = task_id;
	t->n++;
	return 0;
}

/* --- the scan ------------------------------------------------------------------ */

typedef struct {
	cli_target *t;
	rb_ledger *ledger;
	rb_record *rec;
	bool oom;
} scan_state;

static int on_record(uint32_t job_id, void *vctx)
{
	scan_state *st = vctx;
	const rb_job_arg *ref = &st->t->ref;
	rb_err err;
	int rc = rb_ledger_read_for_listing(st->ledger, job_id, st->rec, &err);

	if (rc == RB_LEDGER_NOT_READABLE)
		st->t->hidden++;
	else if (rc < 0)
		st->t->corrupt++;
	if (rc != 0 || st->rec->array_job_id != ref->id ||
	    (ref->task && st->rec->array_task_id != ref->task_id))
		return 0;
	if (add_task(st->t, job_id, ref->id, st->rec->array_task_id) < 0) {
		st->oom = true;
		return 1;
	}
	return 0;
}

static int cmp_task(const void *a, const void *b)
{
	const cli_task *x = a, *y = b;

	if (x->task_id != y->task_id)
		return (x->task_id > y->task_id) - (x->task_id < y->task_id);
	return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

/* Every record of ref's array (or of the task ref names), by task id.
 * CLI_OK or CLI_EDATA (message printed). */
static int scan_array(const cli_ctx *ctx, cli_target *t)
{
	scan_state st = { .t = t };
	rb_err err;
	int r, rc = CLI_OK;

	r = cli_open_scan(ctx, RB_LEDGER_READ, &st.ledger, &st.rec);
	if (r < 0)
		return CLI_EDATA;
	if (r == 0 && rb_ledger_jobs(st.ledger, on_record, &st, &err) < 0 &&
	    !st.oom) {
		cli_error("%s", err.msg);
		rc = CLI_EDATA;
	}
	if (st.oom) {
		cli_error("out of memory");
		rc = CLI_EDATA;
	}
	rb_ledger_close(st.ledger);
	free(st.rec);
	if (t->n > 1)
		qsort(t->tasks, t->n, sizeof(*t->tasks), cmp_task);
	return rc;
}

/* --- resolve ------------------------------------------------------------------- */

/* Read job_id's record into rec: 0 read, 1 none, -1 (message printed
 * unless quiet). */
static int read_one(const cli_ctx *ctx, uint32_t job_id, bool quiet,
		    rb_record *rec)
{
	rb_err err;
	int rc = rb_lifecycle_read(ctx->cfg, ctx->cluster, job_id, rec, &err);

	if (rc < 0 && !quiet)
		cli_error("job %" PRIu32 ": %s", job_id, err.msg);
	return rc;
}

/* The record of job ref->id, read: is it what ref names on its own? */
static bool names_itself(const rb_job_arg *ref, const rb_record *rec)
{
	if (ref->task)
		return rec->array_job_id == ref->id &&
		       rec->array_task_id == ref->task_id;
	/* a plain job, or a task named by its own job id (not the array's) */
	return rec->array_job_id != ref->id;
}

/* stderr: the records an array's scan could not read (another group's,
 * corrupt), if any. */
static void target_notes(const cli_target *t)
{
	if (t->hidden > 0)
		cli_error("%zu record%s of other users' jobs not read (readable by root and each job's group only)",
			  t->hidden, t->hidden == 1 ? "" : "s");
	if (t->corrupt > 0)
		cli_error("%zu record%s could not be read, a task among them "
			  "would be missing here (restore-budget list names them)",
			  t->corrupt, t->corrupt == 1 ? "" : "s");
}

int cli_resolve(const cli_ctx *ctx, const rb_job_arg *ref, bool ask_controller,
		cli_target *t)
{
	rb_record *rec = malloc(sizeof(*rec));
	int r, rc;

	memset(t, 0, sizeof(*t));
	t->ref = *ref;
	if (!rec) {
		cli_error("out of memory");
		return CLI_EDATA;
	}
	/* for A_T, job A's record is only a first guess: the scan decides */
	r = read_one(ctx, ref->id, ref->task, rec);
	if (r == 0 && names_itself(ref, rec)) {
		rc = add_task(t, ref->id, rec->array_job_id,
			      rec->array_task_id) < 0 ? CLI_EDATA : CLI_OK;
		free(rec);
		return rc;
	}
	free(rec);
	if (r < 0 && !ref->task)
		return CLI_EDATA;
	/* A_T not under A's own id, or A's tasks: read them all */
	if ((rc = scan_array(ctx, t)) != CLI_OK)
		return rc;
	t->array = !ref->task;
	if (t->array && ask_controller)
		ask_array(ref->id, &t->pending);
	if (t->n > 0 || (t->array && t->pending.n > 0))
		return CLI_OK;
	/* the task may be among the records this user may not read */
	if (ref->task)
		target_notes(t);
	return CLI_ENOTFOUND;
}

int cli_not_found(const cli_ctx *ctx, const rb_job_arg *ref)
{
	char addr[RB_JOB_ADDR_MAX];

	if (ref->task)
		cli_error("array task %s: no record on cluster %s (not started "
			  "yet, not tracked, removed by gc, or another cluster: "
			  "see --cluster)", cli_ref_text(ref, addr), ctx->cluster);
	else
		cli_error("job %" PRIu32 ": no record on cluster %s (not "
			  "tracked, removed by gc, or another cluster: see "
			  "--cluster)", ref->id, ctx->cluster);
	return CLI_ENOTFOUND;
}

size_t cli_each_task(const cli_ctx *ctx, const cli_target *t, bool quiet,
		     cli_task_fn fn, void *arg)
{
	rb_record *rec = malloc(sizeof(*rec));
	size_t bad = 0;
	rb_err err;

	if (!rec) {
		cli_error("out of memory");
		return t->n;
	}
	for (size_t i = 0; i < t->n; i++) {
		err.msg[0] = '\0';
		if (rb_lifecycle_read(ctx->cfg, ctx->cluster, t->tasks[i].job_id,
				      rec, &err) == 0) {
			fn(rec, arg);
			continue;
		}
		/* removed (gc) or damaged since the scan */
		bad++;
		if (!quiet)
			cli_error("job %" PRIu32 ": %s", t->tasks[i].job_id,
				  err.msg[0] ? err.msg : "no record any more");
	}
	free(rec);
	return bad;
}

/* A task squeue lists that has a record in t (it is shown as a row). */
static bool target_has_task(const cli_target *t, uint32_t task_id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->tasks[i].task_id == task_id)
			return true;
	return false;
}

/* --- the controller --------------------------------------------------------------- */

/* slurm.conf for squeue: 0, or -1 (why set) if it cannot be read. */
static int slurm_conf_readable(char *why, size_t len)
{
	if (access(cli_slurm_conf(), R_OK) == 0)
		return 0;
	snprintf(why, len, "no slurm.conf to reach it (%s: %s)",
		 cli_slurm_conf(), strerror(errno));
	return -1;
}

/* Run `squeue --noheader --jobs jobs --Format=format` into out. 0, or -1
 * with why set. */
static int run_squeue(const char *jobs, const char *format, char *out,
		      size_t len, char *why, size_t wlen)
{
	const char *args[] = { "--noheader", "--jobs", jobs, format, NULL };
	rb_err err;

	if (slurm_conf_readable(why, wlen) < 0)
		return -1;
	if (cli_slurm_run("squeue", args, rb_deadline_in(ASK_DEADLINE_MS), out,
			  len, &err) == 0)
		return 0;
	/* a job the controller has forgotten (ended long enough ago): it
	 * lists nothing, that is an answer */
	if (strstr(err.msg, "Invalid job id")) {
		out[0] = '\0';
		return 0;
	}
	snprintf(why, wlen, "%s", err.msg);
	return -1;
}

int cli_slurm_lists_job(const rb_record *rec, char *why, size_t len)
{
	char addr[RB_JOB_ADDR_MAX], out[4096];

	cli_rec_addr(rec, addr);
	/* squeue lists a job until it has ended (docs/slurm-facts.md) */
	if (run_squeue(addr, "--Format=JobID:0", out, sizeof(out), why, len) < 0)
		return -1;
	return out[strspn(out, " \n")] != '\0';
}

static void ask_array(uint32_t array_id, cli_pending *p)
{
	char *out = NULL, id[16];
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	out = malloc(ASK_OUT_MAX);
	if (!out) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return;
	}
	snprintf(id, sizeof(id), "%" PRIu32, array_id);
	if (run_squeue(id, "--Format=JobID:0|,JobArrayID:0|,ArrayTaskID:0|,State:0|",
		       out, ASK_OUT_MAX, p->why, sizeof(p->why)) == 0) {
		if (rb_squeue_array_parse(out, array_id, NULL, 0, &n) < 0)
			snprintf(p->why, sizeof(p->why),
				 "squeue's answer was not understood");
		else if (n > 0 && !(p->tasks = calloc(n, sizeof(*p->tasks))))
			snprintf(p->why, sizeof(p->why), "out of memory");
		else if (rb_squeue_array_parse(out, array_id, p->tasks, n,
					       &p->n) == 0)
			p->asked = true;
	}
	free(out);
}

/* "pending" of "PENDING": squeue's state in the overview's words. */
static void lower(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[i] = '\0';
}

/* A line squeue gave of tasks not started that no record shows (a task
 * requeued and pending again has its record's row). */
static bool pending_shown(const cli_target *t, const rb_squeue_task *q)
{
	return strcmp(q->state, "PENDING") == 0 &&
	       (q->not_started || !target_has_task(t, q->task_id));
}

/* Why the controller was not asked, into o or printed. */
static void pending_unknown(const cli_pending *p, json_object *o)
{
	char safe[3 * RB_ERR_MAX];

	if (o) {
		json_object_object_add(o, "not_started", NULL);
		json_object_object_add(o, "controller_error",
				       cli_json_string(p->why));
	} else {
		printf("tasks not started: unknown (cannot ask the controller: %s)\n",
		       cli_safe(p->why, safe, sizeof(safe)));
	}
}

/* The tasks squeue knows that have no record, into o or printed. */
static void pending_tasks(const cli_target *t, json_object *o)
{
	const cli_pending *p = &t->pending;
	char st[32], addr[3 * RB_SQUEUE_ADDR_MAX];
	json_object *a = o ? json_object_new_array() : NULL;

	for (size_t i = 0; i < p->n; i++) {
		const rb_squeue_task *q = &p->tasks[i];

		if (!pending_shown(t, q))
			continue;
		if (a) {
			json_object_array_add(a, cli_json_pair(
				"tasks", cli_json_string(q->addr),
				"state", cli_json_string(q->state)));
			continue;
		}
		lower(q->state, st, sizeof(st));
		printf("%-12s %s, not started\n",
		       cli_safe(q->addr, addr, sizeof(addr)), st);
	}
	if (o) {
		json_object_object_add(o, "not_started", a);
		json_object_object_add(o, "controller_error", NULL);
	}
}

void cli_target_end(const cli_target *t, json_object *o)
{
	if (t->array && !t->pending.asked)
		pending_unknown(&t->pending, o);
	else if (t->array)
		pending_tasks(t, o);
	target_notes(t);
}
