/*
 * record_int.h - what the record's own files share (record.c: the format,
 * the field table, escaping, writing; record_parse.c: the strict parser).
 * Not for use outside the record.
 */
#ifndef RB_RECORD_INT_H
#define RB_RECORD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

#define VERSION_PREFIX "restore_budget-record "
#define CHECKSUM_KEY "checksum="
#define CHECKSUM_HEX 16

typedef enum {
	F_STR,
	F_U32,
	F_INT,
	F_I64,
	F_U64,
	F_BOOL,
	F_PHASE,
	F_END,
	F_CONFIRM,
	F_ACCOUNTING,
} field_type;

typedef struct {
	const char *key;
	size_t klen;   /* strlen(key) */
	size_t off;
	size_t size;   /* F_STR: buffer size including the NUL */
	int64_t min;   /* F_INT, F_I64: accepted range */
	int64_t max;
	field_type type;
	bool optional; /* written only when not at its default; absent reads
			* as that */
	int64_t dflt;  /* F_INT, F_I64 optional: the default (else 0) */
} field;

/* Every field of a record, in the order they are written (record.c). */
#define REC_N_FIELDS 50
extern const field rec_fields[REC_N_FIELDS];

/* Is field f of rec at its default ("", or dflt)? For optional fields. */
bool rec_field_is_default(const field *f, const rb_record *rec);

/* Escape n bytes of in into out (size outlen, NUL-terminated): the bytes
 * of rb_kv_escape, for text that is not a C string. */
ssize_t rec_escape_bytes(const unsigned char *in, size_t n, char *out,
			 size_t outlen);

/* The engine's parser of an enum field's name (the names are engine.c's):
 * 0 with *out, or -1 for a name it does not know. */
int rec_enum_value(field_type type, const char *name, int *out);

/* rb_checksum(text, len), from what rb_record_format last checksummed in
 * this thread when text is byte for byte that (see record.c). */
uint64_t rec_memo_checksum(const char *text, size_t len);

#endif
