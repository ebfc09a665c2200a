/*
 * eventlog_fold.c - a job's event log kept within a fixed cap (ledger.h,
 * RB_LEDGER_LOG_CAP; docs/architecture.md, "The ledger").
 *
 * Without it, a job requeued without end (max_interruptions unset) grows
 * its root-owned log in the shared state_dir by up to a few checkpoint
 * paths per attempt, for ever: one user could fill state_dir. When an
 * append would cross the cap, the log is rewritten under the job's lock:
 * ONE summary line of the older attempts (eventsum.h), then the newest
 * attempts whole. Two streamed passes over the old log (memory stays
 * bounded whatever its size, also a log written before the cap existed):
 * the first finds where the kept attempts begin, the second sums the rest.
 * Only the folded lines' checksums are computed (once): the kept ones are
 * copied byte for byte, damage included (explain still marks it), which
 * makes a fold a quarter of what checking every line twice cost.
 * The new log is written as a record is (ledger.c): temp file, fsync,
 * rename, fsync of the directory, so a crash leaves the old or the new
 * log, never a torn one. It holds the newest attempts within 3/8 of the
 * cap (the summary within 1/8): half a cap of events go before the next
 * fold, and one more line (< 32 KiB) never crosses it.
 */
#define _GNU_SOURCE
#include "ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventsum.h"

static size_t log_cap = RB_LEDGER_LOG_CAP;
static void (*fold_hook)(void);

void rb_ledger_set_log_cap(size_t bytes)
{
	log_cap = bytes >= 4096 ? bytes : RB_LEDGER_LOG_CAP;
}

void rb_ledger_set_fold_hook(void (*fn)(void))
{
	fold_hook = fn;
}

/* ---- pass 1: where the kept attempts begin ---------------------------------- */

/* The newest groups of lines (one attempt each) that fit in `keep` bytes:
 * a ring, oldest first; a group that no longer fits is folded. */
#define GROUPS_MAX 256

typedef struct {
	size_t first_line, bytes;
} group;

typedef struct {
	group q[GROUPS_MAX];
	size_t head, n;      /* ring */
	size_t total;        /* bytes of the groups in the ring */
	size_t keep;         /* what they may hold */
	size_t line;         /* lines seen */
	size_t cut;          /* first line kept: every line before is folded */
	int64_t attempt;     /* the newest group's */
	bool started;
} plan;

/* Is the line's kind (its second token, after "t=...") this one? */
static bool kind_is(const char *line, const char *kind)
{
	const char *p = strchr(line, ' ');
	size_t n = strlen(kind);

	return p && strncmp(p + 1, "kind=", 5) == 0 &&
	       strncmp(p + 6, kind, n) == 0 && p[6 + n] == ' ';
}

/* "attempt=<n>" of a line, and whether it opens a group of its own (a
 * reset: never one with the attempts around it). */
static int64_t line_attempt(const char *line, bool *alone)
{
	const char *a = strstr(line, " attempt=");
	int64_t n = -1;

	*alone = kind_is(line, "reset");
	if (!a)
		return -1;
	for (a += 9; *a >= '0' && *a <= '9' && n < INT64_MAX / 10 - 10; a++)
		n = (n < 0 ? 0 : n * 10) + (*a - '0');
	return n;
}

static void pop_group(plan *p)
{
	p->total -= p->q[p->head].bytes;
	p->head = (p->head + 1) % GROUPS_MAX;
	p->n--;
	p->cut = p->n ? p->q[p->head].first_line : p->line + 1;
}

static int plan_line(const char *line, bool ok, void *ctx)
{
	plan *p = ctx;
	size_t bytes = strlen(line) + 1;
	bool alone;
	int64_t a = ok ? line_attempt(line, &alone) : -1;

	/* An earlier summary (first in any log we wrote) is always folded,
	 * with all before it: the new log has ONE summary, first. */
	if (ok && kind_is(line, "folded")) {
		while (p->n > 0)
			pop_group(p);
		p->cut = p->line + 1;
		p->started = false;
		p->line++;
		return 0;
	}
	/* a line of another attempt than the last opens a group */
	if (ok && (!p->started || alone || a != p->attempt)) {
		if (p->n == GROUPS_MAX)
			pop_group(p);
		p->q[(p->head + p->n) % GROUPS_MAX] =
			(group){ .first_line = p->line, .bytes = 0 };
		p->n++;
		p->attempt = alone ? -2 : a;
		p->started = true;
	}
	if (p->n == 0) {
		/* the rest of a group already folded (too big to keep) */
		p->cut = p->line + 1;
	} else {
		p->q[(p->head + p->n - 1) % GROUPS_MAX].bytes += bytes;
		p->total += bytes;
		while (p->total > p->keep && p->n > 0)
			pop_group(p);
	}
	p->line++;
	return 0;
}

/* ---- pass 2: the summary and the kept lines ------------------------------- */

typedef struct {
	rb_evsum sum;
	size_t line, cut;
	char *kept;          /* the kept lines, each with its '\n' */
	size_t klen, kcap;
	bool over;           /* the kept lines did not fit: give up */
} fold;

static int fold_line(const char *line, bool ok, void *ctx)
{
	fold *f = ctx;
	size_t n = strlen(line);

	/* ok is checked for the folded lines only (see walk) */
	if (f->line++ < f->cut) {
		rb_evsum_add(&f->sum, line, ok);
		return 0;
	}
	if (n + 1 > f->kcap - f->klen) {
		f->over = true;
		return 1;
	}
	memcpy(f->kept + f->klen, line, n);
	f->kept[f->klen + n] = '\n';
	f->klen += n + 1;
	return 0;
}

/* Run fn over every line of j's log from its start, the checksums of the
 * first verify_below lines checked (pass 1 only groups lines: none; pass 2
 * the ones it folds). */
static int walk(rb_job *j, char *buf, size_t verify_below, rb_event_fn fn,
		void *ctx, rb_err *err)
{
	char path[PATH_BUF], name[NAME_BUF];

	lg_file_name(j->job_id, ".log", name, sizeof(name));
	lg_job_path(j->l, j->job_id, name, path, sizeof(path));
	if (lseek(j->log_fd, 0, SEEK_SET) < 0)
		return rb_err_set(err, "%s: seek: %s", path, strerror(errno));
	return lg_stream_events(j->log_fd, buf, path, verify_below, fn, ctx,
				err);
}

/* ---- the new log ---------------------------------------------------------- */

/* Put the new log (summary line + kept lines) in the old one's place and
 * make it j's log. 0, or -1 with err (the old log is then untouched). */
static int install(rb_job *j, const char *summary, size_t slen,
		   const fold *f, rb_err *err)
{
	char name[NAME_BUF], tmp[2 * NAME_BUF], path[PATH_BUF];
	struct stat st;
	int fd;

	lg_file_name(j->job_id, ".log", name, sizeof(name));
	lg_tmp_name(name, (long)getpid(), tmp, sizeof(tmp));
	lg_job_path(j->l, j->job_id, tmp, path, sizeof(path));
	if (fstat(j->log_fd, &st) < 0)
		return rb_err_set(err, "%s: %s", path, strerror(errno));
	fd = lg_write_temp(j, tmp, O_RDWR | O_APPEND, st.st_gid, summary, slen,
			   f->kept, f->klen);
	if (fd < 0)
		return rb_err_set(err, "%s: %s", path, strerror(errno));
	if (fold_hook)
		fold_hook();
	/* rename() replaces a symlink planted as <id>.log, never its target */
	if (renameat(j->bucket_fd, tmp, j->bucket_fd, name) < 0) {
		rb_err_set(err, "%s: rename: %s", path, strerror(errno));
		close(fd);
		unlinkat(j->bucket_fd, tmp, 0);
		return -1;
	}
	close(j->log_fd);
	j->log_fd = fd;
	j->log_size = (off_t)(slen + f->klen);
	/* the new log is in place either way; only a power loss before this
	 * could bring back the old (whole) one */
	if (fsync(j->bucket_fd) < 0)
		rb_log(RB_LOG_WARNING, "%s: fsync of the directory: %s",
		       path, strerror(errno));
	return 0;
}

/* Fold the lines before f->cut into a summary line, keep the rest. */
static int fold_log(rb_job *j, char *buf, fold *f, rb_err *err)
{
	size_t smax = log_cap / 8 > 1024 ? log_cap / 8 : 1024;
	char *text = malloc(smax + 64), *line = malloc(smax + 64);
	size_t tlen, llen;
	int rc = -1;

	if (!text || !line) {
		rb_err_set(err, "out of memory");
		goto out;
	}
	if (walk(j, buf, f->cut, fold_line, f, err) < 0)
		goto out;
	if (f->over) {
		rb_err_set(err, "the kept attempts outgrew the plan");
		goto out;
	}
	tlen = rb_evsum_format(&f->sum, text, smax);
	llen = lg_event_line(line, false, text, tlen);
	rc = install(j, line, llen, f, err);
out:
	free(text);
	free(line);
	return rc;
}

static off_t log_size(rb_job *j)
{
	struct stat st;

	if (j->log_size >= 0)
		return j->log_size;
	return fstat(j->log_fd, &st) == 0 ? st.st_size : -1;
}

void lg_log_fold_if_over(rb_job *j, size_t incoming)
{
	off_t size = log_size(j);
	plan *p = NULL;
	fold f = { .kept = NULL };
	char *buf = NULL;
	rb_err err = { "" };

	if (size < 0 || (size_t)size + incoming <= log_cap)
		return;
	rb_evsum_init(&f.sum);
	p = calloc(1, sizeof(*p));
	buf = malloc(EVENT_LINE_MAX + 1);
	f.kcap = log_cap * 3 / 8;
	f.kept = malloc(f.kcap);
	if (!p || !buf || !f.kept) {
		rb_err_set(&err, "out of memory");
		goto out;
	}
	p->keep = f.kcap;
	if (walk(j, buf, 0, plan_line, p, &err) < 0)
		goto out;
	f.cut = p->cut;
	/* nothing older than the newest attempts: nothing to fold */
	if (f.cut > 0 && fold_log(j, buf, &f, &err) < 0)
		goto out;
	err.msg[0] = '\0';
out:
	if (err.msg[0])
		rb_log(RB_LOG_WARNING, "job %u: its event log "
		       "(%lld bytes) could not be folded: %s", j->job_id,
		       (long long)size, err.msg);
	rb_evsum_free(&f.sum);
	free(f.kept);
	free(buf);
	free(p);
}
