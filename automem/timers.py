"""Deferred work on a timer thread: buffers that write themselves out a moment later."""

from __future__ import annotations

import threading
from collections.abc import Callable


def timer_running(
    timer: threading.Timer | None, seconds: float, action: Callable[[], None]
) -> threading.Timer:
    """`timer` while it has yet to finish, else a new daemon timer that runs `action` in
    `seconds`. A timer thread does not survive a fork, so a child process sees its parent's
    timer dead and starts its own; call it with the caller's lock held."""
    if timer is not None and timer.is_alive():
        return timer
    started = threading.Timer(seconds, action)
    started.daemon = True
    started.start()
    return started
