/*
 * eventsum.h - what a stretch of a job's event log adds up to (docs/
 * architecture.md, "The ledger"; docs/rule.md, "The event log"). Fed every
 * stored line in order (an earlier fold's summary line merges), it keeps
 * the counts, the charges as the record counts them (since the newest
 * reset, so they equal the record's) and the newest RB_EVSUM_CKPT_MAX
 * distinct checkpoints handed out (a count of the rest). The fold writes
 * it as its summary line ("kind=folded"); `restore-budget explain` reads a
 * log through it, so its totals are the record's, folded or not.
 */
#ifndef RB_EVENTSUM_H
#define RB_EVENTSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* distinct checkpoints a summary names (newest kept) */
#define RB_EVSUM_CKPT_MAX 32

typedef struct {
	int64_t first, last;      /* attempt range seen; -1 = none */
	int64_t events;           /* intact event lines (a summary's own) */
	int64_t damaged;          /* lines whose checksum failed */
	int64_t starts, refused, reports, ends;
	int64_t completed, failed, interrupted; /* ends by cause */
	int64_t grants, resets;
	/* as the record counts them, since the newest reset */
	int64_t failures_total, restore_failures_total, interruptions;
	int64_t fatal_exits, granted;
	int64_t refused_attempt;  /* newest attempt refused at its start, -1 */
	int64_t ckpt_handed;      /* reports that handed a checkpoint */
	int64_t ckpt_dropped;     /* distinct ones no longer named */
	char *ckpt[RB_EVSUM_CKPT_MAX]; /* escaped (as stored), oldest first */
	size_t nckpt;
	bool oom;                 /* a checkpoint could not be kept */
} rb_evsum;

void rb_evsum_init(rb_evsum *s);
void rb_evsum_free(rb_evsum *s);

/* Add one stored line ("t=... kind=... crc=...", as rb_ledger_events hands
 * it; ok = its checksum held). Lines come in log order. */
void rb_evsum_add(rb_evsum *s, const char *line, bool ok);

/* The summary event text ("kind=folded attempts=A-B ... checkpoint=..."),
 * without time or checksum, in at most len bytes (len >= 1024): the
 * counts always, then as many of the newest checkpoints as fit (the rest
 * counted in checkpoints_dropped). Its length. */
size_t rb_evsum_format(const rb_evsum *s, char *buf, size_t len);

#endif
