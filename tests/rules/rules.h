/* The deliberately wrong programs of tests/rules: one per rule the
 * simulation enforces, each a lesson for run_ranks (2 thread ranks). */
#ifndef RULES_H
#define RULES_H

#include "bootstrap.h"

typedef struct rule_case {
  const char *name; /* the rule it breaks */
  example_fn fn;
} rule_case;

/* device_rules.c: the rules of kernels and the device API (they run with a
 * simulated NCCL 2.30.7). */
extern const rule_case device_cases[];
extern const size_t device_ncases;
/* lsa-data-race/host-writes-own-window */
int host_writes_own_window(const rank_ctx *ctx);

#endif
