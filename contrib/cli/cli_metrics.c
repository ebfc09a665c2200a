/*
 * cli_metrics.c - `restore-budget metrics`: the ledger as Prometheus
 * metrics, in the text format node_exporter's textfile collector reads.
 *
 *   restore-budget metrics                       print on stdout
 *   restore-budget metrics --output FILE.prom    replace FILE atomically
 *
 * One sample per metric, labelled cluster="NAME" (the ledger read). Gauges
 * describe the records now in the ledger; the *_total counters are sums of
 * the records' lifetime totals (rb_budget: interruptions,
 * restore_failures_total, failures_total, fatal_exits,
 * interruption_cap_refusals). `gc` removes records, so a sum
 * can go down: Prometheus reads that as a counter reset, and rate() over a
 * window with a gc in it undercounts, never overcounts.
 *
 * restore_budget_array_tasks gives, per job array with a task on record,
 * how many of its tasks are in each state (cli_job_state: running,
 * restoring, exhausted, ended; all four, 0 included, so that a series does
 * not vanish when its count drops to 0); an array leaves the output when gc
 * removes its last task's record.
 *
 * A record that cannot be read is counted in
 * restore_budget_ledger_corrupt_records (that gauge is the alert; the exit
 * status stays 0 so that a cron job keeps publishing). A ledger that cannot
 * be read at all exits 1 and leaves an existing --output file untouched:
 * node_textfile_mtime_seconds then shows it going stale.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	rb_ledger *ledger;
	rb_record *rec;
	int64_t tracked, exhausted, corrupt;
	int64_t interruptions, restore_failures, failures;
	int64_t fallbacks;
	int64_t fatal_exits, cap_refusals;
	/* one entry per array task: its array and state, sorted at the end */
	struct array_task {
		uint32_t array_job_id;
		cli_state state;
	} *tasks;
	size_t ntasks, cap;
	bool oom;
} metrics_state;

static int push_task(metrics_state *st, const rb_record *rec,
		     cli_state state)
{
	if (st->ntasks == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct array_task *n = realloc(st->tasks, cap * sizeof(*n));

		if (!n) {
			st->oom = true;
			return -1;
		}
		st->tasks = n;
		st->cap = cap;
	}
	st->tasks[st->ntasks].array_job_id = rec->array_job_id;
	st->tasks[st->ntasks].state = state;
	st->ntasks++;
	return 0;
}

static int cmp_array_task(const void *a, const void *b)
{
	const struct array_task *x = a, *y = b;

	if (x->array_job_id != y->array_job_id)
		return (x->array_job_id > y->array_job_id) -
		       (x->array_job_id < y->array_job_id);
	return (int)x->state - (int)y->state;
}

/* One row into the sums. */
static int take_row(const cli_row *row, void *vctx)
{
	metrics_state *st = vctx;
	const rb_budget *b;
	cli_state state;

	if (row->corrupt) {
		st->corrupt++;
		return 0;
	}
	b = &row->rec->budget;
	state = cli_row_state(row);
	st->tracked++;
	if (state == CLI_ST_EXHAUSTED)
		st->exhausted++;
	st->interruptions += b->interruptions;
	st->restore_failures += b->restore_failures_total;
	st->failures += b->failures_total;
	st->fallbacks += row->rec->fallback.fallbacks;
	st->fatal_exits += b->fatal_exits;
	st->cap_refusals += b->interruption_cap_refusals;
	if (row->rec->array_job_id != 0 && push_task(st, row->rec, state) < 0)
		return 1;
	return 0;
}

/* One job of the shared-directory ledger; another group's job is left
 * out (metrics as a user are partial). */
static int on_job(uint32_t job_id, void *vctx)
{
	metrics_state *st = vctx;
	size_t hidden = 0;

	return cli_ledger_row(st->ledger, job_id, st->rec, take_row, st,
			      &hidden);
}

/* A label value: backslash, double quote and newline escaped, as the text
 * format wants. (Cluster names are checked by rb_cluster_name_ok already.) */
static void put_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_metric(FILE *f, const char *cluster, const char *name,
		       const char *type, const char *help, int64_t value)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s{cluster=\"", name, help,
		name, type, name);
	put_label_value(f, cluster);
	fprintf(f, "\"} %" PRId64 "\n", value);
}

/* Every metric, in the order printed: name, type, help, where its value is. */
static const struct {
	const char *name, *type, *help;
	size_t offset;
} metric_table[] = {
	{ "restore_budget_jobs_tracked", "gauge",
	  "Job records in the restore_budget ledger.",
	  offsetof(metrics_state, tracked) },
	{ "restore_budget_jobs_exhausted", "gauge",
	  "Jobs whose current attempt was refused because their restore "
	  "budget is spent.", offsetof(metrics_state, exhausted) },
	{ "restore_budget_interruptions_total", "counter",
	  "Attempts interrupted by the scheduler (preemption, requeue, node "
	  "failure), summed over the ledger's records.",
	  offsetof(metrics_state, interruptions) },
	{ "restore_budget_restore_failures_total", "counter",
	  "Failed restores charged (r += 1), summed over the ledger's records.",
	  offsetof(metrics_state, restore_failures) },
	{ "restore_budget_failures_total", "counter",
	  "Failures charged (F += 1), summed over the ledger's records.",
	  offsetof(metrics_state, failures) },
	{ "restore_budget_fallbacks_total", "counter",
	  "Attempts handed an older checkpoint because the newest was marked "
	  "bad (checkpoint.fallback), summed over the ledger's records.",
	  offsetof(metrics_state, fallbacks) },
	{ "restore_budget_fatal_exit_total", "counter",
	  "Exit codes charged as fatal by exit_rules (the job was exhausted at "
	  "once), summed over the ledger's records.",
	  offsetof(metrics_state, fatal_exits) },
	{ "restore_budget_interruption_cap_refusals_total", "counter",
	  "Attempts refused (or held) because the job had more interruptions "
	  "than max_interruptions, summed over the ledger's records.",
	  offsetof(metrics_state, cap_refusals) },
	{ "restore_budget_ledger_corrupt_records", "gauge",
	  "Ledger records that could not be read (corrupt, torn or unknown "
	  "version); restore-budget list names them.",
	  offsetof(metrics_state, corrupt) },
};

#define ARRAY_TASKS "restore_budget_array_tasks"

/* One sample per array and state, arrays by id (st->tasks sorted). */
static void format_array_tasks(FILE *f, const char *cluster,
			       const metrics_state *st)
{
	fputs("# HELP " ARRAY_TASKS " Tasks of a job array with a record in "
	      "the ledger, per array and state (running, restoring, exhausted, "
	      "ended).\n# TYPE " ARRAY_TASKS " gauge\n", f);
	for (size_t i = 0; i < st->ntasks;) {
		uint32_t a = st->tasks[i].array_job_id;
		int64_t counts[CLI_ST_COUNT] = { 0 };

		for (; i < st->ntasks && st->tasks[i].array_job_id == a; i++)
			counts[st->tasks[i].state]++;
		for (int s = 0; s < CLI_ST_COUNT; s++) {
			fputs(ARRAY_TASKS "{cluster=\"", f);
			put_label_value(f, cluster);
			fprintf(f, "\",array_job_id=\"%" PRIu32 "\",state=\"%s\"} %"
				PRId64 "\n", a, cli_state_names[s], counts[s]);
		}
	}
}

static void format_metrics(FILE *f, const char *cluster,
			   const metrics_state *st)
{
	for (size_t i = 0; i < sizeof(metric_table) / sizeof(metric_table[0]);
	     i++) {
		int64_t value;

		memcpy(&value, (const char *)st + metric_table[i].offset,
		       sizeof(value));
		put_metric(f, cluster, metric_table[i].name,
			   metric_table[i].type, metric_table[i].help, value);
	}
	format_array_tasks(f, cluster, st);
}

/* Where write_atomic puts its text first: "<dir>/.<base>.XXXXXX", a name
 * the textfile collector ignores (it reads only *.prom). */
typedef struct {
	char *dcopy, *bcopy;  /* dirname and basename work on copies */
	const char *dir;
	char *tmp;
} temp_name;

/* 0, or -1 when out of memory. */
static int make_temp_name(const char *path, temp_name *t)
{
	const char *base;

	t->dcopy = strdup(path);
	t->bcopy = strdup(path);
	if (!t->dcopy || !t->bcopy)
		return -1;
	t->dir = dirname(t->dcopy);
	base = basename(t->bcopy);
	t->tmp = malloc(strlen(t->dir) + strlen(base) + 10);
	if (!t->tmp)
		return -1;
	sprintf(t->tmp, "%s/.%s.XXXXXX", t->dir, base);
	return 0;
}

static void free_temp_name(temp_name *t)
{
	free(t->tmp);
	free(t->dcopy);
	free(t->bcopy);
}

/* Fill the new temp file fd with text, readable by all (node_exporter runs
 * as another user), fsync and close it (close() too can report a failed
 * write). 0, or -1 with errno; fd is closed either way. */
static int fill_temp(int fd, const char *text, size_t len)
{
	size_t off = 0;
	int e;

	if (fchmod(fd, 0644) < 0)
		goto fail;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		off += (size_t)n;
	}
	if (fsync(fd) < 0)
		goto fail;
	return close(fd);
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* The rename lives in the directory: best effort, the file is in place. */
static void fsync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
}

/* Replace path with text: a temp file in the same directory, fsync,
 * rename, fsync of the directory. 0, or -1 with a message. */
static int write_atomic(const char *path, const char *text, size_t len)
{
	temp_name t = { 0 };
	int fd, rc = -1;

	if (make_temp_name(path, &t) < 0) {
		cli_error("out of memory");
		goto out;
	}
	fd = mkstemp(t.tmp);
	if (fd < 0)
		cli_error("%s: cannot create a temporary file in %s: %s", path,
			  t.dir, strerror(errno));
	else if (fill_temp(fd, text, len) < 0)
		cli_error("%s: cannot write %s: %s", path, t.tmp,
			  strerror(errno));
	else if (rename(t.tmp, path) < 0)
		cli_error("%s: cannot rename %s to it: %s", path, t.tmp,
			  strerror(errno));
	else
		rc = 0;
	if (rc == 0)
		fsync_dir(t.dir);
	else
		unlink(t.tmp);
out:
	free_temp_name(&t);
	return rc;
}

static int publish(const cli_ctx *ctx, metrics_state *st, const char *output);

/* Read every job into st: the ledger's records, or (store = "controller")
 * the jobs the controller holds. CLI_OK or CLI_EDATA (message said). */
static int gather(cli_ctx *ctx, metrics_state *st)
{
	rb_err err;
	int r, rc = CLI_OK;

	if (ctx->cfg->store == RB_STORE_CONTROLLER) {
		if (cli_ctl_rows(ctx, NULL, false, take_row, st) < 0)
			return CLI_EDATA;
		if (st->oom)
			cli_error("out of memory");
		return st->oom ? CLI_EDATA : CLI_OK;
	}
	r = cli_open_scan(ctx, RB_LEDGER_READ, &st->ledger, &st->rec);
	if (r < 0)
		return CLI_EDATA;
	if (r == 0 && (rb_ledger_jobs(st->ledger, on_job, st, &err) < 0 ||
		       st->oom)) {
		cli_error("%s", st->oom ? "out of memory" : err.msg);
		rc = CLI_EDATA;
	}
	rb_ledger_close(st->ledger);
	free(st->rec);
	return rc;
}

int cli_cmd_metrics(cli_ctx *ctx, const char *output)
{
	metrics_state st = { 0 };
	int rc = gather(ctx, &st);

	if (rc == CLI_OK)
		rc = publish(ctx, &st, output);
	free(st.tasks);
	return rc; /* on an error: nothing published rather than a partial sum */
}

/* Format st and print it, or replace output with it. */
static int publish(const cli_ctx *ctx, metrics_state *st, const char *output)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc = CLI_OK;

	if (st->ntasks > 1)
		qsort(st->tasks, st->ntasks, sizeof(*st->tasks), cmp_array_task);

	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("out of memory");
		return CLI_EDATA;
	}
	format_metrics(f, ctx->cluster, st);
	if (fclose(f) != 0) {
		free(text);
		cli_error("out of memory");
		return CLI_EDATA;
	}
	if (output) {
		if (write_atomic(output, text, len) < 0)
			rc = CLI_EDATA;
	} else if (fwrite(text, 1, len, stdout) != len ||
		   fflush(stdout) != 0) {
		rc = CLI_EDATA;
	}
	free(text);
	return rc;
}
