"""The pure rules behind the entity and graph routes: merge candidates, the audit's quality
rules, how a merge rewrites a memory, how enrichment maps merged names, and the visual fields."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from automem.entities import (
    EntityName,
    _alias_lists,
    check_slug,
    merge_candidates,
    rewrite_for_merge,
    tag_problems,
)
from automem.errors import InvalidInput
from automem.graphview import memory_types, visual
from automem.record import MemoryRecord
from enrichment.enrich import canonical_entities, derive
from enrichment.entities import Entity


def _entity(kind: str, slug: str, refs: int = 1, name: str | None = None) -> dict[str, Any]:
    return {
        "key": f"default:{kind}:{slug}",
        "kind": kind,
        "slug": slug,
        "name": name or slug.title(),
        "references": refs,
        "aliases": [],
        "alias_keys": [],
        "alias_names": [],
        "merged_into": None,
    }


def _reasons(entities: list[dict[str, Any]]) -> dict[frozenset[str], tuple[str, str]]:
    return {
        frozenset((c["entity_a"], c["entity_b"])): (c["reason"], c["canonical"])
        for c in merge_candidates(entities, 100)
    }


def test_merge_candidate_rules() -> None:
    found = _reasons(
        [
            _entity("person", "rachel", 5),
            _entity("person", "rach", 1),
            _entity("person", "rachel-green", 2),
            _entity("person", "dr-rachel-green", 1),
            _entity("organization", "open-ai", 1),
            _entity("organization", "openai", 3),
            _entity("tool", "stripe", 4),
            _entity("organization", "stripe", 1),
            _entity("person", "ann", 1),
            _entity("person", "annabelle", 1),
            _entity("place", "rach", 1),
        ]
    )
    assert found[frozenset({"entity:person:rach", "entity:person:rachel"})] == (
        "short_form",
        "entity:person:rachel",
    )
    assert found[frozenset({"entity:person:rachel", "entity:person:rachel-green"})] == (
        "name_prefix",
        "entity:person:rachel",  # more mentioned
    )
    pair = frozenset({"entity:person:rachel-green", "entity:person:dr-rachel-green"})
    assert found[pair] == ("same_name", "entity:person:rachel-green")
    assert found[frozenset({"entity:organization:open-ai", "entity:organization:openai"})][0] == "same_name"
    assert found[frozenset({"entity:tool:stripe", "entity:organization:stripe"})] == (
        "same_slug_other_kind",
        "entity:tool:stripe",
    )
    assert frozenset({"entity:person:ann", "entity:person:annabelle"}) not in found  # too short a part
    assert frozenset({"entity:place:rach", "entity:person:rachel"}) not in found  # other kind


def test_candidates_are_ranked_and_limited() -> None:
    entities = [
        _entity("person", "rachel", 9),
        _entity("person", "rach"),
        _entity("tool", "x1"),
        _entity("place", "x1"),
    ]
    ranked = merge_candidates(entities, 10)
    assert [c["confidence"] for c in ranked] == sorted((c["confidence"] for c in ranked), reverse=True)
    assert len(merge_candidates(entities, 1)) == 1


@pytest.mark.parametrize(
    ("tag", "entity", "problems"),
    [
        ("entity:person:rachel", {"merged_into": None}, []),
        ("entity:person:rachel", None, ["no_entity"]),
        ("entity:person:rach", {"merged_into": "default:person:rachel"}, ["merged"]),
        ("entity:gadget:thing", {"merged_into": None}, ["unknown_category"]),
        ("entity:person", None, ["malformed"]),
        ("entity:person:Bad_Slug", None, ["bad_slug", "no_entity"]),
        ("entity:tool:x", {"merged_into": None}, ["too_short"]),
        ("entity:tool:2024-01", {"merged_into": None}, ["numeric"]),
        ("entity:tool:" + "a" * 65, {"merged_into": None}, ["too_long"]),
    ],
)
def test_audit_quality_rules(tag: str, entity: dict[str, Any] | None, problems: list[str]) -> None:
    assert tag_problems(tag, entity) == problems


def test_a_merge_rewrites_tags_run_info_and_names() -> None:
    doc = MemoryRecord(
        id="m1",
        tags=["lunch", "entity:person:rach", "entity:person:rachel"],
        metadata={
            "entities": {"person": ["Monica", "Rach"], "place": ["Paris"]},
            "enrichment": {"tags": ["entity:person:rach", "entity:person:rachel"], "version": 1},
            "other": {"kept": True},
        },
    )
    props = rewrite_for_merge(
        doc, EntityName("person", "rach", "Rach"), EntityName("person", "rachel", "Rachel"), "2030-01-01"
    )
    assert props["tags"] == ["lunch", "entity:person:rachel"]  # de-duplicated
    assert props["tag_prefixes"][:3] == ["lunch", "entity", "entity:person"]
    assert props["updated_at"] == "2030-01-01"
    metadata = json.loads(props["metadata"])
    assert metadata["entities"] == {"person": ["Monica", "Rachel"], "place": ["Paris"]}
    assert metadata["enrichment"]["tags"] == ["entity:person:rachel"]
    assert metadata["other"] == {"kept": True}
    assert doc.metadata["entities"]["person"] == ["Monica", "Rach"]  # the record is untouched


def test_a_merge_of_an_unmentioned_memory_changes_only_its_time() -> None:
    doc = MemoryRecord(id="m2", tags=["x"], metadata={})
    props = rewrite_for_merge(doc, EntityName("person", "a", "A"), EntityName("person", "b", "B"), "t")
    assert props == {"updated_at": "t"}


def test_alias_lists_never_hold_the_survivor() -> None:
    rach = {
        **_entity("person", "rach", name="Rach"),
        "alias_keys": ["default:person:rachel"],
        "alias_names": ["Rachel"],
    }
    rachel = _entity("person", "rachel", name="Rachel")
    lists = _alias_lists(rach, rachel)  # merging rachel back into rach
    assert lists == {
        "aliases": ["rachel"],
        "alias_keys": ["default:person:rachel"],
        "alias_names": ["Rachel"],
    }
    lists = _alias_lists(rachel, rach)
    assert lists["alias_keys"] == ["default:person:rach"] and lists["alias_names"] == ["Rach"]


def test_enrichment_maps_merged_names_to_their_survivor() -> None:
    def resolve(keys: Sequence[str]) -> Mapping[str, EntityName]:
        assert list(keys) == ["default:person:rach", "default:person:rachel", "default:place:paris"]
        return {"default:person:rach": EntityName("person", "rachel", "Rachel")}

    found = [
        Entity("person", "Rach", "rach"),
        Entity("person", "Rachel", "rachel"),
        Entity("place", "Paris", "paris"),
    ]
    assert canonical_entities(found, "default", resolve) == [
        Entity("person", "Rachel", "rachel"),
        Entity("place", "Paris", "paris"),
    ]
    doc = MemoryRecord(id="m", content="I had lunch with Rach yesterday.")
    plan = derive(
        doc,
        now="t",
        max_entities=12,
        max_tags=50,
        summary_length=240,
        resolve=lambda keys: {"default:person:rach": EntityName("person", "rachel", "Rachel")},
    )
    assert plan.tags_added == ["entity:person:rachel"]
    assert [e["key"] for e in plan.entities] == ["default:person:rachel"]


def test_slugs_and_types_are_checked() -> None:
    assert check_slug(" Rachel-Green ", "slug") == "rachel-green"
    for bad in ("", "a b", "a--b", "-a", "a" * 201, "rach\x00"):
        with pytest.raises(InvalidInput):
            check_slug(bad, "slug")
    assert memory_types("decision, Insight") == ["Decision", "Insight"]
    assert memory_types(["context"]) == ["Context"]
    with pytest.raises(ValueError):
        memory_types("Memoir")


def test_visual_fields() -> None:
    assert visual(1.0, 1.0, "Decision") == {"color": "#4F7FE8", "radius": 2.0, "opacity": 1.0}
    assert visual(None, None, "Unknown")["radius"] == 1.25  # AutoMem's defaults: 0.5 and 0.8
    assert visual(None, None, None)["opacity"] == pytest.approx(0.88)
