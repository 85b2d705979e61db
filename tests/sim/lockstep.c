/* ncclsim: a team's kernels in lockstep (see device.h). A launch whose
 * arguments hold a device communicator is the same launch on every rank
 * of its LSA team (the device API's kernels meet at LSA barriers). Its
 * ranks (threads or processes) first all enter it; then they take turns in
 * member order, one rank's GPU threads running at a time for a quantum of
 * scheduling steps, and a rank whose kernel ended leaves the turns to the
 * others. Each rank draws its schedule from the seed the team's first
 * member drew (SIM_SEED, else the clock), and everything the ranks share
 * (barriers, windows, their clocks) changes only in turns taken in a fixed
 * order: the same seed runs the same interleaving, and says the same. The
 * turn is a word of the device communicator's file, one per LSA team,
 * that every rank maps; a rank waits for it with a futex. */
#include "sim.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The file's lockstep part: every rank's launches and ends, then a block
 * of 64 bytes per LSA team (its turn, its seed, its progress), so that two
 * teams of one communicator never take each other's turns. A communicator
 * has at most as many teams as ranks. */
size_t lockstep_bytes(int nranks)
{
  return 2 * (size_t)nranks * sizeof(unsigned long long) + 64 * (size_t)nranks;
}

void lockstep_map(sim_devcomm *d, unsigned char *area)
{
  const int nranks = d->comm->nranks;
  unsigned char *team = area + 2 * (size_t)nranks * sizeof(unsigned long long) +
                        64 * (size_t)(d->first / d->lsa_size);
  d->launched = (_Atomic unsigned long long *)area;
  d->finished = d->launched + nranks;
  d->turn = (_Atomic int *)team;
  d->seed = (_Atomic unsigned long long *)(team + 8);
  d->progress = (_Atomic unsigned long long *)(team + 16);
}

static long ms_since(const struct timespec *start)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start->tv_sec) * 1000 +
         (now.tv_nsec - start->tv_nsec) / 1000000;
}

void stall_start(stall_clock *c, const sim_devcomm *d)
{
  clock_gettime(CLOCK_MONOTONIC, &c->start);
  c->seen = atomic_load(d->progress);
}

long stall_ms(stall_clock *c, const sim_devcomm *d)
{
  const unsigned long long now = atomic_load(d->progress);
  if (now != c->seen)
    stall_start(c, d);
  return ms_since(&c->start);
}

/* Sleeps until *word may no longer be `value` (10 ms at most). */
static void futex_wait(_Atomic int *word, int value)
{
  const struct timespec ten_ms = {0, 10 * 1000 * 1000};
  syscall(SYS_futex, (int *)word, FUTEX_WAIT, value, &ten_ms, NULL, 0);
}

static void futex_wake(_Atomic int *word)
{
  syscall(SYS_futex, (int *)word, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* A peer that broke a rule stops this rank too; one that never comes is
 * named after SIM_TIMEOUT_MS. */
static void check_peers(const lockstep *ls, long waited_ms, const char *what)
{
  char abort_path[PATH_LEN + 16];
  snprintf(abort_path, sizeof abort_path, "%s/abort", ls->d->comm->dir);
  if (access(abort_path, F_OK) == 0) {
    fprintf(stderr, "ncclsim: rank %d stops in its kernel: a peer reported"
                    " a violation\n", ls->d->comm->rank);
    _exit(SIM_EXIT_VIOLATION);
  }
  const long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
  if (waited_ms > timeout_ms)
    violation(ls->d->comm, "lsa-barrier", what,
              "waited %ld ms for the team's other ranks in a kernel that"
              " takes a device communicator: every rank of the LSA team"
              " must launch it (its launch #%llu) and let it end",
              timeout_ms, ls->launch);
}

static int team_rank(const lockstep *ls, int member)
{
  return ls->d->first + member;
}

unsigned long long lockstep_enter(lockstep *ls, sim_devcomm *d,
                                  const char *kernel)
{
  *ls = (lockstep){.d = d, .member = d->lsa_rank, .members = d->lsa_size};
  ls->launch = atomic_load(&d->launched[d->comm->rank]) + 1;
  if (ls->member == 0) { /* the first member draws the team's seed */
    const char *s = getenv("SIM_SEED");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    atomic_store(d->seed, s && *s ? strtoull(s, NULL, 10)
                                  : (unsigned long long)now.tv_nsec);
  }
  atomic_store(&d->launched[d->comm->rank], ls->launch);
  char what[160];
  snprintf(what, sizeof what, "kernel %s (its launch #%llu)", kernel,
           ls->launch);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int m = 0; m < ls->members; m++)
    while (atomic_load(&d->launched[team_rank(ls, m)]) < ls->launch) {
      check_peers(ls, ms_since(&start), what);
      struct timespec nap = {0, 100 * 1000};
      nanosleep(&nap, NULL);
    }
  return atomic_load(d->seed);
}

void lockstep_wait_turn(lockstep *ls)
{
  stall_clock clock;
  stall_start(&clock, ls->d);
  int t;
  while ((t = atomic_load(ls->d->turn)) != ls->member) {
    check_peers(ls, stall_ms(&clock, ls->d), "a kernel's turn");
    futex_wait(ls->d->turn, t);
  }
}

/* Ends this rank's quantum (done: its kernel ended): the turn goes to the
 * next member whose kernel still runs; the last to end gives it back to
 * the first member, for the next launch. */
void lockstep_progress(lockstep *ls)
{
  atomic_fetch_add_explicit(ls->d->progress, 1, memory_order_relaxed);
}

void lockstep_pass(lockstep *ls, int done)
{
  sim_devcomm *d = ls->d;
  if (done && d->comm->hb != NULL) /* in this rank's turn: SIM_SEED repeats */
    releases_writer_done(d->comm->hb, d->comm->rank); /* what it says */
  if (done)
    atomic_store(&d->finished[d->comm->rank], ls->launch);
  int next = 0;
  for (int i = 1; i <= ls->members; i++) {
    const int m = (ls->member + i) % ls->members;
    if (atomic_load(&d->finished[team_rank(ls, m)]) < ls->launch) {
      next = m;
      break;
    }
  }
  atomic_store(d->turn, next);
  futex_wake(d->turn);
}
