"""The worker-side services, built once per worker process and reused by every job.

Jobs take ids, never objects; they look their clients up here. Tests that run jobs in-process
install the app's services with `use_services()`.
"""

from __future__ import annotations

import os
import threading

from automem.services import Services, build_services, vectors_owned_here
from automem.settings import load_settings

_lock = threading.Lock()
_services: Services | None = None
_pid: int | None = None


def use_services(services: Services | None) -> None:
    global _services, _pid
    with _lock:
        _services, _pid = services, os.getpid() if services else None


def current_services() -> Services:
    """The services of this process, built from the environment on first use (and after a fork)."""
    global _services, _pid
    with _lock:
        if _services is None or _pid != os.getpid():
            settings = load_settings()
            _services = build_services(settings, owner_of_vectors=vectors_owned_here(settings, "worker"))
            _pid = os.getpid()
        return _services
