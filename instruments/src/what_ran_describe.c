/* What one rank's work was, in words (what_ran.h's what_ran_describe): the
 * one classification of CUPTI's records, shared by the programs' What ran,
 * the bench's engine column and tools/whatran. Pure: no CUDA call. */
#include "what_ran.h"

#include <stdio.h>
#include <string.h>

#include "calls.h"

#define SYM_PREFIX     "ncclSymkDevKernel_"
#define REGULAR_PREFIX "ncclDevKernel_"

/* A regular kernel's name stands for a family of algorithms, not for the
 * one NCCL ran: NCCL 2.28 names ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * 2.31 and later ncclDevKernel_AllReduce_f32_RING (the 2.32.3 library's
 * symbols), and the kernel named for RING and LL also runs other
 * algorithms and protocols (NCCL_DEBUG_SUBSYS=TUNING names the one
 * chosen). Writes the algorithm the name carries ("RING", "NVLS_TREE"),
 * or, for a name of neither shape, the name without NCCL's prefix. */
static void regular_family(const char *name, char *out, size_t size)
{
  static const char *const algorithms[] = {
      "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "RING", "TREE",
      "NVLS",      "PAT"};
  static const char *const protocols[] = {"", "_LL", "_LL128", "_SIMPLE"};
  const char *base = name + strlen(REGULAR_PREFIX);
  for (const char *at = strchr(base, '_'); at; at = strchr(at + 1, '_'))
    for (size_t a = 0; a < sizeof algorithms / sizeof *algorithms; a++) {
      size_t len = strlen(algorithms[a]);
      if (strncmp(at + 1, algorithms[a], len) != 0)
        continue;
      for (size_t p = 0; p < sizeof protocols / sizeof *protocols; p++)
        if (strcmp(at + 1 + len, protocols[p]) == 0) {
          snprintf(out, size, "%s", algorithms[a]);
          return;
        }
    }
  snprintf(out, size, "%s", base);
}

/* The symmetric kernels of w without NCCL's prefix, ", "-separated, then
 * (with `regular`) the families of its regular kernels, each once:
 * "regular kernels of the RING family", "of the RING and TREE families".
 * Kernels of neither kind are named as they are. */
static void add_names(char *buf, size_t size, const engine_work *w,
                      int regular)
{
  int named = 0;
  for (int i = 0; i < w->nnames; i++) {
    const char *name = w->names[i];
    if (strncmp(name, REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0)
      continue;
    if (strncmp(name, SYM_PREFIX, strlen(SYM_PREFIX)) == 0)
      name += strlen(SYM_PREFIX);
    text_add(buf, size, "%s%s", named++ ? ", " : "", name);
  }
  char families[ENGINE_MAX_NAMES][64];
  int nfamilies = 0;
  for (int i = 0; i < w->nnames && regular; i++) {
    if (strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) != 0)
      continue;
    char family[64];
    regular_family(w->names[i], family, sizeof family);
    int seen = 0;
    for (int f = 0; f < nfamilies; f++)
      seen |= strcmp(families[f], family) == 0;
    if (!seen)
      snprintf(families[nfamilies++], sizeof families[0], "%s", family);
  }
  if (nfamilies > 0) {
    text_add(buf, size, "%sregular kernels of the ", named ? " and " : "");
    for (int f = 0; f < nfamilies; f++)
      text_add(buf, size, "%s%s", f == 0                ? ""
                                  : f == nfamilies - 1 ? " and "
                                                       : ", ",
               families[f]);
    text_add(buf, size, " famil%s", nfamilies > 1 ? "ies" : "y");
  }
  if (w->kernels > 0 && w->nnames == ENGINE_MAX_NAMES)
    text_add(buf, size, ", ...");
}

/* Copies that ran beside kernels, so that no record goes unsaid. */
static void add_copies(char *buf, size_t size, const engine_work *w)
{
  if (w->copies > 0)
    text_add(buf, size, " and %ld cop%s", w->copies,
             w->copies == 1 ? "y" : "ies");
}

enum what_class what_ran_describe(const engine_work *w, int nranks, char *buf,
                                  size_t size)
{
  buf[0] = '\0';
  if (w == NULL)
    return RAN_UNKNOWN;
  if (w->kernels == 0 && w->copies == 0) {
    text_add(buf, size, "no kernel and no copy that CUPTI saw");
    return RAN_NOTHING;
  }
  if (nranks == 1) {
    if (w->kernels == 0)
      text_add(buf, size, "a local copy (%ld cop%s, 0 kernels)", w->copies,
               w->copies == 1 ? "y" : "ies");
    else {
      text_add(buf, size, "a local kernel: ");
      add_names(buf, size, w, 1);
      add_copies(buf, size, w);
    }
    return RAN_LOCAL;
  }
  if (w->kernels == 0) {
    text_add(buf, size, "on the copy engines: 0 kernels, %ld cop%s", w->copies,
             w->copies == 1 ? "y" : "ies");
    return RAN_COPY_ENGINE;
  }
  int symmetric = 0, regular = 0, other = 0;
  for (int i = 0; i < w->nnames; i++) {
    int sym = strncmp(w->names[i], SYM_PREFIX, strlen(SYM_PREFIX)) == 0;
    int reg =
        strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0;
    symmetric += sym;
    regular += reg;
    other += !sym && !reg;
  }
  if (symmetric)
    text_add(buf, size, "NCCL's symmetric kernel%s ", symmetric > 1 ? "s" : "");
  else if (regular && !other)
    text_add(buf, size, "NCCL's ");
  else
    text_add(buf, size, "kernel%s ", w->nnames > 1 ? "s" : "");
  add_names(buf, size, w, 1);
  add_copies(buf, size, w);
  if (!symmetric)
    text_add(buf, size, " (no symmetric kernel)");
  return symmetric ? RAN_SYMMETRIC : RAN_REGULAR;
}

/* "rank 3", "ranks 0-2", "ranks 0, 2, 5" for the ranks r with in[r]. */
void what_ran_add_ranks(char *buf, size_t size, const int *in, int n)
{
  int count = 0, first = -1, last = -1, contiguous = 1;
  for (int r = 0; r < n; r++)
    if (in[r]) {
      if (first < 0)
        first = r;
      else if (r != last + 1)
        contiguous = 0;
      last = r;
      count++;
    }
  if (count == 1) {
    text_add(buf, size, "rank %d", first);
  } else if (contiguous) {
    text_add(buf, size, "ranks %d-%d", first, last);
  } else {
    text_add(buf, size, "ranks");
    const char *sep = " ";
    for (int r = 0; r < n; r++)
      if (in[r]) {
        text_add(buf, size, "%s%d", sep, r);
        sep = ", ";
      }
  }
}
