/*
 * line_store.c - store = "controller": the budget as one line of the job's
 * AdminComment, behind the store seam (seam.h; docs/stores.md).
 */
#include "seam.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "budget_line.h"

/* The comment, read once a callback (or as this store last wrote it). */
static int comment_of(rb_store_line *s, rb_err *err)
{
	if (s->cached)
		return 0;
	if (s->io.read(s->io.ctx, s->comment, sizeof(s->comment), err) < 0)
		return -1;
	s->cached = true;
	return 0;
}

static int line_load(rb_store *st, uint32_t job_id, rb_record *rec,
		     rb_err *err)
{
	rb_store_line *s = (rb_store_line *)st;
	const char *at;
	size_t n;
	int rc;

	*rec = *s->ident;
	rb_budget_init(&rec->budget);
	memset(&rec->fallback, 0, sizeof(rec->fallback));
	rec->seq = 0;
	rec->created = rec->updated = 0;
	if (job_id != s->ident->job_id)
		return rb_err_set(err, "%s: asked for job %u", s->where, job_id);
	if (comment_of(s, err) < 0)
		return -1;
	rc = rb_budget_line_find(s->comment, &at, &n);
	if (rc < 0)
		return rb_err_set(err, "%s: two budget lines in its AdminComment (edited by hand?): fix it with scontrol update",
				  s->where);
	if (rc == 0)
		return 1;
	if (rb_budget_line_parse(at, n, rec, err) < 0) {
		char why[RB_ERR_MAX];

		rb_strlcpy(why, err->msg, sizeof(why));
		return rb_err_set(err, "%s: AdminComment: %s", s->where, why);
	}
	return 0;
}

/* rec stamped and written back as the comment's budget line. 0 or -1. */
static int line_save(rb_store_line *s, rb_record *rec, rb_err *err)
{
	char line[RB_BUDGET_LINE_MAX + 1], merged[RB_ADMIN_COMMENT_MAX + 1];

	rec->seq++;
	rec->updated = (int64_t)time(NULL);
	if (rec->created == 0)
		rec->created = rec->updated;
	if (rb_budget_line_format(rec, line, sizeof(line), err) < 0)
		return -1;
	if (rb_admin_comment_merge_tagged(s->comment, RB_BUDGET_TAG, line,
					  merged, sizeof(merged)) < 0)
		return rb_err_set(err, "%s: AdminComment would pass %d bytes with the budget line: the site's text there is too long",
				  s->where, RB_ADMIN_COMMENT_MAX);
	if (s->io.write(s->io.ctx, merged, err) < 0) {
		s->cached = false;
		return -1;
	}
	rb_strlcpy(s->comment, merged, sizeof(s->comment));
	return 0;
}

static int line_apply(rb_store *st, uint32_t job_id, unsigned flags,
		      rb_apply_fn fn, void *ctx, rb_events *ev, rb_record *rec,
		      rb_err *err)
{
	rb_store_line *s = (rb_store_line *)st;
	int rc = line_load(st, job_id, rec, err);

	if (rc < 0)
		return -1;
	if (rc == 1 && (flags & RB_APPLY_IF_RECORDED))
		return 1;
	rb_events_clear(ev);
	rc = fn(rec, rc == 0, ev, ctx, err);
	if (rc == 1)
		rc = line_save(s, rec, err);
	return rc < 0 ? -1 : 0;
}

static const rb_store_ops line_ops = {
	.load = line_load,
	.apply = line_apply,
};

rb_store *rb_store_line_init(rb_store_line *s, const rb_record *ident,
			     const rb_comment_io *io)
{
	char a[RB_JOB_ADDR_MAX];

	memset(s, 0, sizeof(*s));
	s->store.ops = &line_ops;
	s->ident = ident;
	s->io = *io;
	snprintf(s->where, sizeof(s->where), "job %s",
		 rb_job_addr(ident->job_id, ident->array_job_id,
			     ident->array_task_id, a));
	s->store.where = s->where;
	return &s->store;
}

void rb_store_line_forget(rb_store_line *s)
{
	s->cached = false;
}
