"""Which GPU each rank of a Python example uses (node-local rank mod the
GPUs it sees), and ranks sharing one with NCCL >= 2.30: the same choices as
the C programs' (common/src/driver.c, common/src/requirements.c).
example_utils.py re-exports what the examples use."""
import os
import sys

EXIT_FAILURE = 1  # as example_utils.py says
EXIT_USAGE = 2


SHARED_GPU_MIN = "2.30.0"  # the first NCCL that lets ranks share a GPU
# The ranks per GPU NCCL 2.30 documents with its default settings (its
# docs/userguide/source/env.rst, NCCL_MULTI_RANK_GPU_ENABLE: experimental).
DOCUMENTED_RANKS_PER_GPU = 2


def strtoll(text):
    """C's strtoll(text, &end, 0), which NCCL reads its integer variables
    with (src/misc/param.cc): (value, characters read, out of range). A
    leading 0x is hex and a leading 0 octal ("010" is 8); what follows the
    number is ignored ("1abc" is 1); no number at all is 0, nothing read."""
    i, n = 0, len(text)
    while i < n and text[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < n and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    if text[i:i + 2].lower() == "0x" and i + 2 < n and text[i + 2] in "0123456789abcdefABCDEF":
        base, i = 16, i + 2
    elif text[i:i + 1] == "0":
        base = 8
    else:
        base = 10
    digits = "0123456789abcdef"[:base]
    start = i
    while i < n and text[i].lower() in digits:
        i += 1
    if i == start:
        return 0, 0, False
    value = sign * int(text[start:i], base)
    if not -2**63 <= value < 2**63:
        return (2**63 - 1 if sign > 0 else -2**63), i, True
    return value, i, False


def multi_rank_gpu_requested():
    """NCCL_MULTI_RANK_GPU_ENABLE as NCCL reads it (strtoll, out of range
    meaning unset): (1 on, 0 off or unset, -1 read as 0 but not a plain
    number: most likely a mistake, said rather than ignored), and the
    text. The C programs read it the same way (common/src/requirements.c)."""
    text = os.environ.get("NCCL_MULTI_RANK_GPU_ENABLE", "")
    if text == "":
        return 0, text
    value, read, out_of_range = strtoll(text)
    if value != 0 and not out_of_range:
        return 1, text
    return (0 if read == len(text) else -1), text


def gpu_name(props):
    """The name of the GPU behind a cudaGetDeviceProperties result, the same
    in every process whatever it sees as its device 0: its UUID as
    nvidia-smi -L prints it (GPU-...), or its PCI address where CuPy gives
    no UUID."""
    uuid = props.get("uuid")
    if isinstance(uuid, (bytes, bytearray)) and len(uuid) == 16:
        h = uuid.hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return f"PCI {props['pciDomainID']:04x}:{props['pciBusID']:02x}:{props['pciDeviceID']:02x}"


def gpu_load(picks):
    """From the node's [(rank, GPU name)]: how many ranks use the busiest
    GPU, and which ranks share which GPU ("ranks 0 and 1 use GPU-...; ranks
    2 and 3 use GPU-...", as the C programs say it), or "" if none do."""
    users = {}
    for rank, gpu in sorted(picks):
        users.setdefault(gpu, []).append(rank)
    shared = []
    for gpu, rs in users.items():
        if len(rs) > 1:
            shared.append(f"ranks {', '.join(str(r) for r in rs[:-1])} and {rs[-1]} use {gpu}")
    return max((len(rs) for rs in users.values()), default=0), "; ".join(shared)


def select_gpu(ranks, cupy, nccl):
    """Every rank picks a GPU (node-local rank mod the GPUs it sees: under
    Slurm's --gpus-per-task=1 each sees its own as device 0), and the ranks
    of each node compare the GPUs they picked by name. A GPU used by two
    ranks needs NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; if any rank
    may not go on, it says why (the node's first rank for the node's GPUs)
    and the job stops. Ranks sharing a GPU get NCCL_MAX_CTAS as in the C
    programs (common/src/requirements.c says why), and rank 0 prints the two
    lines that say so."""
    problem, message, name, node_verdict = 0, "", "", False
    try:
        ngpus = cupy.cuda.runtime.getDeviceCount()
        device = ranks.local_rank % ngpus if ngpus > 0 else 0
        if ngpus > 0:
            name = gpu_name(cupy.cuda.runtime.getDeviceProperties(device))
    except cupy.cuda.runtime.CUDARuntimeError as e:
        ngpus, problem = 0, EXIT_FAILURE
        message = f"no usable GPU: {e}"
    if problem == 0 and ngpus == 0:
        problem, message = EXIT_FAILURE, "no usable GPU: this process sees none"
    # Collective from here on: every rank takes part, whatever it found.
    per_gpu, who = gpu_load([(r, g) for r, g in ranks.node_gather(name) if g])
    shared = False
    if problem == 0 and per_gpu > 1:
        node_verdict = True
        asked, text = multi_rank_gpu_requested()
        info = nccl.get_version().libnccl
        from packaging.version import Version
        if asked == 0:
            problem = EXIT_USAGE
            message = (f"{ranks.local_size} ranks on {os.uname().nodename} share GPUs ({who}); one rank per GPU:"
                       " give each rank a GPU of its own (Slurm's --gpus-per-task=1, or CUDA_VISIBLE_DEVICES),"
                       f" or start at most {ngpus} rank(s) per node where each process sees {ngpus} GPU(s);"
                       " with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU")
        elif asked < 0:
            problem = EXIT_USAGE
            message = (f"invalid NCCL_MULTI_RANK_GPU_ENABLE='{text}': NCCL ignores a value that is"
                       f" not a number; use 1 to let ranks share a GPU ({who}), or unset it")
        elif info is None or info.version < Version(SHARED_GPU_MIN):
            problem = EXIT_USAGE
            have = info.version if info is not None else "unknown"
            message = (f"NCCL_MULTI_RANK_GPU_ENABLE={text}: ranks may share a GPU only with NCCL >= 2.30,"
                       f" and the loaded NCCL is {have}; use a newer NCCL or at most {ngpus} rank(s) here"
                       f" ({who})")
        else:
            shared = True
    worst = ranks.worst(problem)
    if worst:
        # A verdict on the node's GPUs is the same on each of its ranks:
        # said once, by its first rank.
        if message and (ranks.local_rank == 0 or not node_verdict):
            ranks.error(message)
        sys.exit(worst)
    cupy.cuda.Device(device).use()
    if shared:
        fit_shared_gpu_kernels(ranks, cupy, per_gpu, ngpus, device)
    return device


def fit_shared_gpu_kernels(ranks, cupy, per_gpu, ngpus, device):
    """Caps NCCL_MAX_CTAS so that the kernels of the per_gpu ranks on the
    busiest GPU fit on it at once, unless the user set it; rank 0 says which
    holds."""
    ranks.print_root(f"{ranks.local_size} ranks share {ngpus} GPU{'' if ngpus == 1 else 's'}"
                     " (NCCL_MULTI_RANK_GPU_ENABLE=1): results are real NCCL; bandwidths are one"
                     " GPU's, not a link's")
    if per_gpu > DOCUMENTED_RANKS_PER_GPU and ranks.rank == 0:
        ranks.error(f"NCCL_MULTI_RANK_GPU_ENABLE is experimental, and NCCL 2.30 documents up to"
                    f" {DOCUMENTED_RANKS_PER_GPU} ranks per GPU with its default settings; {per_gpu} share"
                    " one here: if a collective hangs, use fewer ranks per GPU or a lower NCCL_MAX_CTAS")
    own = os.environ.get("NCCL_MAX_CTAS", "")
    if own:
        ranks.print_root(f"NCCL_MAX_CTAS={own} (yours): with {per_gpu} ranks per GPU it must leave"
                         " every rank's kernels room on the GPU at once, or collectives hang")
        return
    sms = cupy.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]
    limit = max(sms // per_gpu, 1)
    os.environ["NCCL_MAX_CTAS"] = str(limit)
    if per_gpu <= sms:
        ranks.print_root(f"NCCL_MAX_CTAS={limit}: each rank's NCCL kernels use at most {limit} of the"
                         f" GPU's {sms} SMs, so that all {per_gpu} ranks' kernels fit at once")
    else:
        ranks.print_root(f"NCCL_MAX_CTAS=1: {per_gpu} ranks share the GPU's {sms} SMs: more ranks than SMs,"
                         " so their kernels cannot all run at once, and a collective may hang")
