/*
 * engine.h - the restore-budget rule of docs/rule.md, "The rule", as pure data.
 *
 * No I/O, no clock, no Slurm: every function takes the state and the event
 * and changes the state. The glue and the ledger decide when to call them.
 *
 * Counters: F = budget->failures, r = budget->restore_failures.
 * Limits:   M = limits->max_failures (-1 = unlimited), R = restore_retry_num.
 */
#ifndef RB_ENGINE_H
#define RB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RB_PATH_MAX 4096
#define RB_REASON_MAX 512
#define RB_UNLIMITED (-1)

typedef enum {
	RB_ACCOUNTING_GROUPED = 0, /* every R failed restores = one failure */
	RB_ACCOUNTING_RAY,         /* first R free, every later one a failure */
} rb_accounting;

/* The limits in force for one attempt (stored with the attempt). */
typedef struct {
	int max_failures;      /* M: >= 0, or RB_UNLIMITED */
	int restore_retry_num; /* R: >= 1 (grouped), >= 0 (ray) */
	int restore_timeout;   /* seconds; 0 = only ack or exit 0 confirm */
	rb_accounting accounting;
	bool count_preemptions;
	int max_interruptions; /* more interruptions refuse; RB_UNLIMITED */
} rb_limits;

/* What an exit-code rule (exit_rules, docs/rule.md "Exit-code rules")
 * makes of a FAILED end; NONE: no rule matched (the default: failure). */
typedef enum {
	RB_EXIT_RULE_NONE = 0,
	RB_EXIT_RULE_FAILURE,         /* as the default */
	RB_EXIT_RULE_RESTORE_FAILURE, /* a failed restore, whatever the phase */
	RB_EXIT_RULE_FATAL,           /* exhausted now */
	RB_EXIT_RULE_IGNORE,          /* nothing charged, not an interruption */
} rb_exit_rule;

/* Why a budget is spent (rb_engine_exhaustion). */
typedef enum {
	RB_SPENT_NOT = 0,
	RB_SPENT_FAILURES,            /* F > M + granted */
	RB_SPENT_FATAL,               /* a fatal exit code (exit_rules) */
	RB_SPENT_INTERRUPTIONS,       /* interruptions > max_interruptions + granted */
} rb_spent;

typedef enum {
	RB_PHASE_NONE = 0, /* not recorded (the batch step never reported) */
	RB_PHASE_FRESH,    /* nothing to restore */
	RB_PHASE_RESTORING,/* restoring from a checkpoint, not yet confirmed */
	RB_PHASE_RUNNING,  /* restore confirmed, or nothing was to be restored */
} rb_phase;

typedef enum {
	RB_END_NONE = 0,     /* no end recorded (yet, or the node died) */
	RB_END_INTERRUPTED,  /* requeued by the controller while running */
	RB_END_FAILED,       /* ended by itself: non-zero exit or fatal signal */
	RB_END_COMPLETED,    /* ended by itself with status 0 */
} rb_end;

typedef enum {
	RB_CONFIRM_NONE = 0,
	RB_CONFIRM_ACK,      /* the job wrote RESTORE_BUDGET_ACK_FILE */
	RB_CONFIRM_TIMEOUT,  /* ran restore_timeout seconds */
	RB_CONFIRM_EXIT0,    /* exited 0 */
} rb_confirm;

typedef enum {
	RB_CHARGE_NONE = 0,          /* nothing charged (interruption, or no attempt) */
	RB_CHARGE_RESTORE_FAILURE,   /* r += 1 */
	RB_CHARGE_RESTORE_CONVERTED, /* r reached R: F += 1, r := 0 (grouped) */
	RB_CHARGE_RESTORE_OVER,      /* ray mode: free restores used up, F += 1 */
	RB_CHARGE_FAILURE,           /* F += 1: failed after a confirmed restore */
	RB_CHARGE_PREEMPTION,        /* F += 1: interruption, count_preemptions */
	RB_CHARGE_FATAL,             /* F += 1 and exhausted: a fatal exit code */
	RB_CHARGE_IGNORED,           /* nothing: an ignored exit code */
} rb_charge_kind;

/* One attempt as the ledger remembers it. */
typedef struct {
	int64_t attempt;          /* n; -1 = no attempt recorded */
	rb_phase phase;           /* phase at its start */
	rb_confirm confirmed;     /* how a restore was confirmed, or NONE */
	rb_end end;
	int end_code;             /* FAILED: exit status, or 128+signal */
	int64_t start_time;       /* unix seconds */
	int64_t end_time;         /* unix seconds; 0 = no end recorded */
	bool refused;             /* refused because the budget was exhausted */
	rb_limits limits;         /* limits in force at its start */
	char checkpoint[RB_PATH_MAX]; /* checkpoint handed to it ("" = none) */
} rb_attempt;

/* A job's budget: the counters and the attempt in progress. */
typedef struct {
	int failures;             /* F */
	int restore_failures;     /* r */
	int granted;              /* extra failures an admin granted (adds to M) */
	int64_t last_charged;     /* newest attempt already charged; -1 = none */
	bool exhausted;           /* the current attempt was refused */
	/* The exit code that made the budget spent (exit_rules "fatal");
	 * 0 = none (a FAILED end never has code 0). A grant clears it. */
	int fatal_code;
	/* Totals, for explain and metrics; never used by the rule. */
	int64_t interruptions;
	int64_t restore_failures_total;
	int64_t failures_total;
	int64_t fatal_exits;              /* fatal exit codes charged */
	int64_t interruption_cap_refusals; /* starts refused by max_interruptions */
	/* How the previous attempt ended, as charged (RESTORE_BUDGET_LAST_END):
	 * RB_END_NONE before any charge; else INTERRUPTED or FAILED. */
	rb_end prev_end;
	int prev_end_code;
	/* The newest checkpoint ever found. Never cleared by any charge. */
	char checkpoint[RB_PATH_MAX];
	rb_attempt cur;           /* the newest attempt started */
} rb_budget;

/* The result of charging one attempt (what the event log records). */
typedef struct {
	rb_charge_kind kind;
	int64_t attempt;          /* the attempt charged; -1 if none */
	rb_end end;               /* its end cause as charged (NONE -> INTERRUPTED) */
	int end_code;             /* FAILED: its exit status or 128+signal */
	bool refused;             /* it had been refused: never charged */
	rb_phase phase;           /* its phase at its end */
	rb_exit_rule rule;        /* the exit-code rule that matched, or NONE */
	int failures_before, failures_after;
	int restore_failures_before, restore_failures_after;
} rb_charge;

typedef enum {
	RB_DECISION_RUN = 0,   /* run this attempt */
	RB_DECISION_REFUSE,    /* budget exhausted: refuse this attempt */
} rb_decision;

/* A fresh budget: no attempt, zero counters, no checkpoint. */
void rb_budget_init(rb_budget *b);

/*
 * Attempt n starts (in its batch step). Charges the previous recorded
 * attempt once, decides whether n may run, and records n as the current
 * attempt with the limits in force. Idempotent: for an attempt already
 * started (a repeated callback, a replayed note) nothing changes and the
 * earlier decision is returned.
 * `charge` (may be NULL) receives what was charged; `reason` (may be NULL)
 * a one-line human explanation, e.g.
 * "restore 3 of 3 failed: failures 2 > max_failures 1".
 */
rb_decision rb_engine_start(rb_budget *b, int64_t n, const rb_limits *limits,
			    int64_t now, rb_charge *charge,
			    char *reason, size_t reasonlen);

/* rb_engine_start, where the previous attempt's FAILED end matched the
 * exit-code rule `rule` (resolved by the caller from the config; NONE for
 * no rule, or when that attempt did not end FAILED). */
rb_decision rb_engine_start_ruled(rb_budget *b, int64_t n,
				  const rb_limits *limits, rb_exit_rule rule,
				  int64_t now, rb_charge *charge,
				  char *reason, size_t reasonlen);

/*
 * The batch step reports attempt n's phase and the checkpoint it was handed.
 * A non-empty checkpoint becomes the budget's checkpoint; an empty one never
 * clears it. Ignored for any attempt other than the current one.
 */
void rb_engine_set_phase(rb_budget *b, int64_t n, rb_phase phase,
			 const char *checkpoint);

/* The phase attempt n should start in: RESTORING if n >= 1 and a checkpoint
 * (this attempt's or the remembered one) exists, RUNNING if n == 0 with a
 * checkpoint, else FRESH. */
rb_phase rb_engine_start_phase(int64_t n, const char *checkpoint);

/* Confirm attempt n's restore (RESTORING -> RUNNING). Returns true if this
 * call confirmed it; false if n is not current or was not RESTORING or was
 * confirmed already. */
bool rb_engine_confirm(rb_budget *b, int64_t n, rb_confirm how);

/*
 * Attempt n ended (epilog). The first recorded end wins; a later one for the
 * same attempt changes nothing. EXIT0 and restore_timeout (end_time -
 * start_time >= limits.restore_timeout > 0) confirm a restore here.
 * Returns true if the end was recorded by this call.
 */
bool rb_engine_end(rb_budget *b, int64_t n, rb_end end, int code, int64_t now);

/* How many more consecutive failed restores end the job; -1 = unlimited. */
int64_t rb_engine_restores_left(const rb_budget *b, const rb_limits *limits);

/* Is the budget spent under these limits: M >= 0 and F > M + granted, a
 * fatal exit code, or more interruptions than max_interruptions + granted. */
bool rb_engine_is_exhausted(const rb_budget *b, const rb_limits *limits);
/* Which of those it is (the first that holds, in that order: fatal,
 * interruptions, failures), or RB_SPENT_NOT. */
rb_spent rb_engine_exhaustion(const rb_budget *b, const rb_limits *limits);

/* Names used in the environment, the ledger and the CLI. */
const char *rb_phase_name(rb_phase p);      /* "FRESH", "RESTORING", ... */
const char *rb_end_name(rb_end e);          /* "none", "interrupted", ... */
const char *rb_confirm_name(rb_confirm c);  /* "none", "ack", "timeout", "exit0" */
const char *rb_charge_name(rb_charge_kind k);
const char *rb_accounting_name(rb_accounting a); /* "grouped", "ray" */
const char *rb_exit_rule_name(rb_exit_rule r); /* "none", "fatal", ... */

/* Parse the names above back; return -1 if unknown. */
int rb_phase_parse(const char *s, rb_phase *out);
int rb_end_parse(const char *s, rb_end *out);
int rb_confirm_parse(const char *s, rb_confirm *out);
int rb_charge_parse(const char *s, rb_charge_kind *out);
int rb_accounting_parse(const char *s, rb_accounting *out);
int rb_exit_rule_parse(const char *s, rb_exit_rule *out);

/* "none", "interrupted", "failed:CODE", "completed" into buf. */
void rb_end_format(rb_end e, int code, char *buf, size_t len);

#endif
