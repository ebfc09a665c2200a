/*
 * store.h - the public header of plugin/store/: where a job's budget is kept: the store seam (seam.h), the ledger in state_dir (its lock, the event log and its fold, event sums), the node note, the AdminComment line.
 *
 * Other folders include this header only (make lint checks it;
 * docs/architecture.md, "The tree").
 */
#ifndef RB_STORE_PUBLIC_H
#define RB_STORE_PUBLIC_H

#include "ledger.h"
#include "eventsum.h"
#include "node_note.h"
#include "admin_comment.h"
#include "budget_line.h"
#include "seam.h"

#endif
