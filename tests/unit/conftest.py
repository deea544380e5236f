"""The unit tier: no stores, no subprocesses. A test here that asks for the embedded FalkorDB (and
so for Redis, the app or the services) fails at once instead of quietly starting one."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def falkordb_server() -> None:
    raise pytest.UsageError("tests/unit must not start stores: move the test to tests/integration")
