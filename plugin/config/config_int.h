/*
 * config_int.h - what the config file's own sources share (config.c: the
 * schema; config_read.c: typed reads and file:line messages; config_lex.c:
 * the trusted read and the libconfig 1.5 guard; config_tree.c: the parse
 * and the setting tree). Not for use outside them.
 */
#ifndef RB_CONFIG_INT_H
#define RB_CONFIG_INT_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define FIX_HINT "fix the value, then run restore-budget check-config"
#define FILE_HINT "fix the file, then run restore-budget check-config"

/*
 * A setting of the file, as the checks see it: a compact copy of
 * libconfig's tree (one allocation, members linked in file order), so that
 * lookups do not pay for libconfig's per-character name comparisons.
 */
typedef struct cnode cnode;
struct cnode {
	const char *name;       /* NULL for the root */
	int type;               /* CONFIG_TYPE_* */
	unsigned int line;      /* libconfig's source line */
	const cnode *parent;
	cnode *first, *last;    /* a group's members, in file order */
	cnode *next;
	int n;                  /* number of members */
	long long i;            /* INT, INT64 */
	double f;               /* FLOAT */
	int b;                  /* BOOL */
	const char *s;          /* STRING */
};

static inline const char *cn_name(const cnode *s) { return s->name; }
static inline int cn_type(const cnode *s) { return s->type; }
static inline int cn_int(const cnode *s) { return (int)s->i; }
static inline long long cn_int64(const cnode *s) { return s->i; }
static inline double cn_float(const cnode *s) { return s->f; }
static inline int cn_bool(const cnode *s) { return s->b; }
static inline const char *cn_string(const cnode *s) { return s->s; }
static inline int cn_length(const cnode *s) { return s->n; }
static inline unsigned int cn_line(const cnode *s) { return s->line; }

/* An integer literal libconfig 1.5 would store wrapped (config_lex.c). */
typedef struct {
	unsigned int line;      /* where the literal is */
	unsigned int name_line; /* where its key is (libconfig's line) */
	char name[64];   /* the key it is assigned to ("" if none) */
	char text[48];   /* the literal as written (maybe truncated) */
	bool used;
} big_literal;

typedef struct {
	const char *path;   /* the file, for every message */
	rb_err *err;
	big_literal *big;
	size_t n_big;
} load_ctx;

/* An integer setting as read: the value, or that it did not fit. Its key
 * path and shown value are only built for a message (see cf_iv_describe):
 * doing it for every setting cost more than the checks themselves. */
typedef struct {
	const cnode *s;
	const char *big;    /* the literal as written, when it did not fit */
	long long v;
	bool overflow;      /* did not fit in an int: always out of range */
} int_value;

/* Buffers for one message about an int_value. */
typedef struct {
	char key[256];      /* dotted path, e.g. "partitions.preempt.max_failures" */
	char shown[64];     /* the value as it appears in messages */
} iv_text;

/* ---- config_tree.c: the parse and the tree ------------------------------ */

/* libconfig's parse of one text and our copy of its tree (root). */
typedef struct {
	config_t lc;
	bool lc_init;
	cnode *nodes;
	const cnode *root;
} cf_tree;

/* Parse text (read from path) into t. -1 with err set and errno EINVAL
 * (syntax) or ENOMEM; free t with cf_tree_free either way. */
int cf_tree_parse(cf_tree *t, const char *path, const char *text, rb_err *err);
void cf_tree_free(cf_tree *t);
/* The i-th member of group g, or NULL. */
const cnode *cn_elem(const cnode *g, unsigned int i);

/* ---- config_lex.c: the trusted read and the guard ----------------------- */

/* Read the whole file, refusing one that others could change. Keeps errno
 * of the failure for the caller. */
int cf_read_text(const char *path, char **out, size_t *outlen, rb_err *err);
/* Refuse `@include` and NUL bytes; record the integers libconfig 1.5 would
 * wrap (ctx->big). */
int cf_prescan(load_ctx *ctx, const char *text, size_t len);
/* -1 if an oversized literal was left where no integer key read it. */
int cf_no_big_left(load_ctx *ctx);

/* ---- config_read.c: typed reads and messages ---------------------------- */

/* "a.b.c" from the root down to s. */
void cf_key_path(const cnode *s, char *buf, size_t len);
/* "path:line: message" for setting s. Always returns -1. */
int cf_fail_at(load_ctx *ctx, const cnode *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cf_fail_type(load_ctx *ctx, const cnode *s, const char *expected);
/* Every member of group must be one of known[]; files each in slots[]. */
int cf_check_known(load_ctx *ctx, const cnode *group,
		   const char *const *known, const cnode **slots);
/* The member called name, as filed by cf_check_known. */
const cnode *cf_member(const char *const *known, const cnode *const *slots,
		       const char *name);
int cf_read_int(load_ctx *ctx, const cnode *s, int_value *iv);
const iv_text *cf_iv_describe(const int_value *iv, iv_text *t);
int cf_read_bool(load_ctx *ctx, const cnode *s, bool *out);
int cf_read_string(load_ctx *ctx, const cnode *s, const char **out);
int cf_read_enum(load_ctx *ctx, const cnode *s, const char *const *names,
		 int *out);
int cf_require_group(load_ctx *ctx, const cnode *s, const char *expected);
/* min..max (unit appended to the range in the message). */
int cf_check_range(load_ctx *ctx, const int_value *iv, long long min,
		   long long max, const char *unit);

/* ---- config_exit.c: exit_rules ------------------------------------------ */

/* An exit_rules list s into *out (replacing what it held). */
int cf_load_exit_rules(load_ctx *ctx, const cnode *s, rb_exit_rules *out);
/* requeue_exit = N (1..RB_EXIT_CODE_MAX) into cfg->requeue_exit. */
int cf_load_requeue_exit(load_ctx *ctx, const cnode *s, rb_config *cfg);

#endif
