/*
 * cli_events.c - reading the ledger's event lines.
 *
 * A stored line is "t=<unix time> kind=<k> attempt=<n> key=value ...
 * crc=<16 hex>". Values are %XX-escaped (rb_kv_escape escapes spaces and
 * '='), so a space always separates tokens and the first '=' of a token
 * ends its key.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_event_parse(const char *line, cli_event *e)
{
	char *crc, *tok, *save = NULL;

	memset(e, 0, sizeof(*e));
	e->copy = strdup(line);
	if (!e->copy)
		return -1;
	/* the checksum is the last token; the ledger has checked it */
	crc = strrchr(e->copy, ' ');
	if (crc && strncmp(crc, " crc=", 5) == 0)
		*crc = '\0';
	for (tok = strtok_r(e->copy, " ", &save);
	     tok && e->n < CLI_EVENT_PAIRS_MAX;
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		size_t vlen;
		char *v;

		if (!eq)
			continue;
		*eq = '\0';
		vlen = strlen(eq + 1);
		v = malloc(vlen + 2);
		if (!v)
			return -1;
		if (rb_kv_unescape(eq + 1, vlen, v, vlen + 2) < 0) {
			rb_strlcpy(v, "?", vlen + 2);
			e->bad_value = true;
		}
		e->pairs[e->n].key = tok;
		e->pairs[e->n].value = v;
		e->n++;
	}
	return 0;
}

void cli_event_free(cli_event *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->pairs[i].value);
	free(e->copy);
	memset(e, 0, sizeof(*e));
}

const char *cli_event_get(const cli_event *e, const char *key)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->pairs[i].key, key) == 0)
			return e->pairs[i].value;
	return NULL;
}

const char *cli_event_str(const cli_event *e, const char *key)
{
	const char *v = cli_event_get(e, key);

	return v ? v : "?";
}

/* --- the previous attempt's end --------------------------------------------- */

typedef struct {
	char want_start[24];   /* attempt n */
	char want_end[24];     /* attempt n - 1 */
	char end[48];          /* attempt n-1's end event */
	char charged[48];      /* n's start: charged_end */
	bool found;
} last_end_state;

static int on_line(const char *line, bool ok, void *vctx)
{
	last_end_state *st = vctx;
	const char *kind, *attempt, *v;
	cli_event e;

	if (!ok)
		return 0;
	if (cli_event_parse(line, &e) < 0) {
		cli_event_free(&e);
		return 1;
	}
	kind = cli_event_str(&e, "kind");
	attempt = cli_event_str(&e, "attempt");
	if (!strcmp(kind, "end") && !strcmp(attempt, st->want_end) &&
	    (v = cli_event_get(&e, "end")))
		rb_strlcpy(st->end, v, sizeof(st->end));
	if (!strcmp(kind, "start") && !strcmp(attempt, st->want_start) &&
	    (v = cli_event_get(&e, "charged_end"))) {
		rb_strlcpy(st->charged, v, sizeof(st->charged));
		st->found = true;
	}
	cli_event_free(&e);
	return 0;
}

int cli_last_end(const cli_ctx *ctx, uint32_t job_id, int64_t n, char *buf,
		 size_t len)
{
	last_end_state st;
	rb_ledger *l = NULL;
	rb_err err;
	int rc;

	if (n < 1)
		return -1;
	memset(&st, 0, sizeof(st));
	snprintf(st.want_start, sizeof(st.want_start), "%" PRId64, n);
	snprintf(st.want_end, sizeof(st.want_end), "%" PRId64, n - 1);
	if (rb_ledger_open(ctx->cfg->state_dir, ctx->cluster, RB_LEDGER_READ,
			   &l, &err) < 0)
		return -1;
	rc = rb_ledger_events(l, job_id, on_line, &st, &err);
	rb_ledger_close(l);
	if (rc != 0 || !st.found)
		return -1;
	/* The start event names the end without its exit code ("failed:0");
	 * the end event of that attempt has it. */
	if (!strncmp(st.charged, "failed:", 7) && !strncmp(st.end, "failed:", 7))
		rb_strlcpy(buf, st.end, len);
	else
		rb_strlcpy(buf, st.charged, len);
	return 0;
}
