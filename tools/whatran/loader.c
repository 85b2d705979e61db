/* libwhatran's NCCL, CUPTI and CUDA runtime, found at run time (whatran.h)
 * wherever the process loaded them: in the global scope, or inside a
 * library it opened with RTLD_LOCAL (Python opens PyTorch's
 * libtorch_cuda.so, and with it libnccl.so.2 and libcudart.so.13),
 * where neither dlsym(RTLD_NEXT) nor dlsym(RTLD_DEFAULT) looks. The library
 * links none of them, so that a program preloaded with it starts on a
 * machine without CUPTI (its lines then say "not measured") and uses the
 * NCCL and the CUDA runtime it already has. Each CUPTI and CUDA function
 * here stands in for the one of the same name that the instruments' CUPTI
 * reader (engine.c) and the wrappers call: it passes the call on to the
 * definition the process already has (a program linked with CUPTI, a
 * library it loaded, or the simulation's library), else to the library's
 * own (libcupti.so.13, libcudart.so.13; the rpath names CUDA_HOME's),
 * opened once. Hidden: the program never sees them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_NOLOAD, dladdr, dl_iterate_phdr */
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

/* Everything below is hidden: the program keeps its own CUPTI and CUDA. */
#pragma GCC visibility push(hidden)

#include "whatran.h"

/* ------------------------------------------ what the process has loaded */

#define MAX_OBJECTS 1024

typedef struct loaded_objects {
  char *names[MAX_OBJECTS]; /* the loaded objects' paths, in load order */
  int n;
} loaded_objects;

/* dl_iterate_phdr: notes each object's path (not the program's, "").
 * Copied: the objects are opened only after the walk, which holds the
 * dynamic linker's lock. */
static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
  (void)size;
  loaded_objects *o = arg;
  if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0' &&
      o->n < MAX_OBJECTS)
    o->names[o->n++] = strdup(info->dlpi_name);
  return 0;
}

void *find_loaded(const char *name)
{
  Dl_info self, where;
  if (dladdr((void *)find_loaded, &self) == 0)
    self.dli_fbase = NULL;
  loaded_objects o = {.n = 0};
  dl_iterate_phdr(note_object, &o);
  void *found = NULL;
  for (int i = 0; i < o.n; i++) {
    /* RTLD_NOLOAD: a handle only on what is loaded already. The handle
     * that found it stays open, so the definition stays loaded. */
    void *h = found || o.names[i] == NULL
                  ? NULL
                  : dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    if (f != NULL && dladdr(f, &where) != 0 && where.dli_fbase != self.dli_fbase)
      found = f;
    else if (h != NULL)
      dlclose(h);
    free(o.names[i]);
  }
  return found;
}

void *next_of(const char *name)
{
  void *f = dlsym(RTLD_NEXT, name);
  return f != NULL ? f : find_loaded(name);
}

ncclResult_t no_nccl(const char *name, int *said)
{
  if (!__atomic_exchange_n(said, 1, __ATOMIC_ACQ_REL))
    fprintf(stderr, "libwhatran: %s: no library loaded in this process"
                    " defines it (NCCL is not loaded, or is older than"
                    " this call): it returns ncclSystemError, and What"
                    " ran says nothing of it\n", name);
  return ncclSystemError;
}

/* ------------------------------------------- CUPTI and the CUDA runtime */

enum lib { CUPTI, CUDART, NLIBS };
static const char *const sonames[NLIBS][3] = {
    {"libcupti.so.13", "libcupti.so.12", "libcupti.so"},
    {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}};
static void *handles[NLIBS];
static char missing[NLIBS][200]; /* why a library could not be opened */
static pthread_once_t opened = PTHREAD_ONCE_INIT;

static void open_libraries(void)
{
  for (int l = 0; l < NLIBS; l++) {
    for (int i = 0; i < 3 && handles[l] == NULL; i++)
      handles[l] = dlopen(sonames[l][i], RTLD_NOW | RTLD_LOCAL);
    if (handles[l] == NULL) {
      const char *why = dlerror();
      snprintf(missing[l], sizeof missing[l], "%s cannot be loaded: %s",
               sonames[l][0], why ? why : "?");
    }
  }
}

/* The definition of `name` this process has (in its global scope, else
 * in any library it loaded), else the library's; NULL if none.
 * Thread-safe: the libraries are opened once, and dlsym may be called from
 * any thread. */
static void *resolve(enum lib l, const char *name)
{
  void *f = dlsym(RTLD_DEFAULT, name);
  if (f == NULL)
    f = find_loaded(name);
  if (f != NULL)
    return f;
  pthread_once(&opened, open_libraries);
  return handles[l] ? dlsym(handles[l], name) : NULL;
}

/* `static ... *fn`: the function `how` found, NULL until found (an atomic
 * pointer: threads may resolve it at once, and get the same value). */
#define RESOLVED_WITH(how, name)                                               \
  static __typeof__(name) *name##_fn;                                          \
  __typeof__(name) *fn = __atomic_load_n(&name##_fn, __ATOMIC_ACQUIRE);        \
  if (fn == NULL) {                                                            \
    fn = (__typeof__(name) *)(how);                                            \
    __atomic_store_n(&name##_fn, fn, __ATOMIC_RELEASE);                        \
  }
#define RESOLVED(l, name) RESOLVED_WITH(resolve(l, #name), name)

/* ------------------------------------------------------------- CUPTI */

/* Without CUPTI every call fails, and cuptiGetResultString says why, so
 * that the instruments' message reads "CUPTI: X failed: libcupti.so.13
 * cannot be loaded: ...; what ran is not measured". */
#define NO_CUPTI CUPTI_ERROR_NOT_INITIALIZED

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
  RESOLVED(CUPTI, cuptiGetResultString);
  if (fn != NULL)
    return fn(result, str);
  *str = missing[CUPTI][0] ? missing[CUPTI] : "CUPTI is not loaded";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
  RESOLVED(CUPTI, cuptiSetThreadIdType);
  return fn ? fn(type) : NO_CUPTI;
}

CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc requested,
    CUpti_BuffersCallbackCompleteFunc completed)
{
  RESOLVED(CUPTI, cuptiActivityRegisterCallbacks);
  return fn ? fn(requested, completed) : NO_CUPTI;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
  RESOLVED(CUPTI, cuptiActivityEnable);
  return fn ? fn(kind) : NO_CUPTI;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
  RESOLVED(CUPTI, cuptiActivityDisable);
  return fn ? fn(kind) : NO_CUPTI;
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
  RESOLVED(CUPTI, cuptiGetTimestamp);
  return fn ? fn(timestamp) : NO_CUPTI;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
  RESOLVED(CUPTI, cuptiActivityFlushAll);
  return fn ? fn(flag) : NO_CUPTI;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                       CUpti_Activity **record)
{
  RESOLVED(CUPTI, cuptiActivityGetNextRecord);
  return fn ? fn(buffer, valid, record) : NO_CUPTI;
}

/* ------------------------------------------------------ CUDA runtime */

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  enum cudaStreamCaptureStatus *status)
{
  RESOLVED(CUDART, cudaStreamIsCapturing);
  if (fn != NULL)
    return fn(stream, status);
  *status = cudaStreamCaptureStatusNone; /* not known: said as not captured */
  return cudaErrorInitializationError;
}

const char *cudaGetErrorString(cudaError_t err)
{
  RESOLVED(CUDART, cudaGetErrorString);
  return fn ? fn(err) : "(the CUDA runtime is not loaded)";
}

const char *cudaGetErrorName(cudaError_t err)
{
  RESOLVED(CUDART, cudaGetErrorName);
  return fn ? fn(err) : "cudaError?";
}
/* --------------------------------------------- NCCL's words for errors */

/* common/'s checks.c, linked in, names NCCL's errors with these: NCCL's
 * own, found as the wrappers find it, not left for the dynamic linker to
 * bind (it looks in the global scope only, and ends the program there). */
const char *ncclGetErrorString(ncclResult_t result)
{
  RESOLVED_WITH(next_of("ncclGetErrorString"), ncclGetErrorString);
  return fn ? fn(result) : "(NCCL is not loaded)";
}

const char *ncclGetLastError(ncclComm_t comm)
{
  RESOLVED_WITH(next_of("ncclGetLastError"), ncclGetLastError);
  return fn ? fn(comm) : "(NCCL is not loaded)";
}
#pragma GCC visibility pop
