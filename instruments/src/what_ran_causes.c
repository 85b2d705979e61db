/* Why What ran may not be the example's point (what_ran.h): the
 * conditions NCCL needs that fail here, as far as this program can tell,
 * and the facts they rest on (hosts as NCCL tells them apart, NCCL's
 * reading of NCCL_CTA_POLICY). */
#include "what_ran.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unistd.h>

#include "calls.h"
#include "checks.h"
#include "requirements.h"

void host_identity(char *out, size_t size)
{
  char id[1024] = "";
  const char *set = getenv("NCCL_HOSTID");
  if (set != NULL) {
    snprintf(id, sizeof id, "%s", set);
  } else {
    if (gethostname(id, sizeof id - 1) != 0)
      snprintf(id, sizeof id, "unknown");
    id[sizeof id - 1] = '\0';
    FILE *boot = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (boot != NULL) {
      size_t len = strlen(id);
      if (fgets(id + len, (int)(sizeof id - len), boot) != NULL)
        id[len + strcspn(id + len, "\n")] = '\0';
      fclose(boot);
    }
  }
  snprintf(out, size, "%016llx", hash_bytes(id, strlen(id)));
}

/* nccl.h's NCCL_CTA_POLICY_* values, which headers before 2.28 lack. */
enum { CTA_DEFAULT = 0, CTA_EFFICIENCY = 1, CTA_ZERO = 2 };

int nccl_env_cta_policy(const char *text, int nccl, int *policy)
{
  if (text == NULL || text[0] == '\0')
    return 0;
  if (nccl < NCCL_VERSION(2, 29, 0)) {
    errno = 0;
    long long value = strtoll(text, NULL, 0);
    if (errno != 0)
      return 0;
    *policy = (int)value;
    /* NCCL resets a policy outside DEFAULT..ZERO to DEFAULT. */
    if (*policy < CTA_DEFAULT || *policy > CTA_ZERO)
      *policy = CTA_DEFAULT;
    return 1;
  }
  if (isdigit((unsigned char)text[0])) {
    *policy = text[0] == '1' ? 1 : text[0] == '2' ? 2 : 0;
    return 1;
  }
  int found = 0, value = 0;
  for (const char *t = text; *t;) {
    size_t len = strcspn(t, "|");
    const char *names[] = {"DEFAULT", "EFFICIENCY", "ZERO"};
    const int bits[] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
      if (len == strlen(names[i]) && strncasecmp(t, names[i], len) == 0) {
        value |= bits[i];
        found = 1;
      }
    t += len + (t[len] == '|');
  }
  /* ZERO with EFFICIENCY keeps ZERO alone. */
  if (value & CTA_ZERO)
    value &= ~CTA_EFFICIENCY;
  if (found)
    *policy = value;
  return found;
}

/* The causes found so far: a report's list, "; " between two. */
typedef struct causes {
  char *buf;
  size_t size, start; /* where the list starts in buf */
} causes;

static void add_cause(causes *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_cause(causes *c, const char *fmt, ...)
{
  if (strlen(c->buf) > c->start)
    text_add(c->buf, c->size, "; ");
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  text_add(c->buf, c->size, "%s", text);
}

/* Ranks whose handle was NULL after registering. */
static void cause_null_windows(causes *c, int n, const rank_facts *facts)
{
  int *in = host_calloc((size_t)n, sizeof *in);
  int nulls = 0;
  for (int r = 0; r < n; r++)
    nulls += in[r] = facts[r].null_window;
  if (nulls > 0) {
    add_cause(c, "NULL windows on ");
    what_ran_add_ranks(c->buf, c->size, in, n);
    text_add(c->buf, c->size,
             ": NCCL registered no window"
             " (NCCL_DEBUG=INFO: NCCL's INIT log says why)");
  }
  free(in);
}

/* Variables that take windows or the copy engines away, read as NCCL reads
 * them; what each did is recorded in docs/facts (tools/nccl_facts). */
static void cause_variables(causes *c, int nccl, int want_ce)
{
  if (nccl_int_variable("NCCL_WIN_ENABLE", 1) == 0)
    add_cause(c, "NCCL_WIN_ENABLE=%s is set (0 for NCCL)",
              getenv("NCCL_WIN_ENABLE"));
  if (nccl_int_variable("NCCL_CUMEM_ENABLE", 1) == 0)
    add_cause(c,
              "NCCL_CUMEM_ENABLE=%s is set (0 for NCCL; windows need CUDA"
              " virtual memory)",
              getenv("NCCL_CUMEM_ENABLE"));
  if (nccl > 0 && nccl < NCCL_VERSION(2, 29, 0) &&
      nccl_int_variable("NCCL_LOCAL_REGISTER", 1) == 0)
    add_cause(c,
              "NCCL_LOCAL_REGISTER=%s is set (0 for NCCL; without symmetric"
              " support NCCL 2.28.3 then leaves the window handles unwritten)",
              getenv("NCCL_LOCAL_REGISTER"));
  /* NCCL_CTA_POLICY replaces config.CTAPolicy when it sets a policy. */
  const char *cta_text = getenv("NCCL_CTA_POLICY");
  int cta = 0;
  if (want_ce && nccl > 0 && nccl_env_cta_policy(cta_text, nccl, &cta) &&
      !(cta & 2))
    add_cause(c,
              "NCCL_CTA_POLICY=%s replaces config.CTAPolicy: the loaded NCCL"
              " reads it as %d, without ZERO (2)",
              cta_text, cta);
}

/* How many hosts the ranks are on, as NCCL tells hosts apart. */
static int count_hosts(int n, const rank_facts *facts)
{
  int hosts = 0;
  for (int r = 0; r < n; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++)
      seen = strcmp(facts[q].host, facts[r].host) == 0;
    hosts += !seen;
  }
  return hosts;
}

/* Ranks on several hosts: outside one NVLink domain, or (before 2.28.7)
 * each alone on its node. */
static void cause_hosts(causes *c, int n, const rank_facts *facts, int nccl,
                        const char *version, int want_ce)
{
  const int hosts = count_hosts(n, facts);
  /* NCCL_HOSTID (emulated nodes) decides what NCCL takes for a host. */
  const char *by = getenv("NCCL_HOSTID") != NULL ? " (by NCCL_HOSTID)" : "";
  /* The copy engines reach across nodes only from NCCL 2.30 on. */
  if (hosts > 1 && want_ce && nccl >= NCCL_VERSION(2, 30, 0))
    add_cause(c,
              "the ranks are on %d hosts%s: NCCL %s uses the copy engines only"
              " within one NVLink domain (one node, or one multi-node NVLink"
              " system)",
              hosts, by, version);
  else if (hosts > 1 && want_ce && nccl > 0)
    add_cause(c,
              "the ranks are on %d hosts%s: NCCL %s uses the copy engines only"
              " within one node (NCCL 2.30 adds multi-node NVLink systems)",
              hosts, by, version);
  else if (hosts > 1)
    add_cause(c,
              "the ranks are on %d hosts%s: NCCL needs them in one NVLink"
              " domain",
              hosts, by);
  /* Before 2.28.7 a communicator whose every rank is alone on its node
   * has no symmetric support (NCCL 2.28.3, src/transport.cc). */
  if (n > 1 && hosts == n && nccl > 0 && nccl < NCCL_VERSION(2, 28, 7))
    add_cause(c,
              "NCCL %s (before 2.28.7) has no symmetric support when every"
              " rank is alone on its node",
              version);
}

void what_ran_causes(char *buf, size_t size, int n, const rank_facts *facts,
                     int want)
{
  causes c = {.buf = buf, .size = size, .start = strlen(buf)};
  const int want_ce = want == WANT_COPY_ENGINES;
  /* One rank has symmetric support, and so the device API (2.30.7): its
   * lesson's causes are the others. */
  if (n == 1 && want != WANT_OWN_KERNEL) {
    text_add(buf, size,
             "one rank: NCCL copies locally and never uses symmetric kernels or"
             " the copy engines; run 2 or more ranks");
    return;
  }
  const int nccl = facts[0].nccl;
  char version[32] = "";
  if (nccl > 0)
    format_nccl_version(nccl, version, sizeof version);
  cause_null_windows(&c, n, facts);
  cause_variables(&c, nccl, want_ce);
  const int driver = facts[0].driver;
  if (want_ce && driver > 0 && driver < 12050)
    add_cause(&c, "the CUDA driver is %d.%d; the copy engines need >= 12.5",
              driver / 1000, driver % 1000 / 10);
  cause_hosts(&c, n, facts, nccl, version, want_ce);
  /* CUDA P2P from each rank's GPU to rank 0's, on rank 0's host. */
  for (int r = 1; r < n; r++)
    if (facts[r].p2p_to_first == 0) {
      add_cause(&c, "GPUs %d and %d have no CUDA P2P access", facts[0].device,
                facts[r].device);
      break; /* one such pair says enough */
    }
  if (strlen(buf) == c.start && nccl > 0 && nccl < NCCL_VERSION(2, 29, 0))
    text_add(
        buf, size,
        "no known cause found, and the windows prove nothing: NCCL %s hands"
        " back local registrations where it has no symmetric support"
        " (docs/troubleshooting.md) (NCCL_DEBUG=INFO"
        " NCCL_DEBUG_SUBSYS=TUNING shows NCCL's choice on rank 0)",
        version);
  else if (strlen(buf) == c.start)
    text_add(
        buf, size,
        "no known cause found (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows"
        " NCCL's choice on rank 0)");
}

