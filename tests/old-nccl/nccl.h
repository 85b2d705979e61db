/* A stand-in for an nccl.h older than symmetric windows, to show that the
 * examples refuse to compile against it. OLD_NCCL_CODE picks the version. */
#ifndef OLD_NCCL_H
#define OLD_NCCL_H
#define NCCL_VERSION(X, Y, Z)                                                  \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z)                           \
                          : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE OLD_NCCL_CODE
#endif
