"""Generated docs: built from the OpenAPI document and the settings registry, and checked for staleness."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from flask import Blueprint

from automem import cli, docsgen
from automem.api.routes import routes_app
from automem.openapi import OPERATIONS, build_spec, openapi_path
from tests.conftest import Api


def test_the_offline_document_is_the_served_one(api: Api) -> None:
    served = api.get("/openapi.json").get_json()
    assert served == json.loads(json.dumps(docsgen.openapi_document()))


def test_api_reference_describes_every_operation() -> None:
    text = docsgen.render_api_reference()
    for method, rule in OPERATIONS:
        path = openapi_path(rule)
        assert f"### `{method} {path}`" in text, (method, path)
    assert "| `tag_mode` | one of `any`, `all` |" in text  # query parameters come from the models
    assert "### MemoryCreate" in text and "[MemoryCreate](#memorycreate)" in text


def test_a_new_route_appears_in_the_reference_without_touching_the_generator() -> None:
    app = routes_app()
    extra = Blueprint("extra", __name__)
    extra.add_url_rule("/brand-new/<memory_id>", "brand_new", lambda memory_id: "", methods=["PUT"])
    app.register_blueprint(extra)
    text = docsgen.render_api_reference(build_spec(app))
    assert "### `PUT /brand-new/{memory_id}`" in text
    assert "[`/brand-new/{memory_id}`](#put-brand-newmemory_id)" in text


def test_every_setting_lands_in_exactly_one_place_of_the_chart() -> None:
    config = {e.env for e in docsgen.helm_config_entries()}
    secrets = {e.env for e in docsgen.helm_secret_entries()}
    managed, embedded = set(docsgen.HELM_MANAGED), docsgen.HELM_EMBEDDED_ONLY
    client = {e.env for e in docsgen.registry() if e.group in docsgen.CLIENT_GROUPS}
    every = {e.env for e in docsgen.registry()}
    assert client and config | secrets | managed | embedded | client == every
    assert not (config | secrets) & client
    assert not config & secrets and not (config | secrets) & (managed | embedded)
    needed = {"AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN", "FALKORDB_PASSWORD", "QDRANT_API_KEY", "OPENAI_API_KEY"}
    assert needed <= secrets


def test_docs_check_fails_on_a_stale_file_and_write_repairs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "docs" / "generated.md"
    target.parent.mkdir()
    target.write_text("edited by hand\n")
    monkeypatch.setattr(docsgen, "ROOT", tmp_path)
    monkeypatch.setattr(docsgen, "GENERATED", {target: lambda: "generated\n"})
    assert cli.main(["docs", "--check"]) == 1
    assert "docs/generated.md" in capsys.readouterr().out
    assert cli.main(["settings", "--check"]) == 1  # the older spelling checks the same files
    assert cli.main(["docs", "--write"]) == 0
    assert target.read_text() == "generated\n"
    assert cli.main(["docs"]) == 0


def test_relative_links_in_the_docs_resolve() -> None:
    root = docsgen.ROOT
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
