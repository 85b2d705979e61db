/* ncclsim: cuBLAS's SGEMM, accepted and not computed (see sim.h): it is
 * queued on the handle's stream only to take its time on the simulated
 * GPU (clock.c). Built only with HAVE_CUBLAS=1 (tests/Makefile). */
#include "sim.h"

#include <cublas_v2.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------
 * cuBLAS (--bench --overlap): accepted, not computed
 * --------------------------------------------------------------------- */

struct cublasContext {
  cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
  if (injected_failure("cublasCreate_v2"))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = calloc(1, sizeof **handle);
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
  if (injected_failure("cublasDestroy_v2"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
  if (injected_failure("cublasSetStream_v2"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
  (void)handle, (void)transa, (void)transb, (void)alpha, (void)beta;
  (void)lda, (void)ldb, (void)ldc;
  if (injected_failure("cublasSgemm_v2"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  pthread_mutex_lock(&lock);
  int inside = find_alloc(A, (size_t)m * k * 4) &&
               find_alloc(B, (size_t)k * n * 4) &&
               find_alloc(C, (size_t)m * n * 4);
  pthread_mutex_unlock(&lock);
  if (!inside)
    return CUBLAS_STATUS_INVALID_VALUE;
  work_item item = {.kind = WORK_GEMM, .size = (size_t)m * n * k};
  return enqueue(handle->stream, 0, &item) ? CUBLAS_STATUS_SUCCESS
                                           : CUBLAS_STATUS_ALLOC_FAILED;
}
