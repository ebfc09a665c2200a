/*
 * config_int.h - what config.c (the schema and its checks) asks of
 * config_lex.c (the trusted read and the libconfig 1.5 guard). Not for use
 * outside them.
 */
#ifndef RB_CONFIG_INT_H
#define RB_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define FIX_HINT "fix the value, then run restore-budget check-config"
#define FILE_HINT "fix the file, then run restore-budget check-config"

/* An integer literal libconfig 1.5 would store wrapped (config_lex.c). */
typedef struct {
	unsigned int line;      /* where the literal is */
	unsigned int name_line; /* where its key is (libconfig's line) */
	char name[64];   /* the key it is assigned to ("" if none) */
	char text[48];   /* the literal as written (maybe truncated) */
	bool used;       /* reported by the key that reads it */
} big_literal;

typedef struct {
	const char *path;   /* the file, for every message */
	rb_err *err;
	big_literal *big;
	size_t n_big;
} load_ctx;

/* Read the whole file, refusing one that others could change. Keeps errno
 * of the failure for the caller. */
int cf_read_text(const char *path, char **out, size_t *outlen, rb_err *err);
/* Refuse `@include` and NUL bytes; record the integers libconfig 1.5 would
 * wrap (ctx->big). */
int cf_prescan(load_ctx *ctx, const char *text, size_t len);
/* -1 if an oversized literal was left where no integer key read it. */
int cf_no_big_left(load_ctx *ctx);

#endif
