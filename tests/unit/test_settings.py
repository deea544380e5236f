"""The settings registry documents itself, and the generated files are current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from automem.cli import GENERATED
from automem.settings import GROUPS, Settings, registry, render_env_example

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented() -> None:
    entries = registry()
    assert len(entries) > 30
    for entry in entries:
        assert len(entry.help) > 15, f"{entry.env} needs help text"
        assert re.fullmatch(r"[A-Z][A-Z0-9_]+", entry.env), entry.env
        assert entry.group in GROUPS, entry.env
    envs = [e.env for e in entries]
    assert len(envs) == len(set(envs))


def test_generated_files_are_current() -> None:
    for path, render in GENERATED.items():
        assert path.exists(), f"{path} is missing: run `automem settings --write`"
        assert path.read_text() == render(), f"{path} is stale: run `automem settings --write`"


def test_env_example_names_every_variable() -> None:
    text = render_env_example()
    for entry in registry():
        assert f"# {entry.env}=" in text


def test_env_vars_and_aliases_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "9000")
    monkeypatch.setenv("QDRANT_VECTOR_SIZE", "768")
    monkeypatch.setenv("AUTOMEM_API_TOKEN", "s3cret")
    settings = Settings()
    assert settings.port == 9000 and settings.vector_size == 768
    assert settings.redacted()["AUTOMEM_API_TOKEN"] == "***"


def test_derived_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().embedded and Settings().resolved_vector_backend() == "edge"
    server = Settings(falkordb_host="db", falkordb_password="p@ss", qdrant_url="http://q:6333")
    assert not server.embedded
    assert server.graph_url() == "redis://:p%40ss@db:6379" and server.queue_url() == server.graph_url()
    assert server.resolved_vector_backend() == "qdrant"
    with pytest.raises(ValueError):
        Settings(content_soft_limit=3000)
    with pytest.raises(ValueError):
        Settings(job_retry_intervals="1,x")


def test_negative_falkordb_threads_are_refused() -> None:
    with pytest.raises(ValueError, match="AUTOMEM_FALKORDB_THREADS"):
        Settings(falkordb_threads=-1)
