/*
 * replay_core.c - the soak's replay through the core's own rule engine
 * (plugin/rule/engine.c), to cross-check tests/soak/replay.py, which
 * implements docs/rule.md independently: where the two disagree, the
 * engine and the document disagree.
 *
 * stdin, one item a line (replay.py writes them for the reading it chose):
 *   limits M R MI CP            M, MI: -1 = unlimited; CP: count_preemptions 0/1
 *   attempt N PHASE ACK END CODE
 *       PHASE FRESH|RUNNING|RESTORING; ACK 0/1 (acknowledged);
 *       END none|interrupted|failed|completed; CODE the exit code if failed
 * stdout: "F r I refused" after the last attempt (refused: 0/1), or
 *         "restore_budget: ..." on stderr and exit 2 for bad input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static int bad(const char *what, const char *line)
{
	fprintf(stderr, "restore_budget: replay_core: %s: %s", what, line);
	return 2;
}

/* One attempt line: start it, report its phase, its ack and its end.
 * Returns 1 if the engine refused it (nothing after it runs). */
static int run_attempt(rb_budget *b, const rb_limits *l, long long n,
		       const char *phase_s, int ack, const char *end_s,
		       int code)
{
	rb_phase phase;
	rb_end end;

	if (rb_engine_start(b, n, l, 0, NULL, NULL, 0) == RB_DECISION_REFUSE)
		return 1;
	if (rb_phase_parse(phase_s, &phase) == 0)
		/* the pointer only decides the provisional phase: any path */
		rb_engine_set_phase(b, n, phase,
				    phase == RB_PHASE_RESTORING ? "/ckpt" : "");
	if (ack)
		rb_engine_confirm(b, n, RB_CONFIRM_ACK);
	if (rb_end_parse(end_s, &end) == 0 && end != RB_END_NONE)
		rb_engine_end(b, n, end, code, 0);
	return 0;
}

int main(void)
{
	char line[512], phase[32], end[32];
	rb_budget b;
	rb_limits l = { .max_failures = -1, .restore_retry_num = 1,
			.accounting = RB_ACCOUNTING_GROUPED,
			.max_interruptions = RB_UNLIMITED };
	int refused = 0, cp = 0, ack, code;
	long long n;

	rb_budget_init(&b);
	while (!refused && fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "limits ", 7) == 0) {
			if (sscanf(line, "limits %d %d %d %d", &l.max_failures,
				   &l.restore_retry_num, &l.max_interruptions,
				   &cp) != 4)
				return bad("bad limits line", line);
			l.count_preemptions = cp != 0;
		} else if (sscanf(line, "attempt %lld %31s %d %31s %d", &n,
				  phase, &ack, end, &code) == 5) {
			refused = run_attempt(&b, &l, n, phase, ack, end, code);
		} else {
			return bad("unknown line", line);
		}
	}
	printf("%d %d %lld %d\n", b.failures, b.restore_failures,
	       (long long)b.interruptions, refused);
	return 0;
}
