/* ncclsim's process-wide state, settings, rule violations and leak check
 * (see sim.h). */
#include "sim.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
sim_alloc *allocs;
struct ncclComm *comms;
struct ncclWindow_vidmem *windows;
struct CUstream_st *streams;
struct CUevent_st *events;
static int exit_check_installed;

_Thread_local int current_device = 0;
_Thread_local int thread_rank = -1;
_Thread_local int program_rank = -1;
_Thread_local char last_error[1024];

/* ------------------------------------------------------------------------
 * Settings and reporting
 * --------------------------------------------------------------------- */

long env_long(const char *name, long fallback)
{
  const char *text = getenv(name);
  if (text == NULL || *text == '\0')
    return fallback;
  char *end;
  long value = strtol(text, &end, 10);
  if (*end != '\0') {
    fprintf(stderr, "ncclsim: bad %s='%s'\n", name, text);
    _exit(SIM_EXIT_VIOLATION);
  }
  return value;
}

/* The programs' threads say which rank they run through common/'s
 * set_error_rank (for the "rank R: " prefix of their messages); the test
 * builds link with -Wl,--wrap=set_error_rank so that the simulation hears it
 * too, and knows a thread's rank before it has a communicator. */
void __wrap_set_error_rank(int rank)
{
  program_rank = rank;
  if (__real_set_error_rank != NULL) /* a program without common/ has none */
    __real_set_error_rank(rank);
}

/* The calling rank: its communicator's rank, else the rank its thread
 * announced, else (a program's main thread, before it starts any rank) its
 * current device. */
int sim_rank(void)
{
  if (thread_rank >= 0)
    return thread_rank;
  return program_rank >= 0 ? program_rank : current_device;
}

/* Marks a communicator directory so that peers waiting there stop too. */
void mark_abort(const char *dir)
{
  char path[PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/abort", dir);
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0)
    close(fd);
}

_Noreturn void violation(const struct ncclComm *comm, const char *rule,
                         const char *call, const char *fmt, ...)
{
  char details[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(details, sizeof details, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "ncclsim: RULE VIOLATION [%s] rank %d in %s: %s\n", rule,
          comm ? comm->rank : sim_rank(), call, details);
  if (comm)
    mark_abort(comm->dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* The calls SIM_FAIL and SIM_HANG can name (each calls injected_failure). */
static const char *const injectable[] = {
    "cudaGetDeviceCount",
    "cudaSetDevice",
    "cudaDeviceGetAttribute",
    "cudaDriverGetVersion",
    "cudaDeviceCanAccessPeer",
    "cudaMalloc",
    "cudaFree",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "cudaMemcpyPeerAsync",
    "cudaStreamCreate",
    "cudaStreamCreateWithFlags",
    "cudaStreamSynchronize",
    "cudaStreamDestroy",
    "cudaEventCreate",
    "cudaEventRecord",
    "cudaEventSynchronize",
    "cudaEventElapsedTime",
    "cudaEventDestroy",
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRank",
    "ncclCommInitRankConfig",
    "ncclMemAlloc",
    "ncclMemFree",
    "ncclCommWindowRegister",
    "ncclCommWindowDeregister",
    "ncclAllReduce",
    "ncclAllGather",
    "ncclCommFinalize",
    "ncclCommDestroy",
    "cublasCreate_v2",
    "cublasSetStream_v2",
    "cublasSgemm_v2",
    "cublasDestroy_v2",
    "cudaGetDeviceProperties",
};
#define NINJECTABLE (sizeof injectable / sizeof injectable[0])

/* For the exit check: did a rank named in SIM_FAIL or SIM_HANG run in
 * this process, and was anything injected? */
static int injection_rank_ran, injected;

static int is_injectable(const char *name, size_t len)
{
  for (size_t i = 0; i < NINJECTABLE; i++)
    if (strlen(injectable[i]) == len && strncmp(injectable[i], name, len) == 0)
      return 1;
  return 0;
}

/* Does the list `spec` ("CALL:RANK[,CALL:RANK...]", from variable `var`)
 * name this call on this rank? A spec naming an unknown call or a rank
 * that is not a number ends the process: a misspelt injection must not
 * pass as "nothing happened". */
static int spec_matches(const char *var, const char *spec, const char *call)
{
  for (const char *item = spec; *item;) {
    size_t len = strcspn(item, ",");
    const char *colon = memchr(item, ':', len);
    size_t digits = colon ? strspn(colon + 1, "0123456789") : 0;
    if (colon == NULL || digits == 0 || colon + 1 + digits != item + len ||
        !is_injectable(item, (size_t)(colon - item))) {
      fprintf(stderr,
              "ncclsim: bad %s='%s': each item must be CALL:RANK with CALL one"
              " of the calls the simulation can fail",
              var, spec);
      for (size_t i = 0; i < NINJECTABLE; i++)
        fprintf(stderr, "%s%s", i ? ", " : " (", injectable[i]);
      fprintf(stderr, ") and RANK a number\n");
      _exit(SIM_EXIT_VIOLATION);
    }
    if (atoi(colon + 1) == sim_rank())
      __atomic_store_n(&injection_rank_ran, 1, __ATOMIC_RELAXED);
    if ((size_t)(colon - item) == strlen(call) &&
        strncmp(item, call, strlen(call)) == 0 &&
        atoi(colon + 1) == sim_rank()) {
      __atomic_store_n(&injected, 1, __ATOMIC_RELAXED);
      return 1;
    }
    item += len + (item[len] == ',');
  }
  return 0;
}

/* SIM_CALLS_LOG=FILE: the census of a run. Every injectable call a rank
 * makes is appended to FILE as "CALL RANK", once per process; the fault
 * matrix runs each configuration once this way, so that a cell knows before
 * it runs whether its rank makes its call (tests/faults/cell.sh). */
static void census(const char *call)
{
  const char *path = getenv("SIM_CALLS_LOG");
  if (path == NULL || *path == '\0')
    return;
  enum { MAX_SEEN = 4096 };
  static struct {
    size_t call; /* its index in injectable[] */
    int rank;
  } seen[MAX_SEEN];
  static int nseen;
  static pthread_mutex_t census_lock = PTHREAD_MUTEX_INITIALIZER;
  const int rank = sim_rank();
  size_t index = 0;
  while (strcmp(injectable[index], call) != 0) /* it is there: checked */
    index++;
  pthread_mutex_lock(&census_lock);
  int known = 0;
  for (int i = 0; i < nseen && !known; i++)
    known = seen[i].rank == rank && seen[i].call == index;
  if (!known && nseen < MAX_SEEN) {
    seen[nseen].call = index;
    seen[nseen++].rank = rank;
    char line[128];
    int len = snprintf(line, sizeof line, "%s %d\n", call, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || write(fd, line, (size_t)len) != len) {
      fprintf(stderr, "ncclsim: SIM_CALLS_LOG='%s' cannot be written\n", path);
      _exit(SIM_EXIT_VIOLATION);
    }
    close(fd);
  }
  pthread_mutex_unlock(&census_lock);
}

/* Wall-clock milliseconds since 1970: the fault matrix measures from the
 * moment of an injection to the end of the job (tests/faults/cell.sh). */
static long long epoch_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int injected_failure(const char *call)
{
  if (!is_injectable(call, strlen(call))) {
    fprintf(stderr, "ncclsim: internal: %s is not in the injectable list\n",
            call);
    _exit(SIM_EXIT_VIOLATION);
  }
  census(call);
  /* SIM_SLOW=CALL:RANK:MS: that call takes MS longer on that rank (a
   * loaded machine), and is no injection. */
  const char *slow = getenv("SIM_SLOW");
  char slow_call[64];
  int slow_rank = -1;
  long slow_ms = 0;
  if (slow != NULL &&
      sscanf(slow, "%63[^:]:%d:%ld", slow_call, &slow_rank, &slow_ms) == 3 &&
      strcmp(slow_call, call) == 0 && slow_rank == sim_rank() && slow_ms > 0)
    nanosleep(&(struct timespec){.tv_sec = slow_ms / 1000,
                                 .tv_nsec = slow_ms % 1000 * 1000000},
              NULL);
  const char *hang = getenv("SIM_HANG");
  if (hang != NULL && spec_matches("SIM_HANG", hang, call)) {
    fprintf(stderr,
            "ncclsim: injected hang: %s on rank %d never returns (at %lld"
            " ms)\n",
            call, sim_rank(), epoch_ms());
    for (;;)
      pause();
  }
  const char *spec = getenv("SIM_FAIL");
  if (spec == NULL || !spec_matches("SIM_FAIL", spec, call))
    return 0;
  /* Said on stderr too: a CUDA error's text cannot carry it. */
  snprintf(last_error, sizeof last_error,
           "ncclsim: injected failure of %s on rank %d", call, sim_rank());
  fprintf(stderr, "%s (at %lld ms)\n", last_error, epoch_ms());
  return 1;
}

/* At exit: anything still allocated, registered or alive is a leak. An
 * injection that named a rank of this process but injected nothing (the
 * rank never made that call) would let a test pass for nothing: it is a
 * violation too. */
static pid_t exit_check_owner;
static void check_leaks(void)
{
  /* A child forked from the process does not own its objects (nor could
   * it use the parent's CUDA context): not its leaks. */
  if (getpid() != exit_check_owner)
    return;
  if (injection_rank_ran && !injected) {
    fprintf(stderr,
            "ncclsim: INJECTION UNUSED: SIM_FAIL='%s' SIM_HANG='%s': the rank"
            " named never made that call, nothing was injected\n",
            getenv("SIM_FAIL") ? getenv("SIM_FAIL") : "",
            getenv("SIM_HANG") ? getenv("SIM_HANG") : "");
    fflush(stderr);
    _exit(SIM_EXIT_VIOLATION);
  }
  int leaks = 0;
  for (sim_alloc *a = allocs; a; a = a->next, leaks++)
    fprintf(
        stderr, "ncclsim: LEAK: %zu bytes from %s on device %d never freed\n",
        a->size, a->kind == FROM_NCCL_MEM_ALLOC ? "ncclMemAlloc" : "cudaMalloc",
        a->device);
  for (struct ncclWindow_vidmem *w = windows; w; w = w->next, leaks++)
    fprintf(
        stderr,
        "ncclsim: LEAK: window of %zu bytes on rank %d never deregistered\n",
        w->size, w->comm->rank);
  for (struct ncclComm *c = comms; c; c = c->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: communicator of rank %d never destroyed\n",
            c->rank);
  for (struct CUstream_st *s = streams; s; s = s->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: stream on device %d never destroyed\n",
            s->device);
  for (struct CUevent_st *e = events; e; e = e->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: event never destroyed\n");
  const char *warn = getenv("SIM_LEAKS");
  if (leaks > 0 && warn != NULL && strcmp(warn, "warn") == 0) {
    fprintf(stderr, "ncclsim: %d object(s) left at exit (SIM_LEAKS=warn:"
                    " listed, not a violation)\n", leaks);
  } else if (leaks > 0) {
    fprintf(stderr,
            "ncclsim: RULE VIOLATION [no-leaks] %d object(s) left at exit\n",
            leaks);
    fflush(NULL); /* the program's own output is not lost */
    _exit(SIM_EXIT_VIOLATION);
  }
}

void install_exit_check(void)
{
  if (!exit_check_installed) {
    exit_check_installed = 1;
    exit_check_owner = getpid();
    atexit(check_leaks);
  }
}

/* The allocation holding [p, p+len), or NULL. Caller holds the lock. */
sim_alloc *find_alloc(const void *p, size_t len)
{
  const unsigned char *b = p;
  for (sim_alloc *a = allocs; a; a = a->next)
    if (b >= a->base && b < a->base + a->size)
      return (len <= (size_t)(a->base + a->size - b)) ? a : NULL;
  return NULL;
}
