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

