/*
 * mkledger.c - write real ledgers for tests/cli/run.sh through the core's
 * lifecycle functions (the code the prolog, batch step and epilog run).
 *
 *   mkledger CONFIG CLUSTER exhaust JOB     preempted, then a corrupt
 *                                           checkpoint until refused
 *   mkledger CONFIG CLUSTER clean JOB       one attempt, exit 0
 *   mkledger CONFIG CLUSTER confirmed JOB   a restore confirmed by ack,
 *                                           preempted, then exit 0
 *   mkledger CONFIG CLUSTER inprogress JOB  one attempt with no end yet
 *   mkledger CONFIG CLUSTER age JOB DAYS    move `updated` DAYS days back
 *   mkledger CONFIG CLUSTER task JOB ARRAY TASK STATE
 *                                           job JOB as task ARRAY_TASK of a
 *                                           job array (user erin), in STATE:
 *                                           running, restoring, exhausted
 *                                           or ended
 *   mkledger CONFIG CLUSTER requeued JOB    200 self-requeued attempts with
 *                                           1 KB checkpoint paths (a folded
 *                                           event log), one failure, a grant
 *
 * Times given to the lifecycle start at T0 so that run times are exact.
 * Exits 0, or 1 with a message when the core does not do what the
 * scenario expects (so a broken core fails the CLI tests loudly).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "ack.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "record.h"

#define T0 1700000000
#define CKPT "/home/alice/run/ckpt/checkpoint-7"
/* spaces, '=', '%' and an ESC: escaped in the ledger, shown safely */
#define CKPT_ODD "/home/carol/my run/ck=1/50%/\033[31mcheckpoint 7\xc2\x9b" "2J\xe2\x80\xae\xc3\xa9\xff"

static const rb_config *cfg;
static const char *cluster;

static void die(const char *what, const rb_err *err)
{
	fprintf(stderr, "mkledger: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

/* the work dir of the jobs below (confirmed: a real one, for its ack) */
static const char *work_dir = "/home/alice/run";
/* the array task the jobs below are (task), 0 and 0 for the others */
static uint32_t array_job_id, array_task_id;

static rb_job_info job_of(uint32_t id, int64_t n, const char *user,
			  uint32_t uid, const char *part, int64_t now)
{
	rb_job_info j = {
		.cluster = cluster, .job_id = id, .attempt = n,
		.uid = uid, .gid = uid, .user = user, .partition = part,
		.account = "ml", .work_dir = work_dir,
		.checkpoint_dir = "ckpt", .now = now,
		.array_job_id = array_job_id, .array_task_id = array_task_id,
	};

	return j;
}

/* The start alone (an attempt refused before its batch step). */
static rb_decision start(uint32_t id, int64_t n, const char *user,
			 uint32_t uid, const char *part, int64_t now)
{
	rb_job_info j = job_of(id, n, user, uid, part, now);
	rb_start_result res;
	rb_err err;

	if (rb_lifecycle_start(cfg, &j, &res, NULL, &err) < 0)
		die("start", &err);
	return res.decision;
}

/* The batch step's one write: the start, then ck handed out in phase. */
static rb_decision begin(uint32_t id, int64_t n, const char *user,
			 uint32_t uid, const char *part, int64_t now,
			 rb_phase phase, const char *ck)
{
	rb_job_info j = job_of(id, n, user, uid, part, now);
	rb_handed h = { .checkpoint = ck };
	rb_start_result res;
	rb_err err;

	if (rbt_begin(cfg, &j, phase, &h, &res, &err) < 0)
		die("begin", &err);
	if (res.report_err[0])
		die(res.report_err, NULL);
	return res.decision;
}

static void epilog(uint32_t id, int64_t restart_count, int exit_code,
		   int64_t now)
{
	rb_err err;
	/* what the controller says of an interruption (event log only) */
	const char *detail = restart_count > 0 && exit_code == 0 ?
			     "preempted" : NULL;

	if (rb_lifecycle_epilog(cfg, cluster, id, restart_count, exit_code, 0,
				detail, now, &err) < 0)
		die("epilog", &err);
}

/* M=1, R=2 (partition "preempt"): attempt 0 preempted, attempts 1..4
 * restore a corrupt checkpoint and crash, attempt 5 is refused. */
static void exhaust(uint32_t id)
{
	int64_t n;

	if (begin(id, 0, "alice", 1001, "preempt", T0, RB_PHASE_FRESH, "") !=
	    RB_DECISION_RUN)
		die("attempt 0 refused", NULL);
	epilog(id, 1, 0, T0 + 600);
	for (n = 1; n <= 4; n++) {
		if (begin(id, n, "alice", 1001, "preempt", T0 + n * 1000,
			  RB_PHASE_RESTORING, CKPT) != RB_DECISION_RUN)
			die("a restore attempt was refused too early", NULL);
		epilog(id, n, 1, T0 + n * 1000 + 30);
	}
	if (start(id, 5, "alice", 1001, "preempt", T0 + 5000) !=
	    RB_DECISION_REFUSE)
		die("attempt 5 was not refused", NULL);
	epilog(id, 5, 1, T0 + 5001);
}

static void clean(uint32_t id)
{
	begin(id, 0, "bob", 1002, "main", T0, RB_PHASE_FRESH, "");
	epilog(id, 0, 0, T0 + 3725);
}

static void confirmed(uint32_t id)
{
	/* under $TMPDIR: tests/cli/run.sh points it at its own directory */
	const char *tmp = getenv("TMPDIR");
	static char wd[RB_PATH_MAX];
	char ack[RB_PATH_MAX];
	/* the ack is looked for as the job's user: here, whoever runs us */
	uint32_t uid = (uint32_t)geteuid();
	int fd;

	snprintf(wd, sizeof(wd), "%s/mkledger-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(wd) || snprintf(ack, sizeof(ack), "%s/ckpt", wd) < 0 ||
	    mkdir(ack, 0700) < 0) {
		perror(wd);
		exit(1);
	}
	work_dir = wd;
	begin(id, 0, "carol", uid, "preempt", T0, RB_PHASE_FRESH, "");
	epilog(id, 1, 0, T0 + 100);
	begin(id, 1, "carol", uid, "preempt", T0 + 1000, RB_PHASE_RESTORING,
	      CKPT_ODD);
	/* the job writes its acknowledgement, then is preempted again */
	if (rb_ack_path(wd, "ckpt", cluster, id, 1, ack, sizeof(ack)) < 0)
		die("ack path", NULL);
	fd = open(ack, O_WRONLY | O_CREAT | O_NOFOLLOW, 0600);
	if (fd < 0) {
		perror(ack);
		exit(1);
	}
	close(fd);
	epilog(id, 2, 0, T0 + 1200);
	if (begin(id, 2, "carol", uid, "preempt", T0 + 2000,
		  RB_PHASE_RESTORING, CKPT_ODD) != RB_DECISION_RUN)
		die("attempt 2 refused", NULL);
	epilog(id, 2, 0, T0 + 2500);
}

/* An array task in one of the sweep overview's states (cli_job_state). */
static void task(uint32_t id, const char *state)
{
	if (!strcmp(state, "exhausted")) {
		exhaust(id);  /* alice's partition "preempt": M=1, R=2 */
		return;
	}
	begin(id, 0, "erin", 1005, "main", T0, RB_PHASE_FRESH, "");
	if (!strcmp(state, "running"))
		return;
	if (!strcmp(state, "ended")) {
		epilog(id, 0, 0, T0 + 60);
		return;
	}
	if (strcmp(state, "restoring") != 0)
		die("task: unknown state", NULL);
	epilog(id, 1, 0, T0 + 60);  /* preempted */
	begin(id, 1, "erin", 1005, "main", T0 + 100, RB_PHASE_RESTORING, CKPT);
}

static void inprogress(uint32_t id)
{
	begin(id, 0, "dave", 1004, "main", T0, RB_PHASE_FRESH, "");
}

/* A job that requeues itself: 200 attempts, each handed a distinct 1 KB
 * checkpoint path, every one preempted but attempt 10 (exit 1: a failure)
 * and the last (still running); an admin grants 2 at attempt 50. Its log
 * crosses the 64 KiB cap a few times (docs/architecture.md, "The ledger"). */
static void requeued(uint32_t id)
{
	char ck[1100], pad[1001];
	rb_err err;

	memset(pad, 'x', 1000);
	pad[1000] = '\0';
	for (int64_t n = 0; n < 200; n++) {
		snprintf(ck, sizeof(ck), "/home/erin/run/ckpt/%s-%03lld", pad,
			 (long long)n);
		if (begin(id, n, "erin", 1005, "main", T0 + n * 1000,
			  n ? RB_PHASE_RUNNING : RB_PHASE_FRESH,
			  n ? ck : "") != RB_DECISION_RUN)
			die("a requeued attempt was refused", NULL);
		if (n == 50 &&
		    rb_lifecycle_grant(cfg, cluster, id, 2, "admin", &err) < 0)
			die("grant", &err);
		if (n == 10)
			epilog(id, n, 1, T0 + n * 1000 + 60);
		else if (n < 199)
			epilog(id, n + 1, 0, T0 + n * 1000 + 600);
	}
}

/* Rewrite the record with `updated` (and `created`) DAYS days earlier:
 * rb_ledger_write always stamps the wall clock, so a test of gc needs
 * this. Same format, fresh checksum, atomic rename. */
static void age(uint32_t id, long days)
{
	char path[RB_PATH_MAX], tmp[RB_PATH_MAX + 8];
	static char buf[RB_RECORD_TEXT_MAX];
	static rb_record rec;
	rb_err err;
	ssize_t n;
	FILE *f;

	if (rb_lifecycle_read(cfg, cluster, id, &rec, &err) != 0)
		die("age: read", &err);
	rec.updated -= (int64_t)days * 86400;
	rec.created -= (int64_t)days * 86400;
	n = rb_record_format(&rec, buf, sizeof(buf));
	if (n < 0)
		die("age: format", NULL);
	snprintf(path, sizeof(path), "%s/%s/%03u/%u.rec", cfg->state_dir,
		 cluster, id % 1000, id);
	snprintf(tmp, sizeof(tmp), "%s.age", path);
	f = fopen(tmp, "w");
	if (!f || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0 ||
	    chmod(tmp, 0644) < 0 || rename(tmp, path) < 0) {
		perror(tmp);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	rb_config *c;
	rb_err err;
	uint32_t id;

	if (argc < 5) {
		fprintf(stderr, "usage: mkledger CONFIG CLUSTER SCENARIO JOB [DAYS]\n");
		return 2;
	}
	if (rb_config_load(argv[1], &c, &err) < 0)
		die("config", &err);
	cfg = c;
	cluster = argv[2];
	id = (uint32_t)strtoul(argv[4], NULL, 10);
	if (!strcmp(argv[3], "exhaust"))
		exhaust(id);
	else if (!strcmp(argv[3], "clean"))
		clean(id);
	else if (!strcmp(argv[3], "confirmed"))
		confirmed(id);
	else if (!strcmp(argv[3], "inprogress"))
		inprogress(id);
	else if (!strcmp(argv[3], "requeued"))
		requeued(id);
	else if (!strcmp(argv[3], "age") && argc == 6)
		age(id, strtol(argv[5], NULL, 10));
	else if (!strcmp(argv[3], "task") && argc == 8) {
		array_job_id = (uint32_t)strtoul(argv[5], NULL, 10);
		array_task_id = (uint32_t)strtoul(argv[6], NULL, 10);
		task(id, argv[7]);
	}
	else {
		fprintf(stderr, "mkledger: unknown scenario %s\n", argv[3]);
		return 2;
	}
	rb_config_free(c);
	return 0;
}
