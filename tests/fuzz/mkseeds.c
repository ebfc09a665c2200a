/*
 * mkseeds.c - seeds that follow the current record and event formats
 * (`make fuzz*` runs it before fuzzing, into build/fuzz/seeds/<target>/;
 * tests/fuzz/corpus/ holds the fixed seeds). A seed made by the code under
 * test never goes stale when a field is added.
 *
 *   mkseeds DIR      writes the record and events seeds under DIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "ledger.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "record.h"

static void save(const char *dir, const char *sub, const char *name,
		 unsigned char mode, const char *data, size_t n,
		 const char *tail)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/%s", dir, sub, name);
	f = fopen(p, "wb");
	if (!f) {
		perror(p);
		exit(1);
	}
	fputc(mode, f);
	fwrite(data, 1, n, f);
	if (tail)
		fputs(tail, f);
	fclose(f);
}

/* raw (mode 0) and body-only (mode 1: the target appends the checksum) */
static void save_record(const char *dir, const char *name, const rb_record *r)
{
	static char buf[RB_RECORD_TEXT_MAX + 1];
	char n2[64];
	ssize_t n = rb_record_format(r, buf, sizeof(buf));
	const char *ck;

	if (n < 0) {
		fprintf(stderr, "mkseeds: %s does not format\n", name);
		exit(1);
	}
	save(dir, "record", name, 0, buf, (size_t)n, NULL);
	ck = strstr(buf, "\nchecksum=");
	snprintf(n2, sizeof(n2), "%s-body", name);
	save(dir, "record", n2, 1, buf, (size_t)(ck - buf) + 1, NULL);
	snprintf(n2, sizeof(n2), "%s-torn", name);
	save(dir, "record", n2, 0, buf, (size_t)n / 2, NULL);
}

/* A log that was folded (the fuzz target's cap, 8 KiB:
 * plugin/store/eventlog_fold.c): its summary line first, then the attempts kept; with
 * an event to append that folds it again. Job 4243 of cfg's state_dir. */
static void save_folded(const char *dir, const rb_config *cfg)
{
	static char log[1 << 16], tail[5000];
	char p[4096];
	rb_err err;
	ssize_t n;
	int fd;

	rb_ledger_set_log_cap(8192);
	for (int64_t a = 0; a < 40; a++) {
		rb_job_info j = {
			.cluster = "c1", .job_id = 4243, .attempt = a,
			.uid = 1001, .gid = 1001, .user = "alice",
			.partition = "p", .account = "a", .work_dir = "/w",
			.checkpoint_dir = "ckpt", .now = 1700000000 + a * 100,
		};
		rb_start_result res;

		snprintf(p, sizeof(p), "/w/ck dir/checkpoint-%lld", (long long)a);
		if (rb_lifecycle_start(cfg, &j, &res, NULL, &err) < 0)
			exit(1);
		rbt_report(cfg, "c1", 4243, a, RB_PHASE_RUNNING, p, &err);
		rb_lifecycle_epilog(cfg, "c1", 4243, a + 1, 0, 0, "preempted",
				    j.now + 50, &err);
	}
	rb_ledger_set_log_cap(0);
	snprintf(p, sizeof(p), "%s/c1/243/4243.log", cfg->state_dir);
	fd = open(p, O_RDONLY);
	n = fd >= 0 ? read(fd, log, sizeof(log)) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0 || !strstr(log, " kind=folded ")) {
		fprintf(stderr, "mkseeds: no folded log\n");
		exit(1);
	}
	save(dir, "events", "folded-log", (unsigned char)log[0], log + 1,
	     (size_t)n - 1, NULL);
	/* an event big enough to cross the cap: the target folds again */
	snprintf(tail, sizeof(tail), "\xffkind=report attempt=40 "
		 "phase=RUNNING checkpoint=/w/ck%%20dir/checkpoint-40-");
	memset(tail + strlen(tail), 'x', 4000);
	save(dir, "events", "folded-log-append", (unsigned char)log[0],
	     log + 1, (size_t)n - 1, tail);
}

int main(int argc, char **argv)
{
	static rb_record r;
	char state[] = "/tmp/rb-mkseeds-XXXXXX";
	char p[4096], cmd[4200];
	static char log[1 << 16];
	rb_config *cfg;
	rb_err err;
	ssize_t n;
	int fd;
	int64_t a;

	if (argc != 2)
		return 2;
	rb_record_init(&r);
	strcpy(r.cluster, "c1");
	r.job_id = 4242;
	save_record(argv[1], "fresh", &r);

	/* a real job's life: preempted, restores failing until refused */
	if (!mkdtemp(state) || chmod(state, 0755) < 0)
		return 1;
	cfg = rb_config_defaults();
	free(cfg->state_dir);
	cfg->state_dir = strdup(state);
	cfg->max_failures = 1;
	cfg->restore_retry_num = 2;
	for (a = 0; a < 8; a++) {
		rb_job_info j = {
			.cluster = "c1", .job_id = 4242, .attempt = a,
			.uid = 1001, .gid = 1001, .user = "alice",
			.partition = "preempt", .account = "ml-team",
			.work_dir = "/home/alice/my run",
			.checkpoint_dir = "ckpt", .now = 1700000000 + a * 100,
		};
		rb_start_result res;

		if (rb_lifecycle_start(cfg, &j, &res, NULL, &err) < 0)
			return 1;
		if (res.decision == RB_DECISION_REFUSE)
			break;
		rbt_report(cfg, "c1", 4242, a,
				    a ? RB_PHASE_RESTORING : RB_PHASE_RUNNING,
				    "/home/alice/my run/ck=1/50%/checkpoint 7",
				    &err);
		rb_lifecycle_epilog(cfg, "c1", 4242, a ? a : 1, a ? 1 : 0, 0,
				    a ? NULL : "preempted", j.now + 50, &err);
	}
	rb_lifecycle_grant(cfg, "c1", 4242, 1, "root", &err);
	if (rb_lifecycle_read(cfg, "c1", 4242, &r, &err) != 0)
		return 1;
	save_record(argv[1], "exhausted", &r);
	r.budget.cur.limits.max_failures = RB_UNLIMITED;
	r.budget.cur.limits.accounting = RB_ACCOUNTING_RAY;
	r.budget.cur.confirmed = RB_CONFIRM_ACK;
	save_record(argv[1], "ray", &r);

	snprintf(p, sizeof(p), "%s/c1/242/4242.log", state);
	fd = open(p, O_RDONLY);
	n = fd >= 0 ? read(fd, log, sizeof(log)) : -1;
	if (n > 0) {
		/* the target's input: the log, then 0xff and an event */
		save(argv[1], "events", "real-log", (unsigned char)log[0],
		     log + 1, (size_t)n - 1, NULL);
		save(argv[1], "events", "real-log-append",
		     (unsigned char)log[0], log + 1, (size_t)n - 1,
		     "\xffkind=end attempt=9 end=failed:1");
		save(argv[1], "events", "torn-append", (unsigned char)log[0],
		     log + 1, (size_t)n / 2,
		     "\xffkind=start attempt=9 decision=run");
	}
	if (fd >= 0)
		close(fd);
	save_folded(argv[1], cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		return 1;
	rb_config_free(cfg);
	return 0;
}
