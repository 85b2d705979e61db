#include "checks.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

static const char *program_name = "nccl-example";
static _Thread_local int error_rank = -1;
static void (*end_job)(int status);

void set_error_rank(int rank)
{
  error_rank = rank;
  watch_rank(rank);
}

void on_fatal_error(void (*fn)(int status)) { end_job = fn; }

void flush_stdout_if_free(void)
{
  if (ftrylockfile(stdout) != 0)
    return; /* a rank holds it, maybe stuck writing: leave it */
  fflush(stdout);
  funlockfile(stdout);
}

_Noreturn void fatal(int status)
{
  if (end_job != NULL)
    end_job(status);
  flush_stdout_if_free();
  _exit(status);
}

unsigned long long hash_bytes(const void *data, size_t size)
{
  unsigned long long hash = 1469598103934665603ull; /* FNV-1a, 64 bits */
  for (size_t i = 0; i < size; i++)
    hash = (hash ^ ((const unsigned char *)data)[i]) * 1099511628211ull;
  return hash;
}

const char *path_base_name(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void set_program_name(const char *path) { program_name = path_base_name(path); }

/* write(2) until done: stderr's FILE lock is never taken, so a thread
 * stuck while holding it cannot stop a message (the watchdog's above all). */
static void write_all(int fd, const char *text, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, text, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; /* nowhere left to say it */
    text += n;
    len -= (size_t)n;
  }
}

void print_error(const char *fmt, ...)
{
  /* One write per message, so lines of several ranks do not interleave;
   * as long as the message is (NCCL's last-error text can be ~1 KB). */
  char prefix[128];
  if (error_rank >= 0)
    snprintf(prefix, sizeof prefix, "%s: rank %d: ", program_name, error_rank);
  else
    snprintf(prefix, sizeof prefix, "%s: ", program_name);
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  size_t size = strlen(prefix) + (len > 0 ? (size_t)len : 0) + 1;
  char *line = malloc(size);
  if (line == NULL) { /* out of memory: at least the prefix and format */
    write_all(STDERR_FILENO, prefix, strlen(prefix));
    write_all(STDERR_FILENO, fmt, strlen(fmt));
    return;
  }
  memcpy(line, prefix, strlen(prefix) + 1);
  va_start(ap, fmt);
  vsnprintf(line + strlen(prefix), size - strlen(prefix), fmt, ap);
  va_end(ap);
  write_all(STDERR_FILENO, line, strlen(line));
  free(line);
}

void *host_calloc(size_t n, size_t size)
{
  void *p = calloc(n, size);
  if (p == NULL) {
    print_error("out of host memory (%zu x %zu bytes)\n", n, size);
    fatal(1);
  }
  return p;
}

void fail_cuda(const char *file, int line, const char *call, cudaError_t err)
{
  print_error("%s:%d: %s failed: %s (%s)\n", path_base_name(file), line, call,
              cudaGetErrorString(err), cudaGetErrorName(err));
  fatal(1);
}

void fail_nccl(const char *file, int line, const char *call, ncclResult_t res)
{
  /* ncclGetLastError(NULL) returns the text of the last failure NCCL logged
   * in this process, which often names the real cause. */
  const char *detail = ncclGetLastError(NULL);
  int have_detail = detail != NULL && detail[0] != '\0';
  print_error("%s:%d: %s failed: %s%s%s%s (NCCL_DEBUG=WARN shows more)\n",
              path_base_name(file), line, call, ncclGetErrorString(res),
              have_detail ? " [NCCL: " : "", have_detail ? detail : "",
              have_detail ? "]" : "");
  fatal(1);
}

_Noreturn void fail_call(const char *file, int line, const char *call,
                         const char *text)
{
  print_error("%s:%d: %s failed: %s\n", path_base_name(file), line, call, text);
  fatal(1);
}
