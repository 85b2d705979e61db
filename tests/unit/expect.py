"""What the Python unit tests share: common/python on the import path,
expect() to count and say a failed expectation, and finish() to end with the
verdict ("NAME: all passed", exit 0, or exit 1), NAME being the test's
file name."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))
NAME = os.path.splitext(os.path.basename(sys.argv[0]))[0]
_failures = 0


def expect(cond, what):
    global _failures
    if not cond:
        _failures += 1
        print(f"{NAME}: expectation failed: {what}", file=sys.stderr)


def finish():
    if _failures == 0:
        print(f"{NAME}: all passed")
    sys.exit(1 if _failures else 0)
