/*
 * fallback.c - checkpoint fallback (fallback.h; docs/rule.md, "Checkpoint
 * fallback"). Only the record's fallback fields change here: F, r and the
 * checkpoint pointer stay the engine's.
 */
#include "fallback.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One "ID:PATH" entry of the list text, s[0, n), into out's next slot. */
static void parse_entry(const char *s, size_t n, rb_bad_list *out,
			size_t *used)
{
	const char *sep = s;
	rb_ckpt_mark *m = &out->mark[out->n];
	ssize_t plen;

	/* the identity is four ':'-separated numbers, the path the rest */
	for (int colons = 0; colons < 4; sep++) {
		if (sep == s + n)
			return;
		if (*sep == ':')
			colons++;
	}
	if (rb_file_id_parse(s, (size_t)(sep - 1 - s), &m->id) < 0)
		return;
	plen = rb_kv_unescape(sep, n - (size_t)(sep - s), out->paths + *used,
			      sizeof(out->paths) - *used);
	if (plen <= 0)
		return;
	m->path = out->paths + *used;
	*used += (size_t)plen + 1;
	out->n++;
}

void rb_fallback_bad_list(const rb_record *rec, rb_bad_list *out)
{
	const char *p = rec->fallback.bad;
	size_t used = 0;

	out->n = 0;
	while (*p && out->n < RB_FALLBACK_BAD_MAX) {
		size_t n = strcspn(p, " ");

		parse_entry(p, n, out, &used);
		p += n;
		if (*p == ' ')
			p++;
	}
}

/* The list text without its oldest entry. */
static void drop_oldest(char *list)
{
	char *sp = strchr(list, ' ');

	if (!sp)
		list[0] = '\0';
	else
		memmove(list, sp + 1, strlen(sp + 1) + 1);
}

int rb_fallback_mark_bad(rb_record *rec, const char *path,
			 const rb_file_id *id)
{
	char entry[RB_FALLBACK_LIST_MAX];
	char *list = rec->fallback.bad;
	rb_bad_list bad;
	size_t elen, used;

	rb_fallback_bad_list(rec, &bad);
	if (rb_ckpt_marked(&(rb_ckpt_marks){ bad.mark, bad.n }, path, id))
		return 0;
	if (rb_file_id_format(id, entry, sizeof(entry)) < 0)
		return -1;
	elen = strlen(entry);
	entry[elen++] = ':';
	if (rb_kv_escape(path, entry + elen, sizeof(entry) - elen) < 0)
		return -1;
	elen = strlen(entry);
	while (list[0] && (bad.n >= RB_FALLBACK_BAD_MAX ||
			   strlen(list) + 1 + elen >= RB_FALLBACK_LIST_MAX)) {
		drop_oldest(list);
		bad.n--;
	}
	used = strlen(list);
	if (used)
		list[used++] = ' ';
	memcpy(list + used, entry, elen + 1);
	return 1;
}

void rb_fallback_before_start(const rb_record *rec, rb_fallback_prev *prev)
{
	prev->attempt = rec->budget.cur.attempt;
	rb_strlcpy(prev->path, rec->budget.cur.checkpoint, sizeof(prev->path));
	rb_strlcpy(prev->id, rec->fallback.cur_id, sizeof(prev->id));
}

/* Is this charge the one that marks the charged checkpoint bad? */
static bool charge_marks(const rb_charge *c, const rb_limits *l, int streak)
{
	if (l->accounting == RB_ACCOUNTING_RAY)
		return c->kind == RB_CHARGE_RESTORE_OVER;
	return c->kind == RB_CHARGE_RESTORE_CONVERTED &&
	       streak >= l->restore_retry_num;
}

static bool is_restore_charge(rb_charge_kind k)
{
	return k == RB_CHARGE_RESTORE_FAILURE ||
	       k == RB_CHARGE_RESTORE_CONVERTED || k == RB_CHARGE_RESTORE_OVER;
}

/* Count prev's failed restore into the streak of one file: a file not
 * known (the batch step never reported it) starts none. */
static void count_streak(rb_fallback *f, const rb_fallback_prev *prev,
			 const rb_charge *c)
{
	rb_file_id id;

	if (!is_restore_charge(c->kind) ||
	    rb_file_id_parse(prev->id, strlen(prev->id), &id) < 0) {
		f->streak = 0;
		f->streak_id[0] = '\0';
		return;
	}
	if (strcmp(f->streak_id, prev->id) == 0 && f->streak > 0) {
		f->streak++;
		return;
	}
	rb_strlcpy(f->streak_id, prev->id, sizeof(f->streak_id));
	f->streak = 1;
}

bool rb_fallback_after_charge(rb_record *rec, const rb_fallback_prev *prev,
			      const rb_charge *c, const rb_limits *l,
			      bool enabled)
{
	rb_fallback *f = &rec->fallback;
	bool marked = false;
	rb_file_id id;

	f->cur_id[0] = '\0';
	f->from[0] = '\0';
	/* nothing charged for this attempt (a first one, a refused one) */
	if (!enabled || c->attempt < 0 || c->attempt != prev->attempt ||
	    c->refused)
		return false;
	count_streak(f, prev, c);
	if (f->streak > 0 && charge_marks(c, l, f->streak) &&
	    rb_file_id_parse(prev->id, strlen(prev->id), &id) == 0) {
		int rc = rb_fallback_mark_bad(rec, prev->path, &id);

		marked = rc == 1;
		if (rc < 0)
			rb_log(RB_LOG_WARNING,
			       "job %u: checkpoint %.600s: path too long to be marked bad",
			       rec->job_id, prev->path);
		f->streak = 0;
		f->streak_id[0] = '\0';
	}
	return marked;
}

void rb_fallback_record_handed(rb_record *rec, const rb_handed *h)
{
	rb_fallback *f = &rec->fallback;

	if (h->id.ino == 0 ||
	    rb_file_id_format(&h->id, f->cur_id, sizeof(f->cur_id)) < 0)
		f->cur_id[0] = '\0';
	if (h->from && h->from[0] && f->from[0] == '\0' &&
	    rb_strlcpy(f->from, h->from, sizeof(f->from)) == 0 &&
	    f->fallbacks < INT64_MAX)
		f->fallbacks++;
}

/* Is the newest checkpoint, path, marked bad in bad? */
static bool newest_is_bad(const rb_bad_list *bad, const char *path)
{
	rb_file_id id;

	return bad->n > 0 && rb_file_id_of(path, &id) == 0 &&
	       rb_ckpt_marked(&(rb_ckpt_marks){ bad->mark, bad->n }, path, &id);
}

int rb_fallback_choose(const rb_record *rec, const char *dir,
		       const char *pattern, const char *latest,
		       rb_fallback_choice *out, rb_err *err)
{
	rb_bad_list bad;
	rb_ckpt_marks skip;
	int rc;

	memset(out, 0, sizeof(*out));
	rb_fallback_bad_list(rec, &bad);
	rc = rb_checkpoint_find(rec->work_dir, dir, pattern, latest, out->path,
				sizeof(out->path), err);
	if (rc == 1 && newest_is_bad(&bad, out->path)) {
		rb_strlcpy(out->from, out->path, sizeof(out->from));
		skip.mark = bad.mark;
		skip.n = bad.n;
		/* none left, or the directory went away: the last one handed
		 * out is kept, never a silent restart from scratch */
		if (rb_checkpoint_find_except(rec->work_dir, dir, pattern,
					      latest, &skip, out->path,
					      sizeof(out->path), err) != 1)
			rb_strlcpy(out->path, rec->budget.checkpoint,
				   sizeof(out->path));
		if (strcmp(out->path, out->from) == 0)
			out->from[0] = '\0';
	}
	if (out->path[0])
		rb_file_id_of(out->path, &out->id);
	return rc;
}
