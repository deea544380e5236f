"""The gunicorn worker's start-up hook: the app's start-up objects leave the garbage collector's
full passes (frozen), and SIGTERM ends live streams first."""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from automem import gunicorn_conf


@pytest.fixture
def clean_gc_and_signal() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    gc.unfreeze()
    yield
    gc.unfreeze()
    signal.signal(signal.SIGTERM, previous)


def test_an_automem_worker_freezes_its_start_up_objects(clean_gc_and_signal: None) -> None:
    assert gc.get_freeze_count() == 0
    app = SimpleNamespace(extensions={"automem": object()})
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi=app))
    assert gc.get_freeze_count() > 0
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL


def test_another_app_is_left_alone(clean_gc_and_signal: None) -> None:
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi=SimpleNamespace(extensions={})))
    assert gc.get_freeze_count() == 0
