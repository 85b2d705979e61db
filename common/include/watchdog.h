/*
 * The watchdog: nothing hangs for ever. One thread per process looks at
 * the calls its ranks are in (the CHECK macros and the all_ranks_* calls
 * note them, checks.h). When one call has not returned after the limit
 * (--timeout, default WATCHDOG_DEFAULT_S; 0 turns it off), it prints one
 * line per rank, in rank order, naming the call each is in and for how
 * long, and ends the whole job with EXIT_TIMEOUT (MPI_Abort in MPI mode, so
 * the other processes end too). In MPI mode it first asks the other
 * processes for their ranks' lines (transport.h). It does not call
 * ncclCommAbort: the stuck ranks' threads are inside NCCL calls on those
 * blocking communicators, and NCCL allows no second thread on a
 * communicator in use; ending the process releases them.
 */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#define EXIT_TIMEOUT       3
#define WATCHDOG_DEFAULT_S 300

/* Starts the watchdog for ranks first_rank .. first_rank + nranks - 1 of
 * this process, with a limit of `seconds` (0: none). */
void watchdog_start(int seconds, int first_rank, int nranks);
void watchdog_stop(void);

#endif
