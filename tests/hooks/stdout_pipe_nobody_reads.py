#!/usr/bin/env python3
"""Runs a command with its stdout a pipe of one page that nobody reads, so
that the command's writes block, and waits for it at most LIMIT seconds.
Prints "exit N" (or "still running after LIMIT s", then kills it) on this
script's stdout; the command's stderr passes through.

    stdout_pipe_nobody_reads.py LIMIT COMMAND [ARGS...]
"""
import fcntl
import os
import subprocess
import sys

F_SETPIPE_SZ = 1031  # Linux


def main():
    limit = float(sys.argv[1])
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen(sys.argv[2:], stdout=write_end)
    os.close(write_end)  # read_end stays open and unread: writes block
    try:
        print(f"exit {proc.wait(timeout=limit)}")
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        print(f"still running after {limit:g} s")
    os.close(read_end)


if __name__ == "__main__":
    main()
