/* ncclsim: the shadow of memory a kernel touches (shadow.c), shared by
 * access.c (window and global memory), ctas.c (__shared__ memory) and
 * fences.c. Internal to the simulation. */
#ifndef NCCLSIM_SHADOW_H
#define NCCLSIM_SHADOW_H

#include <stddef.h>
#include <stdint.h>

/* An atomic's scope; plain accesses have none. CUDA: atomicAdd and the
 * rest are of device scope, the _system variants of system scope, the
 * _block variants of the CTA (CUDA C++ Programming Guide, atomic
 * functions). */
enum { SCOPE_NONE, SCOPE_BLOCK, SCOPE_DEVICE, SCOPE_SYSTEM };

/* Read slots per word of __shared__ and global memory (one rank's); a
 * window keeps one per rank. */
#define SHARED_SLOTS 2

/* One access: who made it (rank, its lane of the happens-before clocks or
 * its CTA, thread), when (its unit's clock: the segment between CTA
 * barriers it is in, and its thread's warp barriers), what, and where. */
typedef struct mem_access {
  uint32_t clock;
  int rank, lane;
  unsigned thread, wphase;
  int scope, writes;
  unsigned hidden; /* reads: other readers of the same word kept as bits */
  uint32_t site;   /* an offset in the executable (sites.c) */
} mem_access;

/* A shadow: per 4-byte word, its last write and `slots` readers; and per
 * 1024 words, whether anything was recorded there at all, for the writes
 * and for each slot of readers (touched: [1 + slot][chunk], the writes'
 * row first). An entry is stored only after its chunk's flag, so a clear
 * flag says the whole chunk holds nothing, and a check need not read (and
 * so fault in) the shadow's pages that nothing wrote. */
typedef struct shadow {
  uint64_t *writes, *reads; /* reads: [slot][word] */
  uint32_t *wsites, *rsites;
  uint8_t *touched;
  size_t words, chunks;
  int slots;
} shadow;
size_t shadow_bytes(size_t words, int slots);
shadow shadow_at(void *memory, size_t words, int slots);

/* What orders accesses of two units: the accessing unit's vector clock
 * (hb.c) for window and global memory; none for __shared__ memory, whose
 * accesses are all of one CTA. */
typedef struct order {
  const uint32_t *seen;
  struct hb_domain *domain;
} order;

/* Checks `now` on word w against what the shadow holds, and records it
 * (a read in one of the slots from `slot0`, `nslots` of them). 0: no
 * conflict; else the conflicting access is in *other (other->thread
 * ~0u: a reader the shadow keeps only as a bit), and *scope_only says
 * whether both were atomics of too narrow a scope. */
int shadow_check(shadow *s, size_t w, const mem_access *now, const order *o,
                 int slot0, int nslots, mem_access *other, int *scope_only);
/* Are the two ordered: program order, a CTA or warp barrier, or the
 * clocks? */
int ordered(const mem_access *prev, const mem_access *now, const order *o);

/* sites.c */
uint32_t exe_offset(const void *pc);
/* "main.cu:63" for an offset, "" where there is no line for it. */
void line_of(uint32_t offset, char *buf, size_t len);
/* "; they parted at main.cu:40: `if (...)`", or "". */
void branch_between(uint32_t site_a, uint32_t site_b, char *buf, size_t len);

/* races.c: the messages, each ends the process (exit 70), but where the
 * verdict waits (memory_race). */
_Noreturn void shared_race(const void *block, size_t byte, const mem_access *now,
                           const mem_access *other, int scope_only);
/* A window's (owner >= 0) or the rank's global memory (owner -1); it
 * returns, and the run goes on, only where the verdict waits for the other
 * side (releases.c). */
void memory_race(const char *dir, struct hb_domain *d, int owner,
                 size_t byte, const mem_access *now, const mem_access *other,
                 int scope_only);

/* lsa_windows.c: the access `a` of `bytes` at byte `at` of a window of
 * `window` bytes (of rank owner, folder dir) runs past its end. */
_Noreturn void past_window_end(const char *dir, int owner, size_t window,
                               int past_allocation, size_t at, size_t bytes,
                               int how, const mem_access *a);
/* A kernel's aligned access of `bytes` at p, not a multiple of it. */
_Noreturn void misaligned(const void *p, size_t bytes, int how, void *pc);

/* fences.c: the calling thread's access to window or global memory; a
 * note on a fence of too narrow a scope for a race, or "". */
void fences_accessed(void);
const char *fences_note(struct hb_domain *d, int me, int unit, int pending);

#endif
