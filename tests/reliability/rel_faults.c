/*
 * rel_faults.c - the state_dir failing under the core (docs/architecture.md,
 * "Where each event happens" and "The ledger"): full, read-only, gone.
 * Each time rb_lifecycle_start must return
 * -1 with a message that says what is wrong (the glue logs it and applies
 * on_error; it never drains the node), the old record must still be intact
 * and readable, and no temp file may ever be taken for a record. Once the
 * fault is gone, the job carries on from its old record.
 *
 * The state_dir is a 64 KiB tmpfs mounted here (root needed) and always
 * unmounted on the way out, also on a signal.
 */
#include "rel.h"

#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/mount.h>

#include "config.h"
#include "ledger.h"
#include "lifecycle.h"
#include "record.h"

#define CLUSTER "faults"

static char top[128], mnt[256];
static bool mounted;
static rb_config *cfg;

static void unmount(void)
{
	if (mounted && umount2(mnt, MNT_DETACH) == 0)
		mounted = false;
}

static void on_signal(int sig)
{
	unmount();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void mount_tmpfs(void)
{
	MUST(mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV,
		   "size=64k,mode=0755") == 0, "mount tmpfs on %s", mnt);
	mounted = true;
}

static int start(uint32_t id, int64_t attempt, rb_err *err)
{
	return rel_start(cfg, CLUSTER, id, attempt, err);
}

static void rec_path(uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%03u/%u.rec", mnt, CLUSTER, id % 1000, id);
}

/* Temp files ("*.tmp*") anywhere in the job's bucket. */
static int temp_files(uint32_t id)
{
	char b[400];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(b, sizeof(b), "%s/%s/%03u", mnt, CLUSTER, id % 1000);
	d = opendir(b);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tmp"))
			n++;
	closedir(d);
	return n;
}

static int collect_id(uint32_t id, void *ctx)
{
	uint64_t *mask = ctx;

	if (id < 64)
		*mask |= 1ULL << id;
	return 0;
}

static uint64_t listed_jobs(void)
{
	rb_ledger *l;
	rb_err err;
	uint64_t mask = 0;

	if (rb_ledger_open(mnt, CLUSTER, RB_LEDGER_READ, &l, &err) < 0)
		return ~0ULL;
	if (rb_ledger_jobs(l, collect_id, &mask, &err) < 0)
		mask = ~0ULL;
	rb_ledger_close(l);
	return mask;
}

/* The record of id still reads back as attempt `attempt`, byte for byte
 * what it was. */
static void check_intact(uint32_t id, int64_t attempt, const rel_snap *was,
			 const char *when)
{
	char p[400];
	rel_snap now;
	rb_record rec;
	rb_err err;

	rec_path(id, p, sizeof(p));
	now = rel_snapshot(p);
	CHECK(rel_snap_same(was, &now), "%s: job %u's record changed", when,
	      id);
	CHECK(rb_lifecycle_read(cfg, CLUSTER, id, &rec, &err) == 0,
	      "%s: job %u's record unreadable: %s", when, id, err.msg);
	CHECK(rec.budget.cur.attempt == attempt,
	      "%s: job %u at attempt %" PRId64 ", want %" PRId64, when, id,
	      rec.budget.cur.attempt, attempt);
	CHECK(temp_files(id) == 0, "%s: %d temp files left beside job %u",
	      when, temp_files(id), id);
}

/* Fill the file system; returns the filler's fd (unlink to free). */
static int fill(const char *name)
{
	static char block[4096];
	char p[400];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", mnt, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	MUST(fd >= 0, "%s", p);
	memset(block, 'f', sizeof(block));
	while (write(fd, block, sizeof(block)) > 0)
		;
	MUST(errno == ENOSPC, "filling %s", p);
	/* and every last byte of the last page */
	while (write(fd, block, 1) > 0)
		;
	return fd;
}

static void test_full(void)
{
	char p[400];
	rel_snap r1, r2;
	rb_err err;
	int fd, rc;

	rel_begin("state_dir_full_start_fails_clearly_old_record_intact");
	MUST(start(1, 0, &err) == 0, "start 1: %s", err.msg);
	MUST(start(2, 0, &err) == 0, "start 2: %s", err.msg);
	rec_path(1, p, sizeof(p));
	r1 = rel_snapshot(p);
	rec_path(2, p, sizeof(p));
	r2 = rel_snapshot(p);
	fd = fill("filler");
	rc = start(1, 1, &err);
	CHECK(rc < 0, "start succeeded on a full state_dir");
	CHECK(strstr(err.msg, "No space left on device") &&
	      strstr(err.msg, mnt), "message '%s'", err.msg);
	check_intact(1, 0, &r1, "full");
	CHECK(rb_lifecycle_epilog(cfg, CLUSTER, 2, 1, 0, 0, "preempted", 5,
				  &err) < 0, "epilog succeeded on a full disk");
	check_intact(2, 0, &r2, "full, epilog");
	rc = start(3, 0, &err);
	CHECK(rc < 0, "a new job was recorded on a full state_dir");
	CHECK(listed_jobs() == ((1ULL << 1) | (1ULL << 2)),
	      "jobs listed: %#" PRIx64 ", want jobs 1 and 2", listed_jobs());
	rel_end();

	rel_begin("state_dir_full_then_freed_the_job_carries_on");
	close(fd);
	snprintf(p, sizeof(p), "%s/filler", mnt);
	unlink(p);
	CHECK(start(1, 1, &err) == 0, "start after freeing space: %s", err.msg);
	{
		rb_record rec;

		CHECK(rb_lifecycle_read(cfg, CLUSTER, 1, &rec, &err) == 0 &&
		      rec.budget.cur.attempt == 1 &&
		      rec.budget.last_charged == 0,
		      "job 1 after recovery: attempt %" PRId64 " last_charged %"
		      PRId64, rec.budget.cur.attempt, rec.budget.last_charged);
	}
	CHECK(temp_files(1) == 0, "temp files left");
	rel_end();

	/* Space for some of the update only: whatever fails, the record is
	 * the old or the new one, never torn, and temp files never count. */
	rel_begin("state_dir_nearly_full_every_outcome_is_old_or_new");
	{
		int k, outcomes[2] = { 0, 0 }, torn = 0, half = 0;

		for (k = 0; k < 24; k++) {
			char fp[400];
			rb_record rec;
			int64_t before;
			off_t sz;

			MUST(rb_lifecycle_read(cfg, CLUSTER, 2, &rec, &err) == 0,
			     "read 2: %s", err.msg);
			before = rec.budget.cur.attempt;
			fd = fill("filler2");
			/* give back k * 256 bytes (up to 6 KiB) */
			sz = lseek(fd, 0, SEEK_END);
			MUST(ftruncate(fd, sz - (off_t)k * 256) == 0, "trunc");
			rc = start(2, before + 1, &err);
			outcomes[rc == 0]++;
			if (rb_lifecycle_read(cfg, CLUSTER, 2, &rec, &err) != 0)
				torn++;
			else if (rc < 0 && rec.budget.cur.attempt == before + 1)
				half++; /* record written, event append failed */
			if (rc == 0 || torn == 0)
				CHECK(rec.budget.cur.attempt == before ||
				      rec.budget.cur.attempt == before + 1,
				      "attempt %" PRId64 " after %" PRId64,
				      rec.budget.cur.attempt, before);
			CHECK(rc == 0 || strstr(err.msg, "No space"),
			      "unclear message '%s'", err.msg);
			CHECK(temp_files(2) == 0, "temp files left (k=%d)", k);
			close(fd);
			snprintf(fp, sizeof(fp), "%s/filler2", mnt);
			unlink(fp);
		}
		CHECK(torn == 0, "%d unreadable records", torn);
		printf("  nearly full: %d starts failed (%d of them after the "
		       "record was written: only the event line is missing), "
		       "%d succeeded\n", outcomes[0], half, outcomes[1]);
	}
	rel_end();
}

static void test_read_only(void)
{
	char p[400];
	rel_snap r1;
	rb_err err;
	rb_record rec;
	int64_t at;

	rel_begin("state_dir_read_only_start_fails_clearly_old_record_intact");
	MUST(rb_lifecycle_read(cfg, CLUSTER, 1, &rec, &err) == 0, "read");
	at = rec.budget.cur.attempt;
	rec_path(1, p, sizeof(p));
	r1 = rel_snapshot(p);
	MUST(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0,
	     "remount ro");
	CHECK(start(1, at + 1, &err) < 0, "start succeeded on a read-only fs");
	CHECK(strstr(err.msg, "Read-only file system"), "message '%s'",
	      err.msg);
	CHECK(start(9, 0, &err) < 0, "new job recorded on a read-only fs");
	CHECK(rb_lifecycle_epilog(cfg, CLUSTER, 1, at + 1, 0, 0, NULL, 5, &err)
	      < 0, "epilog succeeded on a read-only fs");
	check_intact(1, at, &r1, "read-only");
	MUST(mount(NULL, mnt, NULL, MS_REMOUNT, NULL) == 0, "remount rw");
	CHECK(start(1, at + 1, &err) == 0, "start after remount rw: %s",
	      err.msg);
	rel_end();
}

static void test_removed(void)
{
	rb_err err;
	rb_record rec;

	rel_begin("state_dir_removed_start_fails_clearly");
	unmount();
	MUST(rmdir(mnt) == 0, "rmdir %s", mnt);
	CHECK(start(1, 5, &err) < 0, "start succeeded without a state_dir");
	CHECK(strstr(err.msg, mnt) &&
	      strstr(err.msg, "No such file or directory"), "message '%s'",
	      err.msg);
	CHECK(access(mnt, F_OK) < 0, "the state_dir was created again");
	/* reading: an error naming the state_dir (or, as older cores did,
	 * "no record"), never a crash */
	memset(&err, 0, sizeof(err));
	{
		int rc = rb_lifecycle_read(cfg, CLUSTER, 1, &rec, &err);

		CHECK(rc == 1 || (rc < 0 && strstr(err.msg, mnt) &&
				  strstr(err.msg, "No such file")),
		      "read without a state_dir: rc %d '%s'", rc, err.msg);
	}
	rel_end();

	rel_begin("state_dir_replaced_by_a_file_start_fails_clearly");
	MUST(rel_write_file(mnt, "x", 1, 0644) == 0, "file");
	CHECK(start(1, 5, &err) < 0, "start succeeded on a file state_dir");
	CHECK(strstr(err.msg, "not a directory"), "message '%s'", err.msg);
	unlink(mnt);
	rel_end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(geteuid() == 0, "must run as root");
	rel_tmpdir(top, sizeof(top), "faults");
	snprintf(mnt, sizeof(mnt), "%s/state", top);
	MUST(mkdir(mnt, 0755) == 0, "%s", mnt);
	atexit(unmount);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	mount_tmpfs();
	cfg = rb_config_defaults();
	free(cfg->state_dir);
	cfg->state_dir = strdup(mnt);
	cfg->restore_timeout = 0;
	rel_capture_log();

	test_full();
	test_read_only();
	test_removed();

	unmount();
	rb_config_free(cfg);
	rel_rm_rf(top);
	return rel_summary("faults");
}
