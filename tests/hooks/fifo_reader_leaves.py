#!/usr/bin/env python3
"""Runs a command that writes to FIFO, with a reader that leaves: opens the
FIFO for reading (without waiting for a writer), starts the command, and
closes the read end as soon as the command has the FIFO open, reading
nothing. The command's later writes then find no reader (EPIPE). Exits
with the command's status.

    fifo_reader_leaves.py FIFO COMMAND [ARGS...]
"""
import os
import subprocess
import sys
import time


def has_open(pid, path):
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
    except OSError:
        pass
    return False


def main():
    path = os.path.realpath(sys.argv[1])
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    proc = subprocess.Popen(sys.argv[2:])
    deadline = time.monotonic() + 30
    while proc.poll() is None and not has_open(proc.pid, path) and time.monotonic() < deadline:
        time.sleep(0.005)
    os.close(reader)
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
