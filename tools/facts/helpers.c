/* Handles, outcomes and the control that every fact shares (facts.h). */
#include "facts.h"

#include <stdarg.h>
#include <stdio.h>

int window_state(ncclWindow_t w)
{
  return w == NOT_WRITTEN ? WIN_NOT_WRITTEN : w == NULL ? WIN_NULL : WIN_SET;
}

const char *window_word(int state)
{
  return state == WIN_NOT_WRITTEN ? "not written"
         : state == WIN_NULL      ? "NULL"
         : state == WIN_SET       ? "non-NULL"
                                  : "-";
}

/* 1 if NCCL wrote a handle there that must be deregistered. */
int held(ncclWindow_t w) { return window_state(w) == WIN_SET; }

/* Deregisters win if NCCL wrote it, then frees buf (an ncclMemAlloc
 * buffer, or NULL). */
void release(ncclComm_t comm, ncclWindow_t win, void *buf)
{
  if (held(win))
    ncclCommWindowDeregister(comm, win);
  if (buf)
    ncclMemFree(buf);
}

void note(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

/* The result and last error of a call the fact is about. */
void record(outcome *o, ncclComm_t comm, ncclResult_t res, int window)
{
  o->result = res;
  o->window = window;
  const char *last = ncclGetLastError(comm);
  note(o->last_error, sizeof o->last_error, "%s", last ? last : "");
  for (char *c = o->last_error; *c; c++) /* one line, one TSV field */
    if (*c == '\n' || *c == '\t')
      *c = ' ';
}

/* ncclMemAlloc, or a note in the fact's detail that it failed. */
int mem_alloc(void **buf, size_t size, outcome *o)
{
  if (ncclMemAlloc(buf, size) == ncclSuccess)
    return 1;
  note(o->detail, sizeof o->detail, "ncclMemAlloc of %zu MiB failed",
       size / MIB);
  return 0;
}

ncclResult_t alloc_and_register(ncclComm_t comm, size_t size, void **buf,
                                ncclWindow_t *win)
{
  *buf = NULL;
  *win = NOT_WRITTEN;
  ncclResult_t res = ncclMemAlloc(buf, size);
  if (res == ncclSuccess)
    res = ncclCommWindowRegister(comm, *buf, size, win,
                                 NCCL_WIN_COLL_SYMMETRIC);
  return res;
}

/* The control: a whole ncclMemAlloc buffer must get a window. */
int control(ncclComm_t comm, outcome *o)
{
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  ncclResult_t res = alloc_and_register(comm, 4 * MIB, &buf, &win);
  o->control_ok = res == ncclSuccess && held(win);
  if (!o->control_ok)
    note(o->control_why, sizeof o->control_why, "%s, window %s",
         ncclGetErrorString(res), window_word(window_state(win)));
  release(comm, win, buf);
  return o->control_ok;
}
