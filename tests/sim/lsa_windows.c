/* ncclsim: the windows of NCCL's device API (see sim.h, device.h and
 * include/ncclsim_device.h): ncclGetLsaPointer and the multicast pointers,
 * in the GPU threads of kernels that fibers.c runs, and the windows'
 * mappings that let ranks of other processes reach each other's memory
 * (lsa.c is the LSA barriers). Rules checked here:
 *  - lsa-pointer: a window that is not one (or was deregistered: named
 *    with where), a peer outside the team, an offset past the window;
 *  - device-communicator: a multicast pointer or barrier the device
 *    communicator never asked for (lsaMultimem);
 *  - memory-access: an access running past a window's end (access.c
 *    finds it);
 *  - misaligned-access: an aligned load or store at an address that is
 *    not a multiple of its size (access.c finds it). */
#include "sim.h"

#include "ncclsim_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shadow.h"

/* ------------------------------------------------------ inside kernels */

_Noreturn void past_window_end(const char *dir, int owner, size_t window,
                               int past_allocation, size_t at, size_t bytes,
                               int how, const mem_access *a)
{
  char by[256], line[160], place[320], what[64];
  line_of(a->site, line, sizeof line);
  snprintf(by, sizeof by, "rank %d's kernel (CTA %d, thread %u%s%s)", a->rank,
           a->lane, a->thread, line[0] ? ", " : "", line);
  if (bytes > 1)
    snprintf(what, sizeof what, "bytes %zu to %zu", at, at + bytes - 1);
  else
    snprintf(what, sizeof what, "byte %zu", at);
  fflush(stdout);
  fprintf(stderr,
          "ncclsim: RULE VIOLATION [memory-access] rank %d in %s: %s %s %s"
          " of rank %d's buffer, past the end of its %zu-byte window%s: NCCL"
          " maps a peer's window, the size it was registered with, and"
          " nothing after it\n",
          a->rank, current_place(place, sizeof place), by,
          how & HB_WRITE ? "writes" : "reads", what, owner, window,
          past_allocation ? " (and of its allocation)" : "");
  mark_abort(dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* An LSA barrier session's multicast (lsa.c): multimem asks for it, and
 * the device communicator must have asked for it too (a handle). */
void check_multicast(const struct ncclComm *comm, int multimem,
                     const void *multicast)
{
  if (!multimem)
    return;
  char place[256];
  if (multicast == NULL)
    violation(comm, "device-communicator",
              current_place(place, sizeof place),
              "an LSA barrier session with multimem=true, but the device"
              " communicator was created without multicast"
              " (ncclDevCommRequirements.lsaMultimem, or a team requirement"
              " with multimem for the handle): its multicast handle is"
              " NULL, and NCCL's arrive and wait then reach memory through"
              " it (2.30.7 nccl_device/impl/lsa_barrier__funcs.h): an"
              " illegal memory access on a GPU; ask for lsaMultimem where"
              " ncclCommQueryProperties reports multimemSupport, else pass"
              " multimem=false");
  fprintf(stderr, "ncclsim: not simulated here: a multimem LSA barrier,"
          " in %s (tests/README.md)\n", current_place(place, sizeof place));
  _exit(SIM_EXIT_VIOLATION);
}

/* ncclGetLsaMultimemPointer, ncclGetMultimemPointer. */
void *ncclsim_multimem_pointer(const char *call, const void *multicast,
                               const char *requirement)
{
  char place[256];
  if (multicast == NULL) /* the device communicator asked for none */
    violation(NULL, "device-communicator",
              current_place(place, sizeof place),
              "%s with a NULL multicast handle: the device communicator was"
              " created without %s, and the pointer is the handle's base"
              " plus the window's offset (NCCL 2.30.7"
              " nccl_device/impl/core__funcs.h): an illegal memory access"
              " on a GPU", call, requirement);
  fprintf(stderr, "ncclsim: not simulated here: %s, in %s (tests/README.md)\n",
          call, current_place(place, sizeof place));
  _exit(SIM_EXIT_VIOLATION);
}

void *ncclsim_lsa_pointer(ncclWindow_t window, size_t offset, int peer)
{
  char place[256];
  if (!in_kernel()) { /* ncclGetLsaPointer is a device function */
    fprintf(stderr, "ncclsim: ncclGetLsaPointer called outside a kernel\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  const struct ncclWindow_vidmem *w = window;
  char where[200];
  if (w != NULL && w->magic == 0 && /* deregistered, or never a window */
      window_deregistered(w, where, sizeof where) != NULL)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "the window was deregistered, %s, before this kernel used"
              " it: NCCL deregisters at once, on a stream of its own, not"
              " after the kernels queued before it (2.30.7"
              " src/dev_runtime.cc, ncclCommWindowDeregister); synchronize"
              " the kernel's stream before deregistering its windows",
              where);
  if (w == NULL || w->magic != WINDOW_MAGIC || w->local_only || !w->peers)
    violation(NULL, "lsa-pointer", current_place(place, sizeof place),
              "%p is not a registered symmetric window", (void *)window);
  const int size = lsa_team_size(w->comm);
  if (peer < 0 || peer >= size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "peer %d: the LSA team has ranks 0 to %d", peer, size - 1);
  if (offset >= w->size)
    violation(w->comm, "lsa-pointer", current_place(place, sizeof place),
              "offset %zu is past the end of the %zu-byte window", offset,
              w->size);
  const int rank = w->comm->rank - w->comm->rank % size + peer;
  return (unsigned char *)w->peers[rank] + offset;
}

/* ------------------------------------------- windows across processes */

/* The owner's part: its memory, and a shadow for the window (access.c),
 * a memfd that peers map too. */
void lsa_describe(const struct ncclComm *comm, const void *buff,
                  size_t bytes, lsa_share *out)
{
  pthread_mutex_lock(&lock);
  const sim_alloc *a = find_alloc(buff, 1);
  pthread_mutex_unlock(&lock);
  *out = (lsa_share){.pid = (long)getpid(), .fd = -1,
                     .base = (void *)buff, .shadow_fd = -1, .reach = bytes};
  if (a != NULL)
    out->reach = a->size - (size_t)((const unsigned char *)buff - a->base);
  if (a != NULL && a->fd >= 0) {
    out->fd = a->fd;
    out->base = a->base;
    out->mapped = a->mapped;
    out->offset = (size_t)((const unsigned char *)buff - a->base);
  }
  if (bytes == 0)
    return; /* no window will be made: no shadow */
  out->shadow_bytes = hb_shadow_bytes(bytes, comm->nranks);
  out->shadow_fd = memfd_create("window-shadow", MFD_CLOEXEC);
  if (out->shadow_fd < 0 ||
      ftruncate(out->shadow_fd, (off_t)out->shadow_bytes) != 0 ||
      (out->shadow = mmap(NULL, out->shadow_bytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED, out->shadow_fd, 0)) == MAP_FAILED)
    sim_failure("ncclCommWindowRegister", "cannot make a window's shadow");
}

/* The bytes from a window's start to the end of its mapping (whole pages;
 * 0 where it is no ncclMemAlloc memory). */
static size_t window_mapped(const lsa_share *s)
{
  return s->fd >= 0 && s->mapped > s->offset ? s->mapped - s->offset : 0;
}

void lsa_map_peers(struct ncclWindow_vidmem *w, const lsa_share *all)
{
  const int n = w->comm->nranks;
  w->peers = calloc((size_t)n, sizeof *w->peers);
  w->peer_mapped = calloc((size_t)n, sizeof *w->peer_mapped);
  w->peer_offset = calloc((size_t)n, sizeof *w->peer_offset);
  w->shadows = calloc((size_t)n, sizeof *w->shadows);
  w->shadow_bytes = calloc((size_t)n, sizeof *w->shadow_bytes);
  w->shadow_fd = -1;
  if (w->peers == NULL || w->peer_mapped == NULL || w->peer_offset == NULL ||
      w->shadows == NULL || w->shadow_bytes == NULL)
    sim_failure("ncclCommWindowRegister", "out of memory");
  for (int r = 0; r < n; r++) {
    const lsa_share *s = &all[r];
    void *shadow = s->shadow;
    if (s->pid == (long)getpid() || s->fd < 0) { /* a thread of this process */
      w->peers[r] = (unsigned char *)s->base + s->offset;
      if (r == w->comm->rank) { /* its own: this rank unmaps it */
        w->shadows[r] = shadow;
        w->shadow_bytes[r] = s->shadow_bytes;
        w->shadow_fd = s->shadow_fd;
        hb_region_add(w, w->peers[r], w->size, s->reach, window_mapped(s),
                      shadow, r, w->comm);
      }
      continue;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->fd);
    void *p = map_file(path, s->mapped);
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", s->pid, s->shadow_fd);
    shadow = map_file(path, s->shadow_bytes);
    if (p == MAP_FAILED || shadow == MAP_FAILED)
      sim_failure("ncclCommWindowRegister",
                  "cannot map rank %d's window through %s", r, path);
    w->peers[r] = (unsigned char *)p + s->offset;
    w->peer_mapped[r] = s->mapped;
    w->peer_offset[r] = s->offset;
    w->shadows[r] = shadow;
    w->shadow_bytes[r] = s->shadow_bytes;
    hb_region_add(w, w->peers[r], w->size, s->reach, window_mapped(s),
                  shadow, r, w->comm);
  }
}

void lsa_unmap_peers(struct ncclWindow_vidmem *w)
{
  w->magic = 0;
  if (w->peers == NULL)
    return;
  hb_region_remove(w);
  for (int r = 0; r < w->comm->nranks; r++) {
    if (w->peer_mapped[r] > 0)
      munmap((unsigned char *)w->peers[r] - w->peer_offset[r],
             w->peer_mapped[r]);
    if (w->shadow_bytes[r] > 0)
      munmap(w->shadows[r], w->shadow_bytes[r]);
  }
  if (w->shadow_fd >= 0)
    close(w->shadow_fd);
  free(w->peers);
  free(w->peer_mapped);
  free(w->peer_offset);
  free(w->shadows);
  free(w->shadow_bytes);
  w->peers = NULL;
}

/* ----------------------------------------- windows deregistered */

/* Windows deregistered in this process (kept, never freed: see
 * ncclCommWindowDeregister), with where, guarded by `lock`. */
typedef struct deregistration {
  struct deregistration *next;
  const struct ncclWindow_vidmem *window;
  int rank;
  uint32_t at; /* the caller: access.c's exe_offset */
} deregistration;
static deregistration *deregistered;

int window_kept(const struct ncclWindow_vidmem *win, int rank, uint32_t at)
{
  deregistration *d = malloc(sizeof *d);
  if (d == NULL)
    return 0;
  *d = (deregistration){.window = win, .rank = rank, .at = at};
  pthread_mutex_lock(&lock);
  d->next = deregistered;
  deregistered = d;
  pthread_mutex_unlock(&lock);
  return 1;
}

const char *window_deregistered(const void *win, char *buf, size_t len)
{
  pthread_mutex_lock(&lock);
  const deregistration *d = deregistered;
  while (d != NULL && d->window != win)
    d = d->next;
  pthread_mutex_unlock(&lock);
  if (d == NULL)
    return NULL;
  char line[160];
  line_of(d->at, line, sizeof line);
  snprintf(buf, len, "by rank %d's ncclCommWindowDeregister%s%s", d->rank,
           line[0] ? " at " : "", line);
  return buf;
}

/* An access of a kernel emitted as one aligned load or store of `bytes`
 * (a float4 is 16) at an address that is not a multiple of it: on a GPU
 * the instruction faults ("misaligned address", cudaErrorMisalignedAddress),
 * where the host that simulates it does not. */
_Noreturn void misaligned(const void *p, size_t bytes, int how, void *pc)
{
  char line[160], place[320];
  line_of(exe_offset(pc), line, sizeof line);
  fflush(stdout);
  fprintf(stderr,
          "ncclsim: RULE VIOLATION [misaligned-access] rank %d in %s: a"
          " %zu-byte %s at %p%s%s, an address that is not a multiple of %zu:"
          " a GPU's %zu-byte instruction faults there (misaligned address);"
          " move the elements before the first aligned one one at a time\n",
          current_kernel_rank(), current_place(place, sizeof place), bytes,
          how & HB_WRITE ? "store" : "load", p, line[0] ? ", " : "", line,
          bytes, bytes);
  _exit(SIM_EXIT_VIOLATION);
}
