/* Checks, at compile time, that tools/facts/props_2_30.h lays out
 * ncclCommProperties_t as the real NCCL header does: every field at the
 * same offset, and no larger than the real struct (2.30's is a prefix of
 * later ones). Compiled with -fsyntax-only against an NCCL whose device
 * headers declare the struct (10-build.sh); warnings from those headers
 * are allowed, a failed assertion is an error. */
#include <stddef.h>

#include <nccl.h>
#if __has_include(<nccl_device/host.h>)
#include <nccl_device/host.h>
#else
#include <nccl_device/core.h>
#endif

#include "props_2_30.h"

#define SAME(field)                                                            \
  _Static_assert(offsetof(props_2_30, field) ==                                \
                     offsetof(ncclCommProperties_t, field),                    \
                 "offset of " #field)
SAME(size);
SAME(magic);
SAME(version);
SAME(rank);
SAME(nRanks);
SAME(cudaDev);
SAME(nvmlDev);
SAME(deviceApiSupport);
SAME(multimemSupport);
SAME(ginType);
SAME(nLsaTeams);
SAME(hostRmaSupport);
SAME(railedGinType);
_Static_assert(sizeof(props_2_30) <= sizeof(ncclCommProperties_t), "size");
_Static_assert(sizeof(((ncclCommProperties_t *)0)->ginType) == sizeof(int),
               "ginType is an int-sized enum");
