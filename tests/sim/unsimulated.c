/* ncclsim: every host call of NCCL's API (nccl.h of 2.27.7, 2.28.9, 2.30.7
 * and 2.32.6, and each call's pncclX twin) that the simulation does not
 * define, said as such where a program calls it:
 *
 *   ncclsim: not simulated here: ncclCommShrink (tests/README.md lists ...)
 *
 * and the process ends (status 70), instead of a link error or, for a
 * program built against a real libnccl.so and run on the simulation
 * (tools/simulate.sh --preload), the dynamic linker's "undefined symbol".
 * Each is weak: the simulation's own definition, where it has one, is the
 * one linked. The case unit/simulation-has-every-nccl-call checks that
 * every call of each nccl.h the suite has is defined here or simulated.
 *
 * This file does not include nccl.h, which declares the calls with their
 * types: a stub takes and returns nothing, and never returns. */

_Noreturn void not_simulated(const char *fmt, ...)
    __attribute__((format(printf, 1, 2))); /* queries.c */

#define UNSIMULATED(name)                                                      \
  __attribute__((weak)) void name(void);                                       \
  __attribute__((weak)) void name(void) { not_simulated("%s", #name); }        \
  __attribute__((weak)) void p##name(void);                                    \
  __attribute__((weak)) void p##name(void) { not_simulated("p%s", #name); }

UNSIMULATED(ncclAllGather)
UNSIMULATED(ncclAllGatherConfig)
UNSIMULATED(ncclAllReduce)
UNSIMULATED(ncclAllReduceConfig)
UNSIMULATED(ncclAlltoAll)
UNSIMULATED(ncclAlltoAllConfig)
UNSIMULATED(ncclBcast)
UNSIMULATED(ncclBroadcast)
UNSIMULATED(ncclBroadcastConfig)
UNSIMULATED(ncclCommAbort)
UNSIMULATED(ncclCommCount)
UNSIMULATED(ncclCommCuDevice)
UNSIMULATED(ncclCommDeregister)
UNSIMULATED(ncclCommDestroy)
UNSIMULATED(ncclCommFinalize)
UNSIMULATED(ncclCommGetAsyncError)
UNSIMULATED(ncclCommGetUniqueId)
UNSIMULATED(ncclCommGrow)
UNSIMULATED(ncclCommInitAll)
UNSIMULATED(ncclCommInitRank)
UNSIMULATED(ncclCommInitRankConfig)
UNSIMULATED(ncclCommInitRankScalable)
UNSIMULATED(ncclCommMemStats)
UNSIMULATED(ncclCommRegister)
UNSIMULATED(ncclCommResume)
UNSIMULATED(ncclCommRevoke)
UNSIMULATED(ncclCommShrink)
UNSIMULATED(ncclCommSplit)
UNSIMULATED(ncclCommSuspend)
UNSIMULATED(ncclCommUserRank)
UNSIMULATED(ncclCommWindowDeregister)
UNSIMULATED(ncclCommWindowRegister)
UNSIMULATED(ncclGather)
UNSIMULATED(ncclGatherConfig)
UNSIMULATED(ncclGetErrorString)
UNSIMULATED(ncclGetLastError)
UNSIMULATED(ncclGetUniqueId)
UNSIMULATED(ncclGetVersion)
UNSIMULATED(ncclGroupEnd)
UNSIMULATED(ncclGroupSimulateEnd)
UNSIMULATED(ncclGroupStart)
UNSIMULATED(ncclMemAlloc)
UNSIMULATED(ncclMemFree)
UNSIMULATED(ncclParamBind)
UNSIMULATED(ncclParamDumpAll)
UNSIMULATED(ncclParamGet)
UNSIMULATED(ncclParamGetAllParameterKeys)
UNSIMULATED(ncclParamGetI16)
UNSIMULATED(ncclParamGetI32)
UNSIMULATED(ncclParamGetI64)
UNSIMULATED(ncclParamGetI8)
UNSIMULATED(ncclParamGetParameter)
UNSIMULATED(ncclParamGetStr)
UNSIMULATED(ncclParamGetU16)
UNSIMULATED(ncclParamGetU32)
UNSIMULATED(ncclParamGetU64)
UNSIMULATED(ncclParamGetU8)
UNSIMULATED(ncclPutSignal)
UNSIMULATED(ncclRecv)
UNSIMULATED(ncclRedOpCreatePreMulSum)
UNSIMULATED(ncclRedOpDestroy)
UNSIMULATED(ncclReduce)
UNSIMULATED(ncclReduceConfig)
UNSIMULATED(ncclReduceScatter)
UNSIMULATED(ncclReduceScatterConfig)
UNSIMULATED(ncclResetDebugInit)
UNSIMULATED(ncclScatter)
UNSIMULATED(ncclScatterConfig)
UNSIMULATED(ncclSend)
UNSIMULATED(ncclSetEncryption)
UNSIMULATED(ncclSignal)
UNSIMULATED(ncclWaitSignal)
UNSIMULATED(ncclWinGetUserPtr)
