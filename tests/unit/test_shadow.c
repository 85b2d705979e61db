/*
 * The rule of the simulated GPU's memory (tests/sim/shadow.c), from its
 * definition (tests/README.md, the simulated GPU's memory): two accesses
 * of a word, one of them a write, conflict unless both are atomics of a
 * scope that holds both threads (the CTA: any; CTAs of one GPU: device or
 * system; two GPUs: system); a conflict is a race unless the first is
 * ordered before the second: the same thread, a CTA barrier between them
 * (the CTA's clock moved on), a warp barrier between two threads of one
 * warp, or, for other units, the clocks (the first at most what the
 * second's unit has seen). Hand-made accesses on a shadow of one word,
 * and on one of many words: a conflict is found in any chunk and slot,
 * and a check over words that nothing touched reads none of the
 * readers' pages.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"
#include "shadow.h"
#include "test_util.h"

#define RANKS 2

static shadow one_word(void)
{
  void *memory = calloc(1, shadow_bytes(1, RANKS));
  return shadow_at(memory, 1, RANKS);
}

static mem_access at(int rank, int lane, unsigned thread, uint32_t clock,
                     unsigned wphase, int scope, int writes)
{
  return (mem_access){.clock = clock, .rank = rank, .lane = lane,
                      .thread = thread, .wphase = wphase, .scope = scope,
                      .writes = writes};
}

/* The second access races with the first: 1, else 0. The second's unit
 * has seen `seen` of the first's unit (its clock entry). */
static int races(mem_access first, mem_access second, uint32_t seen)
{
  static uint32_t clocks[RANKS * HB_PER_RANK];
  shadow s = one_word();
  mem_access other;
  int scope_only;
  const order o = {clocks, NULL};
  memset(clocks, 0, sizeof clocks);
  clocks[hb_unit(first.rank, first.lane)] = seen;
  int raced = shadow_check(&s, 0, &first, &o, first.rank, 1, &other, &scope_only);
  raced = raced * 10 + shadow_check(&s, 0, &second, &o, second.rank, 1, &other, &scope_only);
  free(s.writes);
  return raced;
}

int main(void)
{
  enum { R = 0, W = 1 };
  /* one CTA: program order, a CTA barrier, a warp barrier */
  EXPECT(races(at(0, 3, 7, 5, 0, 0, W), at(0, 3, 7, 5, 0, 0, W), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 0, 0, W), at(0, 3, 8, 5, 0, 0, R), 0) == 1);
  EXPECT(races(at(0, 3, 7, 5, 0, 0, R), at(0, 3, 8, 5, 0, 0, W), 0) == 1);
  EXPECT(races(at(0, 3, 7, 5, 0, 0, R), at(0, 3, 8, 5, 0, 0, R), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 0, 0, W), at(0, 3, 8, 6, 0, 0, W), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 2, 0, W), at(0, 3, 8, 5, 3, 0, W), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 2, 0, W), at(0, 3, 40, 5, 3, 0, W), 0) == 1);
  /* one CTA: atomics of any scope hold both */
  EXPECT(races(at(0, 3, 7, 5, 0, SCOPE_BLOCK, W), at(0, 3, 8, 5, 0, SCOPE_BLOCK, W), 0) == 0);
  /* two CTAs of one rank: nothing but the clocks orders them */
  EXPECT(races(at(0, 3, 7, 5, 0, 0, W), at(0, 4, 7, 9, 0, 0, R), 4) == 1);
  EXPECT(races(at(0, 3, 7, 5, 0, 0, W), at(0, 4, 7, 9, 0, 0, R), 5) == 0);
  EXPECT(races(at(0, 3, 7, 5, 0, SCOPE_DEVICE, W), at(0, 4, 7, 9, 0, SCOPE_DEVICE, W), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 0, SCOPE_SYSTEM, W), at(0, 4, 7, 9, 0, SCOPE_DEVICE, W), 0) == 0);
  EXPECT(races(at(0, 3, 7, 5, 0, SCOPE_BLOCK, W), at(0, 4, 7, 9, 0, SCOPE_DEVICE, W), 0) == 1);
  EXPECT(races(at(0, 3, 7, 5, 0, SCOPE_DEVICE, W), at(0, 4, 7, 9, 0, SCOPE_BLOCK, R), 0) == 1);
  /* two ranks: the clocks, and atomics only of system scope */
  EXPECT(races(at(1, 3, 7, 5, 0, 0, W), at(0, 3, 7, 9, 0, 0, R), 4) == 1);
  EXPECT(races(at(1, 3, 7, 5, 0, 0, W), at(0, 3, 7, 9, 0, 0, R), 5) == 0);
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_SYSTEM, W), at(0, 3, 7, 9, 0, SCOPE_SYSTEM, W), 0) == 0);
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_DEVICE, W), at(0, 3, 7, 9, 0, SCOPE_DEVICE, W), 0) == 1);
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_SYSTEM, W), at(0, 3, 7, 9, 0, SCOPE_DEVICE, W), 0) == 1);
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_SYSTEM, R), at(0, 3, 7, 9, 0, 0, W), 0) == 1);
  /* a plain read after a peer's atomic store (of system scope): only one
   * of them is atomic, so the clocks must order them */
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_SYSTEM, W), at(0, 3, 7, 9, 0, 0, R), 4) == 1);
  EXPECT(races(at(1, 3, 7, 5, 0, SCOPE_SYSTEM, W), at(0, 3, 7, 9, 0, 0, R), 5) == 0);
  /* a peer's plain write after a plain read it was not ordered after */
  EXPECT(races(at(1, 3, 7, 5, 0, 0, R), at(0, 3, 7, 9, 0, 0, W), 4) == 1);
  EXPECT(races(at(1, 3, 7, 5, 0, 0, R), at(0, 3, 7, 9, 0, 0, W), 5) == 0);
  /* readers kept as bits: threads 1 and 40 (two warps) read, 1 writes */
  {
    static uint32_t clocks[RANKS * HB_PER_RANK];
    const order o = {clocks, NULL};
    shadow s = one_word();
    mem_access other, a = at(0, 3, 1, 5, 0, 0, R), b = at(0, 3, 40, 5, 0, 0, R);
    int scope_only;
    EXPECT(shadow_check(&s, 0, &a, &o, 0, 1, &other, &scope_only) == 0);
    EXPECT(shadow_check(&s, 0, &b, &o, 0, 1, &other, &scope_only) == 0);
    a.writes = 1;
    EXPECT(shadow_check(&s, 0, &a, &o, 0, 1, &other, &scope_only) == 1);
    EXPECT(other.thread == ~0u && other.lane == 3);
    a.clock = 6; /* after a CTA barrier: both reads are ordered before */
    EXPECT(shadow_check(&s, 0, &a, &o, 0, 1, &other, &scope_only) == 0);
    free(s.writes);
  }
  /* Many words (3 chunks of 1024 and a part): a record in one chunk or
   * slot is found there, and not taken for another's. */
  {
    enum { WORDS = 3 * 1024 + 5 };
    static uint32_t clocks[8 * HB_PER_RANK];
    const order o = {clocks, NULL};
    shadow s = shadow_at(calloc(1, shadow_bytes(WORDS, 8)), WORDS, 8);
    mem_access other, r = at(5, 3, 1, 5, 0, 0, R), w = at(2, 3, 1, 9, 0, 0, W);
    int scope_only;
    EXPECT(shadow_check(&s, 2047, &r, &o, 5, 1, &other, &scope_only) == 0);
    EXPECT(shadow_check(&s, 2048, &w, &o, 2, 1, &other, &scope_only) == 0);
    EXPECT(shadow_check(&s, 2046, &w, &o, 2, 1, &other, &scope_only) == 0);
    EXPECT(shadow_check(&s, 2047, &w, &o, 2, 1, &other, &scope_only) == 1);
    EXPECT(other.rank == 5 && !other.writes);
    EXPECT(shadow_check(&s, WORDS - 1, &r, &o, 5, 1, &other, &scope_only) == 0);
    EXPECT(shadow_check(&s, WORDS - 1, &w, &o, 2, 1, &other, &scope_only) == 1);
    EXPECT(shadow_check(&s, 2048, &r, &o, 5, 1, &other, &scope_only) == 1);
    EXPECT(other.rank == 2 && other.writes);
    free(s.writes);
  }
  /* A write checked over words nothing touched reads none of the eight
   * readers' slots: their pages stay out of memory (mincore). */
  {
    const size_t words = 64 * 1024;
    static uint32_t clocks[8 * HB_PER_RANK];
    const order o = {clocks, NULL};
    const long page = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, shadow_bytes(words, 8), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(m != MAP_FAILED);
    shadow s = shadow_at(m, words, 8);
    mem_access other, w = at(0, HB_HOST, 0, 1, 0, 0, W);
    int scope_only, found = 0;
    for (size_t i = 0; i < words; i++)
      found |= shadow_check(&s, i, &w, &o, 0, 1, &other, &scope_only);
    EXPECT(found == 0);
    const size_t bytes = words * 8 * sizeof(uint64_t);
    unsigned char in[bytes / 4096 + 1];
    size_t resident = 0;
    EXPECT(mincore(s.reads, bytes, in) == 0);
    for (size_t i = 0; i < (bytes + (size_t)page - 1) / (size_t)page; i++)
      resident += in[i] & 1;
    EXPECT(resident == 0);
    munmap(m, shadow_bytes(words, 8));
  }
  if (test_failures != 0) {
    fprintf(stderr, "test_shadow: %d failure(s)\n", test_failures);
    return 1;
  }
  printf("test_shadow: all passed\n");
  return 0;
}
