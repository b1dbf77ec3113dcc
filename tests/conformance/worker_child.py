"""A worker process for the worker tests: ``python worker_child.py URL SLEEP LEASE``.

Runs one :class:`lossgate.ops.worker.Worker` whose compressor sleeps ``SLEEP`` seconds
(so a test can kill it mid-job), with a ``LEASE``-second lease, until SIGTERM.
Prints ``CLAIMED <job id>`` when it holds a job.
"""

from __future__ import annotations

import sys

from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.ops.worker import Worker, WorkerConfig, open_worker_memory
from lossgate.testing.compressors import SleepingCompressor


class AnnouncingWorker(Worker):
    def claim(self):  # type: ignore[no-untyped-def]
        job = super().claim()
        if job is not None:
            print(f"CLAIMED {job.job_id}", flush=True)
        return job


def main() -> None:
    url, sleep, lease = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    memory = open_worker_memory(url, migrate=False)
    worker = AnnouncingWorker(
        memory,
        compressor=SleepingCompressor(sleep),
        config=WorkerConfig(lease_s=lease, heartbeat_s=lease / 3, poll_s=0.1),
        consolidation=ConsolidationConfig(timeout_s=60),
    )
    worker.install_signal_handlers()
    print("READY", flush=True)
    worker.run()
    print(f"STOPPED {worker.processed}", flush=True)


if __name__ == "__main__":
    main()
