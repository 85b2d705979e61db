/* The modes' communicators, buffers and windows, set up once at the
 * largest size: registering per size would exhaust NCCL's symmetric
 * address space. */
#include "bench_impl.h"

#include <stdlib.h>

#include "calls.h"
#include "checks.h"
#include "output.h"
#include "requirements.h"
#include "verify.h"

/* Collective: a communicator of every rank with this CTAPolicy. */
static ncclComm_t init_comm(const rank_ctx *ctx, int cta_policy, double *ms)
{
  ncclUniqueId id;
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  util_broadcast(0, ctx, &id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (cta_policy != NCCL_CTA_POLICY_DEFAULT)
    config.CTAPolicy = cta_policy;
  ncclComm_t comm;
  double t0 = monotonic_ms();
  NCCLCHECK(ncclCommInitRankConfig(&comm, ctx->nranks, id, ctx->rank, &config));
  *ms = slowest(ctx, monotonic_ms() - t0);
  return comm;
}

/* The first mode set up that runs the lesson's kernel, or NULL. */
static mode *first_kernel_mode(bench *b)
{
  for (int i = 0; i < b->nmodes; i++)
    if (b->modes[i].spec->kernel)
      return &b->modes[i];
  return NULL;
}

/* Collective: a mode's buffers, filled with the rank's number plus one (so
 * that every rank's part, rank 0's too, changes the result), and its
 * windows if it has them. The variants of the lesson's kernel share the
 * first one's: each result is poisoned before it is measured (measure.c),
 * and one pair per variant would not fit a GPU at 1 GiB with 4 ranks. */
static void add_mode(bench *b, const mode_spec *spec)
{
  mode *shared = spec->kernel ? first_kernel_mode(b) : NULL;
  mode *m = &b->modes[b->nmodes++];
  if (shared != NULL) {
    *m = *shared;
    m->spec = spec;
    m->borrowed = 1;
    return;
  }
  size_t send_bytes = b->max_count * sizeof(float);
  size_t recv_bytes =
      b->coll->result_count(b->max_count, b->ctx->nranks) * sizeof(float);
  /* The windows start NULL: NCCL 2.28.3 may leave them unwritten. */
  *m = (mode){.spec = spec,
              .comm = b->comms[spec->comm],
              .send_win = NULL,
              .recv_win = NULL};
  NCCLCHECK(ncclMemAlloc(&m->send, send_bytes));
  NCCLCHECK(ncclMemAlloc(&m->recv, recv_bytes));
  float *fill = host_calloc(b->max_count, sizeof(float));
  fill_floats(fill, b->max_count, (float)(b->ctx->rank + 1));
  CUDACHECK(cudaMemcpy(m->send, fill, send_bytes, cudaMemcpyHostToDevice));
  /* A copy from pageable memory may return before its bytes land, and the
   * timed collectives run on other streams: wait for it here. */
  CUDACHECK(cudaStreamSynchronize(cudaStreamPerThread));
  free(fill);
  if (spec->windows) {
    double t0 = monotonic_ms();
    NCCLCHECK(ncclCommWindowRegister(m->comm, m->send, send_bytes, &m->send_win,
                                     NCCL_WIN_COLL_SYMMETRIC));
    NCCLCHECK(ncclCommWindowRegister(m->comm, m->recv, recv_bytes, &m->recv_win,
                                     NCCL_WIN_COLL_SYMMETRIC));
    m->register_ms = slowest(b->ctx, monotonic_ms() - t0);
    all_ranks_report_windows(b->ctx, m->send_win, m->recv_win);
  }
}

void modes_setup(bench *b)
{
  for (int i = 0; i < b->coll->ncomms; i++)
    b->comms[i] =
        init_comm(b->ctx, b->coll->comms[i].cta_policy, &b->init_ms[i]);
  int kernel_usable = -1; /* asked once, for the first kernel mode */
  for (int i = 0; i < b->coll->nmodes; i++) {
    const mode_spec *spec = &b->coll->modes[i];
    const device_kernel *k = b->ctx->example->kernel;
    /* The lesson's kernel where the lesson would run it: else its modes
     * are left out (each rank said why), and the others are measured. */
    if (spec->kernel && kernel_usable < 0)
      kernel_usable =
          k->usable == NULL || k->usable(b->ctx, b->comms[spec->comm]);
    if (spec->kernel && !kernel_usable) {
      print_root(b->ctx, "# --bench: mode %s left out: the lesson's kernel"
                         " cannot run on this communicator (said above)\n",
                 spec->name);
      continue;
    }
    add_mode(b, spec);
    if (spec->kernel && b->kernel_state == NULL)
      b->kernel_state = k->setup(b->ctx, b->modes[b->nmodes - 1].comm);
  }
}

void modes_teardown(bench *b)
{
  for (int i = 0; i < b->nmodes; i++) {
    mode *m = &b->modes[i];
    if (m->borrowed)
      continue;
    if (m->spec->kernel)
      b->ctx->example->kernel->teardown(m->comm, b->kernel_state);
    if (m->spec->windows) {
      NCCLCHECK(ncclCommWindowDeregister(m->comm, m->send_win));
      NCCLCHECK(ncclCommWindowDeregister(m->comm, m->recv_win));
    }
    NCCLCHECK(ncclMemFree(m->send));
    NCCLCHECK(ncclMemFree(m->recv));
  }
  for (int i = 0; i < b->coll->ncomms; i++) {
    NCCLCHECK(ncclCommFinalize(b->comms[i]));
    NCCLCHECK(ncclCommDestroy(b->comms[i]));
  }
}
