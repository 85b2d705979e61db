/* ncclsim: NCCL's LSA barriers, the device side of its device API (see
 * sim.h, device.h and include/ncclsim_device.h), in the GPU threads of
 * kernels that fibers.c runs (lsa_windows.c: the windows' pointers and
 * mappings).
 *
 * An LSA barrier is NCCL's (2.30.7 nccl_device/impl/lsa_barrier__funcs.h,
 * lsa_barrier__types.h): each rank keeps one epoch per barrier; a session
 * copies its barrier's epoch when it is made and writes it back when it
 * ends; arrive stores the session's epoch + 1 into each peer of its team's
 * inbox (barrier i's word from team rank p: i * team size + p), wait waits
 * until each team peer's word holds at least that, then adds 1. The
 * inboxes are in a file of the communicator's rendezvous folder that every
 * rank maps (threads or processes). What the memory orders of arrive and
 * wait order is hb.c's (a wait credited with the earliest arrival that
 * satisfies it); the accesses they order are checked in access.c. Rules:
 *  - lsa-barrier: a barrier index past the count asked for, peers that
 *    never arrive (SIM_TIMEOUT_MS), a team not inside the LSA team, a wait
 *    passing on a word another barrier's arrive wrote, and, when a session
 *    is made: another CTA of this rank holding the barrier (one barrier
 *    per CTA), a stale epoch (a session of an earlier launch never ended,
 *    or a second session of this CTA while its first is alive);
 *  - device-communicator: multimem=true without the device communicator's
 *    multicast (lsaMultimem). */
#include "sim.h"

#include "ncclsim_device.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------ inside kernels */

static int acquires(int order)
{
  return order == (int)memory_order_acquire ||
         order == (int)memory_order_acq_rel ||
         order == (int)memory_order_seq_cst ||
         order == (int)memory_order_consume;
}

static int releases(int order)
{
  return order == (int)memory_order_release ||
         order == (int)memory_order_acq_rel ||
         order == (int)memory_order_seq_cst;
}

/* The calling CTA's lane of the happens-before clocks. */
static int my_lane(void)
{
  int rank, lane;
  unsigned thread;
  return current_gpu_thread(&rank, &lane, &thread) ? lane : HB_NONE;
}

/* The device communicator of a barrier call, checked. */
static sim_devcomm *barrier_of(const ncclDevComm_t *devComm, unsigned index)
{
  char place[256];
  if (!in_kernel()) {
    fprintf(stderr, "ncclsim: an LSA barrier used outside a kernel\n");
    _exit(SIM_EXIT_VIOLATION);
  }
  sim_devcomm *d = devComm->sim;
  if (d == NULL || d->magic != DEVCOMM_MAGIC)
    violation(NULL, "lsa-barrier", current_place(place, sizeof place),
              "the device communicator was never created by"
              " ncclDevCommCreate, or was destroyed");
  if ((int)index >= d->nbarriers)
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "barrier index %u, but the device communicator has %d LSA"
              " barriers (ncclDevCommRequirements.lsaBarrierCount): one per"
              " CTA of the launch", index, d->nbarriers);
  if (index >= HB_BARRIERS) {
    fprintf(stderr, "ncclsim: not simulated here: LSA barrier %u, in %s:"
            " the simulation's clocks keep barriers 0 to %d"
            " (tests/README.md)\n", index,
            current_place(place, sizeof place), HB_BARRIERS - 1);
    _exit(SIM_EXIT_VIOLATION);
  }
  return d;
}

/* A session's team (NCCL's ncclTeam: team rank t is LSA rank
 * lsaRank + (t - rank) * stride) must be ranks of this LSA team. */
static void check_team(const sim_devcomm *d, const ncclsim_lsa_session *s)
{
  const int n = s->team_size, stride = s->team_stride;
  const int low = d->lsa_rank - s->team_rank * stride;
  const int high = d->lsa_rank + (n - 1 - s->team_rank) * stride;
  if (n < 1 || s->team_rank < 0 || s->team_rank >= n || stride == 0 ||
      (low < high ? low : high) < 0 || (low < high ? high : low) >= d->lsa_size) {
    char place[256];
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "an LSA barrier session on a team of %d ranks (this rank its"
              " rank %d, stride %d), which is not inside this rank's LSA"
              " team of %d ranks (its LSA rank %d): an LSA barrier syncs"
              " ranks of one LSA team (ncclTeamLsa, or a factor of it)",
              n, s->team_rank, stride, d->lsa_size, d->lsa_rank);
  }
}

/* The world rank of team rank t of s. */
static int team_member(const sim_devcomm *d, const ncclsim_lsa_session *s,
                       int t)
{
  return d->first + d->lsa_rank + (t - s->team_rank) * s->team_stride;
}

/* An inbox word: the epoch stored (NCCL's, 32 bits), and who stored it:
 * 1 + the barrier index (20 bits) and 1 + the sender's rank (12 bits). */
static unsigned long long inbox_word(unsigned long long epoch, unsigned index,
                                     int sender)
{
  return (unsigned long long)((index + 1) << 12 | (unsigned)(sender + 1))
             << 32 | (epoch & 0xffffffffu);
}

/* The words of rank r's inbox: the first of them. */
static _Atomic unsigned long long *inbox(const sim_devcomm *d, int r)
{
  return d->slots + (size_t)r * (size_t)d->nbarriers * (size_t)d->lsa_size;
}

/* The device communicator of the last session this host thread's GPU
 * threads made (a rank's kernels run on its thread: fibers.c). */
static _Thread_local const sim_devcomm *kernel_devcomm;

void lsa_forget_devcomm(const sim_devcomm *d)
{
  if (kernel_devcomm == d)
    kernel_devcomm = NULL;
}

/* The launch of this rank's kernel that is running (lockstep.c counts). */
static unsigned long long this_launch(const sim_devcomm *d)
{
  return atomic_load(&d->launched[d->comm->rank]);
}

/* NCCL keeps one epoch per barrier and rank, which a session copies when
 * it is made and writes back when it ends (2.30.7
 * nccl_device/impl/lsa_barrier__funcs.h): a barrier is a CTA's, one
 * session at a time, and every session must end. */
static void take_barrier(sim_devcomm *d, unsigned index)
{
  char place[256];
  const unsigned mine = current_cta() + 1;
  const dim3 b = ncclsim_block_dim();
  const unsigned threads = b.x * b.y * b.z;
  const unsigned long long launch = this_launch(d);
  if (d->holders[index] != 0 && d->holders_launch[index] != launch)
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "a stale epoch: CTA %u makes a session on LSA barrier %u, but"
              " a session of CTA %u on it in launch #%llu of a kernel with"
              " this device communicator never ended, so its epoch was never"
              " written back (NCCL writes it in the session's destructor,"
              " 2.30.7 nccl_device/impl/lsa_barrier__funcs.h): this session"
              " copies an old epoch, and its waits pass at once on the"
              " peers' old arrivals; let every session end in its kernel (a"
              " local object, never made with new)",
              mine - 1, index, d->holders[index] - 1,
              d->holders_launch[index]);
  if (d->holders[index] != 0 && d->holders[index] != mine)
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "CTA %u makes a session on LSA barrier %u while CTA %u of this"
              " rank holds one on it: NCCL keeps one epoch per barrier,"
              " which each session copies when it is made and writes back"
              " when it ends (2.30.7 nccl_device/impl/lsa_barrier__funcs.h),"
              " so two CTAs on one barrier stop waiting for each other's"
              " peers; give each CTA its own (index blockIdx.x, with"
              " lsaBarrierCount = the CTA count)",
              mine - 1, index, d->holders[index] - 1);
  if (d->holders[index] == mine && d->holders_open[index] >= threads)
    violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
              "a stale epoch: CTA %u makes a second session on LSA barrier"
              " %u while its first is alive: both copy the same epoch"
              " (NCCL 2.30.7 nccl_device/impl/lsa_barrier__funcs.h), the"
              " second's syncs are not counted in the first's, and whichever"
              " ends last writes back a stale epoch; end one session before"
              " making the next on a barrier", mine - 1, index);
  d->holders[index] = mine;
  d->holders_launch[index] = launch;
  d->holders_open[index]++;
}

void ncclsim_lsa_session_open(ncclsim_lsa_session *s,
                              const ncclDevComm_t *devComm, unsigned index,
                              int team_size, int team_rank, int team_stride,
                              int multimem, const void *multicast)
{
  *s = (ncclsim_lsa_session){devComm, index, team_size, team_rank,
                             team_stride, 0};
  sim_devcomm *d = barrier_of(devComm, index);
  check_multicast(d->comm, multimem, multicast);
  check_team(d, s);
  take_barrier(d, index);
  kernel_devcomm = d;
  const int lane = my_lane();
  if (lane < HB_LANES)
    d->lane_team[lane] = (struct lsa_team){team_size, team_rank, team_stride};
  s->epoch = d->epochs[index];
}

void ncclsim_lsa_session_close(ncclsim_lsa_session *s)
{
  sim_devcomm *d = barrier_of(s->comm, s->index);
  if (cta_leader())
    d->epochs[s->index] = s->epoch;
  if (d->holders_open[s->index] > 0 && --d->holders_open[s->index] == 0)
    d->holders[s->index] = 0;
  cta_sync();
}

/* arrive: a release fence (if the order has one), then epoch + 1 stored
 * into each peer of the team's inbox, relaxed (as NCCL's: only the team's
 * peers, and a team of one rank fences nothing). */
void ncclsim_lsa_arrive(ncclsim_lsa_session *s, int order)
{
  sim_devcomm *d = barrier_of(s->comm, s->index);
  cta_sync();
  if (!cta_leader() || s->team_size < 2)
    return;
  const int me = d->comm->rank;
  if (d->comm->hb != NULL)
    hb_arrive(d->comm->hb, me, my_lane(), s->index, s->epoch + 1,
              releases(order));
  const size_t word = (size_t)s->index * (size_t)s->team_size +
                      (size_t)s->team_rank;
  for (int t = 0; t < s->team_size; t++)
    if (t != s->team_rank)
      atomic_store_explicit(&inbox(d, team_member(d, s, t))[word],
                            inbox_word(s->epoch + 1, s->index, me),
                            memory_order_release);
}

/* What a wait credits from team rank t's word: the earliest store that
 * satisfies it (a GPU's load may return that one though newer ones were
 * made), never older than what this rank read of the word before (a
 * later load of a word reads no older store). Only that store's release
 * is ordered. */
static unsigned long long credited(sim_devcomm *d, size_t word,
                                   unsigned long long needed)
{
  unsigned long long *seen = &d->observed[word];
  if (*seen < needed)
    *seen = needed;
  return *seen;
}

/* The CTA's leader waits for the team; then every thread goes on. */
void ncclsim_lsa_wait(ncclsim_lsa_session *s, int order)
{
  sim_devcomm *d = barrier_of(s->comm, s->index);
  const unsigned index = s->index;
  const unsigned long long epoch = s->epoch;
  if (cta_leader()) {
    const long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
    char abort_path[PATH_LEN + 16], place[256];
    snprintf(abort_path, sizeof abort_path, "%s/abort", d->comm->dir);
    stall_clock clock; /* the team's progress restarts it */
    stall_start(&clock, d);
    for (int t = 0; t < s->team_size; t++) {
      if (t == s->team_rank)
        continue;
      const int r = team_member(d, s, t);
      const size_t word = (size_t)index * (size_t)s->team_size + (size_t)t;
      unsigned long long got;
      while ((uint32_t)((got = atomic_load_explicit(
                             &inbox(d, d->comm->rank)[word],
                             memory_order_acquire)) -
                        (epoch + 1)) > UINT32_MAX >> 1) {
        if (access(abort_path, F_OK) == 0) {
          fprintf(stderr, "ncclsim: rank %d stops in its kernel: a peer"
                          " reported a violation\n", d->comm->rank);
          _exit(SIM_EXIT_VIOLATION);
        }
        if (stall_ms(&clock, d) > timeout_ms)
          violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
                    "waited %ld ms at LSA barrier %u (its sync #%llu) for"
                    " rank %d, which never arrived, while no rank of the"
                    " team made progress: every rank's same CTA must sync"
                    " the barrier as often",
                    timeout_ms, index, epoch + 1, r);
        spin_yield();
      }
      if (got >> 32 != inbox_word(0, index, r) >> 32)
        violation(d->comm, "lsa-barrier", current_place(place, sizeof place),
                  "the wait at LSA barrier %u (its sync #%llu) for rank %d"
                  " passed on a word of this rank's inbox that rank %d's"
                  " arrive at barrier %llu wrote: NCCL lays a barrier"
                  " handle's inboxes out by the session's team, the word of"
                  " barrier i from team rank p at i * (team size) + p (2.30.7"
                  " nccl_device/impl/lsa_barrier__types.h), so sessions of"
                  " teams of other shapes on one handle share words; give"
                  " every session of a handle the same team",
                  index, epoch + 1, r,
                  (int)((got >> 32) & 0xfff) - 1,
                  (got >> 44) - 1);
      if (d->comm->hb != NULL)
        hb_observe(d->comm->hb, d->comm->rank, my_lane(), index, r,
                   credited(d, word, epoch + 1));
    }
    if (d->comm->hb != NULL && acquires(order))
      hb_acquire(d->comm->hb, d->comm->rank, my_lane());
  }
  s->epoch += 1;
  cta_sync();
}

/* A note for a race (hb.c): `other_rank` is outside the team of the last
 * LSA barrier session of (rank, lane) in the kernel this thread runs;
 * NULL if not, or unknown. */
const char *lsa_team_note(int rank, int lane, int other_rank)
{
  static _Thread_local char note[600];
  int r, l;
  unsigned t;
  const sim_devcomm *d = kernel_devcomm;
  if (!current_gpu_thread(&r, &l, &t) || r != rank || l != lane ||
      lane >= HB_LANES || d == NULL || d->comm->rank != rank)
    return NULL;
  const struct lsa_team tm = d->lane_team[lane];
  const int delta = other_rank - rank;
  if (tm.size == 0 || other_rank == rank ||
      (delta % tm.stride == 0 && tm.rank + delta / tm.stride >= 0 &&
       tm.rank + delta / tm.stride < tm.size))
    return NULL;
  snprintf(note, sizeof note,
           "rank %d is outside the team of this CTA's LSA barrier session"
           " (%d rank(s) of the LSA team, stride %d, this rank its rank %d):"
           " NCCL's arrive and"
           " wait reach only the team's peers (2.30.7"
           " nccl_device/impl/lsa_barrier__funcs.h), so that barrier orders"
           " nothing with rank %d; sync a barrier whose team holds rank %d"
           " between the two accesses, or touch only the team's ranks",
           other_rank, tm.size, tm.stride, tm.rank, other_rank, other_rank);
  return note;
}
