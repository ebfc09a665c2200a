/*
 * cli_fallback.c - what `show`, `--json` and `metrics` say of checkpoint
 * fallback (docs/rule.md, "Checkpoint fallback"): the checkpoints marked
 * bad and the fallback of the current attempt. Nothing is printed for a
 * job without any, so their output is what it always was.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rule/rule.h"

#define SAFE_MAX (3 * RB_PATH_MAX + 1)

/* Has the job any fallback on record (bad checkpoints, a fallback)? */
static bool has_fallback(const rb_record *rec)
{
	const rb_fallback *f = &rec->fallback;

	return f->bad[0] || f->from[0] || f->fallbacks > 0;
}

/* "<label><s made terminal-safe><tail>\n" */
static void print_safe(const char *label, const char *s, const char *tail)
{
	char *safe = malloc(SAFE_MAX);

	if (!safe)
		return;
	printf("%s%s%s\n", label, cli_safe(s, safe, SAFE_MAX), tail);
	free(safe);
}

void cli_show_fallback(const rb_record *rec)
{
	const rb_fallback *f = &rec->fallback;
	rb_bad_list *bad;

	if (!has_fallback(rec))
		return;
	if (f->from[0])
		print_safe("fallback from:   ", f->from,
			   " (marked bad; this attempt was handed an older one)");
	printf("fallbacks:       %" PRId64 " attempts handed an older checkpoint\n",
	       f->fallbacks);
	bad = malloc(sizeof(*bad));
	if (!bad)
		return;
	rb_fallback_bad_list(rec, bad);
	printf("marked bad:      %zu checkpoint%s (at most %d, oldest dropped)\n",
	       bad->n, bad->n == 1 ? "" : "s", RB_FALLBACK_BAD_MAX);
	for (size_t i = 0; i < bad->n; i++)
		print_safe("  bad:           ", bad->mark[i].path, "");
	free(bad);
}

static json_object *json_mark(const rb_ckpt_mark *m)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", cli_json_string(m->path));
	json_object_object_add(o, "dev", json_object_new_int64((int64_t)m->id.dev));
	json_object_object_add(o, "ino", json_object_new_int64((int64_t)m->id.ino));
	json_object_object_add(o, "size",
			       json_object_new_int64((int64_t)m->id.size));
	json_object_object_add(o, "mtime_ns",
			       json_object_new_int64(m->id.mtime_ns));
	return o;
}

void cli_json_add_fallback(json_object *o, const rb_record *rec)
{
	const rb_fallback *f = &rec->fallback;
	json_object *fb, *list;
	rb_bad_list *bad;

	if (!has_fallback(rec))
		return;
	bad = malloc(sizeof(*bad));
	if (!bad)
		return;
	rb_fallback_bad_list(rec, bad);
	fb = json_object_new_object();
	list = json_object_new_array();
	for (size_t i = 0; i < bad->n; i++)
		json_object_array_add(list, json_mark(&bad->mark[i]));
	json_object_object_add(fb, "bad", list);
	json_object_object_add(fb, "from", f->from[0] ? cli_json_string(f->from) :
							NULL);
	json_object_object_add(fb, "fallbacks",
			       json_object_new_int64(f->fallbacks));
	json_object_object_add(o, "fallback", fb);
	free(bad);
}
