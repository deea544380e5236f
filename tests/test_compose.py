"""docker-compose.yml parses and wires every service to the settings it needs (no Docker engine here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from automem.settings import Settings, registry

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_services_and_health_checks() -> None:
    services = compose()["services"]
    assert set(services) == {"falkordb", "qdrant", "redis", "api", "worker"}
    for name, service in services.items():
        assert "healthcheck" in service, name
        assert service.get("restart") == "unless-stopped", name
    for name in ("falkordb", "qdrant", "redis"):
        assert services[name]["volumes"], name
    assert "gunicorn" not in str(services["api"]["command"])  # `automem serve` execs gunicorn itself
    assert services["worker"]["command"] == ["automem", "worker"]
    assert "ports" not in services["worker"]  # scalable: no fixed host port


def test_env_names_are_known_settings_and_complete() -> None:
    known = {name for e in registry() for name in (e.env, *e.aliases)}
    services = compose()["services"]
    for name in ("api", "worker"):
        env = services[name]["environment"]
        unknown = set(env) - known
        assert not unknown, f"{name} sets unknown variables {unknown}"
        for needed in (
            "FALKORDB_URL",
            "REDIS_URL",
            "QDRANT_URL",
            "AUTOMEM_API_TOKEN",
            "AUTOMEM_VECTOR_BACKEND",
        ):
            assert needed in env, (name, needed)


def test_compose_settings_resolve_to_server_mode() -> None:
    env = compose()["services"]["api"]["environment"]
    values = {k: v for k, v in env.items() if isinstance(v, str) and "${" not in v}
    fields = {e.env: e.name for e in registry()}
    settings = Settings(**{fields[k]: v for k, v in values.items() if k in fields})
    assert not settings.embedded
    assert settings.resolved_vector_backend() == "qdrant"
    assert settings.queue_url() == "redis://redis:6379/0"
