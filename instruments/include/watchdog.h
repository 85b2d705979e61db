/*
 * The watchdog: nothing hangs for ever. One thread per process looks at
 * the calls its ranks are in (the CHECK and WATCHED macros and the
 * collectives note them, checks.h), from the moment the options are parsed
 * to the job's end. When one call has not returned after the limit
 * (--timeout, default WATCHDOG_DEFAULT_S; 0 turns it off), it prints one
 * line per rank, in rank order, naming the call each is in (at its
 * caller's file:line) and for how long, names the rank to blame (the
 * longest call other than a wait for the other ranks), and ends the whole
 * job with EXIT_TIMEOUT (MPI_Abort in MPI mode, so the other processes end
 * too). In MPI mode it first asks the other processes for their ranks'
 * lines (transport.h); without MPI_THREAD_MULTIPLE its thread calls no MPI
 * function: each process prints its own ranks' lines and _exits, and
 * mpirun ends the rest of the job. It does not call ncclCommAbort: the
 * stuck ranks' threads are inside NCCL calls on those blocking
 * communicators, and NCCL allows no second thread on a communicator in
 * use; ending the process releases them.
 */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#define EXIT_TIMEOUT       3
#define WATCHDOG_DEFAULT_S 300

/* Starts the watchdog with a limit of `seconds` (0: none). Until
 * watchdog_watch_ranks it watches the process's own setup (the pthread
 * build's main thread, or the MPI process), as rank transport_process(). */
void watchdog_start(int seconds);
/* From now on it watches ranks first_rank .. first_rank + nranks - 1 of
 * this process (their threads note their calls as those ranks). */
void watchdog_watch_ranks(int first_rank, int nranks);
void watchdog_stop(void);

#endif
