/*
 * config_int.h - what config.c (the schema and its checks), config_lex.c
 * (the trusted read and the libconfig 1.5 guard) and config_args.c (the
 * plugstack.conf arguments, the settings' origins) share. Not for use
 * outside them.
 */
#ifndef RB_CONFIG_INT_H
#define RB_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <libconfig.h>

#include "config.h"

#define FIX_HINT "fix the value, then run restore-budget check-config"
#define FILE_HINT "fix the file, then run restore-budget check-config"

/* What a key holds, and so how it is read and checked. */
typedef enum {
	K_ENUM,     /* one of more's names: its index, an int at off */
	K_BOOL,     /* a bool at off */
	K_VALUE,    /* a bounded number (cap rule arg), an int at off */
	K_OVERRIDE, /* the same, set in the rb_overrides at off */
	K_CAP,      /* a `limits` cap of cap rule arg (cap_min..bound), an
		     * int at off */
	K_REQUEUE,  /* requeue_exit: 1..RB_EXIT_CODE_MAX, an int at off */
	K_TEXT,     /* a string of rule arg (text_rule), a char * at off */
	K_GROUP,    /* the section more, read into the same struct */
	K_RULES,    /* an exit_rules list at off */
	K_NAMED,    /* partitions (arg 0) or accounts (arg 1) */
} key_kind;

typedef enum { T_NAME, T_PATTERN, T_LATEST, T_STATE_DIR } text_rule;

typedef struct {
	const char *name;
	key_kind kind;
	int arg;
	size_t off;        /* in the struct the section is read into */
	const void *more;  /* K_ENUM: the names; K_GROUP: the section */
} key_row;

typedef struct {
	const char *shape;   /* what a value of the wrong type should be */
	const char *known;   /* the keys, for the unknown-key message */
	const key_row *rows; /* in the order they are read (NULL-terminated):
			      * accounting and caps before what they bound */
} section;

/* An integer literal libconfig 1.5 would store wrapped (config_lex.c). */
typedef struct {
	unsigned int line;      /* where the literal is */
	unsigned int name_line; /* where its key is (libconfig's line) */
	char name[64];   /* the key it is assigned to ("" if none) */
	char text[48];   /* the literal as written (maybe truncated) */
	bool used;       /* reported by the key that reads it */
} big_literal;

/* One plugstack.conf argument, the hook of every setting it made: messages
 * about such a setting name the argument, not a file line. */
typedef struct {
	const char *arg;    /* "key=value" as given */
	const char *value;  /* after the '=' */
	bool big;           /* an integer over 64 bits: value is its text */
} cf_arg;

typedef struct {
	const char *path;   /* the file, for every message */
	rb_err *err;
	big_literal *big;
	size_t n_big;
	const char *label;  /* where the arguments are: "plugstack.conf" */
	cf_arg *args;       /* one per argument (the settings' hooks) */
	size_t n_applied;   /* arguments that set a key */
} load_ctx;

typedef config_setting_t cset;

/* The schema (config.c): the top-level keys, a partition's or account's,
 * the exit rules' action names in the order of rb_exit_rule. */
extern const section cf_top_section;
extern const section cf_override_section;
extern const char *const cf_action_names[];

/* The row of sec named name[0..len), or NULL. */
const key_row *cf_find_row(const section *sec, const char *name, size_t len);

/* The setting's argument, or NULL when it comes from the file. */
static inline const cf_arg *cf_arg_of(const cset *s)
{
	return s ? (const cf_arg *)config_setting_get_hook(s) : NULL;
}

/* Set the arguments av[0..ac) into the parsed file's root (config_args.c);
 * -1 with err naming the argument when one is not "key=value" of a known
 * key, is given twice, or cannot go where it says. */
int cf_apply_args(load_ctx *ctx, cset *root, int ac, char *const *av);
/* Fill cfg->settings from the merged root and the loaded cfg. */
int cf_record_settings(const cset *root, rb_config *cfg);

/* Read the whole file, refusing one that others could change. Keeps errno
 * of the failure for the caller. */
int cf_read_text(const char *path, char **out, size_t *outlen, rb_err *err);
/* Refuse `@include` and NUL bytes; record the integers libconfig 1.5 would
 * wrap (ctx->big). */
int cf_prescan(load_ctx *ctx, const char *text, size_t len);
/* -1 if an oversized literal was left where no integer key read it. */
int cf_no_big_left(load_ctx *ctx);

#endif
