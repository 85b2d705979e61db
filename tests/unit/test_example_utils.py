"""The Python variants' window report without nccl4py or a GPU: stand-ins
for nccl4py's window handles (a handle of 0, a real one, None) and for a
communicator that reports a registration in progress."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "common", "python"))
import example_utils as ex  # noqa: E402

failures = 0


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"test_example_utils: expectation failed: {what}", file=sys.stderr)


class Ranks:
    rank = 1

    def __init__(self):
        self.lines = []

    def all_ranks_print(self, line):
        self.lines.append(line)


class Window:
    def __init__(self, handle):
        self.handle = handle
        self.closed = 0

    def close(self):
        self.closed += 1


class Comm:
    def __init__(self, state):
        self.state = state

    def get_async_error(self):
        return self.state


SUCCESS = 0
done, busy = Comm(SUCCESS), Comm(ex.NCCL_IN_PROGRESS)
real, empty = Window(0x7F001000), Window(0)

expect(ex.window_state(done, real) == "window", "a non-zero handle is a window")
expect(ex.window_state(done, empty) == "none", "a 0 handle after completion is no window")
expect(ex.window_state(done, None) == "none", "None is no window")
expect(ex.window_state(busy, empty) == "pending", "a 0 handle while in progress is pending")
expect(ex.window_state(busy, real) == "window", "a written handle is a window, in progress or not")
expect(ex.window_state(busy, None) == "none", "None stays no window")

NONE_LINE = ("  Rank 1: no symmetric window: the handle is NULL after ncclCommWindowRegister;"
             " the collective runs on NCCL's regular path")
PENDING_LINE = ("  Rank 1: window registration still pending: the handle is written when the"
                " group or the non-blocking communicator completes")
for comm, windows, want in [(done, (real, real), ""), (done, (real, None), NONE_LINE),
                            (done, (empty, real), NONE_LINE), (busy, (empty, real), PENDING_LINE),
                            (busy, (None, empty), PENDING_LINE)]:
    r = Ranks()
    ex.all_ranks_report_windows(r, comm, *windows)
    expect(r.lines == [want], f"report of {windows}: {r.lines}, wanted {[want]}")

a, b = Window(5), Window(0)
ex.close_windows(a, None, b)
expect(a.closed == 1 and b.closed == 1, "each window closed once, None skipped")

if failures == 0:
    print("test_example_utils: all passed")
sys.exit(1 if failures else 0)
