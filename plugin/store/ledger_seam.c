/*
 * ledger_seam.c - the shared-directory ledger behind the store seam
 * (seam.h; docs/architecture.md, "The store seam"): each apply opens
 * <state_dir>/<cluster>, takes the job's lock, reads, calls the step,
 * writes the record, then its events, and unlocks. The lock never leaves
 * this file.
 */
#include "seam.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void rb_events_clear(rb_events *ev)
{
	ev->len = 0;
	ev->line = 0;
	ev->n = 0;
	ev->overflow = false;
	ev->buf[0] = '\0';
}

static int dir_load(rb_store *s, uint32_t job_id, rb_record *rec, rb_err *err)
{
	rb_store_dir *d = (rb_store_dir *)s;
	rb_ledger *l;
	int rc;

	/* No job of this cluster was ever recorded (no such directory): not
	 * an error. An unusable state_dir is one, even then (the caller's
	 * on_error needs the ledger's reason). */
	rc = rb_ledger_open_read(d->state_dir, d->cluster, &l, err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		rb_record_init(rec);
		return 1;
	}
	rc = rb_ledger_read(l, job_id, rec, err);
	rb_ledger_close(l);
	return rc;
}

/* Is there a record? One lstat, before anything takes the lock (which
 * would create the job's event log): 0 yes, 1 no, -1 error. */
static int recorded(rb_store_dir *d, uint32_t job_id, rb_err *err)
{
	char path[RB_PATH_MAX + 128];
	struct stat st;

	if (rb_ledger_record_path(d->state_dir, d->cluster, job_id, path,
				  sizeof(path)) < 0)
		return rb_err_set(err, "%s: path too long", d->where);
	if (lstat(path, &st) == 0)
		return 0;
	if (errno != ENOENT && errno != ENOTDIR)
		return rb_err_set(err, "%s: %s", path, strerror(errno));
	return 1;
}

/* The record first, then the events: a crash between them leaves a record
 * that is right and a log a line short, never an event for a change that
 * did not happen. */
static int save(rb_job *j, uint32_t job_id, rb_record *rec,
		const rb_events *ev, rb_err *err)
{
	const char *line = ev->buf;

	if (ev->overflow)
		return rb_err_set(err, "event line too long for job %u", job_id);
	if (rb_ledger_write(j, rec, err) < 0)
		return -1;
	for (int i = 0; i < ev->n; i++, line += strlen(line) + 1)
		if (rb_ledger_append(j, line, err) < 0)
			return -1;
	return 0;
}

static int dir_apply(rb_store *s, uint32_t job_id, unsigned flags,
		     rb_apply_fn fn, void *ctx, rb_events *ev, rb_record *rec,
		     rb_err *err)
{
	rb_store_dir *d = (rb_store_dir *)s;
	rb_ledger *l = NULL;
	rb_job *j = NULL;
	int rc;

	if (flags & RB_APPLY_IF_RECORDED) {
		rc = recorded(d, job_id, err);
		if (rc == 1)
			rb_record_init(rec);
		if (rc != 0)
			return rc;
	}
	if (rb_ledger_open(d->state_dir, d->cluster, RB_LEDGER_WRITE, &l,
			   err) < 0)
		return -1;
	rc = rb_ledger_lock(l, job_id, &j, err);
	if (rc == 0)
		rc = rb_ledger_read_locked(j, rec, err);
	if (rc >= 0) {
		rb_events_clear(ev);
		rc = fn(rec, rc == 0, ev, ctx, err);
	}
	if (rc == 1)
		rc = save(j, job_id, rec, ev, err);
	if (j)
		rb_ledger_unlock(j);
	rb_ledger_close(l);
	return rc < 0 ? -1 : 0;
}

/* The store's ledger, opened for one call (the caller closes it). */
static rb_ledger *dir_open(rb_store *s, rb_ledger_mode mode, rb_err *err)
{
	rb_store_dir *d = (rb_store_dir *)s;
	rb_ledger *l;

	return rb_ledger_open(d->state_dir, d->cluster, mode, &l, err) < 0 ?
		       NULL : l;
}

static int dir_history(rb_store *s, uint32_t job_id, rb_event_fn fn,
		       void *ctx, rb_err *err)
{
	rb_ledger *l = dir_open(s, RB_LEDGER_READ, err);
	int rc = l ? rb_ledger_events(l, job_id, fn, ctx, err) : -1;

	rb_ledger_close(l);
	return rc;
}

static int dir_jobs(rb_store *s, rb_job_fn fn, void *ctx, rb_err *err)
{
	rb_ledger *l = dir_open(s, RB_LEDGER_READ, err);
	int rc = l ? rb_ledger_jobs(l, fn, ctx, err) : -1;

	rb_ledger_close(l);
	return rc;
}

static int dir_remove(rb_store *s, uint32_t job_id, rb_err *err)
{
	rb_ledger *l = dir_open(s, RB_LEDGER_WRITE, err);
	rb_job *j;
	int rc = -1;

	if (!l)
		return -1;
	if (rb_ledger_lock(l, job_id, &j, err) == 0) {
		rc = rb_ledger_remove(j, err);
		rb_ledger_unlock(j);
	}
	rb_ledger_close(l);
	return rc;
}

static const rb_store_ops dir_ops = {
	.load = dir_load,
	.apply = dir_apply,
	.history = dir_history,
	.jobs = dir_jobs,
	.remove = dir_remove,
};

rb_store *rb_store_dir_init(rb_store_dir *d, const char *state_dir,
			    const char *cluster)
{
	d->store.ops = &dir_ops;
	d->state_dir = state_dir;
	d->cluster = cluster;
	snprintf(d->where, sizeof(d->where), "%s/%s", state_dir, cluster);
	d->store.where = d->where;
	return &d->store;
}
