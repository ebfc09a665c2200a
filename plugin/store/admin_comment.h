/*
 * admin_comment.h - the plugin's line in a job's AdminComment
 * (docs/rule.md, "Where the reason shows").
 *
 * A refusal or hold decided as root writes "restore_budget: <kind>: <reason>"
 * into the job's AdminComment so that `scontrol show job` (and, with
 * accounting storage, `sacct -o AdminComment`) says why. The comment is the
 * site's too: only the plugin's own line is replaced, the rest is kept as it
 * was. Pure: reading and writing it is scontrol.h's, with a deadline.
 */
#ifndef RB_ADMIN_COMMENT_H
#define RB_ADMIN_COMMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The plugin's own line at most (prefix included, NUL excluded). */
#define RB_ADMIN_LINE_MAX 400
/* The whole AdminComment the plugin writes at most: a longer one is left
 * alone rather than cut (it is the site's). */
#define RB_ADMIN_COMMENT_MAX 4096

/*
 * The plugin's line: RB_PREFIX, kind (e.g. "refused", "held"), ": ", reason.
 * Control bytes (newlines included) become spaces, so the line stays one
 * line; a line longer than RB_ADMIN_LINE_MAX is cut on a character boundary
 * and ends in "...". out holds at least RB_ADMIN_LINE_MAX + 1 bytes.
 */
void rb_admin_comment_line(const char *kind, const char *reason, char *out,
			   size_t len);

/*
 * old (the current AdminComment, possibly several lines, possibly "") with
 * its first plugin line (one starting with RB_PREFIX) replaced by line, any
 * further plugin line dropped, and line appended as the last line if old had
 * none (in place of an empty last line: "site\n" gives "site\n<line>").
 * Every '\n' separates two lines; everything else is kept byte for byte.
 * 0, or -1 if the result would not fit in len bytes or exceed
 * RB_ADMIN_COMMENT_MAX.
 */
int rb_admin_comment_merge(const char *old, const char *line, char *out,
			   size_t len);
/* The same for the lines that start with `tag` (the reason's is RB_PREFIX,
 * the budget's RB_BUDGET_TAG: neither starts with the other, so writing
 * one never removes the other). */
int rb_admin_comment_merge_tagged(const char *old, const char *tag,
				  const char *line, char *out, size_t len);

/*
 * The head of one job's line in the plugin's squeue output: "<JobID>|
 * <JobArrayID>|" (docs/arrays.md). A job is asked about by its address
 * (rb_job_addr: "<array_job_id>_<task_id>" for an array task, else the job
 * id) and its line is the one whose JobID is job_id and whose JobArrayID is
 * that address; for a job that is no array task, any JobArrayID that names
 * no task ("J", or "J+N" for a heterogeneous job's part).
 * rb_squeue_head: the length of that head if p starts with it, else 0.
 * rb_squeue_is_head: does p start with any job's head (a digit string, '|',
 * a JobArrayID such as "7", "7_3", "7_[4-9%2]" or "7+1", '|')?
 */
size_t rb_squeue_head(const char *p, uint32_t job_id, const char *addr);
bool rb_squeue_is_head(const char *p);

/*
 * Parse `squeue --noheader --Format=JobID:0|,JobArrayID:0|,
 * admin_comment:0|` output for the job at addr (see rb_squeue_head): its
 * comment is everything from its head to the next line that starts with a
 * job's head (or the end), less the final '|' (it may hold '|' and newlines
 * itself). "(null)" (none set) gives "".
 * 0: found, and the output holds no other job's head; 1: found among other
 * jobs' lines (the caller asked for one job: it must not write back a
 * comment it may have cut); -1: absent, listed twice, cut short, or too
 * long for len.
 */
int rb_admin_comment_parse(const char *text, uint32_t job_id,
			   const char *addr, char *out, size_t len);

#endif
