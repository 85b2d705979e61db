/*
 * Which call each rank of this process is in: the CHECK macros and the
 * transports' collectives note their calls through the seam's watch_*
 * hooks (instruments.h); the watchdog reads them here. Calls nest a few
 * deep; the innermost is reported.
 */
#ifndef CALLS_H
#define CALLS_H

#include <stddef.h>

/* What rank `rank`'s thread of this process is doing: returns 1 and the
 * innermost call in progress with how long it has run (ms), 2 the same
 * for a wait for the other ranks (watch_begin_wait), 3 for an NCCL call
 * that all ranks make together (a collective, communicator init, window
 * registration: it may be waiting for another rank), 0 if that rank is in
 * no call (*ms: since its last call ended), -1 if no thread of this
 * process runs it. call_text gets "CALL (file:line)"; *idle_ms how long
 * since the rank's last call ended (a rank that ends calls progresses). */
int call_in_progress(int rank, char *call_text, size_t size, double *ms,
                     double *idle_ms);

/* Milliseconds on the monotonic clock (a clock step does not move it). */
double monotonic_ms(void);

/* Appends to the string in buf (size bytes in all), cut to fit. */
void text_add(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
