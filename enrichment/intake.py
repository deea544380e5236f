"""The intake's dispatch job: new memories the API handed over become embed and enrich jobs.

The request path only appends ids to two Redis lists (`JobQueue.submit`); this job pops them in
full chunks and enqueues the usual deterministic embed/enrich jobs, so one RQ enqueue serves many
writes and one model call embeds many texts.
"""

from __future__ import annotations

from automem.backlog import ENRICH_CHUNK
from automem.jobnames import JobName
from enrichment.context import current_services
from enrichment.registry import job

# Intake entries a dispatch job pops per round.
INTAKE_BATCH = 5000


@job(JobName.DISPATCH_INTAKE)
def dispatch_intake(batch: int = INTAKE_BATCH) -> dict[str, int]:
    """Turn the intake into embed and enrich jobs of full chunks, with the usual deterministic
    ids. Entries are popped atomically; if this job dies between popping and enqueueing,
    reconcile (run at every worker start) finds the memories."""
    svc = current_services()
    embedded = enriched = 0
    while True:
        embed, enrich = svc.jobs.take_intake(batch)
        if not embed and not enrich:
            break
        size = svc.settings.embedding_batch_size
        for start in range(0, len(embed), size):
            part = embed[start : start + size]
            svc.jobs.enqueue_embed([i for i, _ in part], [h for _, h in part])
        for start in range(0, len(enrich), ENRICH_CHUNK):
            chunk = enrich[start : start + ENRICH_CHUNK]
            svc.jobs.enqueue_enrich([i for i, _ in chunk], [v for _, v in chunk])
        embedded, enriched = embedded + len(embed), enriched + len(enrich)
    return {"embed": embedded, "enrich": enriched}
