/* The watchdog's peers in the MPI build (peers.h): the other MPI
 * processes, on a communicator of the watchdog's own (a copy of
 * MPI_COMM_WORLD), so that its messages never meet the ranks' own. */
#include "peers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

/* MPI_COMM_NULL where MPI cannot be called from a second thread. */
static MPI_Comm watchdog_comm = MPI_COMM_NULL;
static int me, processes = 1;
/* Held around every use of watchdog_comm: peers_stop (the main thread)
 * frees it only while the watchdog's thread is not using it. */
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static int stopped;
enum { TAG_ASK = 1, TAG_ANSWER = 2, TAG_CARRY_ON = 3 };

/* From the main thread, after MPI_Init (the transport's). Its errors are
 * not fatal: without a communicator the watchdog reports this process's
 * ranks alone. */
void peers_start(void)
{
  int provided = MPI_THREAD_SINGLE;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  MPI_Query_thread(&provided);
  if (provided == MPI_THREAD_MULTIPLE &&
      MPI_Comm_dup(MPI_COMM_WORLD, &watchdog_comm) != MPI_SUCCESS)
    watchdog_comm = MPI_COMM_NULL;
}

void peers_stop(void)
{
  pthread_mutex_lock(&comm_lock);
  if (watchdog_comm != MPI_COMM_NULL)
    MPI_Comm_free(&watchdog_comm);
  stopped = 1;
  pthread_mutex_unlock(&comm_lock);
}

int peers_stopped(void) { return stopped; }

int peers_me(void) { return me; }
int peers_others(void) { return processes - 1; }
int peers_can_ask(void) { return watchdog_comm != MPI_COMM_NULL; }

/* From the watchdog's thread: its errors are not worth a report of their
 * own (the job is ending), so these calls are not checked one by one. */
void peers_ask(void)
{
  static int ask; /* the buffer of every send: must outlive them */
  MPI_Request request;
  pthread_mutex_lock(&comm_lock);
  for (int p = 0; peers_can_ask() && p < processes; p++) {
    if (p == me)
      continue;
    MPI_Isend(&ask, 1, MPI_INT, p, TAG_ASK, watchdog_comm, &request);
    MPI_Request_free(&request); /* MPI_Abort follows: never waited for */
  }
  pthread_mutex_unlock(&comm_lock);
}

/* Is a watchdog message with this tag waiting? (Never blocks.) */
static int waiting(int tag, MPI_Status *st)
{
  int flag = 0;
  return peers_can_ask() &&
         MPI_Iprobe(MPI_ANY_SOURCE, tag, watchdog_comm, &flag, st) ==
             MPI_SUCCESS &&
         flag;
}

int peers_asked_by(void)
{
  int ask, asker = -1;
  MPI_Status st;
  pthread_mutex_lock(&comm_lock);
  if (waiting(TAG_ASK, &st)) {
    MPI_Recv(&ask, 1, MPI_INT, st.MPI_SOURCE, TAG_ASK, watchdog_comm,
             MPI_STATUS_IGNORE);
    asker = st.MPI_SOURCE;
  }
  pthread_mutex_unlock(&comm_lock);
  return asker;
}

void peers_answer(int process, const char *lines)
{
  pthread_mutex_lock(&comm_lock);
  if (peers_can_ask())
    MPI_Send(lines, (int)strlen(lines) + 1, MPI_CHAR, process, TAG_ANSWER,
             watchdog_comm);
  pthread_mutex_unlock(&comm_lock);
}

char *peers_answer_from(int *process)
{
  int len = 0;
  MPI_Status st;
  char *text = NULL;
  pthread_mutex_lock(&comm_lock);
  if (waiting(TAG_ANSWER, &st)) {
    MPI_Get_count(&st, MPI_CHAR, &len);
    text = calloc((size_t)(len > 0 ? len : 0) + 1, 1);
    if (text != NULL) {
      MPI_Recv(text, len, MPI_CHAR, st.MPI_SOURCE, TAG_ANSWER, watchdog_comm,
               MPI_STATUS_IGNORE);
      *process = st.MPI_SOURCE;
    }
  }
  pthread_mutex_unlock(&comm_lock);
  return text;
}

void peers_carry_on(int process)
{
  static int go; /* the buffer of every send: must outlive them */
  MPI_Request request;
  pthread_mutex_lock(&comm_lock);
  if (peers_can_ask()) {
    MPI_Isend(&go, 1, MPI_INT, process, TAG_CARRY_ON, watchdog_comm, &request);
    MPI_Request_free(&request);
  }
  pthread_mutex_unlock(&comm_lock);
}

int peers_told_carry_on(void)
{
  int go, told = 0;
  MPI_Status st;
  pthread_mutex_lock(&comm_lock);
  while (waiting(TAG_CARRY_ON, &st)) {
    MPI_Recv(&go, 1, MPI_INT, st.MPI_SOURCE, TAG_CARRY_ON, watchdog_comm,
             MPI_STATUS_IGNORE);
    told = 1;
  }
  pthread_mutex_unlock(&comm_lock);
  return told;
}
