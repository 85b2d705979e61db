/* ncclsim: captured CUDA graphs (graphs.c), included by sim.h. */
#ifndef NCCLSIM_GRAPHS_H
#define NCCLSIM_GRAPHS_H

/* One collective recorded while its stream was being captured, or (kernel
 * not NULL) a kernel launch. */
typedef struct sim_node {
  int allgather; /* 0: ncclAllReduce */
  const void *send;
  void *recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  ncclComm_t comm;
  struct sim_kernel *kernel; /* a kernel node: what is launched again */
} sim_node;

/* A captured graph, and an instantiated one: the collectives in order. */
struct CUgraph_st {
  sim_node *nodes;
  size_t n, capacity;
};
struct CUgraphExec_st {
  sim_node *nodes;
  size_t n;
};

/* Graph capture (graphs.c): while `stream` is being captured, work queued
 * on it is recorded, not run, as CUDA does. record_collective returns 1
 * when the collective was recorded; refuse_in_capture ends the program,
 * naming `call`, for work the simulation does not capture. */
int record_collective(cudaStream_t stream, const sim_node *node);
/* The same for a kernel launch (it takes k). */
int record_kernel(cudaStream_t stream, struct sim_kernel *k);
void refuse_in_capture(const char *call, cudaStream_t stream);

#endif
