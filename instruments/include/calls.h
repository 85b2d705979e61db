/*
 * Which call each rank of this process is in: the CHECK macros and the
 * transports' collectives note their calls through the seam's watch_*
 * hooks (instruments.h); the watchdog reads them here. Calls nest a few
 * deep; the innermost is reported.
 */
#ifndef CALLS_H
#define CALLS_H

#include <stddef.h>

/* What rank `rank`'s thread of this process is doing (verdict.h's
 * states): CALL_OWN and the innermost call in progress with how long it
 * has run (ms); CALL_WAIT the same for a wait for the other ranks (a
 * transport's collective, watch_begin_wait; or a wait for the GPU, such as
 * cudaStreamSynchronize, while NCCL collectives this rank queued since its
 * last such wait may not have run: NCCL returns once they are queued, and
 * their kernels wait for every rank); CALL_NCCL for an NCCL call that all
 * ranks make together (a collective, communicator init, window
 * registration: it may be waiting for another rank); CALL_NONE if that
 * rank is in no call (*ms: since its last call ended); CALL_GONE if no
 * thread of this process runs it. call_text gets "CALL (file:line)";
 * *idle_ms how long since the rank's last call ended (a rank that ends
 * calls progresses); *seq how many calls all ranks make it has begun. */
int call_in_progress(int rank, char *call_text, size_t size, double *ms,
                     double *idle_ms, unsigned long *seq);

/* Whether CALL (its name) waits for the GPU's queued work
 * (cudaStreamSynchronize, cudaMemcpy, ...). */
int call_waits_for_gpu(const char *call);

/* Milliseconds on the monotonic clock (a clock step does not move it). */
double monotonic_ms(void);

/* Appends to the string in buf (size bytes in all), cut to fit. */
void text_add(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
