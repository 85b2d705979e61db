/* The watchdog's peers in the pthread build (peers.h): one process holds
 * every rank, so there is nobody to ask. */
#include "peers.h"

#include <stddef.h>

void peers_start(void) {}
void peers_stop(void) {}
int peers_stopped(void) { return 0; }
int peers_me(void) { return 0; }
int peers_others(void) { return 0; }
int peers_can_ask(void) { return 0; }
void peers_ask(void) {}
int peers_asked_by(void) { return -1; }
void peers_answer(int process, const char *lines)
{
  (void)process;
  (void)lines;
}
char *peers_answer_from(int *process)
{
  (void)process;
  return NULL;
}
void peers_carry_on(int process) { (void)process; }
int peers_told_carry_on(void) { return 0; }
