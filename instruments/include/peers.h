/*
 * The watchdog's messages between processes (watchdog.c), sent from its
 * thread. In the MPI build a process whose limit passes asks every other
 * one for the calls its ranks are in, so that one process can print every
 * rank's line; in the pthread build there is one process and these do
 * nothing. The Makefile links one of src/peers_mpi.c and
 * src/peers_threads.c, as it links one transport.
 */
#ifndef PEERS_H
#define PEERS_H

/* On every process, at the same point (MPI: duplicates MPI_COMM_WORLD for
 * the watchdog where MPI_THREAD_MULTIPLE lets its thread call MPI), and
 * before the transport stops. */
void peers_start(void);
void peers_stop(void);
/* 1 once peers_stop has run (the job is finalizing MPI). */
int peers_stopped(void);

/* This process's number (0 for threads) and how many others there are. */
int peers_me(void);
int peers_others(void);

/* Whether the watchdog's thread may call MPI (MPI_THREAD_MULTIPLE); none
 * of the calls below does otherwise. */
int peers_can_ask(void);
void peers_ask(void);
/* The process that asked this one, or -1 (never waits). */
int peers_asked_by(void);
void peers_answer(int process, const char *lines);
/* An answer that has come (malloc'd text, to free; its process in
 * *process), or NULL. */
char *peers_answer_from(int *process);
/* The asking process found no hang in the answers: it tells each process
 * it asked to carry on; an asked process learns it here (1, never waits). */
void peers_carry_on(int process);
int peers_told_carry_on(void);

#endif
