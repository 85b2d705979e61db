#include "requirements.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "checks.h"
#include "output.h"

void format_nccl_version(int code, char *buf, size_t size)
{
  /* NCCL_VERSION() packs X.Y.Z as X*10000+Y*100+Z since 2.9, and as
   * X*1000+Y*100+Z before. */
  if (code >= 20900)
    snprintf(buf, size, "%d.%d.%d", code / 10000, code % 10000 / 100,
             code % 100);
  else
    snprintf(buf, size, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
}

int all_ranks_require_nccl(const rank_ctx *ctx, int min_code,
                           const char *feature)
{
  int code = 0;
  NCCLCHECK(ncclGetVersion(&code));
  int ok = code >= min_code;
  if (!ok) {
    char have[32], need[32];
    format_nccl_version(code, have, sizeof have);
    format_nccl_version(min_code, need, sizeof need);
    print_error("NCCL %s is too old for %s: needs NCCL >= %s\n", have, feature,
                need);
  }
  return all_ranks_ok(ctx, ok);
}

int all_ranks_require_headers(const rank_ctx *ctx, int headers_code)
{
  int code = 0;
  NCCLCHECK(ncclGetVersion(&code));
  int ok = headers_code == 0 || code >= headers_code;
  if (!ok) {
    char have[32], built[32];
    format_nccl_version(code, have, sizeof have);
    format_nccl_version(headers_code, built, sizeof built);
    /* NCCL (2.29.2 to 2.30.7 at least) answers such a program's first
     * device API call with ncclInvalidUsage ("NCCL library ... is too
     * old", src/dev_runtime.cc). */
    print_error("the loaded NCCL %s is older than the nccl.h %s this program"
                " was built with, and NCCL's device API refuses that: run"
                " with NCCL %s or newer, or build against the NCCL you run"
                " (make NCCL_HOME=dir)\n",
                have, built, built);
  }
  return all_ranks_ok(ctx, ok);
}

static _Thread_local int device_api_seen = -1, lsa_teams_seen;

int all_ranks_check_device_api(const rank_ctx *ctx, int device_api_support,
                               int lsa_teams)
{
  device_api_seen = device_api_support != 0;
  lsa_teams_seen = lsa_teams;
  if (!device_api_support)
    print_error("this communicator has no device API support"
                " (deviceApiSupport 0: docs/troubleshooting.md says when)\n");
  else if (lsa_teams != 1)
    print_error("this communicator has %d LSA teams, and this kernel needs"
                " one: every rank reaching every other rank's memory (ranks"
                " of one node, joined by NVLink)\n",
                lsa_teams);
  return all_ranks_ok(ctx, device_api_support && lsa_teams == 1);
}

int rank_device_api(int *lsa_teams)
{
  *lsa_teams = lsa_teams_seen;
  return device_api_seen;
}

static _Thread_local int null_window_seen;

int rank_got_null_window(void) { return null_window_seen; }

int all_ranks_report_windows(const rank_ctx *ctx, ncclWindow_t send_win,
                             ncclWindow_t recv_win)
{
  int real = send_win != NULL && recv_win != NULL;
  int code = 0;
  NCCLCHECK(ncclGetVersion(&code));
  /* Before 2.28.7 a rank alone on its node has no symmetric support, and
   * the handle is an ordinary local registration (NCCL 2.28.3,
   * src/transport.cc and src/dev_runtime.cc). One rank is alone for sure;
   * ranks on hosts of their own are What ran's to name. */
  int local_only = real && ctx->nranks == 1 && code < NCCL_VERSION(2, 28, 7);
  null_window_seen |= !real || local_only;
  char line[ALL_RANKS_GATHER_MAX] = "";
  if (!real)
    snprintf(line, sizeof line,
             "  Rank %d: no symmetric window: the handle is NULL after"
             " ncclCommWindowRegister; the collective runs on NCCL's regular"
             " path\n",
             ctx->rank);
  else if (local_only) {
    char have[32];
    format_nccl_version(code, have, sizeof have);
    snprintf(line, sizeof line,
             "  Rank %d: no symmetric window: NCCL %s (before 2.28.7) has"
             " none for a rank alone on its node, and hands back a local"
             " registration; the collective runs on NCCL's regular path\n",
             ctx->rank, have);
  }
  all_ranks_print_line(ctx, line);
  return real && !local_only;
}

const char *shared_gpu_hint(void)
{
  return "; with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share"
         " a GPU";
}

long long nccl_int_variable(const char *name, long long unset)
{
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0')
    return unset;
  errno = 0;
  long long value = strtoll(text, NULL, 0);
  return errno != 0 ? unset : value;
}

/* Does strtoll read `text` differently by C library? "0b1" is 0 before
 * glibc 2.38 and 1 from 2.38 in C23 or GNU mode (binary constants), which
 * an NCCL built there uses (NCCL 2.30.7 built on Ubuntu 24.04 imports
 * __isoc23_strtoll). */
static int binary_prefixed(const char *text)
{
  while (isspace((unsigned char)*text))
    text++;
  if (*text == '+' || *text == '-')
    text++;
  return text[0] == '0' && (text[1] == 'b' || text[1] == 'B') &&
         (text[2] == '0' || text[2] == '1');
}

/* NCCL_MULTI_RANK_GPU_ENABLE as NCCL reads it (nccl_int_variable): 1 (on),
 * 0 (off or unset), or -1: NCCL reads it as 0, but the text is not a
 * plain number ("yes"): most likely a mistake, said rather than ignored;
 * -2: NCCL reads it as 0 or 1 by the C library it was built on ("0b1"). */
static int multi_rank_gpu_requested(const char **text)
{
  *text = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (*text != NULL && binary_prefixed(*text))
    return -2;
  long long value = nccl_int_variable("NCCL_MULTI_RANK_GPU_ENABLE", 0);
  if (value != 0)
    return 1;
  if (*text == NULL || (*text)[0] == '\0')
    return 0;
  char *end = NULL;
  errno = 0;
  (void)strtoll(*text, &end, 0);
  return end != *text && *end == '\0' ? 0 : -1;
}

enum gpu_sharing decide_gpu_sharing(int ranks, int ngpus, int per_gpu,
                                    const char *who, int say)
{
  if (per_gpu <= 1)
    return GPU_ONE_RANK_EACH;
  const char *text;
  int asked = multi_rank_gpu_requested(&text);
  if (asked == 0)
    return GPU_TOO_FEW;
  if (asked == -2) {
    if (say)
      print_error("invalid NCCL_MULTI_RANK_GPU_ENABLE='%s': NCCL reads it"
                  " with strtoll, which makes it 0 (off) with a C library"
                  " before glibc 2.38 and a binary 1 (on) where NCCL was"
                  " built against glibc 2.38 or later; use 1 to let %d ranks"
                  " share %d GPU(s), or unset it\n",
                  text, ranks, ngpus);
    return GPU_SHARING_BAD;
  }
  if (asked < 0) {
    if (say)
      print_error("invalid NCCL_MULTI_RANK_GPU_ENABLE='%s': NCCL reads it as"
                  " a number (strtoll), so this is 0, off; use 1 to let %d"
                  " ranks share %d GPU(s), or unset it\n",
                  text, ranks, ngpus);
    return GPU_SHARING_BAD;
  }
  int code = 0;
  NCCLCHECK(ncclGetVersion(&code));
  if (code < NCCL_SHARED_GPU_MIN) {
    char have[32];
    format_nccl_version(code, have, sizeof have);
    if (say)
      print_error("NCCL_MULTI_RANK_GPU_ENABLE=%s: ranks may share a GPU only"
                  " with NCCL >= 2.30, and the loaded NCCL is %s; use a newer"
                  " NCCL (make NCCL_HOME=...) or at most %d rank(s) here%s%s%s"
                  "\n",
                  text, have, ngpus, who && who[0] ? " (" : "",
                  who ? who : "", who && who[0] ? ")" : "");
    return GPU_SHARING_BAD;
  }
  return GPU_SHARED;
}

void fit_shared_gpu_kernels(int per_gpu, int device, int say)
{
  if (say && per_gpu > NCCL_DOCUMENTED_RANKS_PER_GPU)
    print_error("NCCL_MULTI_RANK_GPU_ENABLE is experimental, and NCCL 2.30"
                " documents up to %d ranks per GPU with its default settings;"
                " %d share one here: if a collective hangs, use fewer ranks"
                " per GPU or a lower NCCL_MAX_CTAS\n",
                NCCL_DOCUMENTED_RANKS_PER_GPU, per_gpu);
  const char *own = getenv("NCCL_MAX_CTAS");
  if (own != NULL && own[0] != '\0') {
    /* NCCL reads the number strtoll reads (0 for "abc"; its default on an
     * overflow) and ignores one below 1 (NCCL 2.30.7 src/misc/param.cc,
     * src/init.cc): such a value limits nothing, so this program sets its
     * own limit below instead. */
    errno = 0;
    long long value = strtoll(own, NULL, 0);
    if (errno == 0 && value > 0) {
      if (say)
        printf("NCCL_MAX_CTAS=%s (yours): with %d ranks per GPU it must leave"
               " every rank's kernels room on the GPU at once, or collectives"
               " hang\n",
               own, per_gpu);
      return;
    }
    if (say)
      print_error("NCCL_MAX_CTAS=%s is no limit to NCCL, which reads it as a"
                  " number (strtoll) and ignores one below 1: this program"
                  " sets its own limit instead\n",
                  own);
  }
  int sms = 0;
  CUDACHECK(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int limit = sms / per_gpu > 0 ? sms / per_gpu : 1;
  char text[16];
  snprintf(text, sizeof text, "%d", limit);
  if (setenv("NCCL_MAX_CTAS", text, 1) != 0) {
    print_error("setenv NCCL_MAX_CTAS failed: %s\n", strerror(errno));
    job_abort(1);
  }
  if (say && per_gpu <= sms)
    printf("NCCL_MAX_CTAS=%d: each rank's NCCL kernels use at most %d of the"
           " GPU's %d SMs, so that all %d ranks' kernels fit at once\n",
           limit, limit, sms, per_gpu);
  else if (say)
    printf("NCCL_MAX_CTAS=1: %d ranks share the GPU's %d SMs: more ranks"
           " than SMs, so their kernels cannot all run at once, and a"
           " collective may hang\n",
           per_gpu, sms);
}
