/* ncclsim: the shadow of memory that kernels touch, and the check of each
 * access against it (see shadow.h; access.c finds the shadow of window
 * and global memory, ctas.c keeps one per __shared__ object).
 *
 * Per 4-byte word: its last write, and readers in slots (a window has
 * one per rank, __shared__ and global memory two). A stamp is 64 bits:
 * clock (30), lane (11), rank (8), thread (10), atomic scope (2), set (1),
 * and for a reader two bits of other readers it stands for; beside it 32
 * bits: the place (24) and the thread's warp barriers (8, as a count
 * modulo 256). A window's shadow is shared by every rank that maps it;
 * the lockstep (lockstep.c) has one rank write it at a time.
 *
 * Two accesses conflict when one writes and they are not both atomics of
 * a scope that holds them both (the same CTA: any; CTAs of one GPU:
 * device or system; two GPUs: system). A conflict is a race unless the
 * first is ordered before the second:
 *  - the same thread: program order;
 *  - the same CTA: a CTA barrier between (the unit's clock moved on), or,
 *    in one warp, a warp barrier;
 *  - other units: the clocks (hb.c): the first is at most what the
 *    second's unit has seen. Nothing else orders CTAs of one kernel. */
#include "sim.h"

#include <string.h>

#include "shadow.h"

#define S_SET (1ull << 61)
#define HIDDEN_OTHER_WARP 1u /* a reader of another warp than the kept one */
#define HIDDEN_SAME_WARP 2u  /* ... of its warp, between the same barriers */

#define CHUNK_LOG2 10 /* words per touched flag: 1024 (4 KiB of memory) */

static size_t chunks_of(size_t words)
{
  return (words + (1u << CHUNK_LOG2) - 1) >> CHUNK_LOG2;
}

size_t shadow_bytes(size_t words, int slots)
{
  return (words * (sizeof(uint64_t) + sizeof(uint32_t)) + chunks_of(words)) *
         (size_t)(1 + slots);
}

shadow shadow_at(void *memory, size_t words, int slots)
{
  uint64_t *w = memory;
  shadow s = {.writes = w, .reads = w + words, .words = words,
              .chunks = chunks_of(words), .slots = slots};
  s.wsites = (uint32_t *)(s.reads + words * (size_t)slots);
  s.rsites = s.wsites + words;
  s.touched = (uint8_t *)(s.rsites + words * (size_t)slots);
  return s;
}

/* Row 0: the writes; row 1 + k: the readers of slot k. */
static uint8_t *touched_flag(const shadow *s, int row, size_t w)
{
  return &s->touched[(size_t)row * s->chunks + (w >> CHUNK_LOG2)];
}

/* An entry of row `row`: 0 (nothing recorded) while its chunk's flag is
 * clear, without reading the entry's page. */
static uint64_t load_entry(const shadow *s, int row, const uint64_t *entry, size_t w)
{
  if (!__atomic_load_n(touched_flag(s, row, w), __ATOMIC_ACQUIRE))
    return 0;
  return __atomic_load_n(entry, __ATOMIC_ACQUIRE);
}

/* Before an entry of row `row` is stored. */
static void touch(shadow *s, int row, size_t w)
{
  uint8_t *f = touched_flag(s, row, w);
  if (!__atomic_load_n(f, __ATOMIC_RELAXED))
    __atomic_store_n(f, 1, __ATOMIC_RELEASE);
}

_Static_assert(HB_HOST < 2048, "a unit's lane fits its 11 bits");

static uint64_t encode(const mem_access *a)
{
  return S_SET | (uint64_t)(a->hidden & 3) << 62 |
         (uint64_t)(a->scope & 3) << 59 | (uint64_t)(a->thread & 1023) << 49 |
         (uint64_t)(a->rank & 255) << 41 | (uint64_t)(a->lane & 2047) << 30 |
         (a->clock & 0x3fffffffu);
}

static uint32_t encode_site(const mem_access *a)
{
  return (a->site < (1u << 24) ? a->site << 8 : 0) | (a->wphase & 255);
}

static mem_access decode(uint64_t s, uint32_t site, int writes)
{
  return (mem_access){.clock = (uint32_t)s & 0x3fffffffu,
                  .lane = (int)(s >> 30 & 2047),
                  .rank = (int)(s >> 41 & 255),
                  .thread = (unsigned)(s >> 49 & 1023),
                  .scope = (int)(s >> 59 & 3),
                  .hidden = (unsigned)(s >> 62 & 3),
                  .writes = writes,
                  .wphase = site & 255,
                  .site = site >> 8};
}

static int same_unit(const mem_access *a, const mem_access *b)
{
  return a->rank == b->rank && a->lane == b->lane;
}

static int same_warp(const mem_access *a, const mem_access *b)
{
  return a->thread / 32 == b->thread / 32;
}

int ordered(const mem_access *prev, const mem_access *now, const order *o)
{
  if (same_unit(prev, now))
    return now->lane == HB_HOST || prev->thread == now->thread ||
           prev->clock < now->clock ||
           (same_warp(prev, now) && (prev->wphase & 255) != (now->wphase & 255));
  return o->seen != NULL &&
         prev->clock <= o->seen[hb_unit(prev->rank, prev->lane)];
}

/* Both atomic, of scopes that hold both threads. */
static int atomic_together(const mem_access *a, const mem_access *b)
{
  if (a->scope == SCOPE_NONE || b->scope == SCOPE_NONE)
    return 0;
  if (same_unit(a, b))
    return 1;
  if (a->rank == b->rank)
    return a->scope >= SCOPE_DEVICE && b->scope >= SCOPE_DEVICE;
  return a->scope == SCOPE_SYSTEM && b->scope == SCOPE_SYSTEM;
}

/* Of the readers a kept reader stands for (its hidden bits: readers of
 * its unit between the same two CTA barriers, not ordered with it), those
 * that may not be ordered before `now`. */
static unsigned hidden_unordered(const mem_access *r, const mem_access *now,
                                 const order *o)
{
  if (r->hidden == 0)
    return 0;
  if (!same_unit(r, now))
    return ordered(r, now, o) ? 0 : r->hidden;
  if (r->clock < now->clock)
    return 0;
  unsigned bits = r->hidden & HIDDEN_OTHER_WARP;
  if ((r->hidden & HIDDEN_SAME_WARP) &&
      (!same_warp(r, now) || (r->wphase & 255) == (now->wphase & 255)))
    bits |= HIDDEN_SAME_WARP;
  return bits;
}

static void record_read(shadow *s, size_t w, const mem_access *now, const order *o,
                        int slot0, int nslots)
{
  int target = -1;
  mem_access r0 = {0};
  for (int k = slot0; k < slot0 + nslots; k++) {
    const size_t at = (size_t)k * s->words + w;
    const uint64_t st = load_entry(s, 1 + k, &s->reads[at], w);
    if (!(st & S_SET)) {
      if (target < 0)
        target = k;
      continue;
    }
    const mem_access r = decode(st, s->rsites[at], 0);
    if (k == slot0)
      r0 = r;
    if (ordered(&r, now, o)) {
      mem_access mine = *now;
      mine.hidden = hidden_unordered(&r, now, o);
      touch(s, 1 + k, w);
      s->rsites[at] = encode_site(&mine);
      __atomic_store_n(&s->reads[at], encode(&mine), __ATOMIC_RELEASE);
      return;
    }
  }
  const size_t at = (size_t)(target >= 0 ? target : slot0) * s->words + w;
  if (target >= 0) {
    touch(s, 1 + target, w);
    s->rsites[at] = encode_site(now);
    __atomic_store_n(&s->reads[at], encode(now), __ATOMIC_RELEASE);
  } else if (now->scope == SCOPE_NONE && same_unit(&r0, now)) {
    /* Every slot holds a reader not ordered with this one: the first
     * keeps it as a bit (an atomic reader is dropped: it conflicts with
     * fewer accesses than the bit would stand for). */
    r0.hidden |= same_warp(&r0, now) ? HIDDEN_SAME_WARP : HIDDEN_OTHER_WARP;
    touch(s, 1 + slot0, w);
    __atomic_store_n(&s->reads[at], encode(&r0), __ATOMIC_RELEASE);
  }
}

int shadow_check(shadow *s, size_t w, const mem_access *now, const order *o,
                 int slot0, int nslots, mem_access *other, int *scope_only)
{
  const uint64_t ws = load_entry(s, 0, &s->writes[w], w);
  *scope_only = 0;
  if (ws & S_SET) {
    const mem_access prev = decode(ws, s->wsites[w], 1);
    if (!atomic_together(&prev, now) && !ordered(&prev, now, o)) {
      *other = prev;
      *scope_only = prev.scope != SCOPE_NONE && now->scope != SCOPE_NONE;
      return 1;
    }
  }
  if (!now->writes) {
    record_read(s, w, now, o, slot0, nslots);
    return 0;
  }
  for (int k = 0; k < s->slots; k++) {
    const size_t at = (size_t)k * s->words + w;
    const uint64_t rs = load_entry(s, 1 + k, &s->reads[at], w);
    if (!(rs & S_SET))
      continue;
    const mem_access r = decode(rs, s->rsites[at], 0);
    if (atomic_together(&r, now))
      continue;
    if (!ordered(&r, now, o)) {
      *other = r;
      *scope_only = r.scope != SCOPE_NONE && now->scope != SCOPE_NONE;
      return 1;
    }
    if (hidden_unordered(&r, now, o)) {
      *other = r;
      other->thread = ~0u; /* one of the readers the kept one stands for */
      other->site = 0;
      return 1;
    }
  }
  touch(s, 0, w);
  s->wsites[w] = encode_site(now);
  __atomic_store_n(&s->writes[w], encode(now), __ATOMIC_RELEASE);
  return 0;
}
