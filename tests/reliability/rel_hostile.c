/*
 * rel_hostile.c - hostile input at the core level (docs/security.md):
 * untrusted state_dir, symlinks planted anywhere under it, corrupt or
 * hand-edited records, a user trying to raise their own budget, garbage
 * job options, and hostile --checkpoint-dir trees resolved as the user.
 *
 * Runs as root; the "user" is uid/gid 65534 (nobody) in forked children.
 * Every child has an alarm: a hang (a FIFO opened, a loop followed) fails
 * the case instead of the run.
 */
#include "rel.h"

#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "checkpoint.h"
#include "config.h"
#include "ledger.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "record.h"

#define CLUSTER "hostile"
#define NOBODY 65534
#define CHILD_ALARM 30

static char top[128], state[256], outside[256], target[320];
static rb_config *cfg;
static uint32_t next_id = 100;

/* ---- helpers ------------------------------------------------------------ */

static int start(uint32_t id, int64_t attempt, rb_err *err)
{
	return rel_start(cfg, CLUSTER, id, attempt, err);
}

static void path_of(uint32_t id, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%03u/%u%s", state, CLUSTER, id % 1000, id,
		 suffix);
}

static void bucket_of(uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%03u", state, CLUSTER, id % 1000);
}

/* A job with a record (attempt 0 started) and a fresh id. */
static uint32_t recorded_job(void)
{
	uint32_t id = next_id++;
	rb_err err;

	MUST(start(id, 0, &err) == 0, "start %u: %s", id, err.msg);
	return id;
}

/* The outside directory and its one file, as they must stay. */
static rel_snap out_dir_snap, out_file_snap;
static int out_entries;

static void snap_outside(void)
{
	out_dir_snap = rel_snapshot(outside);
	out_file_snap = rel_snapshot(target);
	out_entries = rel_count_entries(outside);
}

static void check_outside_untouched(void)
{
	rel_snap f = rel_snapshot(target);
	struct stat st;

	CHECK(rel_snap_same(&f, &out_file_snap),
	      "the file outside state_dir was modified");
	CHECK(rel_count_entries(outside) == out_entries,
	      "something was created in the directory outside state_dir");
	CHECK(stat(outside, &st) == 0 && st.st_uid == 0 && st.st_gid == 0 &&
	      (st.st_mode & 07777) == 0755,
	      "the outside directory's owner or mode changed");
}

typedef struct {
	int rc;
	char out[RB_PATH_MAX];
	rb_err err;
	char log[8192];
	int flags;
} child_result;

static child_result *cres;

static void become_nobody(void)
{
	MUST(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 &&
	     setuid(NOBODY) == 0, "become nobody");
}

/* Run fn as nobody in a child; returns its exit status, or 128+signal. */
static int as_nobody(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	memset(cres, 0, sizeof(*cres));
	fflush(stdout);
	pid = fork();
	MUST(pid >= 0, "fork");
	if (pid == 0) {
		alarm(CHILD_ALARM);
		become_nobody();
		rel_capture_log();
		_exit(fn(arg));
	}
	MUST(waitpid(pid, &status, 0) == pid, "waitpid");
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* ---- state_dir trust ----------------------------------------------------- */

static void test_state_dir_untrusted(void)
{
	static const struct { uid_t uid; mode_t mode; const char *what; } c[] = {
		{ 1000, 0755, "owned by uid 1000" },
		{ NOBODY, 0700, "owned by nobody" },
		{ 0, 0777, "mode 0777" },
		{ 0, 0775, "mode 0775 (group-writable)" },
		{ 0, 01777, "mode 1777 (sticky, like /tmp)" },
		{ 0, 0757, "mode 0757" },
	};
	char dir[300];
	size_t i;

	rel_begin("state_dir_owned_by_a_user_or_writable_by_others_is_refused");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rb_ledger *l = NULL;
		rb_config *cfg2;
		rb_err err;
		int mode;

		snprintf(dir, sizeof(dir), "%s/untrusted-%zu", top, i);
		MUST(mkdir(dir, 0700) == 0 && chown(dir, c[i].uid, c[i].uid) == 0
		     && chmod(dir, c[i].mode) == 0, "%s", dir);
		for (mode = RB_LEDGER_READ; mode <= RB_LEDGER_WRITE; mode++) {
			memset(&err, 0, sizeof(err));
			CHECK(rb_ledger_open(dir, CLUSTER, (rb_ledger_mode)mode,
					     &l, &err) < 0 && !l,
			      "%s: opened in mode %d", c[i].what, mode);
			CHECK(strstr(err.msg, "must be owned by root"),
			      "%s: message '%s'", c[i].what, err.msg);
			rb_ledger_close(l);
			l = NULL;
		}
		cfg2 = rb_config_defaults();
		free(cfg2->state_dir);
		cfg2->state_dir = strdup(dir);
		{
			rb_job_info j = rel_job(CLUSTER, 1, 0);
			rb_start_result res;

			CHECK(rb_lifecycle_start(cfg2, &j, &res, NULL, &err) < 0,
			      "%s: start accepted", c[i].what);
		}
		CHECK(rel_count_entries(dir) == 0,
		      "%s: something was created in it", c[i].what);
		rb_config_free(cfg2);
	}
	rel_end();

	rel_begin("state_dir_that_is_a_symlink_is_refused");
	{
		rb_ledger *l = NULL;
		rb_err err;

		snprintf(dir, sizeof(dir), "%s/state-link", top);
		MUST(symlink(state, dir) == 0, "symlink");
		CHECK(rb_ledger_open(dir, CLUSTER, RB_LEDGER_WRITE, &l, &err) < 0,
		      "a symlinked state_dir was opened");
		CHECK(strstr(err.msg, "symlink"), "message '%s'", err.msg);
		rb_ledger_close(l);
	}
	rel_end();
}

/* ---- symlinks planted under state_dir ------------------------------------ */

static void plant_and_start(const char *name, const char *link_path,
			    uint32_t id, int64_t attempt, bool want_ok)
{
	rb_err err;
	int rc;

	rel_begin(name);
	snap_outside();
	MUST(symlink(target, link_path) == 0 || errno == EEXIST, "symlink %s",
	     link_path);
	rc = start(id, attempt, &err);
	if (want_ok)
		CHECK(rc == 0, "start failed: %s", err.msg);
	else
		CHECK(rc < 0, "start succeeded through a planted symlink");
	check_outside_untouched();
	rel_end();
}

static void test_symlinks(void)
{
	char p[512], b[512], moved[600];
	uint32_t id;
	struct stat st;

	/* the cluster directory itself */
	{
		rb_config *keep = cfg;
		char st2[300];
		rb_err err;

		rel_begin("symlink_as_cluster_dir_is_not_followed");
		snprintf(st2, sizeof(st2), "%s/state2", top);
		MUST(mkdir(st2, 0755) == 0, "%s", st2);
		snprintf(p, sizeof(p), "%s/%s", st2, CLUSTER);
		MUST(symlink(outside, p) == 0, "symlink");
		snap_outside();
		cfg = rb_config_defaults();
		free(cfg->state_dir);
		cfg->state_dir = strdup(st2);
		CHECK(start(7, 0, &err) < 0, "start through a symlinked cluster"
		      " dir succeeded");
		CHECK(strstr(err.msg, "symlink"), "message '%s'", err.msg);
		check_outside_untouched();
		rb_config_free(cfg);
		cfg = keep;
		rel_end();
	}

	/* a bucket directory: a fresh id whose bucket does not exist yet */
	(void)recorded_job(); /* the cluster directory exists */
	id = 777;
	bucket_of(id, b, sizeof(b));
	rel_begin("symlink_as_bucket_dir_is_not_followed");
	snap_outside();
	MUST(symlink(outside, b) == 0, "symlink %s", b);
	{
		rb_err err;

		CHECK(start(id, 0, &err) < 0, "start through a symlinked "
		      "bucket succeeded");
		CHECK(strstr(err.msg, "symlink"), "message '%s'", err.msg);
	}
	check_outside_untouched();
	unlink(b);
	rel_end();

	/* <id>.rec replaced by a symlink to the outside file */
	id = recorded_job();
	path_of(id, ".rec", p, sizeof(p));
	snprintf(moved, sizeof(moved), "%s.saved", p);
	MUST(rename(p, moved) == 0, "rename");
	plant_and_start("symlink_as_record_is_not_followed", p, id, 1, false);

	/* <id>.log replaced by a symlink */
	id = recorded_job();
	path_of(id, ".log", p, sizeof(p));
	MUST(unlink(p) == 0, "unlink %s", p);
	plant_and_start("symlink_as_event_log_is_not_followed", p, id, 1, false);

	/* the temp name the next write (by this pid) will use */
	id = recorded_job();
	path_of(id, ".rec", p, sizeof(p));
	snprintf(moved, sizeof(moved), "%s.tmp.%ld", p, (long)getpid());
	plant_and_start("symlink_as_temp_file_is_not_followed", moved, id, 1,
			true);
	rel_begin("symlink_as_temp_file_leaves_a_real_record");
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0,
	      "the record is not a regular root file after the write");
	CHECK(lstat(moved, &st) < 0 && errno == ENOENT,
	      "the planted temp name is still there");
	rel_end();

	/* A <cluster>/ack left by plugins before 2026-12, replaced by a
	 * symlink out: the plugin no longer uses it, so never follows it. */
	{
		char ack[512], st3[300];
		rb_config *keep = cfg;
		rb_err err;

		rel_begin("planted_legacy_ack_tree_is_never_followed");
		snprintf(st3, sizeof(st3), "%s/state3", top);
		MUST(mkdir(st3, 0755) == 0, "%s", st3);
		cfg = rb_config_defaults();
		free(cfg->state_dir);
		cfg->state_dir = strdup(st3);
		CHECK(start(8, 0, &err) == 0, "start: %s", err.msg);
		snprintf(ack, sizeof(ack), "%s/%s/ack", st3, CLUSTER);
		MUST(symlink(outside, ack) == 0, "symlink %s", ack);
		snap_outside();
		CHECK(start(9, 0, &err) == 0, "start 9: %s", err.msg);
		CHECK(start(8, 1, &err) == 0, "start 8/1: %s", err.msg);
		check_outside_untouched();
		rb_config_free(cfg);
		cfg = keep;
		rel_end();
	}

	/* a FIFO where the record should be: refused, never blocks */
	{
		int status;
		pid_t pid;

		rel_begin("fifo_as_record_is_refused_without_blocking");
		id = recorded_job();
		path_of(id, ".rec", p, sizeof(p));
		MUST(unlink(p) == 0 && mkfifo(p, 0644) == 0, "mkfifo");
		pid = fork();
		MUST(pid >= 0, "fork");
		if (pid == 0) {
			rb_err err;

			alarm(10);
			_exit(start(id, 1, &err) < 0 ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "start on a FIFO record: %s",
		      WIFSIGNALED(status) ? "hung (alarm)" : "accepted");
		rel_end();
	}
}

/* ---- corrupt records ----------------------------------------------------- */

static void expect_corrupt(uint32_t id, const char *what)
{
	char p[512];
	rel_snap before, after;
	rb_record rec;
	rb_err err;
	int rc;

	path_of(id, ".rec", p, sizeof(p));
	before = rel_snapshot(p);
	rc = start(id, 1, &err);
	CHECK(rc < 0, "%s: start accepted the record", what);
	CHECK(strstr(err.msg, "corrupt"), "%s: message '%s'", what, err.msg);
	CHECK(rb_lifecycle_epilog(cfg, CLUSTER, id, 1, 0, 0, NULL, 1, &err) < 0,
	      "%s: epilog accepted the record", what);
	CHECK(rbt_report(cfg, CLUSTER, id, 0, RB_PHASE_RUNNING, "",
				  &err) < 0, "%s: report accepted it", what);
	CHECK(rb_lifecycle_read(cfg, CLUSTER, id, &rec, &err) < 0,
	      "%s: read accepted it", what);
	after = rel_snapshot(p);
	CHECK(rel_snap_same(&before, &after),
	      "%s: the corrupt record was replaced (fresh budget?)", what);
}

static void test_corrupt_records(void)
{
	static char good[RB_RECORD_TEXT_MAX + 1], bad[RB_RECORD_TEXT_MAX + 1];
	char p[512], what[96];
	ssize_t len;
	uint32_t id;
	size_t cut, k;
	unsigned seed = (unsigned)time(NULL);
	int flips = 0;

	id = recorded_job();
	path_of(id, ".rec", p, sizeof(p));
	len = rel_read_file(p, good, sizeof(good));
	MUST(len > 100, "read %s", p);

	rel_begin("truncated_record_is_refused_as_corrupt_never_a_fresh_budget");
	for (cut = 0; cut < (size_t)len; cut += cut < 40 ? 7 : 97) {
		MUST(rel_write_file(p, good, cut, 0644) == 0, "write");
		snprintf(what, sizeof(what), "cut at %zu of %zd", cut, len);
		expect_corrupt(id, what);
	}
	MUST(rel_write_file(p, good, (size_t)len - 1, 0644) == 0, "write");
	expect_corrupt(id, "last byte cut");
	rel_end();

	rel_begin("bit_flipped_record_is_refused_as_corrupt");
	for (k = 0; k < 200; k++) {
		size_t at = (size_t)rand_r(&seed) % (size_t)len;
		int bit = rand_r(&seed) % 8;

		memcpy(bad, good, (size_t)len);
		bad[at] ^= (char)(1 << bit);
		MUST(rel_write_file(p, bad, (size_t)len, 0644) == 0, "write");
		snprintf(what, sizeof(what), "bit %d of byte %zu flipped", bit,
			 at);
		expect_corrupt(id, what);
		flips++;
	}
	rel_end();

	rel_begin("counter_edited_by_hand_without_checksum_is_refused");
	{
		static const char *const edits[][2] = {
			{ "\nfailures=0\n", "\nfailures=9\n" },
			{ "\nfailures=0\n", "\nfailures=-1\n" },
			{ "\ngranted=0\n", "\ngranted=1000\n" },
			{ "\nexhausted=false\n", "\nexhausted=true\n" },
			{ "\nlast_charged=-1\n", "\nlast_charged=99\n" },
		};
		for (k = 0; k < sizeof(edits) / sizeof(edits[0]); k++) {
			const char *at = strstr(good, edits[k][0]);
			size_t pre, olen = strlen(edits[k][0]);
			int n;

			MUST(at, "record has no '%s'", edits[k][0]);
			pre = (size_t)(at - good);
			n = snprintf(bad, sizeof(bad), "%.*s%s%s", (int)pre, good,
				     edits[k][1], at + olen);
			MUST(rel_write_file(p, bad, (size_t)n, 0644) == 0, "w");
			snprintf(what, sizeof(what), "edited '%s'",
				 edits[k][1] + 1);
			expect_corrupt(id, what);
		}
		/* the same edit with the checksum line dropped */
		{
			const char *ck = strstr(good, "checksum=");

			MUST(ck, "no checksum line");
			MUST(rel_write_file(p, good, (size_t)(ck - good), 0644)
			     == 0, "w");
			expect_corrupt(id, "checksum line removed");
		}
		/* an unknown version */
		{
			const char *v1 = strchr(good, '\n');

			snprintf(bad, sizeof(bad), "restore_budget-record 3%s",
				 v1);
			MUST(rel_write_file(p, bad, strlen(bad), 0644) == 0, "w");
			expect_corrupt(id, "version 3");
		}
		/* an empty file */
		MUST(rel_write_file(p, "", 0, 0644) == 0, "w");
		expect_corrupt(id, "empty file");
	}
	rel_end();
	/* leave a good record behind */
	MUST(rel_write_file(p, good, (size_t)len, 0644) == 0, "write");
	printf("  corrupt records: %d bit flips, every truncation step\n",
	       flips);
}

/* ---- a user cannot raise their own budget -------------------------------- */

static uint32_t victim;

static int nobody_tries_to_write(void *arg)
{
	char p[512], b[512], mine[128];
	rb_ledger *l = NULL;
	rb_job *j = NULL;
	rb_err err;
	int fd, bad = 0;

	(void)arg;
	path_of(victim, ".rec", p, sizeof(p));
	bucket_of(victim, b, sizeof(b));
	/* 1: the record itself */
	fd = open(p, O_WRONLY);
	if (fd >= 0 || errno != EACCES)
		bad |= 1;
	/* 2: a new file beside it */
	snprintf(mine, sizeof(mine), "%s/%u.rec.tmp.1", b, victim);
	fd = open(mine, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd >= 0 || errno != EACCES)
		bad |= 2;
	/* 3: a file in state_dir and in the cluster dir */
	snprintf(mine, sizeof(mine), "%s/x", state);
	if (open(mine, O_WRONLY | O_CREAT, 0644) >= 0)
		bad |= 4;
	snprintf(mine, sizeof(mine), "%s/%s/x", state, CLUSTER);
	if (open(mine, O_WRONLY | O_CREAT, 0644) >= 0)
		bad |= 4;
	/* 4: replacing the record by rename from the user's own file */
	if (rename("/tmp", p) == 0 || unlink(p) == 0)
		bad |= 8;
	/* 5: the core, as the plugin would call it */
	if (rb_ledger_open(state, CLUSTER, RB_LEDGER_WRITE, &l, &err) == 0) {
		if (rb_ledger_lock(l, victim, &j, &err) == 0) {
			bad |= 16;
			rb_ledger_unlock(j);
		}
		rb_ledger_close(l);
	}
	if (rb_ledger_open(state, "newcluster", RB_LEDGER_WRITE, &l, &err)
	    == 0) {
		bad |= 32;
		rb_ledger_close(l);
	}
	{
		rb_job_info ji = rel_job(CLUSTER, victim, 1);
		rb_start_result res;

		if (rb_lifecycle_start(cfg, &ji, &res, NULL, &err) == 0)
			bad |= 64;
		if (rb_lifecycle_grant(cfg, CLUSTER, victim, 100, "nobody",
				       &err) == 0)
			bad |= 128;
		if (rb_lifecycle_epilog(cfg, CLUSTER, victim, 1, 0, 0, NULL, 5,
					&err) == 0)
			bad |= 256;
	}
	/* 6: reading is allowed (users may look at budgets) */
	{
		rb_record rec;

		if (rb_lifecycle_read(cfg, CLUSTER, victim, &rec, &err) != 0 ||
		    rec.job_id != victim)
			bad |= 512;
	}
	cres->flags = bad;
	return bad ? 1 : 0;
}

static void test_user_cannot_raise_budget(void)
{
	char p[512], log[512];
	rel_snap before, after, lbefore, lafter;
	int rc;

	rel_begin("user_cannot_raise_their_own_budget");
	{
		/* nobody's own job: its group (nobody's) may read it */
		rb_job_info j = rel_job(CLUSTER, next_id++, 0);
		rb_start_result res;
		rb_err err;

		j.uid = j.gid = 65534;
		MUST(rb_lifecycle_start(cfg, &j, &res, NULL, &err) == 0, "start: %s",
		     err.msg);
		victim = j.job_id;
	}
	path_of(victim, ".rec", p, sizeof(p));
	path_of(victim, ".log", log, sizeof(log));
	before = rel_snapshot(p);
	lbefore = rel_snapshot(log);
	rc = as_nobody(nobody_tries_to_write, NULL);
	CHECK(rc == 0, "nobody could: %s%s%s%s%s%s%s%s%s%s (exit %d)",
	      cres->flags & 1 ? "open the record for writing; " : "",
	      cres->flags & 2 ? "create a file in the bucket; " : "",
	      cres->flags & 4 ? "create a file in state_dir; " : "",
	      cres->flags & 8 ? "replace or remove the record; " : "",
	      cres->flags & 16 ? "lock the job for writing; " : "",
	      cres->flags & 32 ? "create a cluster dir; " : "",
	      cres->flags & 64 ? "start an attempt; " : "",
	      cres->flags & 128 ? "grant budget; " : "",
	      cres->flags & 256 ? "record an end; " : "",
	      cres->flags & 512 ? "NOT read the record; " : "", rc);
	after = rel_snapshot(p);
	lafter = rel_snapshot(log);
	CHECK(rel_snap_same(&before, &after), "the record changed");
	CHECK(rel_snap_same(&lbefore, &lafter), "the event log changed");
	rel_end();
}

/* ---- a reused job id ---------------------------------------------------------- */

/*
 * Slurm reuses job ids (MaxJobId wrap-around, a controller whose state was
 * lost, FirstJobId on a rebuilt cluster). Until `restore-budget gc` removes
 * the old record, the next job with that id must not inherit it: here
 * alice's job 4242 is exhausted, then bob's new job 4242 starts at attempt
 * 0. Only the different uid is used to tell them apart (a same-user reuse
 * cannot be told from the record alone).
 */
static void test_reused_job_id(void)
{
	const uint32_t id = 4242;
	rb_start_result res;
	rb_record rec;
	rb_err err;
	int64_t n;

	rel_begin("reused_job_id_of_another_user_does_not_inherit_the_old_budget");
	for (n = 0; n < 12; n++) {
		rb_job_info j = rel_job(CLUSTER, id, n);

		j.uid = j.gid = 1001;
		j.user = "alice";
		MUST(rb_lifecycle_start(cfg, &j, &res, NULL, &err) == 0, "start: %s",
		     err.msg);
		MUST(rb_lifecycle_epilog(cfg, CLUSTER, id, n, 1, 0, NULL,
					 j.now + 1, &err) == 0, "epilog");
		if (res.decision == RB_DECISION_REFUSE)
			break;
	}
	MUST(res.decision == RB_DECISION_REFUSE, "alice's job never refused");
	{
		rb_job_info j = rel_job(CLUSTER, id, 0);

		j.uid = j.gid = 1002;
		j.user = "bob";
		j.now += 86400 * 30;
		CHECK(rb_lifecycle_start(cfg, &j, &res, NULL, &err) == 0, "start: %s",
		      err.msg);
		CHECK(res.decision == RB_DECISION_RUN && !res.duplicate,
		      "bob's new job is %s as a %s of alice's (%s)",
		      res.decision == RB_DECISION_REFUSE ? "refused" : "run",
		      res.duplicate ? "duplicate start" : "continuation",
		      res.reason);
		CHECK(rb_lifecycle_read(cfg, CLUSTER, id, &rec, &err) == 0 &&
		      rec.uid == 1002 && rec.budget.failures == 0,
		      "the record still is alice's: uid %u, F=%d", rec.uid,
		      rec.budget.failures);
	}
	rel_end();
}

/* ---- job options ----------------------------------------------------------- */

static void test_options(void)
{
	static const struct { const char *opt, *val, *want; } bad[] = {
		{ "max-failures", "-5", "out of range" },
		{ "max-failures", "-2", "out of range" },
		{ "max-failures", "1000001", "out of range" },
		{ "max-failures", "2147483648", "out of range" },
		{ "max-failures", "99999999999999999999999", "out of range" },
		{ "max-failures", "1e3", "not a number" },
		{ "max-failures", "0x10", "not a number" },
		{ "max-failures", " 3", "not a number" },
		{ "max-failures", "3 ", "not a number" },
		{ "max-failures", "+3", "not a number" },
		{ "max-failures", "", "empty" },
		{ "max-failures", "--", "not a number" },
		{ "max-failures", "\xef\xbc\x93", "not a number" }, /* U+FF13 */
		{ "max-failures", "\033[2J\033[31mred", "not a number" },
		{ "max-failures", "3\n--restore-retries=100", "not a number" },
		{ "max-failures", "Unlimited", "not a number" },
		{ "restore-retries", "-1", "out of range" },
		{ "restore-retries", "unlimited", "not a number" },
		{ "restore-retries", "4294967299", "out of range" },
		{ "restore-timeout", "-1", "out of range" },
		{ "restore-timeout", "2592001", "out of range" },
		{ "restore-timeout", "1.5", "not a number" },
		{ "restore-timeout", "10s", "not a number" },
		{ "no-such-option", "1", "unknown option" },
	};
	size_t i;

	rel_begin("bad_option_values_get_a_clear_error_naming_the_option");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rb_overrides o;
		rb_err err;
		char want[64];

		memset(&o, 0, sizeof(o));
		memset(&err, 0, sizeof(err));
		snprintf(want, sizeof(want), "--%s=", bad[i].opt);
		CHECK(rb_options_parse(&o, bad[i].opt, bad[i].val, &err) < 0,
		      "--%s='%s' accepted", bad[i].opt, bad[i].val);
		CHECK(strncmp(err.msg, want, strlen(want)) == 0 &&
		      strstr(err.msg, bad[i].want),
		      "--%s: message '%s' (want '%s')", bad[i].opt, err.msg,
		      bad[i].want);
		CHECK(rel_printable(err.msg, false),
		      "--%s: control bytes in '%s'", bad[i].opt, err.msg);
		CHECK(!o.has_max_failures && !o.has_restore_retry_num &&
		      !o.has_restore_timeout, "--%s: a refused value was "
		      "stored", bad[i].opt);
	}
	rel_end();

	rel_begin("option_over_the_cap_is_refused_naming_cap_and_file");
	{
		rb_overrides o;
		rb_limits lim;
		rb_err err;
		char warn[RB_ERR_MAX];

		memset(&o, 0, sizeof(o));
		CHECK(rb_options_parse(&o, "max-failures", "11", &err) == 0,
		      "11: %s", err.msg);
		CHECK(rb_config_check_caps(cfg, &o, &err) < 0 &&
		      strstr(err.msg, "limits.max_failures = 10") &&
		      strstr(err.msg, cfg->path), "caps: '%s'", err.msg);
		CHECK(rb_config_resolve(cfg, NULL, NULL, &o, &lim, warn,
					sizeof(warn)) == 1 &&
		      lim.max_failures == 10 && strstr(warn, "using 10"),
		      "clamp: M=%d '%s'", lim.max_failures, warn);
		memset(&o, 0, sizeof(o));
		CHECK(rb_options_parse(&o, "max-failures", "unlimited", &err)
		      == 0, "unlimited: %s", err.msg);
		CHECK(rb_config_check_caps(cfg, &o, &err) < 0 &&
		      strstr(err.msg, "allow_unlimited"), "'%s'", err.msg);
		CHECK(rb_config_resolve(cfg, NULL, NULL, &o, &lim, warn,
					sizeof(warn)) == 1 &&
		      lim.max_failures == 10, "unlimited clamp: M=%d",
		      lim.max_failures);
	}
	rel_end();
}

/* ---- --checkpoint-dir, resolved as the job's user ------------------------- */

static char ckroot[300], home[400], secret_dir[400];

typedef struct {
	const char *work_dir, *dir, *latest;
} ck_args;

static int run_find(void *arg)
{
	const ck_args *a = arg;

	cres->rc = rb_checkpoint_find(a->work_dir, a->dir, "checkpoint*",
				      a->latest ? a->latest : "latest",
				      cres->out, sizeof(cres->out), &cres->err);
	snprintf(cres->log, sizeof(cres->log), "%s", rel_log);
	return 0;
}

static void mk_user_dir(const char *p)
{
	MUST(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
	MUST(lchown(p, NOBODY, NOBODY) == 0, "chown %s", p);
}

static void mk_user_file(const char *p, const char *content)
{
	MUST(rel_write_file(p, content, strlen(content), 0644) == 0, "%s", p);
	MUST(lchown(p, NOBODY, NOBODY) == 0, "chown %s", p);
}

static void mk_user_link(const char *to, const char *p)
{
	MUST(symlink(to, p) == 0, "symlink %s", p);
	MUST(lchown(p, NOBODY, NOBODY) == 0, "chown %s", p);
}

static int find_as_nobody(const char *work_dir, const char *dir)
{
	ck_args a = { work_dir, dir, NULL };

	return as_nobody(run_find, &a);
}

static bool no_secret(void)
{
	return !strstr(cres->err.msg, "SECRET") && !strstr(cres->out, "SECRET")
	       && !strstr(cres->log, "SECRET") &&
	       !strstr(cres->err.msg, "hunter2") && !strstr(cres->log, "hunter2");
}

static void test_checkpoint_dirs(void)
{
	char p[4200], q[4200], d[600];
	int st, i;

	snprintf(ckroot, sizeof(ckroot), "%s/ck", top);
	MUST(mkdir(ckroot, 0755) == 0, "%s", ckroot);
	snprintf(home, sizeof(home), "%s/home", ckroot);
	mk_user_dir(home);
	/* a root-only directory holding a file whose name is a secret */
	snprintf(secret_dir, sizeof(secret_dir), "%s/rootonly", ckroot);
	MUST(mkdir(secret_dir, 0700) == 0, "%s", secret_dir);
	snprintf(p, sizeof(p), "%s/checkpoint-SECRET-name", secret_dir);
	MUST(rel_write_file(p, "hunter2\n", 8, 0600) == 0, "%s", p);

	rel_begin("checkpoint_dir_root_only_is_EACCES_and_leaks_nothing");
	st = find_as_nobody(home, secret_dir);
	CHECK(st == 0 && cres->rc < 0, "rc %d (exit %d)", cres->rc, st);
	CHECK(strstr(cres->err.msg, "Permission denied") &&
	      strstr(cres->err.msg, secret_dir), "message '%s'",
	      cres->err.msg);
	CHECK(no_secret(), "secret leaked: '%s' '%s'", cres->err.msg,
	      cres->log);
	st = find_as_nobody(home, "../../../../../../../../../../root");
	CHECK(st == 0 && cres->rc < 0 &&
	      strstr(cres->err.msg, "Permission denied"),
	      "../root: rc %d '%s'", cres->rc, cres->err.msg);
	rel_end();

	rel_begin("checkpoint_pointer_to_root_only_file_falls_back_leaks_nothing");
	snprintf(d, sizeof(d), "%s/ck1", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/checkpoint-1", d);
	mk_user_file(p, "data");
	snprintf(p, sizeof(p), "%s/latest", d);
	snprintf(q, sizeof(q), "%s/checkpoint-SECRET-name", secret_dir);
	mk_user_link(q, p);
	st = find_as_nobody(home, "ck1");
	CHECK(st == 0 && cres->rc == 1, "rc %d '%s' (exit %d)", cres->rc,
	      cres->err.msg, st);
	snprintf(q, sizeof(q), "%s/checkpoint-1", d);
	CHECK(!strcmp(cres->out, q), "found '%s', want '%s'", cres->out, q);
	CHECK(no_secret(), "secret leaked: out '%s' log '%s'", cres->out,
	      cres->log);
	/* a pointer file naming a root-only file via .. */
	snprintf(d, sizeof(d), "%s/ck2", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/latest", d);
	mk_user_file(p, "../../rootonly/checkpoint-SECRET-name\n");
	st = find_as_nobody(home, "ck2");
	CHECK(st == 0 && cres->rc == 0, "dotdot pointer: rc %d out '%s'",
	      cres->rc, cres->out);
	CHECK(no_secret(), "secret leaked: out '%s' log '%s'", cres->out,
	      cres->log);
	rel_end();

	rel_begin("checkpoint_symlink_loops_are_bounded");
	snprintf(d, sizeof(d), "%s/loops", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/a", d);
	snprintf(q, sizeof(q), "%s/b", d);
	mk_user_link(q, p);
	mk_user_link(p, q);
	snprintf(p, sizeof(p), "%s/latest", d);
	mk_user_link("latest", p);                  /* points at itself */
	snprintf(p, sizeof(p), "%s/checkpoint-9", d);
	mk_user_link("checkpoint-9", p);            /* a loop matching */
	snprintf(p, sizeof(p), "%s/checkpoint-8", d);
	mk_user_link("a", p);                       /* into the a<->b loop */
	st = find_as_nobody(home, "loops");
	CHECK(st == 0 && cres->rc == 0, "only loops: rc %d out '%s' '%s' "
	      "(exit %d)", cres->rc, cres->out, cres->err.msg, st);
	st = find_as_nobody(home, "loops/a");
	CHECK(st == 0 && cres->rc < 0 && strstr(cres->err.msg, "symbolic"),
	      "dir is a loop: rc %d '%s' (exit %d)", cres->rc, cres->err.msg,
	      st);
	/* a pointer file that names itself */
	snprintf(d, sizeof(d), "%s/selfptr", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/latest", d);
	mk_user_file(p, "latest\n");
	st = find_as_nobody(home, "selfptr");
	CHECK(st == 0 && cres->rc == 0, "self pointer: rc %d out '%s'",
	      cres->rc, cres->out);
	rel_end();

	rel_begin("checkpoint_fifos_never_block");
	snprintf(d, sizeof(d), "%s/fifos", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/latest", d);
	MUST(mkfifo(p, 0644) == 0 && lchown(p, NOBODY, NOBODY) == 0, "fifo");
	snprintf(p, sizeof(p), "%s/checkpoint-9", d);
	MUST(mkfifo(p, 0644) == 0 && lchown(p, NOBODY, NOBODY) == 0, "fifo");
	snprintf(p, sizeof(p), "%s/checkpoint-1", d);
	mk_user_file(p, "x");
	st = find_as_nobody(home, "fifos");
	snprintf(q, sizeof(q), "%s/checkpoint-1", d);
	CHECK(st == 0 && cres->rc == 1 && !strcmp(cres->out, q),
	      "rc %d out '%s' (exit %d: %s)", cres->rc, cres->out, st,
	      st == 128 + SIGALRM ? "hung" : "");
	/* a pointer file holding a FIFO's name */
	snprintf(p, sizeof(p), "%s/latest", d);
	unlink(p);
	mk_user_file(p, "checkpoint-9\n");
	st = find_as_nobody(home, "fifos");
	CHECK(st == 0 && cres->rc == 1 && !strcmp(cres->out, q),
	      "pointer to FIFO: rc %d out '%s' (exit %d)", cres->rc, cres->out,
	      st);
	rel_end();

	rel_begin("checkpoint_4000_byte_paths_are_bounded");
	/* 16 levels of 249-byte names: a 4000-byte relative path */
	snprintf(p, sizeof(p), "%s", home);
	q[0] = '\0';
	for (i = 0; i < 16; i++) {
		char comp[256];

		memset(comp, 'a' + i, 249);
		comp[249] = '\0';
		strcat(p, "/");
		strcat(p, comp);
		if (i)
			strcat(q, "/");
		strcat(q, comp);
		mk_user_dir(p);
	}
	{
		char f[4300];

		snprintf(f, sizeof(f), "%s/checkpoint-1", p);
		mk_user_file(f, "x");
	}
	/* work_dir + 4000 bytes: longer than RB_PATH_MAX in all */
	st = find_as_nobody(home, q);
	CHECK(st == 0 && (cres->rc == 1 || cres->rc < 0),
	      "deep relative: rc %d (exit %d)", cres->rc, st);
	CHECK(cres->rc == 1 || strlen(cres->err.msg) > 0,
	      "deep relative: error without a message");
	CHECK(cres->rc != 1 || strlen(cres->out) < RB_PATH_MAX,
	      "deep relative: result too long");
	/* the same directory given absolute */
	st = find_as_nobody(home, p);
	CHECK(st == 0 && (cres->rc == 1 || cres->rc < 0),
	      "deep absolute: rc %d (exit %d)", cres->rc, st);
	/* a 4000-byte pointer line and a 5000-byte one */
	snprintf(d, sizeof(d), "%s/longptr", home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/checkpoint-1", d);
	mk_user_file(p, "x");
	for (i = 0; i < 2; i++) {
		static char line[6000];
		size_t n = i ? 5000 : 4000;

		memset(line, 'z', n);
		line[n] = '\n';
		line[n + 1] = '\0';
		snprintf(p, sizeof(p), "%s/latest", d);
		unlink(p);
		mk_user_file(p, line);
		st = find_as_nobody(home, "longptr");
		CHECK(st == 0 && cres->rc == 1,
		      "%zu-byte pointer: rc %d (exit %d) '%s'", n, cres->rc,
		      st, cres->err.msg);
	}
	rel_end();

	rel_begin("checkpoint_non_utf8_and_control_names_are_found_safely");
	snprintf(d, sizeof(d), "%s/odd", home);
	mk_user_dir(d);
	{
		static const char *const names[] = {
			"checkpoint-\xff\xfe", "checkpoint-\n-nl",
			"checkpoint-\033[31m", "checkpoint- %=",
		};
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
		size_t k;

		for (k = 0; k < 4; k++) {
			snprintf(p, sizeof(p), "%s/%s", d, names[k]);
			mk_user_file(p, "x");
			ts[1].tv_sec = 1000000 + (time_t)k;
			utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
		}
		st = find_as_nobody(home, "odd");
		snprintf(q, sizeof(q), "%s/%s", d, names[3]);
		CHECK(st == 0 && cres->rc == 1 && !strcmp(cres->out, q),
		      "rc %d out '%s'", cres->rc, cres->out);
		/* the newest is the ESC one */
		ts[1].tv_sec = 2000000;
		snprintf(p, sizeof(p), "%s/%s", d, names[2]);
		utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
		st = find_as_nobody(home, "odd");
		CHECK(st == 0 && cres->rc == 1 && !strcmp(cres->out, p),
		      "rc %d out '%s'", cres->rc, cres->out);
	}
	rel_end();

	rel_begin("checkpoint_messages_carry_no_control_bytes_from_user_names");
	/* A user's directory name ends up in slurmd's log and the job's
	 * stderr: a newline in it must not forge a log line. */
	snprintf(d, sizeof(d), "%s/ck\nrestore_budget: error: FORGED\033[2J",
		 home);
	mk_user_dir(d);
	snprintf(p, sizeof(p), "%s/latest", d);
	MUST(mkfifo(p, 0644) == 0 && lchown(p, NOBODY, NOBODY) == 0, "fifo");
	st = find_as_nobody(home, "ck\nrestore_budget: error: FORGED\033[2J");
	CHECK(st == 0 && rel_printable(cres->log, true) &&
	      !strstr(cres->log, "\nrestore_budget: error: FORGED"),
	      "log line forged through a directory name: '%s'", cres->log);
	/* The returned error goes only to the job's own stderr (the user's
	 * own path, harmless there): noted, not failed. */
	st = find_as_nobody(home, "missing\nrestore_budget: error: FORGED");
	if (st == 0 && cres->rc < 0 && !rel_printable(cres->err.msg, false))
		printf("  note: the error for a directory name with a newline "
		       "carries it raw (job stderr only)\n");
	rel_end();

	rel_begin("checkpoint_dir_with_20000_entries_is_bounded");
	snprintf(d, sizeof(d), "%s/many", home);
	mk_user_dir(d);
	for (i = 0; i < 20000; i++) {
		int fd;

		snprintf(p, sizeof(p), "%s/%s-%05d", d,
			 i % 2 ? "checkpoint" : "other", i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		MUST(fd >= 0, "%s", p);
		close(fd);
	}
	{
		struct timespec t0, t1;
		double secs;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		st = find_as_nobody(home, "many");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		CHECK(st == 0 && cres->rc == 1, "rc %d (exit %d)", cres->rc,
		      st);
		CHECK(secs < 10, "took %.1f s", secs);
		printf("  20000 entries scanned in %.2f s\n", secs);
	}
	rel_end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(geteuid() == 0, "must run as root");
	cres = mmap(NULL, sizeof(*cres), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	MUST(cres != MAP_FAILED, "mmap");
	rel_tmpdir(top, sizeof(top), "hostile");
	snprintf(state, sizeof(state), "%s/state", top);
	snprintf(outside, sizeof(outside), "%s/outside", top);
	snprintf(target, sizeof(target), "%s/target", outside);
	MUST(mkdir(state, 0755) == 0 && mkdir(outside, 0755) == 0, "mkdir");
	MUST(rel_write_file(target, "outside\n", 8, 0644) == 0, "target");
	cfg = rb_config_defaults();
	free(cfg->state_dir);
	cfg->state_dir = strdup(state);
	rel_capture_log();

	test_state_dir_untrusted();
	test_symlinks();
	test_corrupt_records();
	test_user_cannot_raise_budget();
	test_reused_job_id();
	test_options();
	test_checkpoint_dirs();

	rb_config_free(cfg);
	if (!getenv("REL_KEEP"))
		rel_rm_rf(top);
	return rel_summary("hostile");
}
