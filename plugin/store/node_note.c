/*
 * node_note.c - the node-local note of a job's prolog (node_note.h).
 *
 * run_dir is root's alone (0700), so no user can plant, read or remove a
 * note; still every name is built from checked parts, every open is
 * O_NOFOLLOW relative to the opened run_dir, and the reader is strict
 * (docs/security.md, "Trust").
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node_note.h"
#include "base/base.h"

/* Every value escaped (rb_kv_escape: at most 3 bytes a byte) and at most
 * its field's size (rb_note_job): a work dir, three names, a submission,
 * three numbers and the keys fit. */
#define NOTE_MAX (3 * (RB_PATH_MAX + 3 * RB_NAME_MAX) + RB_SUBMISSION_MAX + 512)
#define NOTE_NAME_MAX (2 * RB_NAME_MAX + 32)
/* The first line of a note (its values escaped): a note without it is not
 * one this plugin wrote, and is refused. */
#define NOTE_V2 "note=2"

/* "<host>.<cluster>.<job>.<kind>" into buf (NOTE_NAME_MAX bytes); -1 with
 * err if a part could name another file (the cluster: the ledger's own
 * rule, rb_cluster_name_ok). */
static int note_name(const char *host, const char *cluster, uint32_t job_id,
		     const char *kind, char *buf, rb_err *err)
{
	int n;

	if (!host[0] || host[0] == '.' || strchr(host, '/') ||
	    strlen(host) >= RB_NAME_MAX || !rb_cluster_name_ok(cluster))
		n = -1;
	else
		n = snprintf(buf, NOTE_NAME_MAX, "%s.%s.%" PRIu32 ".%s", host,
			     cluster, job_id, kind);
	if (n < 0 || n >= NOTE_NAME_MAX)
		return rb_err_set(err, "job %" PRIu32 ": no note name for host %s, cluster %s",
				  job_id, host, cluster);
	return 0;
}

/* run_dir opened, if it is a directory root alone may write. */
static int open_run_dir(const char *run_dir, rb_err *err)
{
	struct stat st;
	int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		rb_err_setf(err, "run_dir %s: %s", run_dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !rb_root_trusted(&st) ||
	    (st.st_mode & (S_IRWXG | S_IRWXO))) {
		rb_err_setf(err, "run_dir %s is not root's alone (owner %u, mode %04o): fix it with 'chown root:root %s; chmod 0700 %s'",
			    run_dir, (unsigned)st.st_uid,
			    (unsigned)(st.st_mode & 07777), run_dir, run_dir);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* run_dir opened, created first (root, 0700) if missing: the prolog's and
 * the batch step's writes open it once. */
static int open_or_make_run_dir(const char *run_dir, rb_err *err)
{
	if (run_dir[0] != '/') {
		rb_err_setf(err, "run_dir %s is not an absolute path", run_dir);
		return -1;
	}
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST) {
		rb_err_setf(err, "cannot create run_dir %s: %s", run_dir,
			    strerror(errno));
		return -1;
	}
	return open_run_dir(run_dir, err);
}

/* One "key=value" line, the value escaped (any byte a path may hold
 * round-trips, docs/security.md "Names"); -1 if the note is full. */
static int put(char *buf, size_t len, size_t *used, const char *key,
	       const char *value)
{
	size_t klen = strlen(key);
	ssize_t n;

	if (len - *used < klen + 3)
		return -1;
	memcpy(buf + *used, key, klen);
	buf[*used + klen] = '=';
	n = rb_kv_escape(value, buf + *used + klen + 1,
			 len - *used - klen - 2);
	if (n < 0)
		return -1;
	*used += klen + 1 + (size_t)n;
	buf[(*used)++] = '\n';
	buf[*used] = '\0';
	return 0;
}

int rb_note_fit(const char *value, size_t size, char *out)
{
	size_t n = strlen(value);
	uint64_t sum;

	if (n < size) {
		memcpy(out, value, n + 1);
		return 0;
	}
	/* not a path (no '/'), nor a name the config could list: a cut path
	 * could name another directory, a cut name another partition */
	sum = rb_checksum(value, n);
	snprintf(out, size, "rb-digest:%016" PRIx64 ":%zu", sum, n);
	return 1;
}

/* The note's text values in the order written, each with where a note
 * read back keeps it (rb_note_job's buffers). */
typedef struct {
	const char *key;
	char *dst;
	size_t len;
} note_field;
#define NOTE_TEXTS 5

static void note_texts(rb_note_job *n, note_field f[NOTE_TEXTS])
{
	f[0] = (note_field){ "user", n->user, sizeof(n->user) };
	f[1] = (note_field){ "partition", n->partition, sizeof(n->partition) };
	f[2] = (note_field){ "account", n->account, sizeof(n->account) };
	f[3] = (note_field){ "work_dir", n->work_dir, sizeof(n->work_dir) };
	f[4] = (note_field){ "submission", n->submission,
			     sizeof(n->submission) };
}

/* The job's text values into fit, each within what its reader keeps; an
 * over-long one is replaced by its digest and said in the log, so the job
 * stays tracked (docs/security.md, "Names"). */
static void fit_values(const rb_job_info *job, rb_note_job *fit,
		       note_field f[NOTE_TEXTS])
{
	const char *v[NOTE_TEXTS] = { job->user, job->partition, job->account,
				      job->work_dir, job->submission };

	note_texts(fit, f);
	for (size_t i = 0; i < NOTE_TEXTS; i++)
		if (rb_note_fit(v[i] ? v[i] : "", f[i].len, f[i].dst) > 0)
			rb_log(RB_LOG_WARNING, "job %" PRIu32 ": its %s of %zu bytes is longer than the ledger keeps (%zu): kept as %s; the job stays tracked",
			       job->job_id, f[i].key, strlen(v[i]), f[i].len - 1,
			       f[i].dst);
}

static int format_note(const rb_job_info *job, char *buf, size_t len,
		       size_t *used)
{
	static rb_note_job fit; /* 5 KB: off the prolog's stack */
	note_field f[NOTE_TEXTS];
	char num[3][24];

	fit_values(job, &fit, f);
	snprintf(num[0], sizeof(num[0]), "%" PRId64, job->attempt);
	snprintf(num[1], sizeof(num[1]), "%" PRIu32, job->uid);
	snprintf(num[2], sizeof(num[2]), "%" PRIu32, job->gid);
	*used = strlen(NOTE_V2 "\n");
	if (*used >= len)
		return -1;
	memcpy(buf, NOTE_V2 "\n", *used + 1);
	if (put(buf, len, used, "attempt", num[0]) < 0 ||
	    put(buf, len, used, "uid", num[1]) < 0 ||
	    put(buf, len, used, "gid", num[2]) < 0)
		return -1;
	for (size_t i = 0; i < NOTE_TEXTS; i++)
		if (put(buf, len, used, f[i].key, f[i].dst) < 0)
			return -1;
	return 0;
}

/* Write text to dir/name through a temporary name, so a reader sees the
 * whole note or none. */
static int install(int dfd, const char *name, const char *text, size_t len)
{
	char tmp[NOTE_NAME_MAX + 32];
	int fd, rc = -1;

	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				      O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) == (ssize_t)len && close(fd) == 0)
		rc = renameat(dfd, tmp, dfd, name);
	else
		close(fd);
	if (rc < 0)
		unlinkat(dfd, tmp, 0);
	return rc;
}

/* Write a note named `name` in run_dir (created if missing), first removing
 * `drop` if given. */
static int write_in_run_dir(const char *run_dir, const char *name,
			    const char *drop, const char *text, size_t len,
			    rb_err *err)
{
	int dfd, rc;

	dfd = open_or_make_run_dir(run_dir, err);
	if (dfd < 0)
		return -1;
	if (drop)
		unlinkat(dfd, drop, 0);
	rc = install(dfd, name, text, len);
	if (rc < 0)
		rb_err_setf(err, "cannot write %s/%s: %s", run_dir, name,
			    strerror(errno));
	close(dfd);
	return rc;
}

int rb_note_write(const char *run_dir, const char *host,
		  const rb_job_info *job, rb_err *err)
{
	char name[NOTE_NAME_MAX], stale[NOTE_NAME_MAX], text[NOTE_MAX];
	size_t used;

	if (note_name(host, job->cluster, job->job_id, "prolog", name, err) < 0 ||
	    note_name(host, job->cluster, job->job_id, "batch", stale, err) < 0 ||
	    format_note(job, text, sizeof(text), &used) < 0) {
		rb_err_setf(err, "job %" PRIu32 ": cannot note the job on this node (a name or value does not fit)",
			    job->job_id);
		return -1;
	}
	/* an earlier attempt's claim must not make this node the batch host */
	return write_in_run_dir(run_dir, name, stale, text, used, err);
}

/* key=value into the matching field, the value unescaped; -1 for an
 * unknown key or a value that does not fit or is not well formed. */
static int parse_line(char *line, rb_note_job *out, const note_field *f)
{
	char *eq = strchr(line, '=');
	bool attempt;
	int64_t n;

	if (!eq)
		return -1;
	*eq++ = '\0';
	for (size_t i = 0; i < NOTE_TEXTS; i++)
		if (strcmp(line, f[i].key) == 0)
			return rb_kv_unescape(eq, strlen(eq), f[i].dst,
					      f[i].len) < 0 ? -1 : 0;
	attempt = strcmp(line, "attempt") == 0;
	if (rb_parse_i64(eq, strlen(eq), 0, attempt ? INT32_MAX : UINT32_MAX,
			 &n) < 0)
		return -1;
	if (attempt)
		out->job.attempt = n;
	else if (strcmp(line, "uid") == 0)
		out->job.uid = (uint32_t)n;
	else if (strcmp(line, "gid") == 0)
		out->job.gid = (uint32_t)n;
	else
		return -1;
	return 0;
}

static int parse_note(char *text, rb_note_job *out)
{
	note_field f[NOTE_TEXTS];
	size_t v2 = strlen(NOTE_V2 "\n");
	char *save = NULL;

	if (strncmp(text, NOTE_V2 "\n", v2) != 0)
		return -1;
	note_texts(out, f);
	out->job.attempt = -1;
	for (char *l = strtok_r(text + v2, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		if (parse_line(l, out, f) < 0)
			return -1;
	return out->job.attempt < 0 ? -1 : 0;
}

/* Point the job's strings into out's buffers ("" = not given). */
static void link_strings(rb_note_job *out)
{
	rb_job_info *j = &out->job;

	j->cluster = out->cluster;
	j->user = out->user;
	j->partition = out->partition[0] ? out->partition : NULL;
	j->account = out->account[0] ? out->account : NULL;
	j->work_dir = out->work_dir;
	j->submission = out->submission[0] ? out->submission : NULL;
}

/* File name of dfd, whole, into text (size bytes, NUL-terminated): 0, 1 if
 * there is none, -1 if it cannot be read or does not fit. */
static int read_small(int dfd, const char *name, char *text, size_t size)
{
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	n = read(fd, text, size - 1);
	close(fd);
	if (n < 0 || n == (ssize_t)size - 1)
		return -1;
	text[n] = '\0';
	return 0;
}

static int read_note(int dfd, const char *name, rb_note_job *out)
{
	static char text[NOTE_MAX]; /* 15 KB: off the batch step's stack */

	if (read_small(dfd, name, text, sizeof(text)) != 0 ||
	    parse_note(text, out) < 0)
		return -1;
	link_strings(out);
	return 0;
}

int rb_note_claim(const char *run_dir, const char *host, const char *cluster,
		  uint32_t job_id, rb_note_job *out, rb_err *err)
{
	char noted[NOTE_NAME_MAX], claimed[NOTE_NAME_MAX];
	int dfd, rc = -1;

	memset(out, 0, sizeof(*out));
	if (note_name(host, cluster, job_id, "prolog", noted, err) < 0 ||
	    note_name(host, cluster, job_id, "batch", claimed, err) < 0)
		return -1;
	/* note_name: a cluster name of at most RB_CLUSTER_NAME_MAX bytes */
	rb_strlcpy(out->cluster, cluster, sizeof(out->cluster));
	dfd = open_run_dir(run_dir, err);
	if (dfd < 0)
		return errno == ENOENT ? 1 : -1;
	if (renameat(dfd, noted, dfd, claimed) < 0) {
		rc = errno == ENOENT ? 1 : -1;
		if (rc < 0)
			rb_err_setf(err, "cannot claim %s/%s: %s", run_dir,
				    noted, strerror(errno));
	} else if (read_note(dfd, claimed, out) < 0) {
		rb_err_setf(err, "%s/%s is not a note this plugin wrote",
			    run_dir, claimed);
	} else {
		out->job.job_id = job_id;
		rc = 0;
	}
	close(dfd);
	return rc;
}

int rb_note_claimed_attempt(const char *run_dir, const char *host,
			    const char *cluster, uint32_t job_id,
			    int64_t *attempt)
{
	static rb_note_job note; /* 5 KB: off the epilog's stack */
	char claimed[NOTE_NAME_MAX];
	rb_err err;
	int dfd, rc;

	if (note_name(host, cluster, job_id, "batch", claimed, &err) < 0)
		return -1;
	dfd = open_run_dir(run_dir, &err);
	if (dfd < 0)
		return -1;
	memset(&note, 0, sizeof(note));
	rc = read_note(dfd, claimed, &note);
	close(dfd);
	if (rc == 0)
		*attempt = note.job.attempt;
	return rc;
}

int rb_note_mark(const char *run_dir, const char *host, const char *cluster,
		 uint32_t job_id, rb_err *err)
{
	char claimed[NOTE_NAME_MAX];

	if (note_name(host, cluster, job_id, "batch", claimed, err) < 0)
		return -1;
	return write_in_run_dir(run_dir, claimed, NULL, "", 0, err);
}

rb_note_state rb_note_look(const char *run_dir, const char *host,
			   const char *cluster, uint32_t job_id)
{
	char noted[NOTE_NAME_MAX], claimed[NOTE_NAME_MAX];
	struct stat st;
	rb_note_state state = RB_NOTE_NONE;
	rb_err err;
	int dfd;

	if (note_name(host, cluster, job_id, "prolog", noted, &err) < 0 ||
	    note_name(host, cluster, job_id, "batch", claimed, &err) < 0)
		return RB_NOTE_UNKNOWN;
	dfd = open_run_dir(run_dir, &err);
	if (dfd < 0)
		return RB_NOTE_UNKNOWN;
	if (fstatat(dfd, claimed, &st, AT_SYMLINK_NOFOLLOW) == 0)
		state = RB_NOTE_CLAIMED;
	else if (fstatat(dfd, noted, &st, AT_SYMLINK_NOFOLLOW) == 0)
		state = RB_NOTE_NOTED;
	close(dfd);
	return state;
}

/* Remove job_id's note of this kind from run_dir, if there is one. */
static void drop_note(const char *run_dir, const char *host,
		      const char *cluster, uint32_t job_id, const char *kind)
{
	char name[NOTE_NAME_MAX];
	rb_err err;
	int dfd;

	if (note_name(host, cluster, job_id, kind, name, &err) < 0)
		return;
	dfd = open_run_dir(run_dir, &err);
	if (dfd < 0)
		return;
	unlinkat(dfd, name, 0);
	close(dfd);
}

void rb_note_forget(const char *run_dir, const char *host,
		    const char *cluster, uint32_t job_id)
{
	drop_note(run_dir, host, cluster, job_id, "prolog");
	drop_note(run_dir, host, cluster, job_id, "batch");
}

/* --- an end not written (node_note.h, rb_note_end) ---------------------------- */

#define END_V1 "end=1"
#define END_MAX 256

int rb_note_end_keep(const char *run_dir, const char *host,
		     const char *cluster, uint32_t job_id,
		     const rb_note_end *end, rb_err *err)
{
	char name[NOTE_NAME_MAX], text[END_MAX];
	int n;

	if (note_name(host, cluster, job_id, "end", name, err) < 0)
		return -1;
	n = snprintf(text, sizeof(text),
		     END_V1 "\nattempt=%" PRId64 "\nrestart_count=%" PRId64
		     "\nexit_code=%d\nsignal=%d\nnow=%" PRId64 "\n",
		     end->attempt, end->restart_count, end->exit_code,
		     end->signal, end->now);
	if (n < 0 || (size_t)n >= sizeof(text))
		return rb_err_set(err, "job %" PRIu32 ": end too long", job_id);
	return write_in_run_dir(run_dir, name, NULL, text, (size_t)n, err);
}

/* "key=<number>\n" for the next key in order; -1 if it is not. */
static int end_field(const char **text, const char *key, int64_t max,
		     int64_t *out)
{
	size_t klen = strlen(key);
	const char *v, *nl;

	if (strncmp(*text, key, klen) != 0 || (*text)[klen] != '=')
		return -1;
	v = *text + klen + 1;
	nl = strchr(v, '\n');
	if (!nl || rb_parse_i64(v, (size_t)(nl - v), 0, max, out) < 0)
		return -1;
	*text = nl + 1;
	return 0;
}

static int parse_end(const char *text, rb_note_end *out)
{
	int64_t code, sig;

	if (strncmp(text, END_V1 "\n", strlen(END_V1 "\n")) != 0)
		return -1;
	text += strlen(END_V1 "\n");
	if (end_field(&text, "attempt", INT32_MAX, &out->attempt) < 0 ||
	    end_field(&text, "restart_count", INT32_MAX,
		      &out->restart_count) < 0 ||
	    end_field(&text, "exit_code", 255, &code) < 0 ||
	    end_field(&text, "signal", 255, &sig) < 0 ||
	    end_field(&text, "now", INT64_MAX, &out->now) < 0 || *text)
		return -1;
	out->exit_code = (int)code;
	out->signal = (int)sig;
	return 0;
}

int rb_note_end_read(const char *run_dir, const char *host,
		     const char *cluster, uint32_t job_id, rb_note_end *out)
{
	char name[NOTE_NAME_MAX], text[END_MAX];
	rb_err err;
	int dfd, rc;

	memset(out, 0, sizeof(*out));
	if (note_name(host, cluster, job_id, "end", name, &err) < 0)
		return -1;
	dfd = open_run_dir(run_dir, &err);
	if (dfd < 0)
		return 1;
	rc = read_small(dfd, name, text, sizeof(text));
	close(dfd);
	return rc == 0 ? parse_end(text, out) : rc;
}

void rb_note_end_drop(const char *run_dir, const char *host,
		      const char *cluster, uint32_t job_id)
{
	drop_note(run_dir, host, cluster, job_id, "end");
}

/* The job id of "<host>.<cluster>.<job>.end" (prefix = "<host>.<cluster>."),
 * or 0 if the name is not one. */
static uint32_t end_job_of(const char *name, const char *prefix)
{
	size_t plen = strlen(prefix);
	const char *dot;
	int64_t id;

	if (strncmp(name, prefix, plen) != 0)
		return 0;
	dot = strchr(name + plen, '.');
	if (!dot || strcmp(dot, ".end") != 0 ||
	    rb_parse_i64(name + plen, (size_t)(dot - name - plen), 0,
			 UINT32_MAX, &id) < 0)
		return 0;
	return (uint32_t)id;
}

int rb_note_end_list(const char *run_dir, const char *host,
		     const char *cluster, uint32_t *jobs, int max)
{
	char prefix[NOTE_NAME_MAX];
	struct dirent *de;
	rb_err err;
	int dfd, n = 0;
	DIR *d;

	if (note_name(host, cluster, 0, "", prefix, &err) < 0)
		return 0;
	prefix[strlen(prefix) - strlen("0.")] = '\0';
	dfd = open_run_dir(run_dir, &err);
	if (dfd < 0)
		return 0;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while (n < max && (de = readdir(d)) != NULL) {
		uint32_t id = end_job_of(de->d_name, prefix);

		if (id)
			jobs[n++] = id;
	}
	closedir(d);
	return n;
}
