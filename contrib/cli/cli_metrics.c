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
 * restore_failures_total, failures_total). `gc` removes records, so a sum
 * can go down: Prometheus reads that as a counter reset, and rate() over a
 * window with a gc in it undercounts, never overcounts.
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
} metrics_state;

static int on_job(uint32_t job_id, void *vctx)
{
	metrics_state *st = vctx;
	const rb_budget *b;
	rb_err err;
	int rc;

	rc = rb_ledger_read(st->ledger, job_id, st->rec, &err);
	if (rc == 1)
		return 0; /* removed since the scan (gc) */
	if (rc < 0 && errno == EACCES)
		return 0; /* another group's job: metrics as a user are partial */
	if (rc < 0) {
		st->corrupt++;
		return 0;
	}
	b = &st->rec->budget;
	st->tracked++;
	if (strcmp(cli_job_state(st->rec), "exhausted") == 0)
		st->exhausted++;
	st->interruptions += b->interruptions;
	st->restore_failures += b->restore_failures_total;
	st->failures += b->failures_total;
	return 0;
}

/* A label value: backslash, double quote and newline escaped, as the text
 * format wants. (Cluster names are checked by cli_valid_cluster already.) */
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

static void format_metrics(FILE *f, const char *cluster,
			   const metrics_state *st)
{
	put_metric(f, cluster, "restore_budget_jobs_tracked", "gauge",
		   "Job records in the restore_budget ledger.", st->tracked);
	put_metric(f, cluster, "restore_budget_jobs_exhausted", "gauge",
		   "Jobs whose current attempt was refused because their "
		   "restore budget is spent.", st->exhausted);
	put_metric(f, cluster, "restore_budget_interruptions_total", "counter",
		   "Attempts interrupted by the scheduler (preemption, "
		   "requeue, node failure), summed over the ledger's records.",
		   st->interruptions);
	put_metric(f, cluster, "restore_budget_restore_failures_total",
		   "counter",
		   "Failed restores charged (r += 1), summed over the "
		   "ledger's records.", st->restore_failures);
	put_metric(f, cluster, "restore_budget_failures_total", "counter",
		   "Failures charged (F += 1), summed over the ledger's "
		   "records.", st->failures);
	put_metric(f, cluster, "restore_budget_ledger_corrupt_records",
		   "gauge",
		   "Ledger records that could not be read (corrupt, torn or "
		   "unknown version); restore-budget list names them.",
		   st->corrupt);
}

/* Replace path with text: a temp file in the same directory (a name the
 * textfile collector ignores: it reads only *.prom), fsync, rename, fsync
 * of the directory. 0, or -1 with a message. */
static int write_atomic(const char *path, const char *text, size_t len)
{
	char *dcopy = NULL, *bcopy = NULL, *tmp = NULL;
	const char *dir, *base;
	int fd = -1, dfd = -1, rc = -1;
	size_t off = 0;

	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!dcopy || !bcopy)
		goto nomem;
	dir = dirname(dcopy);
	base = basename(bcopy);
	tmp = malloc(strlen(dir) + strlen(base) + 10);
	if (!tmp)
		goto nomem;
	sprintf(tmp, "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0) {
		cli_error("%s: cannot create a temporary file in %s: %s", path,
			  dir, strerror(errno));
		goto fail;
	}
	/* node_exporter runs as another user */
	if (fchmod(fd, 0644) < 0)
		goto io;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto io;
		off += (size_t)n;
	}
	if (fsync(fd) < 0)
		goto io;
	if (close(fd) < 0) {
		fd = -1;
		goto io;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		cli_error("%s: cannot rename %s to it: %s", path, tmp,
			  strerror(errno));
		goto fail;
	}
	free(tmp);
	tmp = NULL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	rc = 0;
	goto out;
nomem:
	cli_error("out of memory");
	goto fail;
io:
	cli_error("%s: cannot write %s: %s", path, tmp, strerror(errno));
fail:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
out:
	free(tmp);
	free(dcopy);
	free(bcopy);
	return rc;
}

int cli_cmd_metrics(cli_ctx *ctx, const char *output)
{
	metrics_state st = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	rb_err err;
	int r, rc = CLI_OK;

	r = cli_open_scan(ctx, RB_LEDGER_READ, &st.ledger, &st.rec);
	if (r < 0)
		return CLI_EDATA;
	if (r == 0 && rb_ledger_jobs(st.ledger, on_job, &st, &err) < 0) {
		cli_error("%s", err.msg);
		rc = CLI_EDATA;
	}
	rb_ledger_close(st.ledger);
	free(st.rec);
	if (rc != CLI_OK)
		return rc; /* publish nothing rather than a partial sum */

	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("out of memory");
		return CLI_EDATA;
	}
	format_metrics(f, ctx->cluster, &st);
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
