/* ncclsim: what NCCL gives a registration, per version and setting (see
 * sim.h): symmetric support, a handle written NULL first, a local
 * registration handed back instead of a window. windows.c registers;
 * device.c reports the same support as deviceApiSupport. */
#include "sim.h"

#include <stdlib.h>

/* From 2.29.2, ncclCommWindowRegister writes NULL to *win before anything
 * else, and without symmetric support returns there (src/dev_runtime.cc at
 * NVIDIA/nccl's tags v2.29.2-1 to v2.30.7-1; recorded on 2.30.7). Before,
 * it does not, and returns ncclSuccess with *win unwritten where it has no
 * window to give (src/dev_runtime.cc at v2.28.3-1 and v2.28.9-1, and a
 * probe on 2.28.3 that found its sentinel still there). */
int writes_null_first(void)
{
  return simulated_version() >= NCCL_VERSION(2, 29, 2);
}

/* Symmetric support, as NCCL decides it for the communicator. Before
 * 2.28.7, a communicator whose every rank is alone on its node has none
 * (NCCL 2.28.3, src/transport.cc and src/init.cc); SIM_NO_SYMMETRIC takes
 * it away for any communicator (ranks on hosts without NVLink, say). */
int symmetric_support(const struct ncclComm *comm)
{
  if (env_long("SIM_NO_SYMMETRIC", 0))
    return 0;
  /* NCCL_WIN_ENABLE=0 and NCCL_CUMEM_ENABLE=0 leave no window (recorded on
   * 2.30.7: docs/facts, env.win-enable-0, env.cumem-enable-0), read as
   * NCCL reads its integers. */
  const char *win = getenv("NCCL_WIN_ENABLE"), *cumem = getenv("NCCL_CUMEM_ENABLE");
  if ((win && *win && strtoll(win, NULL, 0) == 0) ||
      (cumem && *cumem && strtoll(cumem, NULL, 0) == 0))
    return 0;
  /* Ranks on several hosts (NCCL_HOSTID): no symmetric support on 2.30.7
   * (docs/checks/h200-2026-12-03-hermetic.txt: NULL windows with 2 and 4
   * ranks on 2 and 4 emulated hosts; deviceApiSupport 0 on an H100,
   * docs/checks/h100-2026-12-06-lsa.txt), nor, the simulation assumes,
   * on any other version. */
  if (comm->hosts)
    return 0;
  return !(comm->alone_on_nodes &&
           simulated_version() < NCCL_VERSION(2, 28, 7));
}

/* Before 2.29.2 (see writes_null_first), without symmetric support and
 * with NCCL_LOCAL_REGISTER on (NCCL's default; read as NCCL reads its
 * integers), ncclCommWindowRegister hands back the handle of an ordinary
 * local registration (ncclCommRegister): not a window, and the same handle
 * for the same buffer registered twice (NCCL 2.28.3, src/dev_runtime.cc). */
int gives_local_registration(void)
{
  const char *text = getenv("NCCL_LOCAL_REGISTER");
  int local = text == NULL || *text == '\0' || strtoll(text, NULL, 0) != 0;
  return !writes_null_first() && local;
}
