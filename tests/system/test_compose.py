"""docker-compose.yml parses and wires every service to the settings it needs.

There is no Docker engine on this machine: the file is checked as data, with Compose's variable
interpolation (`${VAR}`, `${VAR:-default}`, `${VAR:?error}`) applied by the small function below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from automem.cli import build_parser
from automem.settings import Settings, registry

ROOT = Path(__file__).resolve().parents[2]
STORES = ("falkordb", "qdrant", "redis")
SECRETS = {
    "AUTOMEM_API_TOKEN": "tok",
    "FALKORDB_PASSWORD": "graphpw",
    "QDRANT_API_KEY": "qkey",
    "REDIS_PASSWORD": "queuepw",
}


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


class MissingVariable(Exception):
    pass


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's interpolation of the forms this file uses."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3) or ""
        current = env.get(name, "")
        if op == ":?" and not current:
            raise MissingVariable(f"{name}: {arg}")
        if op == ":-" and not current:
            return arg
        return current

    return re.sub(r"\$\{([A-Z0-9_]+)(?:(:[-?])([^}]*))?\}", one, value)


def services(env: dict[str, str] | None = None) -> dict[str, Any]:
    return interpolate(compose()["services"], SECRETS if env is None else env)  # type: ignore[no-any-return]


def test_services_health_checks_restart_policies_and_volumes() -> None:
    found = services()
    assert set(found) == {"falkordb", "qdrant", "redis", "api", "worker", "falkordb-browser"}
    for name, service in found.items():
        assert service.get("restart") == "unless-stopped", name
        if name != "falkordb-browser":
            assert "healthcheck" in service, name
            assert "profiles" not in service, name
    volumes = compose()["volumes"]
    for name in STORES:
        named = [v.split(":")[0] for v in found[name]["volumes"]]
        assert named and all(v in volumes for v in named), name  # named volumes, not bind mounts
    for name in ("api", "worker"):
        for store in STORES:
            assert found[name]["depends_on"][store] == {"condition": "service_healthy"}, (name, store)
        assert found[name]["read_only"] is True and found[name]["tmpfs"] == ["/tmp"]


def test_api_runs_gunicorn_through_automem_serve_and_is_probed_on_health() -> None:
    api = services()["api"]
    assert api["command"] == ["automem", "serve", "--host", "0.0.0.0", "--port", "8001"]
    assert "gunicorn" not in str(api["command"])  # `automem serve` execs gunicorn itself in server mode
    assert "/health" in " ".join(api["healthcheck"]["test"])
    assert api["ports"] == ["127.0.0.1:8001:8001"]  # loopback unless AUTOMEM_BIND says otherwise
    exposed = services({**SECRETS, "AUTOMEM_BIND": "0.0.0.0", "AUTOMEM_HOST_PORT": "9000"})["api"]
    assert exposed["ports"] == ["0.0.0.0:9000:8001"]


def test_workers_are_scalable_and_checked_by_their_own_command() -> None:
    worker = services()["worker"]
    assert worker["command"] == ["automem", "worker"]
    assert "ports" not in worker  # `--scale worker=N` needs no fixed host port
    assert worker["deploy"]["replicas"] == "2"
    assert services({**SECRETS, "AUTOMEM_WORKER_REPLICAS": "5"})["worker"]["deploy"]["replicas"] == "5"
    check = worker["healthcheck"]["test"]
    assert check[0] == "CMD" and check[1:] == ["automem", "worker", "--check"]
    assert build_parser().parse_args(check[2:]).check is True  # the CLI has this flag


def test_the_browser_ui_is_an_opt_in_profile_on_loopback() -> None:
    browser = services()["falkordb-browser"]
    assert browser["profiles"] == ["browser"]
    assert all(port.startswith("127.0.0.1:") for port in browser["ports"])
    assert browser["depends_on"]["falkordb"] == {"condition": "service_healthy"}


def test_env_names_are_known_settings_and_complete() -> None:
    known = {name for e in registry() for name in (e.env, *e.aliases)}
    found = services()
    for name in ("api", "worker"):
        env = found[name]["environment"]
        assert set(env) <= known, f"{name} sets unknown variables {set(env) - known}"
        for needed in (
            "FALKORDB_HOST",
            "FALKORDB_PASSWORD",
            "REDIS_URL",
            "QDRANT_URL",
            "QDRANT_API_KEY",
            "AUTOMEM_API_TOKEN",
            "AUTOMEM_VECTOR_BACKEND",
        ):
            assert needed in env, (name, needed)
        assert found[name]["env_file"] == [{"path": ".env", "required": False}]


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_every_secret_is_required(missing: str) -> None:
    with pytest.raises(MissingVariable, match=missing):
        services({k: v for k, v in SECRETS.items() if k != missing})


def test_compose_settings_resolve_to_server_mode_with_the_stores_credentials() -> None:
    found = services()
    env = found["api"]["environment"]
    fields = {e.env: e.name for e in registry()}
    settings = Settings(**{fields[k]: v for k, v in env.items() if k in fields})
    assert not settings.embedded
    assert settings.resolved_vector_backend() == "qdrant"
    assert settings.graph_url() == "redis://:graphpw@falkordb:6379"
    assert settings.queue_url() == "redis://:queuepw@redis:6379/0"
    assert settings.qdrant_url == "http://qdrant:6333" and settings.qdrant_api_key == "qkey"
    assert settings.api_processes == 2
    # The stores require exactly the credentials the service presents.
    falkordb = found["falkordb"]["command"]
    assert falkordb[falkordb.index("--requirepass") + 1] == "graphpw"
    assert falkordb[falkordb.index("--appendonly") + 1] == "yes"
    redis = found["redis"]["command"]
    assert redis[redis.index("--requirepass") + 1] == "queuepw"
    assert found["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"] == "qkey"
    assert found["falkordb"]["environment"]["REDISCLI_AUTH"] == "graphpw"  # its health check authenticates
