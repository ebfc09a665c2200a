/*
 * config_tree.c - the config text parsed by libconfig, and our compact
 * copy of its setting tree (config_int.h, cnode) that the schema reads.
 *
 * The text has been through the guard first (config_lex.c), so includes
 * were refused before libconfig sees it.
 */
#include "config_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* (config_int.h) */
const cnode *cn_elem(const cnode *g, unsigned int i)
{
	const cnode *c = g->first;

	while (c && i--)
		c = c->next;
	return c;
}

static void cn_add(cnode *g, cnode *c)
{
	c->parent = g;
	c->next = NULL;
	if (g->last)
		g->last->next = c;
	else
		g->first = c;
	g->last = c;
	g->n++;
}

/* Groups, lists and arrays have members (exit_rules is a list of groups
 * with an array each). */
static bool lc_aggregate(const config_setting_t *s)
{
	return config_setting_is_aggregate(s) == CONFIG_TRUE;
}

static size_t lc_count(const config_setting_t *s)
{
	size_t n = 1;

	if (lc_aggregate(s))
		for (int i = 0; i < config_setting_length(s); i++)
			n += lc_count(config_setting_get_elem(s, (unsigned)i));
	return n;
}

/* Copy libconfig's setting s (and a group's members) into nodes[*used..].
 * Names and strings stay libconfig's: the tree lives no longer than it. */
static cnode *lc_copy(const config_setting_t *s, cnode *nodes, size_t *used)
{
	cnode *c = &nodes[(*used)++];

	memset(c, 0, sizeof(*c));
	c->name = config_setting_name(s);
	c->type = config_setting_type(s);
	c->line = config_setting_source_line(s);
	/* Each getter gives 0 (NULL) for a setting of another type (no
	 * autoconvert: a float is never an integer), so only the field of
	 * c->type holds anything; get_int64 also reads an INT. */
	c->i = config_setting_get_int64(s);
	c->f = config_setting_get_float(s);
	c->b = config_setting_get_bool(s);
	c->s = config_setting_get_string(s);
	if (!lc_aggregate(s))
		return c;
	for (int i = 0; i < config_setting_length(s); i++)
		cn_add(c, lc_copy(config_setting_get_elem(s, (unsigned)i), nodes,
				  used));
	return c;
}

/* (config_int.h) */
int cf_tree_parse(cf_tree *t, const char *path, const char *text, rb_err *err)
{
	size_t used = 0;

	memset(t, 0, sizeof(*t));
	config_init(&t->lc);
	t->lc_init = true;
	/* No autoconvert: a float is never silently an integer. Includes are
	 * refused by the guard (config_lex.c), so none is ever opened; the
	 * include dir stays unset (config_set_include_dir(NULL) crashes 1.5). */
	config_set_options(&t->lc, 0);
	if (config_read_string(&t->lc, text) != CONFIG_TRUE) {
		const char *f = config_error_file(&t->lc);

		rb_err_set(err, "%s:%d: syntax error: %s (%s)", f ? f : path,
			   config_error_line(&t->lc),
			   config_error_text(&t->lc) ? config_error_text(&t->lc) :
						       "unknown error",
			   FILE_HINT);
		errno = EINVAL;
		return -1;
	}
	t->nodes = malloc(lc_count(config_root_setting(&t->lc)) *
			  sizeof(*t->nodes));
	if (!t->nodes) {
		rb_err_set(err, "%s: out of memory", path);
		errno = ENOMEM;
		return -1;
	}
	t->root = lc_copy(config_root_setting(&t->lc), t->nodes, &used);
	return 0;
}

/* (config_int.h) */
void cf_tree_free(cf_tree *t)
{
	if (t->lc_init)
		config_destroy(&t->lc);
	t->lc_init = false;
	free(t->nodes);
	t->nodes = NULL;
	t->root = NULL;
}
