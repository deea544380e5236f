"""The intake's dispatch job: new memories the API handed over become embed and enrich jobs.

The request path only appends ids to two Redis lists (`JobQueue.submit`); this job pops them in
full chunks and enqueues the usual deterministic embed/enrich jobs, so one RQ enqueue serves many
writes and one model call embeds many texts. Each job holds one tenant's memories and carries
the tenant in its meta.
"""

from __future__ import annotations

from automem.backlog import ENRICH_CHUNK, by_tenant
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
        tenants = svc.graph.tenants_of(list({i for i, _ in embed} | {i for i, _ in enrich}))
        for tenant, part in by_tenant(embed, tenants, size):  # a job is one tenant's
            svc.jobs.enqueue_embed([i for i, _ in part], [h for _, h in part], tenant=tenant)
        for tenant, chunk in by_tenant(enrich, tenants, ENRICH_CHUNK):
            svc.jobs.enqueue_enrich([i for i, _ in chunk], [v for _, v in chunk], tenant=tenant)
        embedded, enriched = embedded + len(embed), enriched + len(enrich)
    return {"embed": embedded, "enrich": enriched}
