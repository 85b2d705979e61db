/* ncclsim's rendezvous (see sim.h). */
#include "sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Rendezvous: for its n-th collective call on a communicator, every rank
 * writes <dir>/<lane><n>.<rank> (a header and a payload), then waits until
 * all ranks' files for n exist. Files of call n-1 are removed once call n
 * is complete, since by then every rank has read them.
 * --------------------------------------------------------------------- */

static void msg_path(const struct ncclComm *c, enum lane lane,
                     unsigned long seq, int rank, char *path, size_t len)
{
  snprintf(path, len, "%s/%c%lu.%d", c->dir, lane == LANE_HOST ? 'h' : 'w',
           seq, rank);
}

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
  const unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      fprintf(stderr, "ncclsim: write %s: %s\n", path, strerror(errno));
      _exit(SIM_EXIT_VIOLATION);
    }
    p += n;
    len -= (size_t)n;
  }
}

static void post(struct ncclComm *c, enum lane lane, const msg_header *h,
                 const void *payload)
{
  char path[PATH_LEN + 32], tmp[PATH_LEN + 40];
  msg_path(c, lane, c->seq[lane], c->rank, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) {
    fprintf(stderr, "ncclsim: cannot create %s: %s\n", tmp, strerror(errno));
    _exit(SIM_EXIT_VIOLATION);
  }
  write_all(fd, h, sizeof *h, tmp);
  if (h->payload > 0)
    write_all(fd, payload, h->payload, tmp);
  close(fd);
  rename(tmp, path); /* peers see the whole file or none */
}

/* Waits for every rank's message for this call; a rank that never arrives
 * is reported after SIM_TIMEOUT_MS instead of hanging. */
static void wait_peers(struct ncclComm *c, enum lane lane, const char *call)
{
  long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
  char path[PATH_LEN + 32];
  struct timespec nap = {0, 200 * 1000}, start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int r = 0; r < c->nranks; r++) {
    msg_path(c, lane, c->seq[lane], r, path, sizeof path);
    while (access(path, F_OK) != 0) {
      char abort_path[PATH_LEN + 16];
      snprintf(abort_path, sizeof abort_path, "%s/abort", c->dir);
      if (access(abort_path, F_OK) == 0) {
        fprintf(stderr,
                "ncclsim: rank %d stops in %s: a peer reported a violation\n",
                c->rank, call);
        _exit(SIM_EXIT_VIOLATION);
      }
      clock_gettime(CLOCK_MONOTONIC, &now); /* the clock, not the naps */
      long waited_ms = (now.tv_sec - start.tv_sec) * 1000 +
                       (now.tv_nsec - start.tv_nsec) / 1000000;
      if (waited_ms > timeout_ms)
        violation(
            c, "collective-calls", call,
            "rank %d never arrived at this call (collective #%lu) within %ld ms;"
            " every rank must make the same collective calls",
            r, c->seq[lane], timeout_ms);
      nanosleep(&nap, NULL);
    }
  }
  if (c->seq[lane] > 0) {
    msg_path(c, lane, c->seq[lane] - 1, c->rank, path, sizeof path);
    unlink(path);
  }
}

/* Reads rank r's message for the current call; payload (if any) into buf. */
void fetch(const struct ncclComm *c, enum lane lane, int r, msg_header *h,
           void *buf, size_t buf_len)
{
  char path[PATH_LEN + 32];
  msg_path(c, lane, c->seq[lane], r, path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (f == NULL || fread(h, sizeof *h, 1, f) != 1 ||
      (buf != NULL && h->payload > 0 &&
       fread(buf, 1, h->payload < buf_len ? h->payload : buf_len, f) !=
           (h->payload < buf_len ? h->payload : buf_len))) {
    fprintf(stderr, "ncclsim: cannot read %s\n", path);
    _exit(SIM_EXIT_VIOLATION);
  }
  fclose(f);
}

/* One collective step: post, wait, and check that every rank made the same
 * call with the same `size`. */
void exchange(struct ncclComm *c, enum lane lane, const char *call,
              size_t size, long long arg, const void *payload,
              size_t payload_len)
{
  msg_header h = {.size = size, .arg = arg, .payload = payload_len};
  snprintf(h.call, sizeof h.call, "%s", call);
  post(c, lane, &h, payload);
  wait_peers(c, lane, call);
  for (int r = 0; r < c->nranks; r++) {
    msg_header peer;
    fetch(c, lane, r, &peer, NULL, 0);
    if (strcmp(peer.call, call) != 0)
      violation(c, "collective-calls", call,
                "rank %d made a different call at this point (%s); every rank"
                " must make the same collective calls in the same order",
                r, peer.call);
  }
}

void finish_exchange(struct ncclComm *c, enum lane lane) { c->seq[lane]++; }

void leave_rendezvous(const struct ncclComm *c)
{
  char path[PATH_LEN + 300]; /* dir + '/' + a file name */
  snprintf(path, sizeof path, "%s/left.%d", c->dir, c->rank);
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0)
    close(fd);
  for (int r = 0; r < c->nranks; r++) {
    snprintf(path, sizeof path, "%s/left.%d", c->dir, r);
    if (access(path, F_OK) != 0)
      return; /* a rank is still here: the last to leave cleans up */
  }
  DIR *dir = opendir(c->dir);
  if (dir == NULL)
    return;
  for (struct dirent *e; (e = readdir(dir)) != NULL;)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
      unlink(path); /* another last rank may be faster: ignore failures */
    }
  closedir(dir);
  rmdir(c->dir);
}
