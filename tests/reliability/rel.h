/*
 * rel.h - a tiny harness for the reliability programs (tests/reliability):
 * named cases, checks that record a failure and go on, one summary line
 * ("<prog>: N passed, N failed") that run.sh adds up.
 *
 * These programs need root (root-owned state_dir, setuid to nobody,
 * tmpfs mounts) and link the plain core objects (the objects in build/core).
 */
#ifndef RB_REL_H
#define RB_REL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "lifecycle.h"

static int rel_passed, rel_failed, rel_case_failed;
static const char *rel_case;

/* Start a case; it passes unless a CHECK in it fails. */
static inline void rel_begin(const char *name)
{
	rel_case = name;
	rel_case_failed = 0;
}

static inline void rel_end(void)
{
	if (rel_case_failed) {
		rel_failed++;
		printf("FAIL %s\n", rel_case);
	} else {
		rel_passed++;
		printf("ok   %s\n", rel_case);
	}
	fflush(stdout);
}

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			rel_case_failed = 1;                                \
			printf("  %s:%d: %s: ", __FILE__, __LINE__,         \
			       rel_case);                                   \
			printf(__VA_ARGS__);                                \
			printf("   [%s]\n", #cond);                         \
			fflush(stdout);                                     \
		}                                                           \
	} while (0)

/* A setup step that must work, or the program cannot go on. */
#define MUST(cond, ...)                                                     \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: setup failed: ", __FILE__,  \
				__LINE__);                                  \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, " (%s)\n", strerror(errno));        \
			exit(2);                                            \
		}                                                           \
	} while (0)

static inline int rel_summary(const char *prog)
{
	printf("%s: %d passed, %d failed\n", prog, rel_passed, rel_failed);
	return rel_failed ? 1 : 0;
}

/* ---- log capture: the last messages the core logged -------------------- */

static char rel_log[8192];

static void rel_log_sink(rb_log_level level, const char *msg)
{
	size_t have = strlen(rel_log);

	(void)level;
	if (have + strlen(msg) + 2 < sizeof(rel_log)) {
		strcat(rel_log, msg);
		strcat(rel_log, "\n");
	}
}

static inline void rel_capture_log(void)
{
	rel_log[0] = '\0';
	rb_log_set_sink(rel_log_sink);
}

/* ---- files -------------------------------------------------------------- */

/* A private root-owned 0755 directory under base ("/tmp"). */
static inline void rel_tmpdir(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/rb-rel-%s-XXXXXX", tag);
	MUST(mkdtemp(buf), "mkdtemp %s", buf);
	MUST(chmod(buf, 0755) == 0, "chmod %s", buf);
}

static int rel_rm_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static inline void rel_rm_rf(const char *path)
{
	nftw(path, rel_rm_entry, 64, FTW_DEPTH | FTW_PHYS);
}

/* Whole file into buf (NUL-terminated); returns its length or -1. */
static inline ssize_t rel_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t have = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (have + 1 < len && (n = read(fd, buf + have, len - 1 - have)) > 0)
		have += (size_t)n;
	close(fd);
	buf[have] = '\0';
	return (ssize_t)have;
}

static inline int rel_write_file(const char *path, const char *data,
				 size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* What a file looked like: content checksum, size, mtime, mode. */
typedef struct {
	bool exists;
	off_t size;
	struct timespec mtime;
	mode_t mode;
	uint64_t sum;
} rel_snap;

static inline rel_snap rel_snapshot(const char *path)
{
	static char buf[1 << 17];
	rel_snap s;
	struct stat st;
	ssize_t n;
	size_t i;

	memset(&s, 0, sizeof(s));
	if (lstat(path, &st) < 0)
		return s;
	s.exists = true;
	s.size = st.st_size;
	s.mtime = st.st_mtim;
	s.mode = st.st_mode;
	s.sum = 1469598103934665603ULL;
	if (S_ISREG(st.st_mode) && (n = rel_read_file(path, buf, sizeof(buf))) > 0)
		for (i = 0; i < (size_t)n; i++)
			s.sum = (s.sum ^ (unsigned char)buf[i]) * 1099511628211ULL;
	return s;
}

static inline bool rel_snap_same(const rel_snap *a, const rel_snap *b)
{
	return a->exists == b->exists && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec && a->mode == b->mode &&
	       a->sum == b->sum;
}

/* Number of entries in a directory (without . and ..), -1 if unreadable. */
static inline int rel_count_entries(const char *dir)
{
	char cmd[512];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' 2>/dev/null | wc -l", dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

/* No byte below 0x20 (but '\n' if allowed) nor DEL: safe for a log line. */
static inline bool rel_printable(const char *s, bool allow_nl)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && !(allow_nl && c == '\n')) || c == 0x7f)
			return false;
	}
	return true;
}

/* rel_job CLUSTER ID ATTEMPT - the job rel_faults and rel_hostile record:
 * user u (1000), checkpoints in ck, one attempt every 100 s. */
static inline rb_job_info rel_job(const char *cluster, uint32_t id, int64_t attempt)
{
	rb_job_info j = {
		.cluster = cluster, .job_id = id, .attempt = attempt,
		.uid = 1000, .gid = 1000, .user = "u", .partition = "p",
		.account = "a", .work_dir = "/home/u", .checkpoint_dir = "ck",
		.now = 1700000000 + attempt * 100,
	};
	return j;
}

/* rel_start CFG CLUSTER ID ATTEMPT ERR - record that job's start; ERR is
 * cleared first. rb_lifecycle_start's result. */
static inline int rel_start(const rb_config *cfg, const char *cluster, uint32_t id,
			    int64_t attempt, rb_err *err)
{
	rb_job_info j = rel_job(cluster, id, attempt);
	rb_start_result res;

	memset(err, 0, sizeof(*err));
	return rb_lifecycle_start(cfg, &j, &res, NULL, err);
}

#endif
