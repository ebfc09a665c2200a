/*
 * vg_driver.c - the plugin's core path, for valgrind (tests/reliability/
 * valgrind.sh). vg_plugin.c loads the built .so with a played SPANK host;
 * this drives the core functions the callbacks call directly, in the same
 * order, on a real ledger, so that memcheck also sees the core paths the
 * played host does not reach:
 *
 *   vg_driver CONFIG CLUSTER JOB CKPT_DIR
 *
 * config load, option parsing and caps (sbatch), rb_lifecycle_start,
 * rb_checkpoint_find + its handing (rbt_report, tests/lib/handing.h),
 * rb_ack_seen, rb_lifecycle_epilog (epilog) for a job that is preempted
 * once and then fails its restores until it is refused, a grant, and the
 * reads the CLI does. Exits 0 if every call did what the scenario expects.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "config.h"
#include "ledger.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "ack.h"
#include "record.h"

static int failed;

#define EXPECT(cond, ...)                                                   \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "vg_driver: " __VA_ARGS__);         \
			fputc('\n', stderr);                                \
			failed = 1;                                         \
		}                                                           \
	} while (0)

static int count_line(const char *line, bool ok, void *ctx)
{
	(void)line;
	if (ok)
		(*(int *)ctx)++;
	return 0;
}

static int count_job(uint32_t id, void *ctx)
{
	(void)id;
	(*(int *)ctx)++;
	return 0;
}

int main(int argc, char **argv)
{
	rb_config *cfg = NULL;
	rb_overrides opts;
	rb_err err;
	rb_record *rec;
	rb_ledger *l;
	const char *cluster;
	uint32_t id;
	int64_t n;
	char found[RB_PATH_MAX];
	int lines = 0, jobs = 0, rc;

	if (argc != 5) {
		fprintf(stderr, "usage: vg_driver CONFIG CLUSTER JOB CKPT_DIR\n");
		return 2;
	}
	cluster = argv[2];
	id = (uint32_t)strtoul(argv[3], NULL, 10);
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return 2;

	/* sbatch: options and caps */
	memset(&opts, 0, sizeof(opts));
	EXPECT(rb_config_load(argv[1], &cfg, &err) == 0, "config: %s", err.msg);
	if (!cfg)
		return 1;
	EXPECT(rb_options_parse(&opts, "max-failures", "1", &err) == 0, "%s",
	       err.msg);
	EXPECT(rb_options_parse(&opts, "restore-retries", "2", &err) == 0, "%s",
	       err.msg);
	EXPECT(rb_options_parse(&opts, "restore-timeout", "x", &err) < 0,
	       "garbage accepted");
	EXPECT(rb_config_check_caps(cfg, &opts, &err) == 0, "caps: %s",
	       err.msg);

	for (n = 0; n < 20; n++) {
		rb_job_info j = {
			.cluster = cluster, .job_id = id, .attempt = n,
			.uid = 1000, .gid = 1000, .user = "u",
			.partition = "preempt", .account = "ml-team",
			.work_dir = "/", .checkpoint_dir = argv[4],
			.options = opts, .now = 1700000000 + n * 1000,
		};
		rb_start_result res;

		/* prolog (twice: a second node) */
		EXPECT(rb_lifecycle_start(cfg, &j, &res, NULL, &err) == 0,
		       "start %" PRId64 ": %s", n, err.msg);
		EXPECT(rb_lifecycle_start(cfg, &j, &res, NULL, &err) == 0 &&
		       res.duplicate, "second start %" PRId64, n);
		if (res.decision == RB_DECISION_REFUSE) {
			EXPECT(rb_lifecycle_epilog(cfg, cluster, id, n, 1, 0,
						   NULL, j.now + 1, &err) == 0,
			       "epilog of the refused attempt: %s", err.msg);
			break;
		}
		/* batch step */
		rc = rb_checkpoint_find("/", argv[4], cfg->checkpoint_pattern,
					cfg->checkpoint_latest, found,
					sizeof(found), &err);
		EXPECT(rc == 1, "checkpoint: rc %d %s", rc, err.msg);
		EXPECT(rbt_report(cfg, cluster, id, n,
					   rb_engine_start_phase(n, found),
					   found, &err) == 0,
		       "report: %s", err.msg);
		{
			char ack[RB_PATH_MAX + 128];

			EXPECT(rb_ack_path(j.work_dir, j.checkpoint_dir, cluster,
					   id, n, ack, sizeof(ack)) == 0 &&
			       rb_ack_seen(ack, (uint32_t)geteuid(),
					   (uint32_t)getegid(),
					   rb_deadline_in(RB_ACK_CHECK_MS),
					   &err) == 0, "ack?");
		}
		/* epilog: preempted once, then every restore fails */
		EXPECT(rb_lifecycle_epilog(cfg, cluster, id,
					   n == 0 ? 1 : n, n == 0 ? 0 : 1, 0,
					   n == 0 ? "preempted" : NULL,
					   j.now + 10, &err) == 0,
		       "epilog %" PRId64 ": %s", n, err.msg);
	}
	/* M = 1, R = 2 (job options): attempt 0 preempted, then
	 * R * (M + 1) = 4 failed restores (attempts 1-4), 5 is refused. */
	EXPECT(n == 5, "refused at attempt %" PRId64 ", want 5", n);

	EXPECT(rb_lifecycle_grant(cfg, cluster, id, 1, "vg_driver", &err) == 0,
	       "grant: %s", err.msg);
	EXPECT(rb_lifecycle_read(cfg, cluster, id, rec, &err) == 0 &&
	       rec->budget.granted == 1 && rec->budget.exhausted,
	       "read back: %s", err.msg);
	EXPECT(rb_ledger_open(cfg->state_dir, cluster, RB_LEDGER_READ, &l,
			      &err) == 0, "open: %s", err.msg);
	if (l) {
		EXPECT(rb_ledger_events(l, id, count_line, &lines, &err) == 0 &&
		       lines > 5, "events: %d %s", lines, err.msg);
		EXPECT(rb_ledger_jobs(l, count_job, &jobs, &err) == 0 &&
		       jobs >= 1, "jobs: %s", err.msg);
		rb_ledger_close(l);
	}
	rb_config_free(cfg);
	free(rec);
	return failed;
}
