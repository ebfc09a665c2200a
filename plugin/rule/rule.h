/*
 * rule.h - the public header of plugin/rule/: the budget rule: what an attempt charges (engine), the record that holds a job's budget and its text form, which checkpoint an attempt gets (fallback), whose record it is (identity), what the job sees (step).
 *
 * Other folders include this header only (make lint checks it;
 * docs/architecture.md, "The tree").
 */
#ifndef RB_RULE_PUBLIC_H
#define RB_RULE_PUBLIC_H

#include "engine.h"
#include "record.h"
#include "fallback.h"
#include "identity.h"
#include "step.h"

#endif
