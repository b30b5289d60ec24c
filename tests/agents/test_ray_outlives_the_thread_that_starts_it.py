"""A local Ray cluster started from a job's thread outlives that thread.

Ray starts the cluster's processes with the parent-death signal, which Linux ties to the thread that
started them: an Arena run on Ray, started on its job thread, had GCS and the raylet killed (SIGKILL)
when the job ended, and the driver ended the whole window a minute later ("Failed to connect to GCS
within 60 seconds ... The program will terminate"). ``init_ray`` now starts it on a thread that lives
as long as the process.
"""

from __future__ import annotations

import threading
import time

import pytest

pytestmark = pytest.mark.ray


def test_the_cluster_started_on_a_job_thread_lives_after_the_thread_ends() -> None:
    ray = pytest.importorskip("ray")
    from agents.ray_util import init_ray

    if ray.is_initialized():
        ray.shutdown()
    job = threading.Thread(target=init_ray, args=(1,), name="arena-job")
    job.start()
    job.join()
    try:
        time.sleep(1.0)  # the kernel's SIGKILL came at once when the starting thread ended
        node = ray._private.worker._global_node
        codes = {kind: [p.process.poll() for p in procs] for kind, procs in node.all_processes.items()}
        assert codes["gcs_server"] == [None] and codes["raylet"] == [None], codes
        assert ray.get(ray.remote(lambda: 41 + 1).remote(), timeout=60) == 42
    finally:
        ray.shutdown()
