/* A child process: one fact on N ranks, threads of this process (facts.h). */
#include "facts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct rank_job {
  const fact *f;
  int rank, nranks, ngpus;
  ncclUniqueId id;
  outcome out;
  char init_error[160];
} rank_job;

static void *rank_main(void *arg)
{
  rank_job *j = arg;
  ncclComm_t comm = NULL;
  cudaError_t err = cudaSetDevice(j->rank % j->ngpus);
  if (err != cudaSuccess) {
    note(j->init_error, sizeof j->init_error, "cudaSetDevice(%d): %s",
         j->rank % j->ngpus, cudaGetErrorName(err));
    return NULL;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  if (j->f->cta_zero)
    config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
#endif
  ncclResult_t res =
      ncclCommInitRankConfig(&comm, j->nranks, j->id, j->rank, &config);
  if (res != ncclSuccess) {
    note(j->init_error, sizeof j->init_error, "ncclCommInitRankConfig: %s",
         ncclGetErrorString(res));
    return NULL;
  }
  j->f->run(j->f, comm, j->rank, j->nranks, &j->out);
  ncclCommFinalize(comm);
  ncclCommDestroy(comm);
  return NULL;
}

int child(const fact *f, int nranks)
{
  int ngpus = 0;
  cudaError_t err = cudaGetDeviceCount(&ngpus);
  if (err != cudaSuccess || ngpus == 0) {
    printf("n/a\t-\t-\t-\tno GPU: %s\n",
           err != cudaSuccess ? cudaGetErrorName(err) : "none visible");
    return 0;
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess)
    return 1;
  rank_job *jobs = calloc((size_t)nranks, sizeof *jobs);
  pthread_t *threads = calloc((size_t)nranks, sizeof *threads);
  if (jobs == NULL || threads == NULL) {
    free(jobs);
    free(threads);
    return 1;
  }
  for (int r = 0; r < nranks; r++) {
    jobs[r] = (rank_job){
        .f = f, .rank = r, .nranks = nranks, .ngpus = ngpus, .id = id};
    jobs[r].out.window = WIN_NONE;
    jobs[r].out.wrong = -1;
  }
  int started = 0;
  while (started < nranks && pthread_create(&threads[started], NULL, rank_main,
                                            &jobs[started]) == 0)
    started++;
  if (started < nranks) { /* the ranks started wait for it for ever */
    fprintf(stderr, "nccl_facts: could not start rank %d's thread\n", started);
    return 1; /* the child process ends, and its threads with it */
  }
  for (int r = 0; r < nranks; r++)
    pthread_join(threads[r], NULL);
  const outcome *o = &jobs[0].out;
  int differ = 0;
  for (int r = 1; r < nranks; r++)
    differ |= jobs[r].out.result != o->result ||
              jobs[r].out.window != o->window ||
              jobs[r].out.control_ok != o->control_ok;
  if (jobs[0].init_error[0])
    printf("n/a\t-\t-\t-\t%s\n", jobs[0].init_error);
  else if (o->na[0])
    printf("n/a\t-\t-\t-\t%s\n", o->na);
  else {
    printf("%s\t%s\t%s\t%s\t%s", o->control_ok ? "ok" : "control failed",
           ncclGetErrorString(o->result), window_word(o->window),
           o->last_error[0] ? o->last_error : "-",
           o->control_ok ? o->detail : o->control_why);
    /* Rank 0's detail stands for all; a wrong result elsewhere is added. */
    for (int r = 1; r < nranks; r++)
      if (jobs[r].out.wrong > 0)
        printf("; rank %d: %d wrong", r, jobs[r].out.wrong);
    printf("%s\n", differ ? " (other ranks differ)" : "");
  }
  fflush(stdout);
  free(threads);
  free(jobs);
  return 0;
}
