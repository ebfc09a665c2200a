/*
 * bench_storm.c - the prolog storm: N nodes of one job run their prolog at
 * the same moment, against one state_dir.
 *
 * For each N the bench forks N workers. Each waits on a barrier (a pipe the
 * parent holds open: every worker blocks in read() until the parent closes
 * its end, so all see EOF together), then runs ONE node's work for the same
 * job (same cluster, job id and attempt) and exits. Only that work is timed,
 * in each worker, with CLOCK_MONOTONIC (one clock for all processes). Per
 * repetition: span = last worker's end - first worker's start.
 *
 * The work is chosen by --mode (modes[] below):
 *   ledger   what today's prolog does on every node after loading its
 *            config: rb_lifecycle_start (lock the job, read its record,
 *            decide, write the record and an event line if it is the first
 *            to see this attempt, unlock). The config is loaded once before
 *            the fork (every node loads its own; that is not ledger work).
 *   note     what the prolog does since only the batch host does ledger
 *            work (docs/architecture.md, "Only the batch host"): every
 *            node writes its note in its own node-local run_dir
 *            (<state>.run/node<i>), and node 0, the batch host, then
 *            claims its note and records the attempt (rb_lifecycle_start,
 *            as the batch step does), so its ledger work is in the span.
 *   noop     nothing: the harness's own floor on this machine (waking N
 *            processes on few CPUs takes time; the span includes it).
 *
 * Ledger operations are counted in-process, without strace: the binary is
 * linked with -Wl,--wrap for fcntl, openat, __openat_2, renameat, write and
 * close (mk/bench.mk), so every such call the core makes goes through a
 * counter here first, classified by the file it names or the fd it uses:
 *   locks        fcntl F_SETLK/F_OFD_SETLK F_WRLCK that succeeded
 *   lock_busy    the same that found the lock held (a retry follows)
 *   rec_reads    opens of "<id>.rec", found or not (the record's lookup
 *                and read under the lock; none is found by attempt 0's
 *                first prolog)
 *   rec_writes   renames onto "<id>.rec" (an atomic record replace)
 *   log_appends  write()s to an fd opened as "<id>.log" (event lines)
 *   ops          locks + rec_reads + rec_writes + log_appends
 * Counters are reset after the barrier and read right after the work, in
 * each worker; the job's totals are summed over its N workers.
 *
 * Usage:
 *   bench_storm --state DIR --config FILE [--cluster C] [--mode NAME]
 *               [--nodes "1 16 64 256 1024"] [--reps R] [--label L]
 *               [--id-base N]
 * The config's state_dir must be DIR (bench_events config writes one).
 * Output: "storm ..." key=value lines (tests/bench/run.sh, report.awk);
 * nothing is asserted. Exit 1 if a worker failed or a setup step did.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "lifecycle.h"
#include "node_note.h"

#define MAX_NODES 4096
#define MAX_REPS 100
#define FD_TRACKED 65536

/* ---- counting the core's calls (-Wl,--wrap) -------------------------------- */

enum fd_kind { FD_OTHER, FD_REC, FD_LOG, FD_LOCK };

struct ops {
	unsigned long locks, lock_busy, rec_reads, rec_writes, log_appends;
};

static struct ops counted;
static unsigned char fd_kind[FD_TRACKED];

int __real_fcntl(int fd, int cmd, ...);
int __real_openat(int dirfd, const char *path, int flags, ...);
int __real___openat_2(int dirfd, const char *path, int flags);
int __real_renameat(int olddirfd, const char *oldpath, int newdirfd,
		    const char *newpath);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_close(int fd);
int __wrap_fcntl(int fd, int cmd, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
int __wrap___openat_2(int dirfd, const char *path, int flags);
int __wrap_renameat(int olddirfd, const char *oldpath, int newdirfd,
		    const char *newpath);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __wrap_close(int fd);

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static enum fd_kind kind_of_name(const char *path)
{
	if (ends_with(path, ".rec"))
		return FD_REC;
	if (ends_with(path, ".log"))
		return FD_LOG;
	if (ends_with(path, ".lock"))
		return FD_LOCK;
	return FD_OTHER;
}

static int note_open(int fd, const char *path)
{
	enum fd_kind k = kind_of_name(path);

	if (fd >= 0 && fd < FD_TRACKED)
		fd_kind[fd] = (unsigned char)k;
	if (k == FD_REC)
		counted.rec_reads++;
	return fd;
}

int __wrap_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	int rc, e;

	va_start(ap, cmd);
	arg = va_arg(ap, void *); /* glibc's own fcntl reads it the same way */
	va_end(ap);
	rc = __real_fcntl(fd, cmd, arg);
	e = errno;
	if ((cmd == F_SETLK
#ifdef F_OFD_SETLK
	     || cmd == F_OFD_SETLK
#endif
	    ) && ((const struct flock *)arg)->l_type == F_WRLCK) {
		if (rc == 0)
			counted.locks++;
		else if (e == EAGAIN || e == EACCES)
			counted.lock_busy++;
	}
	errno = e;
	return rc;
}

int __wrap_openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return note_open(__real_openat(dirfd, path, flags, mode), path);
}

int __wrap___openat_2(int dirfd, const char *path, int flags)
{
	return note_open(__real___openat_2(dirfd, path, flags), path);
}

int __wrap_renameat(int olddirfd, const char *oldpath, int newdirfd,
		    const char *newpath)
{
	int rc = __real_renameat(olddirfd, oldpath, newdirfd, newpath);

	if (rc == 0 && kind_of_name(newpath) == FD_REC)
		counted.rec_writes++;
	return rc;
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	ssize_t rc = __real_write(fd, buf, n);

	if (rc > 0 && fd >= 0 && fd < FD_TRACKED && fd_kind[fd] == FD_LOG)
		counted.log_appends++;
	return rc;
}

int __wrap_close(int fd)
{
	if (fd >= 0 && fd < FD_TRACKED)
		fd_kind[fd] = FD_OTHER;
	return __real_close(fd);
}

/* ---- modes ------------------------------------------------------------------ */

struct storm_ctx {
	const rb_config *cfg;
	const char *cluster;
	uint32_t job_id;
	int64_t attempt;
	int nodes;
};

/* the job every node of the storm starts */
static rb_job_info storm_job(const struct storm_ctx *c)
{
	rb_job_info job = {
		.cluster = c->cluster, .job_id = c->job_id,
		.attempt = c->attempt, .uid = 1000, .gid = 1000,
		.user = "alice", .partition = "low", .account = NULL,
		.work_dir = "/home/alice/run", .checkpoint_dir = "ckpt",
		.now = (int64_t)time(NULL),
	};
	return job;
}

/* today's prolog on node `node` of ctx->nodes: 0 = ok, -1 = failed */
static int ledger_work(const struct storm_ctx *c, int node)
{
	rb_job_info job = storm_job(c);
	rb_start_result res;
	rb_err err;

	if (rb_lifecycle_start(c->cfg, &job, &res, NULL, &err) == 0)
		return 0;
	fprintf(stderr, "bench_storm: node %d: rb_lifecycle_start: %s\n", node,
		err.msg);
	return -1;
}

/* the prolog after issue 12: a node-local note everywhere; the ledger
 * work once, on node 0 (the batch host's batch step) */
static int note_work(const struct storm_ctx *c, int node)
{
	rb_job_info job = storm_job(c);
	char run_dir[RB_PATH_MAX];
	rb_start_result res;
	rb_note_job claimed;
	rb_record rec;
	rb_err err;

	snprintf(run_dir, sizeof(run_dir), "%s.run/node%d", c->cfg->state_dir,
		 node);
	if (rb_note_write(run_dir, "host", &job, &err) < 0)
		goto fail;
	if (node != 0)
		return 0;
	if (rb_note_claim(run_dir, "host", c->cluster, c->job_id, &claimed,
			  &err) != 0 ||
	    rb_lifecycle_start(c->cfg, &claimed.job, &res, &rec, &err) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "bench_storm: node %d: %s\n", node, err.msg);
	return -1;
}

/* no work: what the barrier and the timing cost by themselves */
static int noop_work(const struct storm_ctx *c, int node)
{
	(void)c;
	(void)node;
	return 0;
}

struct storm_mode {
	const char *name;
	int (*work)(const struct storm_ctx *ctx, int node);
};

static const struct storm_mode modes[] = {
	{ "ledger", ledger_work },
	{ "note", note_work },
	{ "noop", noop_work },
};

/* ---- one storm -------------------------------------------------------------- */

/* What a worker leaves in the shared map. */
struct slot {
	double start_ns, end_ns;
	struct ops ops;
	int rc;
};

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_storm: %s: %s\n", what, msg);
	exit(1);
}

/* The worker: say ready, wait for the release (EOF on go), work, record. */
static void worker(const struct storm_ctx *c, const struct storm_mode *m,
		   int node, int ready_fd, int go_fd, struct slot *s)
{
	char b = 'r';

	/* touch now what the timed part writes (copy-on-write faults after
	 * the fork are the harness's cost, not the work's) */
	memset(&counted, 0, sizeof(counted));
	memset(s, 0, sizeof(*s));
	s->start_ns = mono_ns();
	if (__real_write(ready_fd, &b, 1) != 1)
		_exit(2);
	while (read(go_fd, &b, 1) < 0 && errno == EINTR)
		;
	memset(&counted, 0, sizeof(counted));
	s->start_ns = mono_ns();
	s->rc = m->work(c, node);
	s->end_ns = mono_ns();
	s->ops = counted;
	_exit(s->rc == 0 ? 0 : 1);
}

/* Fork n workers; return once all are blocked on the barrier. */
static void fork_workers(const struct storm_ctx *c, const struct storm_mode *m,
			 struct slot *slots, int ready[2], int go[2])
{
	int have = 0;
	char buf[256];

	for (int i = 0; i < c->nodes; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork", strerror(errno));
		if (pid == 0) {
			__real_close(ready[0]);
			__real_close(go[1]);
			worker(c, m, i, ready[1], go[0], &slots[i]);
		}
	}
	__real_close(ready[1]);
	__real_close(go[0]);
	while (have < c->nodes) {
		ssize_t n = read(ready[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("barrier", "a worker died before it was ready");
		have += (int)n;
	}
	__real_close(ready[0]);
}

/* Run one storm; 0 if every worker exited 0. */
static int storm_once(const struct storm_ctx *c, const struct storm_mode *m,
		      struct slot *slots)
{
	int ready[2], go[2], status, bad = 0;

	memset(slots, 0, sizeof(*slots) * (size_t)c->nodes);
	if (pipe(ready) < 0 || pipe(go) < 0)
		die("pipe", strerror(errno));
	fork_workers(c, m, slots, ready, go);
	__real_close(go[1]); /* release: every worker's read() returns 0 */
	for (int i = 0; i < c->nodes; i++) {
		if (wait(&status) < 0)
			die("wait", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	return bad;
}

/* ---- statistics and output ----------------------------------------------- */

struct rep {
	double span_ms, skew_ms, work_max_ms;
	struct ops ops;
	int failed;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void add_ops(struct ops *to, const struct ops *o)
{
	to->locks += o->locks;
	to->lock_busy += o->lock_busy;
	to->rec_reads += o->rec_reads;
	to->rec_writes += o->rec_writes;
	to->log_appends += o->log_appends;
}

/* One repetition's figures from its slots; work times go to work_ms[]. */
static struct rep summarize(const struct slot *s, int n, int failed,
			    double *work_ms)
{
	struct rep r = { .failed = failed };
	double first_start = s[0].start_ns, last_start = s[0].start_ns;
	double last_end = s[0].end_ns;

	for (int i = 0; i < n; i++) {
		double w = (s[i].end_ns - s[i].start_ns) / 1e6;

		if (s[i].start_ns < first_start)
			first_start = s[i].start_ns;
		if (s[i].start_ns > last_start)
			last_start = s[i].start_ns;
		if (s[i].end_ns > last_end)
			last_end = s[i].end_ns;
		if (w > r.work_max_ms)
			r.work_max_ms = w;
		work_ms[i] = w;
		add_ops(&r.ops, &s[i].ops);
	}
	r.span_ms = (last_end - first_start) / 1e6;
	r.skew_ms = (last_start - first_start) / 1e6;
	return r;
}

static double ops_of(const struct ops *o)
{
	return (double)(o->locks + o->rec_reads + o->rec_writes +
			o->log_appends);
}

/* One "storm" line: medians over the repetitions, ops per job as the mean. */
static void print_row(const char *label, const char *mode, int n,
		      const struct rep *r, int reps, double *work_ms,
		      long nwork)
{
	double span[MAX_REPS], skew[MAX_REPS], wmax[MAX_REPS];
	double span_max = 0, span_min = r[0].span_ms;
	struct ops tot = { 0 };
	int failed = 0;

	for (int i = 0; i < reps; i++) {
		span[i] = r[i].span_ms;
		skew[i] = r[i].skew_ms;
		wmax[i] = r[i].work_max_ms;
		span_max = r[i].span_ms > span_max ? r[i].span_ms : span_max;
		span_min = r[i].span_ms < span_min ? r[i].span_ms : span_min;
		add_ops(&tot, &r[i].ops);
		failed += r[i].failed;
	}
	printf("storm label=%s mode=%s nodes=%d reps=%d span_med_ms=%.2f "
	       "span_min_ms=%.2f span_max_ms=%.2f release_skew_med_ms=%.2f "
	       "work_med_ms=%.3f work_max_med_ms=%.2f locks=%.1f "
	       "lock_busy=%.1f rec_reads=%.1f rec_writes=%.1f "
	       "log_appends=%.1f ops_per_job=%.1f ops_per_node=%.2f "
	       "failed=%d\n", label, mode, n, reps, median(span, reps),
	       span_min, span_max, median(skew, reps),
	       median(work_ms, (int)nwork), median(wmax, reps),
	       (double)tot.locks / reps, (double)tot.lock_busy / reps,
	       (double)tot.rec_reads / reps, (double)tot.rec_writes / reps,
	       (double)tot.log_appends / reps, ops_of(&tot) / reps,
	       ops_of(&tot) / reps / n, failed);
}

/* ---- main ------------------------------------------------------------------- */

struct args {
	const char *state, *config, *cluster, *mode, *label, *nodes;
	int reps;
	unsigned long id_base;
};

static const struct storm_mode *find_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(modes[i].name, name) == 0)
			return &modes[i];
	return NULL;
}

/* All repetitions for one N; returns the failed workers. */
static int run_n(const struct args *a, const struct storm_mode *m,
		 struct storm_ctx *c, struct slot *slots, int row)
{
	struct rep r[MAX_REPS];
	double *work_ms = malloc(sizeof(double) * (size_t)c->nodes *
				 (size_t)a->reps);
	int failed = 0;

	if (!work_ms)
		die("run", "out of memory");
	for (int i = 0; i < a->reps; i++) {
		int bad;

		/* a fresh job per repetition: its first prolog creates the
		 * record, as on attempt 0 of a real job */
		c->job_id = (uint32_t)(a->id_base + (unsigned long)row * 1000 +
				       (unsigned long)i);
		bad = storm_once(c, m, slots);
		r[i] = summarize(slots, c->nodes, bad,
				 work_ms + (size_t)i * (size_t)c->nodes);
		failed += bad;
	}
	print_row(a->label, m->name, c->nodes, r, a->reps, work_ms,
		  (long)c->nodes * a->reps);
	free(work_ms);
	return failed;
}

static void usage(void)
{
	fputs("usage: bench_storm --state DIR --config FILE [--cluster C] "
	      "[--mode NAME] [--nodes \"1 16 64 256 1024\"] [--reps R] "
	      "[--label L] [--id-base N]\n       modes:", stderr);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(stderr, " %s", modes[i].name);
	fputc('\n', stderr);
	exit(2);
}

static struct args parse_args(int argc, char **argv)
{
	struct args a = {
		.cluster = "storm", .mode = "ledger", .label = "storm",
		.nodes = "1 16 64 256 1024", .reps = 5, .id_base = 7000001,
	};

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (strcmp(o, name) == 0 && v && ++i)
		if (ARG("--state"))
			a.state = v;
		else if (ARG("--config"))
			a.config = v;
		else if (ARG("--cluster"))
			a.cluster = v;
		else if (ARG("--mode"))
			a.mode = v;
		else if (ARG("--nodes"))
			a.nodes = v;
		else if (ARG("--reps"))
			a.reps = atoi(v);
		else if (ARG("--label"))
			a.label = v;
		else if (ARG("--id-base"))
			a.id_base = strtoul(v, NULL, 10);
		else
			usage();
#undef ARG
	}
	if (!a.state || !a.config || a.reps < 1 || a.reps > MAX_REPS ||
	    a.id_base < 1 || a.id_base > 4000000000UL)
		usage();
	return a;
}

int main(int argc, char **argv)
{
	struct args a = parse_args(argc, argv);
	const struct storm_mode *m = find_mode(a.mode);
	struct storm_ctx c = { .cluster = a.cluster, .attempt = 0 };
	struct slot *slots;
	rb_config *cfg;
	rb_err err;
	char *list, *tok, *save = NULL;
	int failed = 0, row = 0;

	if (!m)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rb_config_load(a.config, &cfg, &err) < 0)
		die("rb_config_load", err.msg);
	c.cfg = cfg;
	slots = mmap(NULL, sizeof(*slots) * MAX_NODES, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	list = strdup(a.nodes);
	if (slots == MAP_FAILED || !list)
		die("setup", strerror(errno));
	printf("storm_method mode=%s clock=CLOCK_MONOTONIC barrier=pipe "
	       "counting=\"-Wl,--wrap of fcntl/openat/renameat/write in the "
	       "core\" config=\"loaded once before the fork\" state=%s\n",
	       m->name, a.state);
	for (tok = strtok_r(list, " ,", &save); tok;
	     tok = strtok_r(NULL, " ,", &save), row++) {
		c.nodes = atoi(tok);
		if (c.nodes < 1 || c.nodes > MAX_NODES)
			die("--nodes", tok);
		failed += run_n(&a, m, &c, slots, row);
	}
	free(list);
	munmap(slots, sizeof(*slots) * MAX_NODES);
	rb_config_free(cfg);
	return failed ? 1 : 0;
}
