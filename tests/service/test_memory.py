"""A worker gives back the memory a large body's writer thread freed (``service.memory.give_back``):
without it glibc keeps the freed medium-sized objects in the thread's arena, and a worker's RSS climbs
with the largest sessions it has read (the soak of benchmarks/soak.py). Linux (glibc, /proc), as CI."""

from __future__ import annotations

import threading

from sessionstore.service import memory


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_memory_a_thread_freed_goes_back_to_the_system() -> None:
    def churn() -> None:
        held = [bytes(1000) + str(n).encode() for n in range(200_000)]  # ~200 MB of message-sized objects
        del held[::2]  # (holes first, as a body's objects are freed in no order)
        del held

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    kept = rss_mb()
    assert memory.give_back()
    assert rss_mb() < kept - 120  # (most of the freed ~200 MB left the process)

