"""What the core asks of the worker side, as interfaces the composition roots fill in.

The core never imports `enrichment/` (import-linter holds it to that). Where an API route needs
worker-side logic in the request itself — a consolidation dry run answers with what a run would
do, without queueing one — the app factory hands it an object implementing the protocol here.
Without one (a process built without the worker side) those routes answer 501.
"""

from __future__ import annotations

from typing import Any, Protocol


class ConsolidationPort(Protocol):
    """Consolidation as the API sees it: dry runs in the request, and the schedule's state. An
    implementation is built around the process's services."""

    destructive_modes: tuple[str, ...]

    def preview(self, mode: str) -> dict[str, Any]:
        """What a run of `mode` would do; writes nothing."""
        ...

    def status(self) -> dict[str, Any]:
        """Whether a run holds the lock, each task's interval and next run, the active scheduler,
        and the recorded runs (the body of GET /consolidate/status, without `status`)."""
        ...
