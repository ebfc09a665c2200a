/*
 * ack_legacy.c - reading and removing the acknowledgement tree of plugins
 * before 2026-12 (see ack_legacy.h and docs/security.md, "Upgrades").
 *
 * Removal (root) never trusts what a user made:
 *  - every directory is opened with O_NOFOLLOW relative to its parent, then
 *    taken from its user (chown root, mode 0700) before it is read, so
 *    nothing new can be made in it and no swapped-in symlink is followed;
 *  - everything else (files, symlinks, fifos) is unlinked, never opened;
 *  - a directory deeper than DEPTH_MAX is moved up into ack/ itself (root's,
 *    so that is safe) and emptied from there: any depth, bounded fds and
 *    bounded recursion;
 *  - at most ENTRIES_MAX entries per run; the rest waits for the next run.
 */
/* O_PATH (rb_ack_legacy_seen) is only declared with _GNU_SOURCE. */
#define _GNU_SOURCE
#include "ack_legacy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

#define DEPTH_MAX 16
#define ENTRIES_MAX 1000000

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* --- reading ------------------------------------------------------------------ */

bool rb_ack_legacy_seen(const char *state_dir, const char *cluster,
			uint32_t job_id, uint32_t uid, int64_t attempt)
{
	const int dflags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd[4] = { -1, -1, -1, -1 };
	char name[48];
	struct stat st;
	bool seen = false;

	snprintf(name, sizeof(name), "%" PRIu32, job_id);
	fd[0] = open(state_dir, dflags);
	fd[1] = fd[0] < 0 ? -1 : openat(fd[0], cluster, dflags);
	fd[2] = fd[1] < 0 ? -1 : openat(fd[1], "ack", dflags);
	if (fd[2] < 0 || fstat(fd[2], &st) < 0 || !rb_root_trusted(&st))
		goto out;
	fd[3] = openat(fd[2], name, dflags);
	if (fd[3] < 0 || fstat(fd[3], &st) < 0 || st.st_uid != uid)
		goto out;
	snprintf(name, sizeof(name), "attempt-%" PRId64, attempt);
	seen = fstatat(fd[3], name, &st, AT_SYMLINK_NOFOLLOW) == 0;
out:
	for (int i = 0; i < 4; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return seen;
}

/* --- removal ------------------------------------------------------------------ */

typedef struct {
	int top;          /* <cluster>/ack, root's: where deep trees move up to */
	size_t entries;   /* looked at so far (bound) */
	size_t moved;     /* deep directories moved up, for unique names */
	bool incomplete;
} tree_walk;

static void empty_dir(int dfd, int depth, tree_walk *w);

/* Move the directory n of dfd, too deep to enter, up into ack/. */
static void move_up(int dfd, const char *n, tree_walk *w)
{
	char up[48];

	snprintf(up, sizeof(up), "deep.%zu.%ld", w->moved++, (long)getpid());
	if (renameat(dfd, n, w->top, up) < 0)
		w->incomplete = true;
}

/* Remove entry n of dfd, whatever it is. */
static void remove_entry(int dfd, const char *n, int depth, tree_walk *w)
{
	int sub;

	w->entries++;
	if (unlinkat(dfd, n, 0) == 0 || errno == ENOENT)
		return;
	if (errno != EISDIR && errno != EPERM) {
		w->incomplete = true;
		return;
	}
	if (depth >= DEPTH_MAX) {
		move_up(dfd, n, w);
		return;
	}
	sub = openat(dfd, n, DIR_FLAGS);
	if (sub < 0) {
		w->incomplete = true; /* replaced meanwhile: the next pass */
		return;
	}
	/* take it from the user before reading it */
	if (fchown(sub, 0, 0) < 0 || fchmod(sub, 0700) < 0)
		w->incomplete = true;
	else
		empty_dir(sub, depth + 1, w);
	close(sub);
	if (unlinkat(dfd, n, AT_REMOVEDIR) < 0 && errno != ENOENT)
		w->incomplete = true;
}

/* A stream over the directory open as dfd, from its start; dfd stays
 * open (closedir closes only the stream's own copy). NULL on failure. */
static DIR *read_from_start(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	if (d)
		rewinddir(d); /* a dup shares the offset of an fd read before */
	return d;
}

/* Unlink every entry of the directory open as dfd. */
static void empty_dir(int dfd, int depth, tree_walk *w)
{
	struct dirent *de;
	DIR *d = read_from_start(dfd);

	if (!d) {
		w->incomplete = true;
		return;
	}
	while ((de = readdir(d)) && w->entries < ENTRIES_MAX) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			remove_entry(dfd, de->d_name, depth, w);
	}
	if (w->entries >= ENTRIES_MAX)
		w->incomplete = true;
	closedir(d);
}

/* Is the directory open as fd empty? */
static bool is_empty(int fd)
{
	struct dirent *de;
	DIR *d = read_from_start(fd);
	bool empty = true;

	if (!d)
		return false;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* ack/ under the cluster's directory cl, into *out (-1 if absent). It is
 * root's (users only ever owned what is inside it): anything else is
 * refused. false with out->outcome set if it cannot be used. */
static bool open_tree(int cl, int *fd, rb_ack_legacy_sweep *out)
{
	struct stat st;

	*fd = openat(cl, "ack", DIR_FLAGS);
	if (*fd < 0 && errno == ENOENT)
		return true;
	if (*fd < 0 || fstat(*fd, &st) < 0) {
		out->outcome = RB_ACK_LEGACY_FAILED;
		out->errnum = errno;
		out->at_ack = true;
	} else if (!rb_root_trusted(&st)) {
		out->outcome = RB_ACK_LEGACY_UNTRUSTED;
		out->uid = (unsigned)st.st_uid;
		out->mode = (unsigned)(st.st_mode & 07777);
	} else {
		return true;
	}
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return false;
}

/* Empty ack/ (open as w->top) and remove it from cl. */
static void remove_tree(int cl, tree_walk *w, rb_ack_legacy_sweep *out)
{
	/* deep trees moved up land in ack/ too: go again until it is empty */
	for (size_t before = (size_t)-1; !is_empty(w->top) &&
	     w->entries != before && w->entries < ENTRIES_MAX;) {
		before = w->entries;
		empty_dir(w->top, 0, w);
	}
	out->entries = w->entries;
	if (!is_empty(w->top) || unlinkat(cl, "ack", AT_REMOVEDIR) < 0)
		out->outcome = RB_ACK_LEGACY_LEFT;
	else
		out->outcome = RB_ACK_LEGACY_REMOVED;
}

void rb_ack_legacy_remove(const char *state_dir, const char *cluster,
			  bool dry_run, rb_ack_legacy_sweep *out)
{
	tree_walk w = { -1, 0, 0, false };
	int top, cl;

	memset(out, 0, sizeof(*out));
	out->outcome = RB_ACK_LEGACY_ABSENT;
	top = open(state_dir, DIR_FLAGS);
	cl = top >= 0 ? openat(top, cluster, DIR_FLAGS) : -1;
	if (cl < 0) {
		if (errno != ENOENT) {
			out->outcome = RB_ACK_LEGACY_FAILED;
			out->errnum = errno;
		}
		goto out;
	}
	if (!open_tree(cl, &w.top, out) || w.top < 0)
		goto out;
	if (dry_run)
		out->outcome = RB_ACK_LEGACY_PRESENT;
	else
		remove_tree(cl, &w, out);
out:
	if (w.top >= 0)
		close(w.top);
	if (cl >= 0)
		close(cl);
	if (top >= 0)
		close(top);
}
