/* libgaps.so's parts (tools/gaps): the wrapped calls and their records
 * (gaps.c, whose header says what the library measures) and the report at
 * exit (report.c). Hidden from the program the library is preloaded into:
 * only the wrappers are its interface. */
#ifndef GAPS_H
#define GAPS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* One call: a wrapped NCCL collective or a graph replay. */
typedef struct call {
  uint64_t id;              /* 1, 2, ...: its number */
  int kind;                 /* index into kinds[] */
  uint32_t thread;          /* system thread id */
  uint64_t begin, end;      /* host, CUPTI clock (ns) */
  uint64_t first, last;     /* its GPU work; first == UINT64_MAX: none seen */
  uint64_t busy;            /* sum of its kernels' and copies' durations */
  int kernels, copies;
} call;

typedef struct kind {
  char text[160];
} kind;

extern pthread_mutex_t lock; /* held for the records below */
extern call *calls;
extern size_t ncalls, calls_cap;
extern kind *kinds;
extern size_t nkinds, kinds_cap;
extern int cupti_ok; /* CUPTI records the GPU's work */

/* Makes room for one more element in *array (used of *cap); 0 without
 * memory. */
int grow(void **array, size_t *cap, size_t used, size_t size);
/* At exit: ties the GPU's work to the calls, one line per kind of call. */
void report(void);

#pragma GCC visibility pop

#endif
