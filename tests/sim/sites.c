/* ncclsim: places in a simulated program, for messages and for barriers
 * matched by call site (see device.h):
 *  - a place is an offset in the executable (a return address: every
 *    access hook and barrier call is made from the program's code), read
 *    as "main.cu:63" from its debug information (addr2line) only when a
 *    message names it;
 *  - the barrier call a GPU thread is in: __syncthreads(), ncclCoopCta's
 *    sync and the methods of an LSA barrier session say where they were
 *    called (ncclsim_site_enter); a CTA barrier that the threads of a CTA
 *    reach from two such places is a violation (fibers.c), as a GPU's
 *    barrier.sync.aligned is undefined from divergent code;
 *  - the branch that sent two threads to two places: the innermost block
 *    of the source that holds one place and not the other, read from the
 *    file the debug information names, where it can be found. */
#include "sim.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fibers.h"

/* (dladdr once per object: every access of a kernel asks) */
uint32_t exe_offset(const void *pc)
{
  static _Thread_local const unsigned char *base, *end;
  const unsigned char *at = pc;
  if (at != NULL && at >= base && at < end)
    return (uint32_t)(at - base);
  Dl_info info;
  if (pc == NULL || dladdr(pc, &info) == 0 || info.dli_fbase == NULL)
    return 0;
  base = info.dli_fbase;
  end = base + (1u << 24); /* a place is kept in 24 bits (shadow.c) */
  return (uint32_t)(at - base);
}

/* addr2line's "path:line" for an offset, or 0. */
static int place_of(uint32_t offset, char *path, size_t len, unsigned *line)
{
  char cmd[128], out[600] = "";
  snprintf(cmd, sizeof cmd, "addr2line -e /proc/%d/exe 0x%x 2>/dev/null",
           (int)getpid(), offset);
  FILE *p = popen(cmd, "r");
  if (p == NULL)
    return 0;
  const int got = fgets(out, sizeof out, p) != NULL && strstr(out, "??") == NULL;
  pclose(p);
  char *colon = strrchr(out, ':');
  if (!got || colon == NULL)
    return 0;
  *colon = '\0';
  *line = (unsigned)strtoul(colon + 1, NULL, 10);
  snprintf(path, len, "%s", out);
  return *line > 0;
}

void line_of(uint32_t offset, char *buf, size_t len)
{
  char path[512];
  unsigned line;
  buf[0] = '\0';
  if (offset != 0 && place_of(offset, path, sizeof path, &line)) {
    const char *base = strrchr(path, '/');
    snprintf(buf, len, "%.100s:%u", base ? base + 1 : path, line);
  }
}

/* ------------------------------------------------------ barrier sites */

void ncclsim_site_enter(const void *pc)
{
  fiber *f = me("a barrier");
  if (f->site_depth++ == 0)
    f->site = pc;
}

void ncclsim_site_leave(void)
{
  fiber *f = me("a barrier");
  if (f->site_depth > 0 && --f->site_depth == 0)
    f->site = NULL;
}

/* ------------------------------------------ the branch that diverged */

typedef struct source {
  char **lines;
  unsigned n;
} source;

static int read_source(const char *path, source *s)
{
  FILE *f = fopen(path, "r");
  char buf[1024];
  s->lines = NULL, s->n = 0;
  if (f == NULL)
    return 0;
  while (fgets(buf, sizeof buf, f) != NULL) {
    char **more = realloc(s->lines, (s->n + 1) * sizeof *more);
    if (more == NULL)
      break;
    s->lines = more;
    buf[strcspn(buf, "\n")] = '\0';
    s->lines[s->n++] = strdup(buf);
  }
  fclose(f);
  return s->n > 0;
}

static void free_source(source *s)
{
  for (unsigned i = 0; i < s->n; i++)
    free(s->lines[i]);
  free(s->lines);
}

static const char *skip_space(const char *p)
{
  while (isspace((unsigned char)*p))
    p++;
  return p;
}

static int is_branch(const char *text)
{
  const char *p = skip_space(text);
  if (*p == '}')
    p = skip_space(p + 1);
  return strncmp(p, "if", 2) == 0 || strncmp(p, "else", 4) == 0 ||
         strncmp(p, "for", 3) == 0 || strncmp(p, "while", 5) == 0 ||
         strncmp(p, "switch", 6) == 0 || strncmp(p, "case", 4) == 0;
}

/* The line (1-based) of the statement that opens a block whose '{' is on
 * line `at`: that line, unless the brace stands alone on it. */
static unsigned header_of(const source *s, unsigned at)
{
  const char *p = skip_space(s->lines[at - 1]);
  if (*p != '{' || at == 1)
    return at;
  return at - 1;
}

/* The innermost braced block that holds one of lines a and b and not the
 * other: its header's line, or 0. An `else` block's branch is its if. */
static unsigned block_between(const source *s, unsigned a, unsigned b)
{
  unsigned open[128], depth = 0, best = 0, best_span = ~0u;
  unsigned last_if_closed_at = 0, last_if_header = 0;
  int comment = 0;
  for (unsigned l = 1; l <= s->n; l++) {
    const char *p = s->lines[l - 1];
    for (; *p; p++) {
      if (comment) {
        if (p[0] == '*' && p[1] == '/')
          comment = 0, p++;
        continue;
      }
      if (p[0] == '/' && p[1] == '/')
        break;
      if (p[0] == '/' && p[1] == '*') {
        comment = 1, p++;
        continue;
      }
      if (*p == '{' && depth < 128) {
        open[depth++] = l;
      } else if (*p == '}' && depth > 0) {
        const unsigned from = open[--depth], header = header_of(s, from);
        const int has_a = a >= from && a <= l, has_b = b >= from && b <= l;
        unsigned branch = header;
        if (strstr(s->lines[header - 1], "else") != NULL &&
            strstr(s->lines[header - 1], "if") == NULL &&
            last_if_closed_at == header)
          branch = last_if_header;
        if (has_a != has_b && is_branch(s->lines[branch - 1]) &&
            l - from < best_span)
          best = branch, best_span = l - from;
        if (strstr(s->lines[header - 1], "if") != NULL)
          last_if_closed_at = l, last_if_header = header;
      }
    }
  }
  return best;
}

/* A branch without braces: the line itself (if (c) __syncthreads();) or
 * the one before it. */
static unsigned branch_at(const source *s, unsigned l)
{
  if (l == 0 || l > s->n)
    return 0;
  const char *p = skip_space(s->lines[l - 1]);
  if (strncmp(p, "if", 2) == 0 || strncmp(p, "else", 4) == 0)
    return l;
  if (l > 1 && is_branch(s->lines[l - 2]) &&
      strchr(s->lines[l - 2], '{') == NULL && strchr(s->lines[l - 2], ';') == NULL)
    return l - 1;
  return 0;
}

void branch_between(uint32_t site_a, uint32_t site_b, char *buf, size_t len)
{
  char path_a[512], path_b[512];
  unsigned a, b;
  source s;
  buf[0] = '\0';
  if (!place_of(site_a, path_a, sizeof path_a, &a) ||
      !place_of(site_b, path_b, sizeof path_b, &b) ||
      strcmp(path_a, path_b) != 0 || a == b || !read_source(path_a, &s))
    return;
  unsigned at = block_between(&s, a, b);
  if (at == 0)
    at = branch_at(&s, a) ? branch_at(&s, a) : branch_at(&s, b);
  if (at != 0) {
    const char *base = strrchr(path_a, '/');
    snprintf(buf, len, "; they parted at %.100s:%u: `%.120s`",
             base ? base + 1 : path_a, at, skip_space(s.lines[at - 1]));
  }
  free_source(&s);
}
