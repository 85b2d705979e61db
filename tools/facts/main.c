/*
 * nccl_facts: what does the loaded NCCL really do with windows? Asks it
 * each question this suite's docs and diagnoses rely on and prints one line
 * per fact: an id, the question, what NCCL did (result, window NULL or not,
 * NCCL's last error) and whether the fact's control behaved normally.
 *
 *   make -C tools facts
 *   tools/nccl_facts [--ranks N] [--tsv] [--only ID[,ID...]] [--timeout S]
 *
 * --ranks N runs every fact with N ranks, threads of one process; more
 * ranks than GPUs share them (NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE,
 * which the probe sets for its children). --tsv prints the same facts as
 * tab-separated values, the form docs/facts/ records and `make test`
 * compares. Exit status: 0; 1 if a fact could not be asked at all, or no
 * GPU is visible (every fact then says n/a and why); 2 for a usage error.
 *
 * Each fact runs in a child process of its own, with its variables set
 * (NCCL reads most of them once per process), under a time limit: a fact
 * that hangs says so. Each fact has a control that must behave normally: a
 * whole ncclMemAlloc buffer that must get a window (register.memalloc, in
 * the same communicator, or run on its own for the facts that change a
 * variable), or config.CTAPolicy = ZERO without the variable for the
 * NCCL_CTA_POLICY facts. Where the control fails, the fact says "control
 * failed" instead of a conclusion.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checks.h"
#include "facts.h"

/* Whether each fact behaved as a control must: a window for
 * register.memalloc, the copy engines for cta.config-zero. */
static int normal[64];
static int no_gpu; /* a child found no GPU: nothing could be asked */

/* The index of the fact whose id is the len bytes at id, or -1. */
static int index_of_n(const char *id, size_t len)
{
  for (int i = 0; i < nfacts; i++)
    if (strlen(facts[i].id) == len && strncmp(facts[i].id, id, len) == 0)
      return i;
  return -1;
}

static int index_of(const char *id) { return index_of_n(id, strlen(id)); }

/* Does the comma-separated list name id? */
static int named(const char *list, const char *id)
{
  const size_t len = strlen(id);
  for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
    if (strcspn(p, ",") == len && strncmp(p, id, len) == 0)
      return 1;
  return 0;
}

/* Runs fact f in a child process (its variables set, a time limit) and
 * prints its line. */
static int ask(const fact *f, int nranks, int nccl, int tsv, int limit)
{
  char line[1024] = "";
  if (nranks < f->min_ranks) {
    snprintf(line, sizeof line, "n/a\t-\t-\t-\tneeds %d ranks\n", f->min_ranks);
  } else {
    int fd[2];
    if (pipe(fd) != 0)
      return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
      return 1;
    if (pid == 0) {
      close(fd[0]);
      dup2(fd[1], STDOUT_FILENO);
      if (f->env)
        putenv((char *)f->env);
      alarm((unsigned)limit); /* a hang ends the child */
      int status = child(f, nranks);
      fflush(stdout);
      _exit(status);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd[0], line + len, sizeof line - 1 - len)) > 0)
      len += (size_t)got;
    line[len] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      snprintf(line, sizeof line, "hung\t-\t-\t-\tno answer within %d s\n",
               limit);
    else if (len == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      snprintf(line, sizeof line, "failed\t-\t-\t-\tthe child %s %d\n",
               WIFSIGNALED(status) ? "died of signal" : "exited with",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  /* line: control, result, window, last error, detail (TSV). */
  char *field[5] = {0};
  char *p = line;
  for (int i = 0; i < 5; i++) {
    field[i] = p;
    p += strcspn(p, i < 4 ? "\t" : "\n");
    if (*p)
      *p++ = '\0';
  }
  no_gpu |=
      strcmp(field[0], "n/a") == 0 && strncmp(field[4], "no GPU: ", 8) == 0;
  normal[index_of(f->id)] = strcmp(field[0], "ok") == 0 &&
                            (strcmp(f->id, "cta.config-zero") == 0
                                 ? strncmp(field[4], "copy engines", 12) == 0
                                 : strcmp(field[1], "no error") == 0 &&
                                       strcmp(field[2], "non-NULL") == 0);
  char why[200];
  if (f->control && strcmp(field[0], "ok") == 0 &&
      !normal[index_of(f->control)]) {
    snprintf(why, sizeof why, "%s did not behave normally", f->control);
    field[0] = "control failed";
    field[4] = why;
  }
  if (tsv) {
    printf("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", f->id, nccl, nranks, field[0],
           field[1], field[2], field[3], field[4]);
  } else {
    printf("%-22s %s\n", f->id, f->question);
    if (strcmp(field[0], "ok") == 0)
      printf("%22s %s, window %s; last error: %s%s%s\n", "", field[1], field[2],
             field[3], field[4][0] ? "; " : "", field[4]);
    else
      printf("%22s %s: %s\n", "", field[0], field[4]);
  }
  return 0;
}

static int usage(const char *why)
{
  fprintf(stderr,
          "nccl_facts: %s\nUsage: nccl_facts [--ranks N] [--tsv] [--only ID[,ID...]]"
          " [--timeout S]\n",
          why);
  return 2;
}

int main(int argc, char *argv[])
{
  set_program_name(argv[0]); /* print_error's name (engine.c's messages) */
  int nranks = 1, tsv = 0, limit = 60;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--tsv") == 0) {
      tsv = 1;
    } else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
      errno = 0;
      long value = strtol(argv[++i], &end, 10); /* range before the cast */
      if (errno != 0 || end == argv[i] || *end || value < 1 || value > 64)
        return usage("--ranks takes a whole number from 1 to 64");
      nranks = (int)value;
    } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
      errno = 0;
      long value = strtol(argv[++i], &end, 10);
      if (errno != 0 || end == argv[i] || *end || value < 1 || value > 86400)
        return usage("--timeout takes a whole number of seconds from 1 to"
                     " 86400");
      limit = (int)value;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: nccl_facts [--ranks N] [--tsv] [--only ID[,ID...]] [--timeout S]\n"
             "Asks the loaded NCCL what it does with windows, one fact per"
             " line (docs/facts/README.md).\n"
             "  --ranks N    run each fact with N ranks, threads of one"
             " process (1 to 64)\n"
             "  --tsv        tab-separated values, the form docs/facts"
             " records\n"
             "  --only ID[,ID...]  only these facts (and their controls)\n"
             "  --timeout S  a fact that has not answered after S seconds is"
             " hung (default 60)\n"
             "Exit status: 0; 1 if a fact could not be asked, or no GPU is"
             " visible; 2 for a usage error.\n");
      return 0;
    } else {
      return usage("unknown argument");
    }
  }
  for (const char *id = only; id && *id; id += strcspn(id, ","), id += *id == ',')
    if (index_of_n(id, strcspn(id, ",")) < 0)
      return usage("--only names no fact");
  int nccl = 0;
  ncclGetVersion(&nccl);
  if (nranks > 1)
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0); /* ranks may share GPUs */
  if (tsv)
    printf("id\tnccl\tranks\tcontrol\tresult\twindow\tlast_error\tdetail\n");
  else
    printf("NCCL %d.%d.%d loaded (built against nccl.h %d), %d rank(s)\n",
           nccl / 10000, nccl % 10000 / 100, nccl % 100, NCCL_VERSION_CODE,
           nranks);
  for (int i = 0; i < nfacts; i++) {
    /* With --only, the facts named and their controls. */
    int asked = !only || named(only, facts[i].id);
    for (int j = 0; j < nfacts && !asked; j++)
      asked = named(only, facts[j].id) && facts[j].control &&
              strcmp(facts[j].control, facts[i].id) == 0;
    if (!asked)
      continue;
    if (ask(&facts[i], nranks, nccl, tsv, limit) != 0) {
      fprintf(stderr, "nccl_facts: could not ask %s: %s\n", facts[i].id,
              strerror(errno));
      return 1;
    }
  }
  if (no_gpu) {
    fprintf(stderr, "nccl_facts: no GPU is visible, so no fact could be"
                    " asked (each says why)\n");
    return 1;
  }
  return 0;
}
