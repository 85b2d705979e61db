/*
 * ncclCommProperties_t as NCCL 2.30.7 lays it out, for the comm.properties
 * fact. ncclCommQueryProperties (NCCL >= 2.29) and the struct are declared
 * in NCCL's device headers, nccl_device/core.h (2.29 to 2.31) or
 * nccl_device/host.h (2.32). Those compile as C, but GCC warns that their
 * inline device functions are declared and never defined, a warning no
 * option turns off, and -Werror then stops the build. So the probe lays
 * the struct out here, passes its size, magic and a version (the loaded
 * NCCL's, at most 2.30.7) in its
 * head (NCCL reads the layout they name), and the test suite checks every
 * field's offset against the real header where one is at hand
 * (tests/unit/props_layout.c). A layout fact, not NCCL's code.
 */
#ifndef PROPS_2_30_H
#define PROPS_2_30_H

#include <stdbool.h>
#include <stddef.h>

typedef struct props_2_30 {
  /* Read by NCCL only: */
  // cppcheck-suppress unusedStructMember
  size_t size;
  // cppcheck-suppress unusedStructMember
  unsigned int magic; /* NCCL_API_MAGIC of nccl.h: 0xcafebeef */
  // cppcheck-suppress unusedStructMember
  unsigned int version; /* the layout's NCCL version code */
  int rank, nRanks, cudaDev;
  // cppcheck-suppress unusedStructMember
  int nvmlDev; /* the layout's: not printed */
  bool deviceApiSupport, multimemSupport;
  int ginType; /* an enum in core.h */
  int nLsaTeams;
  // cppcheck-suppress unusedStructMember
  bool hostRmaSupport; /* the layout's: not printed */
  // cppcheck-suppress unusedStructMember
  int railedGinType; /* an enum; the layout's: not printed */
} props_2_30;

#endif
