"""LLM classification: a memory the rules typed with low confidence gets a type from the LLM.

The enrichment job hands such memories over (`_classify_if_unsure` in `enrichment.enrich`). The
answer lands only if the client has neither changed the memory nor set a type since it was read.
"""

from __future__ import annotations

from typing import Any

from automem.history import JOB_CLASSIFY, diff
from automem.jobnames import JobName
from automem.llm import LlmFailed, LlmPaused, LlmRateLimited
from automem.timeutil import now_iso
from enrichment.context import current_services
from enrichment.registry import job


@job(JobName.CLASSIFY)
def classify_memory(memory_id: str, attempt: int = 0) -> dict[str, Any]:
    """LLM classification of a memory the rules were unsure about. The type lands only if the
    client has neither changed the memory nor set a type since it was read. While the LLM is
    paused (circuit breaker) or over its rate, the job reschedules itself for when it may call
    again instead of failing into a retry storm."""
    svc = current_services()
    doc = svc.graph.get_memory(memory_id)
    if svc.llm is None or doc is None or doc.classification in ("explicit", "llm"):
        return {"classified": False}
    try:
        found = svc.llm.classify(doc.content)
    except (LlmPaused, LlmRateLimited) as exc:
        delay = max(1.0, exc.retry_after)
        svc.jobs.enqueue_classify(memory_id, doc.version, attempt + 1, delay=delay)
        return {"classified": False, "deferred_seconds": exc.retry_after}
    except LlmFailed:
        return {"classified": False, "kept": doc.type}
    if found is None:
        return {"classified": False}
    changes = diff(doc, {"type": found[0], "confidence": found[1]})
    event = JOB_CLASSIFY.event("classified", now_iso(), changes)
    landed = svc.graph.set_llm_type(memory_id, doc.version, found[0], found[1], event)
    if landed:
        svc.sync.request([memory_id], payload_only=True)
    return {"classified": landed, "type": found[0], "confidence": found[1]}
