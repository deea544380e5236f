"""Jobs left running by a dead worker process go back to RQ's abandoned-job handling at once;
jobs of a live worker are left alone."""

from __future__ import annotations

import os
import subprocess

import redis
from rq import Retry, SimpleWorker
from rq.job import JobStatus

from automem.jobnames import JobName
from automem.services import Services


def _running_job(services: Services, conn: redis.Redis, job_id: str, worker_pid: int) -> SimpleWorker:
    """A job in the embed queue's StartedJobRegistry, run by a worker registered with `worker_pid`."""
    queue = services.jobs.queues["embed"]
    job = queue.enqueue(JobName.EMBED.value, [], job_id=job_id, retry=Retry(max=2, interval=0))
    worker = SimpleWorker([queue], connection=conn)
    worker.register_birth()
    conn.hset(worker.key, "pid", worker_pid)
    queue.remove(job)
    with conn.pipeline() as pipe:
        job.prepare_for_execution(worker.name, pipe)
        pipe.execute()
    worker.prepare_execution(job)
    assert job.get_status() == JobStatus.STARTED
    return worker


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_dead_workers_job_is_retried_at_once(services: Services, redis_conn: redis.Redis) -> None:
    registry = services.jobs.queues["embed"].started_job_registry
    _running_job(services, redis_conn, "job-of-a-dead-worker", _dead_pid())
    assert registry.get_job_ids(cleanup=True) == ["job-of-a-dead-worker"]  # RQ's heartbeat has not expired

    assert services.jobs.recover_abandoned() == ["job-of-a-dead-worker"]
    assert registry.get_job_ids() == []
    job = services.jobs.queues["embed"].fetch_job("job-of-a-dead-worker")
    assert job is not None and job.get_status() in (JobStatus.QUEUED, JobStatus.SCHEDULED)
    assert job.retries_left == 1
    assert services.jobs.recover_abandoned() == []


def test_a_live_workers_job_is_left_alone(services: Services, redis_conn: redis.Redis) -> None:
    registry = services.jobs.queues["embed"].started_job_registry
    _running_job(services, redis_conn, "job-of-a-live-worker", os.getppid())
    assert services.jobs.recover_abandoned() == []
    assert registry.get_job_ids() == ["job-of-a-live-worker"]


def test_a_job_of_a_worker_whose_key_expired_is_retried(services: Services, redis_conn: redis.Redis) -> None:
    worker = _running_job(services, redis_conn, "job-of-a-silent-worker", os.getppid())
    redis_conn.delete(worker.key)  # no heartbeat for the worker TTL
    assert services.jobs.recover_abandoned() == ["job-of-a-silent-worker"]
