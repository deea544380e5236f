"""The job registry names every job the core may enqueue, once, and RQ runs a job by its name."""

from __future__ import annotations

import redis
from rq import Queue

from automem.jobnames import JobName
from enrichment.registry import DuplicateJobName, RegisteredJob, job
from enrichment.worker import load_jobs


def test_every_job_name_has_exactly_one_function() -> None:
    jobs = load_jobs()
    assert sorted(jobs) == sorted(name.value for name in JobName)
    assert len({id(f) for f in jobs.values()}) == len(jobs)


def test_a_second_function_under_a_taken_name_is_refused() -> None:
    load_jobs()
    try:
        job(JobName.EMBED)(lambda: None)
    except DuplicateJobName as exc:
        assert "embed_memories" in str(exc)
    else:
        raise AssertionError("a duplicate registration was accepted")


def test_a_job_enqueued_by_name_resolves_to_its_function() -> None:
    jobs = load_jobs()
    # Job objects built without Redis: only the name-to-function resolution is under test.
    queue = Queue("embed", connection=redis.Redis(), job_class=RegisteredJob)
    created = queue.create_job(JobName.EMBED.value, args=([],))
    assert created.func is jobs["embed_memories"]
    legacy = queue.create_job("enrichment.jobs.reconcile")
    assert legacy.func is jobs["reconcile"]
