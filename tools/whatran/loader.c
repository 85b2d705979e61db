/* libwhatran's CUPTI and CUDA runtime, found at run time (whatran.h):
 * the library links neither, so that a program preloaded with it starts
 * on a machine without CUPTI (its lines then say "not measured") and uses
 * the CUDA runtime it already has. Each function here stands in for the
 * one of the same name that the instruments' CUPTI reader (engine.c) and
 * the wrappers call: it passes the call on to the definition the process
 * already has (a program linked with CUPTI, or the simulation's library),
 * else to the library's own (libcupti.so.13, libcudart.so.13; the rpath
 * names CUDA_HOME's), opened once. Hidden: the program never sees them. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include <cupti.h>

/* Everything below is hidden: the program keeps its own CUPTI and CUDA. */
#pragma GCC visibility push(hidden)

#include "whatran.h"

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

/* The definition of `name` this process has, else the library's; NULL if
 * neither. Thread-safe: the libraries are opened once, and dlsym may be
 * called from any thread. */
static void *resolve(enum lib l, const char *name)
{
  void *f = dlsym(RTLD_DEFAULT, name);
  if (f != NULL)
    return f;
  pthread_once(&opened, open_libraries);
  return handles[l] ? dlsym(handles[l], name) : NULL;
}

/* `static ... *fn`: the resolved function, NULL until then (an atomic
 * pointer: threads may resolve it at once, and get the same value). */
#define RESOLVED(l, name)                                                      \
  static __typeof__(name) *name##_fn;                                          \
  __typeof__(name) *fn = __atomic_load_n(&name##_fn, __ATOMIC_ACQUIRE);        \
  if (fn == NULL) {                                                            \
    fn = (__typeof__(name) *)resolve(l, #name);                                \
    __atomic_store_n(&name##_fn, fn, __ATOMIC_RELEASE);                        \
  }

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
#pragma GCC visibility pop
