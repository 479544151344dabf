#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A neighbour that keeps CPUs busy in bursts: N processes, each spinning for 1-20 ms and then
sleeping for 1-20 ms (uniform, seeded), for SECONDS or until stopped. The load under which the
test suite must pass as it does on an idle machine (tests/README.md: no wall-clock bar in it):

    /usr/bin/python3 tests/threads/bursty_load.py 2 3600 &  bash tests/run.sh;  kill %1
"""
import multiprocessing
import random
import signal
import sys
import time


def burst(seed, until):
    rng = random.Random(seed)
    while time.monotonic() < until:
        end = time.monotonic() + rng.uniform(0.001, 0.020)
        while time.monotonic() < end:
            pass
        time.sleep(rng.uniform(0.001, 0.020))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else multiprocessing.cpu_count()
    until = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0)
    procs = [multiprocessing.Process(target=burst, args=(seed, until), daemon=True)
             for seed in range(n)]
    for p in procs:
        p.start()

    def stop(signum, frame):  # `kill` of this process stops its bursts too
        for p in procs:
            p.terminate()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()
