#!/usr/bin/python3
"""heap_dict.py N: a CPython process with a large heap of small objects.

Builds a dict of N int keys, each mapping to a small tuple (key, a string of
the key, a float): about four small objects per key in pymalloc's arenas,
plus the dict's table. Prints "ready PID", then forever looks up random
keys, checks each value against its key, and replaces every tenth one by an
equal new tuple (garbage for the allocator, the data set unchanged). Once a
second it prints
    stat EPOCH_S OPS P99_US MAX_US ERRORS
(lookups per second; the latency of one lookup from a histogram with 8
buckets per power of two of nanoseconds). SIGTERM: checks every entry,
prints "verify N errors E", exits.
"""
import os
import random
import signal
import sys
import time


def value(k):
    return (k, str(k), k * 0.5)


def bucket(ns):
    if ns < 8:
        return max(ns, 0)
    e = ns.bit_length() - 1
    return (e - 2) * 8 + ((ns >> (e - 3)) & 7)


def bucket_upper(b):
    if b < 8:
        return b + 1
    e, sub = b // 8 + 2, b % 8
    return (8 + sub + 1) << (e - 3)


def main():
    n = int(sys.argv[1])
    d = {k: value(k) for k in range(n)}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", os.getpid(), flush=True)

    hist = [0] * 512
    clock = time.perf_counter_ns
    ops = errors = worst = 0
    last = clock()
    nxt = last + 1_000_000_000
    # Keys in a scattered order that covers the whole dict (Knuth's
    # multiplicative hash of a counter; random.randrange would cost more
    # than the lookup).
    i = random.Random(42).randrange(n)
    while not stop:
        for _ in range(1024):
            i += 1
            k = (i * 2654435761) % n
            t0 = clock()
            v = d.get(k)
            if v is None or v[0] != k or v[1] != str(k):
                errors += 1
            elif i % 10 == 0:
                d[k] = value(k)
            dt = clock() - t0
            hist[bucket(dt)] += 1
            if dt > worst:
                worst = dt
        ops += 1024
        now = clock()
        if now >= nxt:
            want, seen, b = (ops * 99 + 99) // 100, 0, 0
            while b < len(hist) - 1:
                seen += hist[b]
                if seen >= want:
                    break
                b += 1
            print("stat %.3f %.0f %.1f %.1f %d" % (time.time(), ops * 1e9 / (now - last),
                                                  bucket_upper(b) / 1000, worst / 1000, errors), flush=True)
            hist = [0] * 512
            ops = worst = 0
            last = now
            nxt = now + 1_000_000_000

    bad = sum(1 for k in range(n) if d.get(k) != value(k))
    print("verify", n, "errors", bad, flush=True)


if __name__ == "__main__":
    main()
