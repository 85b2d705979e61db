/*
 * Everything an example's main.c uses from common/, in one include:
 *   bootstrap.h  run_example, rank_ctx, example_desc, util_broadcast
 *   checks.h     CUDACHECK, NCCLCHECK, host_calloc
 *   output.h     print_root, print_ordered (collective), MiB
 *   verify.h     fill_floats, verify_allreduce, verify_allgather_segments
 *   requirements.h  report_symmetric_windows (collective)
 */
#ifndef EXAMPLE_H
#define EXAMPLE_H

#include "bootstrap.h"
#include "checks.h"
#include "output.h"
#include "requirements.h"
#include "verify.h"

#endif
