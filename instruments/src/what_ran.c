#include "what_ran.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <unistd.h>

#include "calls.h"
#include "checks.h"
#include "requirements.h"

#define SYM_PREFIX     "ncclSymkDevKernel_"
#define REGULAR_PREFIX "ncclDevKernel_"

static _Thread_local uint64_t t_start;
static _Thread_local int recording;
static char *report; /* written by rank 0, printed by process 0 */

void what_ran_start(const rank_ctx *ctx)
{
  (void)ctx;
  recording = engine_probe_start();
  t_start = recording ? engine_probe_now() : 0;
}

/* A regular kernel's name stands for a family of algorithms, not for the
 * one NCCL ran: NCCL 2.28 names ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * 2.31 and later ncclDevKernel_AllReduce_f32_RING (the 2.32.3 library's
 * symbols), and the kernel named for RING and LL also runs other
 * algorithms and protocols (NCCL_DEBUG_SUBSYS=TUNING names the one
 * chosen). Writes the algorithm the name carries ("RING", "NVLS_TREE"),
 * or, for a name of neither shape, the name without NCCL's prefix. */
static void regular_family(const char *name, char *out, size_t size)
{
  static const char *const algorithms[] = {
      "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "RING", "TREE",
      "NVLS",      "PAT"};
  static const char *const protocols[] = {"", "_LL", "_LL128", "_SIMPLE"};
  const char *base = name + strlen(REGULAR_PREFIX);
  for (const char *at = strchr(base, '_'); at; at = strchr(at + 1, '_'))
    for (size_t a = 0; a < sizeof algorithms / sizeof *algorithms; a++) {
      size_t len = strlen(algorithms[a]);
      if (strncmp(at + 1, algorithms[a], len) != 0)
        continue;
      for (size_t p = 0; p < sizeof protocols / sizeof *protocols; p++)
        if (strcmp(at + 1 + len, protocols[p]) == 0) {
          snprintf(out, size, "%s", algorithms[a]);
          return;
        }
    }
  snprintf(out, size, "%s", base);
}

/* The symmetric kernels of w without NCCL's prefix, ", "-separated, then
 * (with `regular`) the families of its regular kernels, each once:
 * "regular kernels of the RING family", "of the RING and TREE families".
 * Kernels of neither kind are named as they are. */
static void add_names(char *buf, size_t size, const engine_work *w,
                      int regular)
{
  int named = 0;
  for (int i = 0; i < w->nnames; i++) {
    const char *name = w->names[i];
    if (strncmp(name, REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0)
      continue;
    if (strncmp(name, SYM_PREFIX, strlen(SYM_PREFIX)) == 0)
      name += strlen(SYM_PREFIX);
    text_add(buf, size, "%s%s", named++ ? ", " : "", name);
  }
  char families[ENGINE_MAX_NAMES][64];
  int nfamilies = 0;
  for (int i = 0; i < w->nnames && regular; i++) {
    if (strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) != 0)
      continue;
    char family[64];
    regular_family(w->names[i], family, sizeof family);
    int seen = 0;
    for (int f = 0; f < nfamilies; f++)
      seen |= strcmp(families[f], family) == 0;
    if (!seen)
      snprintf(families[nfamilies++], sizeof families[0], "%s", family);
  }
  if (nfamilies > 0) {
    text_add(buf, size, "%sregular kernels of the ", named ? " and " : "");
    for (int f = 0; f < nfamilies; f++)
      text_add(buf, size, "%s%s", f == 0                ? ""
                                  : f == nfamilies - 1 ? " and "
                                                       : ", ",
               families[f]);
    text_add(buf, size, " famil%s", nfamilies > 1 ? "ies" : "y");
  }
  if (w->kernels > 0 && w->nnames == ENGINE_MAX_NAMES)
    text_add(buf, size, ", ...");
}

enum what_class what_ran_describe(const engine_work *w, int nranks, char *buf,
                                  size_t size)
{
  buf[0] = '\0';
  if (w == NULL)
    return RAN_UNKNOWN;
  if (w->kernels == 0 && w->copies == 0) {
    text_add(buf, size, "no kernel and no copy that CUPTI saw");
    return RAN_NOTHING;
  }
  if (nranks == 1) {
    if (w->kernels == 0)
      text_add(buf, size, "a local copy (%ld cop%s, 0 kernels)", w->copies,
               w->copies == 1 ? "y" : "ies");
    else {
      text_add(buf, size, "a local kernel: ");
      add_names(buf, size, w, 1);
    }
    return RAN_LOCAL;
  }
  if (w->kernels == 0) {
    text_add(buf, size, "on the copy engines: 0 kernels, %ld cop%s", w->copies,
             w->copies == 1 ? "y" : "ies");
    return RAN_COPY_ENGINE;
  }
  int symmetric = 0, regular = 0, other = 0;
  for (int i = 0; i < w->nnames; i++) {
    int sym = strncmp(w->names[i], SYM_PREFIX, strlen(SYM_PREFIX)) == 0;
    int reg =
        strncmp(w->names[i], REGULAR_PREFIX, strlen(REGULAR_PREFIX)) == 0;
    symmetric += sym;
    regular += reg;
    other += !sym && !reg;
  }
  if (symmetric)
    text_add(buf, size, "NCCL's symmetric kernel%s ", symmetric > 1 ? "s" : "");
  else if (regular && !other)
    text_add(buf, size, "NCCL's ");
  else
    text_add(buf, size, "kernel%s ", w->nnames > 1 ? "s" : "");
  add_names(buf, size, w, 1);
  if (!symmetric)
    text_add(buf, size, " (no symmetric kernel)");
  return symmetric ? RAN_SYMMETRIC : RAN_REGULAR;
}

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
  if (found)
    *policy = value;
  return found;
}

/* "rank 3", "ranks 0-2", "ranks 0, 2, 5" for the ranks r with in[r]. */
static void add_ranks(char *buf, size_t size, const int *in, int n)
{
  int count = 0, first = -1, last = -1, contiguous = 1;
  for (int r = 0; r < n; r++)
    if (in[r]) {
      if (first < 0)
        first = r;
      else if (r != last + 1)
        contiguous = 0;
      last = r;
      count++;
    }
  if (count == 1) {
    text_add(buf, size, "rank %d", first);
  } else if (contiguous) {
    text_add(buf, size, "ranks %d-%d", first, last);
  } else {
    text_add(buf, size, "ranks");
    const char *sep = " ";
    for (int r = 0; r < n; r++)
      if (in[r]) {
        text_add(buf, size, "%s%d", sep, r);
        sep = ", ";
      }
  }
}

/* The conditions NCCL needs for the outcome the example is about that fail
 * here, as far as this program can tell (rank 0, from every rank's facts). */
static void add_causes(char *buf, size_t size, int n, const rank_facts *facts,
                       int want_ce)
{
  const size_t start = strlen(buf);
  if (n == 1) {
    text_add(buf, size,
             "one rank: NCCL copies locally and never uses symmetric kernels or"
             " the copy engines; run 2 or more ranks");
    return;
  }
  int *in = host_calloc((size_t)n, sizeof *in);
  int nulls = 0;
  for (int r = 0; r < n; r++)
    nulls += in[r] = facts[r].null_window;
  if (nulls > 0) {
    text_add(buf, size, "NULL windows on ");
    add_ranks(buf, size, in, n);
    text_add(buf, size,
             ": NCCL registered no window"
             " (NCCL_DEBUG=INFO: NCCL's INIT log says why)");
  }
  /* Variables that take windows away, read as NCCL reads them; what each
   * did is recorded in docs/facts (tools/nccl_facts). */
  const int nccl = facts[0].nccl;
  if (nccl_int_variable("NCCL_WIN_ENABLE", 1) == 0)
    text_add(buf, size, "%sNCCL_WIN_ENABLE=%s is set (0 for NCCL)",
             strlen(buf) > start ? "; " : "", getenv("NCCL_WIN_ENABLE"));
  if (nccl_int_variable("NCCL_CUMEM_ENABLE", 1) == 0)
    text_add(buf, size,
             "%sNCCL_CUMEM_ENABLE=%s is set (0 for NCCL; windows need CUDA"
             " virtual memory)",
             strlen(buf) > start ? "; " : "", getenv("NCCL_CUMEM_ENABLE"));
  if (nccl > 0 && nccl < NCCL_VERSION(2, 29, 0) &&
      nccl_int_variable("NCCL_LOCAL_REGISTER", 1) == 0)
    text_add(buf, size,
             "%sNCCL_LOCAL_REGISTER=%s is set (0 for NCCL; without symmetric"
             " support NCCL 2.28.3 then leaves the window handles unwritten)",
             strlen(buf) > start ? "; " : "", getenv("NCCL_LOCAL_REGISTER"));
  /* NCCL_CTA_POLICY replaces config.CTAPolicy when it sets a policy. */
  const char *cta_text = getenv("NCCL_CTA_POLICY");
  int cta = 0;
  if (want_ce && nccl > 0 && nccl_env_cta_policy(cta_text, nccl, &cta) &&
      !(cta & 2))
    text_add(buf, size,
             "%sNCCL_CTA_POLICY=%s replaces config.CTAPolicy: the loaded NCCL"
             " reads it as %d, without ZERO (2)",
             strlen(buf) > start ? "; " : "", cta_text, cta);
  int driver = facts[0].driver;
  if (want_ce && driver > 0 && driver < 12050)
    text_add(
        buf, size, "%sthe CUDA driver is %d.%d; the copy engines need >= 12.5",
        strlen(buf) > start ? "; " : "", driver / 1000, driver % 1000 / 10);
  int hosts = 0;
  for (int r = 0; r < n; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++)
      seen = strcmp(facts[q].host, facts[r].host) == 0;
    hosts += !seen;
  }
  /* The copy engines reach across nodes only from NCCL 2.30 on. */
  char version[32] = "";
  if (nccl > 0)
    format_nccl_version(nccl, version, sizeof version);
  /* NCCL_HOSTID (emulated nodes) decides what NCCL takes for a host. */
  const char *by = getenv("NCCL_HOSTID") != NULL ? " (by NCCL_HOSTID)" : "";
  if (hosts > 1 && want_ce && nccl >= NCCL_VERSION(2, 30, 0))
    text_add(buf, size,
             "%sthe ranks are on %d hosts%s: NCCL %s uses the copy engines only"
             " within one NVLink domain (one node, or one multi-node NVLink"
             " system)",
             strlen(buf) > start ? "; " : "", hosts, by, version);
  else if (hosts > 1 && want_ce && nccl > 0)
    text_add(buf, size,
             "%sthe ranks are on %d hosts%s: NCCL %s uses the copy engines only"
             " within one node (NCCL 2.30 adds multi-node NVLink systems)",
             strlen(buf) > start ? "; " : "", hosts, by, version);
  else if (hosts > 1)
    text_add(
        buf, size,
        "%sthe ranks are on %d hosts%s: NCCL needs them in one NVLink domain",
        strlen(buf) > start ? "; " : "", hosts, by);
  /* Before 2.28.7 a communicator whose every rank is alone on its node
   * has no symmetric support (NCCL 2.28.3, src/transport.cc). */
  if (n > 1 && hosts == n && nccl > 0 && nccl < NCCL_VERSION(2, 28, 7))
    text_add(buf, size,
             "%sNCCL %s (before 2.28.7) has no symmetric support when every"
             " rank is alone on its node",
             strlen(buf) > start ? "; " : "", version);
  /* CUDA P2P from each rank's GPU to rank 0's, on rank 0's host. */
  for (int r = 1; r < n; r++)
    if (facts[r].p2p_to_first == 0) {
      text_add(buf, size, "%sGPUs %d and %d have no CUDA P2P access",
               strlen(buf) > start ? "; " : "", facts[0].device,
               facts[r].device);
      break; /* one such pair says enough */
    }
  free(in);
  if (strlen(buf) == start && nccl > 0 && nccl < NCCL_VERSION(2, 29, 0))
    text_add(
        buf, size,
        "no known cause found, and the windows prove nothing: NCCL %s hands"
        " back local registrations where it has no symmetric support"
        " (docs/troubleshooting.md) (NCCL_DEBUG=INFO"
        " NCCL_DEBUG_SUBSYS=TUNING shows NCCL's choice on rank 0)",
        version);
  else if (strlen(buf) == start)
    text_add(
        buf, size,
        "no known cause found (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows"
        " NCCL's choice on rank 0)");
}

size_t what_ran_report_size(int nranks)
{
  /* Each rank a group of its own (a description of up to 256 characters
   * and its rank list), each rank named in a cause, and the fixed words. */
  return (size_t)nranks * (256 + 2 * 16) + 4096;
}

void what_ran_format(const char *collective, int want_ce, int n,
                     const rank_facts *facts, const char *unavailable,
                     char *out, size_t size)
{
  out[0] = '\0';
  if (!facts[0].measured) {
    text_add(out, size, "What ran: not measured: %s\n", unavailable);
    return;
  }
  char(*text)[256] = host_calloc((size_t)n, sizeof *text);
  enum what_class *cls = host_calloc((size_t)n, sizeof *cls);
  int *in = host_calloc((size_t)n, sizeof *in);
  for (int r = 0; r < n; r++)
    cls[r] = what_ran_describe(facts[r].measured ? &facts[r].work : NULL, n,
                               text[r], sizeof text[r]);
  if (n == 1)
    text_add(out, size,
             "What ran: one rank: NCCL did %s, nothing was communicated\n",
             text[0]);
  else {
    text_add(out, size, "What ran: %s ran ", collective);
    int *done = host_calloc((size_t)n, sizeof *done);
    for (int r = 0, groups = 0; r < n; r++) {
      if (done[r])
        continue;
      int members = 0;
      for (int q = r; q < n; q++)
        members += in[q] = !done[q] && strcmp(text[q], text[r]) == 0;
      text_add(out, size, "%s%s on ", groups++ ? "; " : "",
               text[r][0] ? text[r] : "nothing measured");
      if (members == n)
        text_add(out, size, "every rank");
      else
        add_ranks(out, size, in, n);
      for (int q = r; q < n; q++)
        done[q] |= in[q];
      memset(in, 0, (size_t)n * sizeof *in);
    }
    text_add(out, size, "\n");
    free(done);
  }
  enum what_class want = want_ce ? RAN_COPY_ENGINE : RAN_SYMMETRIC;
  int all_as_wanted = 1;
  for (int r = 0; r < n; r++)
    all_as_wanted &= cls[r] == want;
  if (!all_as_wanted) {
    text_add(out, size, "%s: ",
             want_ce ? "Why not the copy engines" : "Why no symmetric kernel");
    add_causes(out, size, n, facts, want_ce);
    text_add(out, size, "\n");
  }
  free(text);
  free(cls);
  free(in);
}

void all_ranks_finish_what_ran(const rank_ctx *ctx)
{
  rank_facts mine = {.device = ctx->device,
                     .null_window = rank_got_null_window(),
                     .p2p_to_first = -1}; /* rank 0 fills it in below */
  /* Facts that only explain: a failure leaves them unknown (0). */
  cudaError_t cuda_err;
  WATCHED(cuda_err, cudaDriverGetVersion(&mine.driver));
  if (cuda_err != cudaSuccess)
    mine.driver = 0;
  ncclResult_t nccl_err;
  WATCHED(nccl_err, ncclGetVersion(&mine.nccl));
  if (nccl_err != ncclSuccess)
    mine.nccl = 0;
  host_identity(mine.host, sizeof mine.host);
  if (recording) {
    WATCHED(mine.measured,
            engine_probe_collect(ctx->device, t_start, engine_probe_now(),
                                 &mine.work));
    engine_probe_stop();
    recording = 0;
  }
  _Static_assert(sizeof(rank_facts) <= ALL_RANKS_GATHER_MAX,
                 "rank_facts must fit all_ranks_gather");
  rank_facts *facts =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof *facts) : NULL;
  all_ranks_gather(ctx, &mine, sizeof mine, facts);
  if (ctx->rank == 0) {
    /* CUDA P2P from rank 0's GPU to the others on its host. */
    for (int r = 1; r < ctx->nranks; r++) {
      int can = 0;
      cudaError_t err = cudaErrorUnknown;
      if (strcmp(facts[r].host, mine.host) == 0 &&
          facts[r].device != mine.device)
        WATCHED(err,
                cudaDeviceCanAccessPeer(&can, mine.device, facts[r].device));
      if (err == cudaSuccess)
        facts[r].p2p_to_first = can;
    }
    const char *coll =
        ctx->example->collective == COLLECTIVE_ALLGATHER ? "AllGather" : "AllReduce";
    what_ran_format(coll, ctx->example->collective == COLLECTIVE_ALLGATHER,
                    ctx->nranks, facts, engine_probe_unavailable(),
                    report = host_calloc(what_ran_report_size(ctx->nranks), 1),
                    what_ran_report_size(ctx->nranks));
    free(facts);
  }
}

void what_ran_print(void)
{
  if (report != NULL && report[0] != '\0')
    fputs(report, stdout);
  free(report);
  report = NULL;
}
