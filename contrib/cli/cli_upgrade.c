/*
 * cli_upgrade.c - what a ledger written before 2026-12 leaves behind, and
 * how `gc` takes it away.
 *
 * Plugins before then gave each job a directory <state_dir>/<cluster>/ack/
 * <job_id>, owned by the job's user: a place in the shared state_dir where
 * a user could write anything, as deep and as wide as they liked
 * (docs/security.md, "Upgrades"). Nothing uses it any more. gc (root)
 * removes the whole tree:
 *  - every directory is opened with O_NOFOLLOW relative to its parent, then
 *    taken from its user (chown root, mode 0700) before it is read, so
 *    nothing new can be made in it and no swapped-in symlink is followed;
 *  - everything else (files, symlinks, fifos) is unlinked, never opened;
 *  - a directory deeper than DEPTH_MAX is moved up into ack/ itself (root's,
 *    so that is safe) and emptied from there: any depth, bounded fds;
 *  - at most ENTRIES_MAX entries per run; the rest waits for the next gc.
 */
#include "cli.h"

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

typedef struct {
	int top;          /* <cluster>/ack, root's: where deep trees move up to */
	size_t entries;   /* looked at so far (bound) */
	size_t moved;     /* deep directories moved up, for unique names */
	bool incomplete;
} sweep;

static void empty_dir(int dfd, int depth, sweep *w);

/* Remove entry n of dfd, whatever it is. */
static void remove_entry(int dfd, const char *n, int depth, sweep *w)
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
		char up[48];

		snprintf(up, sizeof(up), "deep.%zu.%ld", w->moved++,
			 (long)getpid());
		if (renameat(dfd, n, w->top, up) < 0)
			w->incomplete = true;
		return;
	}
	sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

/* Unlink every entry of the directory open as dfd. */
static void empty_dir(int dfd, int depth, sweep *w)
{
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		w->incomplete = true;
		return;
	}
	rewinddir(d); /* a dup shares the offset of an fd read before */
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
	int dupfd = dup(fd);
	DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
	bool empty = true;

	if (!d) {
		if (dupfd >= 0)
			close(dupfd);
		return false;
	}
	rewinddir(d);
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* ack/ is root's (users only ever owned what is inside it): refuse else. */
static int open_top(int cl, const char *where, int *out)
{
	struct stat st;
	int fd = openat(cl, "ack", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					   O_CLOEXEC);

	*out = -1;
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		cli_error("%s/ack: %s", where, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!rb_root_trusted(&st)) {
		cli_error("%s/ack: owned by uid %u with mode %04o, not root's: not touched; check who changed it",
			  where, (unsigned)st.st_uid,
			  (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	*out = fd;
	return 0;
}

int cli_remove_legacy_acks(const cli_ctx *ctx, bool dry_run)
{
	const int dflags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char where[RB_PATH_MAX + RB_NAME_MAX + 2];
	sweep w = { -1, 0, 0, false };
	int top = -1, cl = -1, rc = -1;

	snprintf(where, sizeof(where), "%s/%s", ctx->cfg->state_dir,
		 ctx->cluster);
	top = open(ctx->cfg->state_dir, dflags);
	cl = top >= 0 ? openat(top, ctx->cluster, dflags) : -1;
	if (cl < 0) {
		rc = errno == ENOENT ? 0 : -1;
		if (rc < 0)
			cli_error("%s: %s", where, strerror(errno));
		goto out;
	}
	if (open_top(cl, where, &w.top) < 0)
		goto out;
	rc = 0;
	if (w.top < 0)
		goto out;
	if (dry_run) {
		printf("would remove %s/ack (acknowledgement directories of plugins before 2026-12)\n",
		       where);
		goto out;
	}
	/* deep trees moved up land in ack/ too: go again until it is empty */
	for (size_t before = (size_t)-1; !is_empty(w.top) && w.entries != before &&
	     w.entries < ENTRIES_MAX;) {
		before = w.entries;
		empty_dir(w.top, 0, &w);
	}
	if (!is_empty(w.top) || unlinkat(cl, "ack", AT_REMOVEDIR) < 0) {
		cli_error("%s/ack: %zu entries removed, some are left (now root's); run gc again",
			  where, w.entries);
		rc = -1;
		goto out;
	}
	printf("removed %s/ack (%zu entries; acknowledgement directories of plugins before 2026-12)\n",
	       where, w.entries);
out:
	if (w.top >= 0)
		close(w.top);
	if (cl >= 0)
		close(cl);
	if (top >= 0)
		close(top);
	return rc;
}
