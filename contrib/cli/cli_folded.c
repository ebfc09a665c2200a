/*
 * cli_folded.c - `explain` on a folded event log: the summary line that
 * stands for the older attempts ("kind=folded", plugin/store/eventsum.h),
 * and the totals the whole log gives, which are the record's
 * (docs/architecture.md, "The ledger").
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_MAX (3 * RB_PATH_MAX + 1)

static long long num(const cli_event *e, const char *key)
{
	const char *v = cli_event_get(e, key);
	long long n = 0;

	if (!v || cli_parse_uint(v, INT64_MAX, &n) < 0)
		return 0;
	return n;
}

/* The newest checkpoint a summary names (the last one), or NULL. */
static const char *newest_ckpt(const cli_event *e, size_t *named)
{
	const char *last = NULL;

	*named = 0;
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->pairs[i].key, "checkpoint") == 0) {
			last = e->pairs[i].value;
			(*named)++;
		}
	return last;
}

/* "<when>  attempts 0-41 folded: ..." on one line. */
void cli_folded_text(const cli_event *e)
{
	char when[32], *safe = malloc(SAFE_MAX);
	long long t = 0;
	size_t named;
	const char *ck = newest_ckpt(e, &named);

	if (!safe)
		return;
	if (cli_event_get(e, "t"))
		cli_parse_uint(cli_event_get(e, "t"), INT64_MAX, &t);
	cli_format_time(t, when, sizeof(when));
	printf("%s  attempts %s folded: %lld events; %lld starts (%lld "
	       "refused), %lld ends (%lld interrupted, %lld failed, %lld "
	       "completed), %lld grants", when,
	       cli_safe(cli_event_str(e, "attempts"), safe, SAFE_MAX),
	       num(e, "events"), num(e, "starts"), num(e, "refused"),
	       num(e, "ends"), num(e, "interrupted"), num(e, "failed"),
	       num(e, "completed"), num(e, "grants"));
	if (num(e, "resets"))
		printf(", %lld resets", num(e, "resets"));
	printf("; charged: failures %lld (fatal exit codes %lld), restore "
	       "failures %lld, interruptions %lld; granted %lld",
	       num(e, "failures_total"), num(e, "fatal_exits"),
	       num(e, "restore_failures_total"), num(e, "interruptions"),
	       num(e, "granted"));
	printf("; checkpoints handed out %lld", num(e, "checkpoints_handed"));
	if (ck)
		printf(", newest %s (%zu named, %lld not kept)",
		       cli_safe(ck, safe, SAFE_MAX), named,
		       num(e, "checkpoints_dropped"));
	if (num(e, "damaged"))
		printf("; %lld damaged lines", num(e, "damaged"));
	printf("%s\n", e->bad_value ? " [some values malformed]" : "");
	free(safe);
}

/* The summary as an object: its counts typed, the attempts a range, the
 * checkpoints it names an array (oldest first). */
json_object *cli_folded_json(const cli_event *e)
{
	json_object *o = json_object_new_object(), *ck = json_object_new_array();
	const char *range = cli_event_str(e, "attempts");
	const char *dash = strchr(range, '-');
	long long a = 0, b = 0;

	json_object_object_add(o, "ok", json_object_new_boolean(true));
	for (size_t i = 0; i < e->n; i++) {
		const char *k = e->pairs[i].key, *v = e->pairs[i].value;
		long long n;

		if (strcmp(k, "checkpoint") == 0)
			json_object_array_add(ck, cli_json_string(v));
		else if (strcmp(k, "kind") == 0 || strcmp(k, "attempts") == 0)
			continue;
		else if (cli_parse_uint(v + (v[0] == '-'), INT64_MAX, &n) == 0)
			json_object_object_add(o, strcmp(k, "t") ? k : "time",
					       json_object_new_int64(v[0] == '-' ?
								     -n : n));
		else
			json_object_object_add(o, k, cli_json_string(v));
	}
	json_object_object_add(o, "kind", json_object_new_string("folded"));
	if (dash) {
		char first[24];

		rb_strlcpy(first, range, sizeof(first));
		if ((size_t)(dash - range) < sizeof(first))
			first[dash - range] = '\0';
		cli_parse_uint(first, INT64_MAX, &a);
		cli_parse_uint(dash + 1, INT64_MAX, &b);
	}
	json_object_object_add(o, "attempts",
			       cli_json_pair("first", json_object_new_int64(a),
					     "last", json_object_new_int64(b)));
	json_object_object_add(o, "checkpoints", ck);
	return o;
}

void cli_totals_text(const rb_evsum *s)
{
	printf("totals, as the record counts them: failures charged %" PRId64
	       " (fatal exit codes %" PRId64 "), restore failures %" PRId64
	       ", interruptions %" PRId64 ", granted %" PRId64 "\n",
	       s->failures_total, s->fatal_exits, s->restore_failures_total,
	       s->interruptions, s->granted);
}

json_object *cli_totals_json(const rb_evsum *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "failures_total",
			       json_object_new_int64(s->failures_total));
	json_object_object_add(o, "fatal_exits",
			       json_object_new_int64(s->fatal_exits));
	json_object_object_add(o, "restore_failures_total",
			       json_object_new_int64(s->restore_failures_total));
	json_object_object_add(o, "interruptions",
			       json_object_new_int64(s->interruptions));
	json_object_object_add(o, "granted", json_object_new_int64(s->granted));
	return o;
}
