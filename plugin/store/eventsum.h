/*
 * eventsum.h - what a stretch of a job's event log adds up to (docs/
 * architecture.md, "The ledger"; docs/rule.md, "The event log").
 *
 * The ledger keeps a job's event log within a fixed cap: when an append
 * would cross it, the older attempts are folded into ONE summary event
 * ("kind=folded"), written first in the new log. rb_evsum is that summary:
 * fed every stored line in order (a summary line too: it merges), it keeps
 * the counts, the charges as the record counts them (failures_total,
 * restore_failures_total, interruptions, fatal_exits, granted: since the
 * last reset, so they equal the record's) and the checkpoints handed out
 * (the newest RB_EVSUM_CKPT_MAX distinct ones, with a count of the rest).
 * The fold writes it; `restore-budget explain` reads a log through it, so
 * its totals are the record's whether or not the log was folded.
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
