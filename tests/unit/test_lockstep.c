/*
 * The simulation's lockstep (tests/sim/lockstep.c) with two LSA teams in
 * one communicator: 4 ranks, teams of 2 (ranks 0-1 and 2-3), as
 * SIM_LSA_TEAM_SIZE=2 makes them. A team's kernels take turns among its
 * own members only (each rank runs the same launch as its LSA team's
 * other ranks, NCCL 2.30.7 nccl_device: a barrier session is of one
 * team), so each team has its own turn and its own schedule seed: a team
 * whose last member ends gives the turn back to its own first member and
 * never takes it from a member of the other team that still runs.
 * Hand-made device communicators on one shared area, one thread.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "device.h"
#include "test_util.h"

#define RANKS 4
#define TEAM 2

static struct ncclComm rank_comms[RANKS];
static sim_devcomm devs[RANKS];

static lockstep member_of(int rank, unsigned long long launch)
{
  return (lockstep){.d = &devs[rank], .member = rank % TEAM, .members = TEAM,
                    .launch = launch};
}

int main(void)
{
  unsigned char *area = calloc(1, lockstep_bytes(RANKS));
  if (area == NULL)
    return 2;
  for (int r = 0; r < RANKS; r++) {
    rank_comms[r] = (struct ncclComm){.rank = r, .nranks = RANKS};
    strcpy(rank_comms[r].dir, "/nonexistent-lockstep-test");
    devs[r] = (sim_devcomm){.comm = &rank_comms[r], .lsa_rank = r % TEAM,
                            .lsa_size = TEAM, .first = r - r % TEAM};
    lockstep_map(&devs[r], area);
  }
  EXPECT(devs[0].turn == devs[1].turn);
  EXPECT(devs[2].turn == devs[3].turn);
  EXPECT(devs[0].turn != devs[2].turn);

  /* Every rank launches #1: the second members already did (their launch
   * counters, as lockstep_enter sets them); each team's first member
   * enters and draws its team's seed. */
  atomic_store(&devs[1].launched[1], 1);
  atomic_store(&devs[3].launched[3], 1);
  lockstep first_a, first_b;
  setenv("SIM_SEED", "11", 1);
  const unsigned long long seed_a = lockstep_enter(&first_a, &devs[0], "k");
  setenv("SIM_SEED", "22", 1);
  const unsigned long long seed_b = lockstep_enter(&first_b, &devs[2], "k");
  EXPECT(seed_a == 11);
  EXPECT(seed_b == 22);
  EXPECT(atomic_load(devs[1].seed) == 11); /* team A's second member */
  EXPECT(atomic_load(devs[3].seed) == 22); /* team B's second member */

  /* Team B: rank 2 ends its kernel; the turn goes to rank 3, still
   * running. Team A: rank 0 ends, then rank 1; the team gives its turn
   * back to its first member. Rank 3's turn stays rank 3's. */
  lockstep b0 = member_of(2, 1), a0 = member_of(0, 1), a1 = member_of(1, 1);
  lockstep_pass(&b0, 1);
  EXPECT(atomic_load(devs[3].turn) == 1);
  lockstep_pass(&a0, 1);
  lockstep_pass(&a1, 1);
  EXPECT(atomic_load(devs[0].turn) == 0);
  EXPECT(atomic_load(devs[3].turn) == 1);

  /* Rank 3 ends too: team B's turn back to its first member. */
  lockstep b1 = member_of(3, 1);
  lockstep_pass(&b1, 1);
  EXPECT(atomic_load(devs[2].turn) == 0);

  free(area);
  if (test_failures > 0) {
    fprintf(stderr, "test_lockstep: %d failure(s)\n", test_failures);
    return 1;
  }
  printf("test_lockstep: all passed\n");
  return 0;
}
