"""bench cold_start's first_paint_cpu_s reads a process's CPU seconds from /proc: the same as the process's own
count (time.process_time) for this process, after some work."""
import os
import time

from bench.cold_start import cpu_s


def test_cpu_seconds_from_proc_equal_the_process_own_count():
    sum(i * i for i in range(3_000_000))  # some CPU work, so both counts are well above one clock tick
    before_own, proc, after_own = time.process_time(), cpu_s(os.getpid()), time.process_time()
    assert proc > 0.05
    assert before_own - 0.02 <= proc <= after_own + 0.02  # /proc counts in ticks of 1/100 s
