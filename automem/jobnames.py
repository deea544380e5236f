"""The background jobs the core may ask for, by name: the contract between the two layers.

The core (API, restore, the queue module) enqueues a job by its `JobName`; the worker side
(`enrichment/`) binds each name to its function with `@job(JobName.X)` beside the function
(`enrichment.registry`), and its RQ job class resolves a name to that function when a worker runs
it. So the core never imports the worker side, and a job's name is written once here, not as a
dotted path wherever it is enqueued. `tests/unit/test_job_registry.py` fails when a name has no
function or two.
"""

from __future__ import annotations

from enum import StrEnum

# The RQ queues, in the order a worker of every queue takes their jobs; enrichment has its own
# workers in embedded mode (AUTOMEM_ENRICHMENT_WORKERS).
ENRICH_QUEUE = "enrich"
QUEUE_NAMES = ("embed", ENRICH_QUEUE, "maintenance")


class JobName(StrEnum):
    """A job's registered name; its RQ `func_name` in Redis."""

    DISPATCH_INTAKE = "dispatch_intake"
    EMBED = "embed_memories"
    REEMBED = "reembed"
    ENRICH = "enrich_memories"
    CLASSIFY = "classify_memory"
    RECONCILE = "reconcile"
    FLUSH_ACCESS = "flush_access"
    PURGE = "purge_deleted"
    CONSOLIDATE = "run_consolidation"
