/* libwhatran's report: each communicator's calls classified from the
 * work CUPTI saw (the instruments' engine), and at exit one line per
 * communicator and outcome, on stderr or WHATRAN_OUT (WHATRAN_JSON: one
 * JSON object per rank and communicator). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatran.h"

static void size_text(size_t bytes, char *out, size_t size)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = (double)bytes;
  while (v >= 1024 && u < 4 && (bytes % ((size_t)1 << (10 * (u + 1)))) == 0) {
    v /= 1024;
    u++;
  }
  snprintf(out, size, "%.0f %s", v, units[u]);
}

/* Why an outcome is not NCCL's fast path, from what this library saw. */
static void cause(const call *k, char *out, size_t size)
{
  const char *which = !k->send_in && !k->recv_in ? "neither buffer is"
                      : !k->recv_in              ? "the output buffer is not"
                                                 : "the input buffer is not";
  if (k->send_in && k->recv_in)
    snprintf(out, size, ": both buffers are in windows; no known cause found"
                        " (NCCL_DEBUG=INFO says why)");
  else if ((!k->recv_in && k->recv_null) || (!k->send_in && k->send_null))
    snprintf(out, size, ": no window: %s in a window (a handle came back"
                        " NULL)", which);
  else
    snprintf(out, size, ": no window: %s registered", which);
}

/* Calls ordered by thread, then start (for find_call). */
static const call *sort_base;
static int by_thread_then_start(const void *x, const void *y)
{
  const call *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
  if (a->thread != b->thread)
    return a->thread < b->thread ? -1 : 1;
  return (a->t0 > b->t0) - (a->t0 < b->t0);
}

/* Classifies c's calls (the lock held): each kernel or copy goes to the
 * call of its launching thread whose time holds the launch (to every call
 * of a group whose end launched it). */
void classify(comm_rec *c)
{
  int flushed = measuring == 1 && engine_probe_flush();
  engine_piece *pieces = NULL;
  size_t npieces = flushed ? engine_probe_pieces(&pieces) : 0;
  engine_work *work = calloc((size_t)c->ncalls + 1, sizeof *work);
  int *order = calloc((size_t)c->ncalls + 1, sizeof *order);
  for (int i = 0; i < c->ncalls; i++)
    order[i] = i;
  if (work != NULL && order != NULL) {
    sort_base = c->calls;
    qsort(order, (size_t)c->ncalls, sizeof *order, by_thread_then_start);
    for (size_t p = 0; p < npieces; p++) {
      const engine_piece *e = &pieces[p];
      if (e->graph)
        continue; /* a replay's: see replays_text */
      int lo = 0, hi = c->ncalls - 1, last = -1; /* last call begun by then */
      while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const call *k = &c->calls[order[mid]];
        if (k->thread < e->thread ||
            (k->thread == e->thread && k->t0 <= e->launch_start)) {
          last = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      for (int j = last; j >= 0; j--) {
        const call *k = &c->calls[order[j]];
        if (k->thread != e->thread || k->t1 < e->launch_start)
          break;
        engine_work_add(&work[order[j]], e);
      }
    }
  }
  for (int i = 0; i < c->ncalls; i++) {
    call *k = &c->calls[i];
    int known = flushed && work != NULL && order != NULL;
    k->cls = what_ran_describe(known ? &work[i] : NULL, c->nranks, k->ran,
                               sizeof k->ran);
    if (!known)
      snprintf(k->ran, sizeof k->ran, "not measured: %s",
               measuring == 1 ? "CUPTI failed (see its message above)"
               : measuring == MEASURING_FORKED
                   ? "this process was forked from a measured one, and"
                     " CUPTI is not used after a fork"
                   : engine_probe_unavailable());
    else if (k->in_place && c->nranks == 1 && k->cls == RAN_NOTHING)
      snprintf(k->ran, sizeof k->ran,
               "in place at one rank: nothing to move, and NCCL launched"
               " no work");
    else if (k->captured && k->cls == RAN_NOTHING)
      snprintf(k->ran, sizeof k->ran,
               "captured into a CUDA graph: its work runs at each replay");
    else if (k->in_progress && k->cls == RAN_NOTHING)
      snprintf(k->ran, sizeof k->ran, "not seen: the call returned"
               " ncclInProgress (a non-blocking communicator), and NCCL's own"
               " thread launched its work later, which no call of the program"
               " holds");
    else if (k->cls == RAN_REGULAR && k->coll != REPLAY && c->nranks > 1) {
      char why[160];
      cause(k, why, sizeof why);
      text_add(k->ran, sizeof k->ran, "%s", why);
    }
  }
  free(work);
  free(order);
  free(pieces);
}

/* One communicator's outcomes: "AllReduce of 4 KiB to 64 KiB (3 calls): X;
 * ..." in the order first seen. */
static void outcomes(const comm_rec *c, char *out, size_t size)
{
  out[0] = '\0';
  int *said = calloc((size_t)c->ncalls + 1, sizeof *said);
  if (said == NULL)
    return;
  for (int i = 0; i < c->ncalls; i++) {
    if (said[i])
      continue;
    const call *k = &c->calls[i];
    size_t lo = k->bytes, hi = k->bytes;
    int n = 0;
    for (int j = i; j < c->ncalls; j++) {
      const call *o = &c->calls[j];
      if (said[j] || o->coll != k->coll || strcmp(o->ran, k->ran) != 0)
        continue;
      said[j] = 1;
      n++;
      lo = o->bytes < lo ? o->bytes : lo;
      hi = o->bytes > hi ? o->bytes : hi;
    }
    char a[32], b[32];
    size_text(lo, a, sizeof a);
    size_text(hi, b, sizeof b);
    if (k->coll == REPLAY)
      text_add(out, size, "%s%s (%d launch%s): %s", out[0] ? "; " : "",
               coll_names[k->coll], n, n == 1 ? "" : "es", k->ran);
    else
      text_add(out, size, "%s%s of %s%s%s (%d call%s): %s",
               out[0] ? "; " : "", coll_names[k->coll], a, lo != hi ? " to " : "",
               lo != hi ? b : "", n, n == 1 ? "" : "s", k->ran);
  }
  if (c->ncalls == 0)
    text_add(out, size, "no collective");
  if (c->unrecorded > 0)
    text_add(out, size, "; %ld later calls not classified", c->unrecorded);
  free(said);
}

/* "2 windows registered (4 KiB, 4 KiB)", then the registrations whose
 * handle came back NULL, and those whose group never ended. */
static void windows_text(const comm_rec *c, char *out, size_t size)
{
  int n[3] = {0, 0, 0}; /* windows, NULL handles, never written */
  char sizes[3][TEXT / 2] = {"", "", ""};
  for (int i = 0; i < c->nwindows; i++) {
    const window *w = &c->windows[i];
    int kind = !w->read ? 2 : w->handle == NULL ? 1 : 0;
    char s[32];
    size_text(w->size, s, sizeof s);
    text_add(sizes[kind], sizeof sizes[kind], "%s%s", n[kind] ? ", " : "", s);
    n[kind]++;
  }
  out[0] = '\0';
  text_add(out, size, "%d window%s registered%s%s%s", n[0], n[0] == 1 ? "" : "s",
           n[0] ? " (" : "", sizes[0], n[0] ? ")" : "");
  if (n[1])
    text_add(out, size, "; %d registration%s came back NULL (%s): no window",
             n[1], n[1] == 1 ? "" : "s", sizes[1]);
  if (n[2])
    text_add(out, size, "; %d registration%s in a group that never ended (%s)",
             n[2], n[2] == 1 ? "" : "s", sizes[2]);
}

/* ------------------------------------------------------------ at exit */

static int by_launch(const void *x, const void *y)
{
  uint32_t a = ((const engine_piece *)x)->launch,
           b = ((const engine_piece *)y)->launch;
  return (a > b) - (a < b);
}

/* Replays of CUDA graphs: the work CUPTI ties to a graph launch
 * (cuGraphLaunch or cudaGraphLaunch, static or dynamic runtime alike),
 * each launch described, launches that ran the same said once. */
static void replays_report(void)
{
  if (measuring != 1 || !engine_probe_flush())
    return;
  engine_piece *pieces = NULL;
  size_t n = engine_probe_pieces(&pieces);
  qsort(pieces, n, sizeof *pieces, by_launch);
  /* One rank's local copy where every captured call was on a
   * communicator of one rank; else not known to be. */
  int one_rank = 0, other = 0;
  for (const comm_rec *c = comms; c; c = c->next)
    for (int i = 0; i < c->ncalls; i++)
      if (c->calls[i].captured && c->nranks == 1)
        one_rank++;
      else if (c->calls[i].captured)
        other++;
  comm_rec r = {.nranks = one_rank && !other ? 1 : 2,
                .calls = calloc(MAX_CALLS, sizeof(call))};
  engine_work w = {0};
  for (size_t i = 0; r.calls != NULL && i < n; i++) {
    if (!pieces[i].graph)
      continue;
    engine_work_add(&w, &pieces[i]);
    int last = i + 1 == n || !pieces[i + 1].graph ||
               pieces[i + 1].launch != pieces[i].launch;
    if (!last)
      continue;
    if (r.ncalls == MAX_CALLS) {
      r.unrecorded++;
    } else {
      call *k = &r.calls[r.ncalls++];
      k->coll = REPLAY;
      k->cls = what_ran_describe(&w, r.nranks, k->ran, sizeof k->ran);
    }
    memset(&w, 0, sizeof w);
  }
  if (r.ncalls > 0) {
    char text[2 * TEXT];
    outcomes(&r, text, sizeof text);
    say("What ran (libwhatran): %s\n", text);
  }
  free(r.calls);
  free(pieces);
}

static void json_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++)
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  fputc('"', f);
}

static void write_json(const comm_rec *c, const char *ran, const char *wins)
{
  const char *path = getenv("WHATRAN_JSON");
  if (path == NULL || *path == '\0')
    return;
  FILE *f = fopen(path, "a");
  if (f == NULL) {
    fprintf(stderr, "libwhatran: WHATRAN_JSON=%s cannot be opened\n", path);
    return;
  }
  fprintf(f, "{\"communicator\": %d, \"rank\": %d, \"ranks\": %d, \"windows\": ",
          c->label, c->rank, c->nranks);
  json_string(f, wins);
  fprintf(f, ", \"ran\": ");
  json_string(f, ran);
  fprintf(f, "}\n");
  fclose(f);
}

void report(void)
{
  pthread_mutex_lock(&lock);
  settle_all(LOOK_ANY); /* the program is done: a look changes nothing */
  replays_report();
  int n = 0;
  for (comm_rec *c = comms; c; c = c->next, n++)
    if (!c->done)
      classify(c);
  /* Oldest first; the ranks of one communicator that say the same, once. */
  comm_rec **all = calloc((size_t)n + 1, sizeof *all);
  char (*ran)[2 * TEXT] = calloc((size_t)n + 1, sizeof *ran);
  char (*wins)[TEXT] = calloc((size_t)n + 1, sizeof *wins);
  int *said = calloc((size_t)n + 1, sizeof *said);
  if (all && ran && wins && said) {
    int i = n;
    for (comm_rec *c = comms; c; c = c->next)
      all[--i] = c;
    for (i = 0; i < n; i++) {
      outcomes(all[i], ran[i], sizeof ran[i]);
      windows_text(all[i], wins[i], sizeof wins[i]);
      write_json(all[i], ran[i], wins[i]);
    }
    for (i = 0; i < n; i++) {
      if (said[i])
        continue;
      int *in = calloc((size_t)all[i]->nranks + 1, sizeof *in);
      int members = 0, size = all[i]->nranks;
      for (int j = i; j < n; j++)
        if (!said[j] && all[j]->label == all[i]->label &&
            all[j]->nranks == size && strcmp(ran[j], ran[i]) == 0 &&
            strcmp(wins[j], wins[i]) == 0 && all[j]->rank >= 0 &&
            all[j]->rank < size && in != NULL) {
          said[j] = 1;
          in[all[j]->rank] = 1;
          members++;
        }
      char ranks[256] = "";
      if (in != NULL)
        what_ran_add_ranks(ranks, sizeof ranks, in, size);
      if (all[i]->rank < 0 || size <= 0)
        snprintf(ranks, sizeof ranks, "a rank NCCL never said (its"
                                      " communicator was never ready)");
      char count[32] = "ranks not known";
      if (size > 0)
        snprintf(count, sizeof count, "%d rank%s", size, size == 1 ? "" : "s");
      say("What ran (libwhatran): communicator %d, %s, %s: %s; %s\n",
          all[i]->label, count, ranks, ran[i], wins[i]);
      free(in);
    }
  }
  free(all);
  free(ran);
  free(wins);
  free(said);
  pthread_mutex_unlock(&lock);
  if (measuring == 1)
    engine_probe_stop();
}

