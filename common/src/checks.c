#include "checks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"

static const char *program_name = "nccl-example";

void set_program_name(const char *name) { program_name = name; }

void print_error(const char *fmt, ...)
{
  /* One write per message, so lines of several ranks do not interleave. */
  char line[1024];
  int n;
  int rank = current_rank();
  if (rank >= 0)
    n = snprintf(line, sizeof line, "%s: rank %d: ", program_name, rank);
  else
    n = snprintf(line, sizeof line, "%s: ", program_name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fputs(line, stderr);
  fflush(stderr);
}

void *host_calloc(size_t n, size_t size)
{
  void *p = calloc(n, size);
  if (p == NULL) {
    print_error("out of host memory (%zu x %zu bytes)\n", n, size);
    job_abort(1);
  }
  return p;
}

/* Strip the directory so messages stay short: "main.c:84". */
static const char *base_name(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void fail_cuda(const char *file, int line, const char *call, cudaError_t err)
{
  print_error("%s:%d: %s failed: %s (%s)\n", base_name(file), line, call,
              cudaGetErrorString(err), cudaGetErrorName(err));
  job_abort(1);
}

void fail_nccl(const char *file, int line, const char *call, ncclResult_t res)
{
  /* ncclGetLastError(NULL) returns the text of the last failure NCCL logged
   * in this process, which often names the real cause. */
  const char *detail = ncclGetLastError(NULL);
  int have_detail = detail != NULL && detail[0] != '\0';
  print_error("%s:%d: %s failed: %s%s%s%s (NCCL_DEBUG=WARN shows more)\n",
              base_name(file), line, call, ncclGetErrorString(res),
              have_detail ? " [NCCL: " : "", have_detail ? detail : "",
              have_detail ? "]" : "");
  job_abort(1);
}

#ifdef USE_MPI
void fail_mpi(const char *file, int line, const char *call, int err)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
    snprintf(text, sizeof text, "MPI error %d", err);
  print_error("%s:%d: %s failed: %s\n", base_name(file), line, call, text);
  job_abort(1);
}
#endif
