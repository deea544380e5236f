"""Rule-based entity extraction: each kind, vocabulary aliases, quality gates, salience and slugs."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from enrichment.entities import KINDS, Entity, _Found, extract_entities, slugify


def tags(text: str, limit: int = 12) -> list[str]:
    return [e.tag for e in extract_entities(text, limit=limit)]


def of_kind(text: str, kind: str) -> list[str]:
    return [e.slug for e in extract_entities(text) if e.kind == kind]


# --- public interface -------------------------------------------------------------------------


def test_entity_is_frozen_and_builds_its_tag() -> None:
    entity = Entity("tool", "PostgreSQL", "postgresql")
    assert entity.tag == "entity:tool:postgresql"
    with pytest.raises(dataclasses.FrozenInstanceError):
        entity.slug = "other"  # type: ignore[misc]


def test_kinds_are_the_five_documented_ones() -> None:
    assert KINDS == ("person", "tool", "project", "organization", "place")


def test_transcript_turn_yields_speaker_place_person_and_tool_in_order() -> None:
    text = "Alice: I finally moved to Lisbon last week, and Bob helped me set up Postgres."
    assert extract_entities(text) == [
        Entity("person", "Alice", "alice"),
        Entity("place", "Lisbon", "lisbon"),
        Entity("person", "Bob", "bob"),
        Entity("tool", "PostgreSQL", "postgresql"),
    ]


@pytest.mark.parametrize("text", ["", "   \n\t", "ok", "..."])
def test_empty_or_trivial_text_has_no_entities(text: str) -> None:
    assert extract_entities(text) == []


# --- slugs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Bob Smith", "bob-smith"),
        ("José Álvarez", "jose-alvarez"),
        ("Kraków", "krakow"),
        ("Straße", "strasse"),
        ("O\u2019Brien", "o-brien"),
        ("O'Brien", "o-brien"),
        ("  Next.js!! ", "next-js"),
        ("--", ""),
        ("北京", ""),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_unicode_person_keeps_display_name_and_gets_ascii_slug() -> None:
    found = extract_entities("José Álvarez joined Acme Corp in São Paulo.")
    assert found == [
        Entity("person", "José Álvarez", "jose-alvarez"),
        Entity("organization", "Acme Corp", "acme-corp"),
        Entity("place", "São Paulo", "sao-paulo"),
    ]


# --- tools ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Our data lives in postgres.", "postgresql"),
        ("Deploys go to k8s on Friday.", "kubernetes"),
        ("Rewrote the widget in plain js.", "javascript"),
        ("Opened it in vscode.", "vs-code"),
        ("Install it with brew install using homebrew.", "homebrew"),
    ],
)
def test_tool_aliases_map_to_one_canonical_slug(text: str, slug: str) -> None:
    assert slug in of_kind(text, "tool")


def test_aliases_of_one_tool_are_deduplicated() -> None:
    assert tags("Postgres is great. I love PostgreSQL and psql.") == ["entity:tool:postgresql"]


def test_symbolic_language_names_get_distinct_slugs() -> None:
    assert of_kind("Use C++ and C# for the engine; F# maybe, or .NET.", "tool") == [
        "cpp",
        "csharp",
        "fsharp",
        "dotnet",
    ]


def test_switch_and_migration_phrases_name_both_tools() -> None:
    assert of_kind("We switched from MySQL to PostgreSQL, deployed with Docker.", "tool") == [
        "mysql",
        "postgresql",
        "docker",
    ]


def test_unknown_names_after_tool_triggers_are_tools() -> None:
    assert of_kind("Migrated from Heroku to Fly.io, using Zorblax for queues.", "tool") == [
        "heroku",
        "fly-io",
        "zorblax",
    ]


def test_versus_names_both_sides() -> None:
    assert of_kind("Benchmarked Quibble vs Frobnitz last night.", "tool") == ["quibble", "frobnitz"]


def test_camelcase_dotted_and_versioned_tokens_are_tools() -> None:
    found = extract_entities("Tried HyperGraph with Three.js and gpt-4o-mini yesterday.")
    assert [(e.kind, e.name) for e in found] == [
        ("tool", "HyperGraph"),
        ("tool", "Three.js"),
        ("tool", "gpt-4o-mini"),
    ]


def test_backticked_names_are_explicit_tools_but_code_is_not() -> None:
    text = "Run `redis-cli` and `pre-commit`, not `self.config`, `useState`, `README.md` or `user_id`."
    assert of_kind(text, "tool") == ["redis-cli", "pre-commit"]


def test_ambiguous_tool_words_need_context() -> None:
    assert of_kind("Let's go to the park and react calmly.", "tool") == []
    assert of_kind("The service is written in Go and React.", "tool") == ["go", "react"]


def test_given_name_tools_need_technical_context() -> None:
    assert tags("Ruby said she'd bring the cake.") == ["entity:person:ruby"]
    assert of_kind("We use Ruby and Python for scripts.", "tool") == ["ruby", "python"]


# --- projects ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Kickoff for project Apollo is Monday.", "Apollo"),
        ("Project Blue Heron ships next week.", "Blue Heron"),
        ("The Apollo project is late.", "Apollo"),
        ("Can you review the automem-core repo?", "automem-core"),
        ("I made a repo called memex-api for it.", "memex-api"),
        ('Started project "Night Owl" today.', "Night Owl"),
    ],
)
def test_projects(text: str, name: str) -> None:
    projects = [e for e in extract_entities(text) if e.kind == "project"]
    assert [e.name for e in projects] == [name]


def test_a_tool_named_project_describes_rather_than_names_it() -> None:
    assert tags("The React project is fine.") == ["entity:tool:react"]


# --- organisations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("I work at Initech Inc now.", "initech-inc"),
        ("She studied at the University of Michigan.", "university-of-michigan"),
        ("The Python Software Foundation funds it.", "python-software-foundation"),
        ("He interned at Google last summer.", "google"),
        ("I'm an engineer at Hooli these days.", "hooli"),
        ("The CEO of Pied Piper resigned.", "pied-piper"),
        ("We hired a company called Globex.", "globex"),
    ],
)
def test_organizations(text: str, slug: str) -> None:
    assert of_kind(text, "organization") == [slug]


def test_org_suffix_beats_the_place_inside_it() -> None:
    assert tags("Met them at the Bank of America office in New York University.") == [
        "entity:organization:bank-of-america",
        "entity:organization:new-york-university",
    ]


def test_ambiguous_company_names_need_context() -> None:
    assert of_kind("I ate an apple.", "organization") == []
    assert of_kind("I interviewed at Apple.", "organization") == ["apple"]


# --- places -----------------------------------------------------------------------------------


def test_gazetteer_places_and_suffixed_places() -> None:
    text = "We flew to Tokyo, then hiked Mount Rainier, saw Central Park and Salt Lake City."
    assert of_kind(text, "place") == ["tokyo", "mount-rainier", "central-park", "salt-lake-city"]


def test_name_like_places_need_a_preposition_or_neighbouring_place() -> None:
    assert tags("Jordan said hi.") == ["entity:person:jordan"]
    assert of_kind("I moved to Jordan.", "place") == ["jordan"]
    assert of_kind("Austin, Texas is hot.", "place") == ["austin", "texas"]


def test_place_beside_an_unknown_name_is_part_of_a_person() -> None:
    assert tags("Taylor Swift played a show.") == ["entity:person:taylor-swift"]


# --- people -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Had lunch with Priya today.", "priya"),
        ("Yesterday I met Tomasz downtown.", "tomasz"),
        ("Remember: Melanie's birthday is soon.", "melanie"),
        ("Hey Samir, can you check?", "samir"),
        ("Thanks, Beatriz!", "beatriz"),
        ("Dr. Okafor told me to rest.", "okafor"),
        ("My friend Ines lives nearby.", "ines"),
        ("Later Wojtek said it works.", "wojtek"),
        ("That is so cool, Caroline!", "caroline"),
    ],
)
def test_single_name_with_supporting_context(text: str, slug: str) -> None:
    assert of_kind(text, "person") == [slug]


def test_two_word_names_and_particles() -> None:
    text = "Jane Doe quoted Ludwig van Beethoven and John F. Kennedy."
    assert of_kind(text, "person") == ["jane-doe", "ludwig-van-beethoven", "john-f-kennedy"]


def test_names_joined_by_and_are_both_people() -> None:
    assert of_kind("Christmas dinner with Grandma, then Alice and Bob came over.", "person") == [
        "alice",
        "bob",
    ]


def test_sentence_subject_with_an_agent_verb_is_a_person() -> None:
    assert tags("Bob set up Redis for the session cache.") == ["entity:person:bob", "entity:tool:redis"]
    text = "We migrated the billing service from MySQL to PostgreSQL. Alice Johnson led it."
    assert tags(text) == ["entity:tool:mysql", "entity:tool:postgresql", "entity:person:alice-johnson"]


def test_unknown_pair_after_a_place_or_thing_preposition_is_not_people() -> None:
    assert tags("We visited Lisbon and Sintra.") == ["entity:place:lisbon"]
    assert tags("We moved everything to Nomad and Consul.") == ["entity:tool:nomad", "entity:tool:consul"]
    assert tags("I talked to Alice and Bob.") == ["entity:person:alice", "entity:person:bob"]


def test_speaker_prefix_with_timestamp_and_surname() -> None:
    assert tags("[10:32] Bob Smith: did you see Caroline's painting?") == [
        "entity:person:bob-smith",
        "entity:person:caroline",
    ]


def test_first_name_merges_into_full_name_mentioned_in_same_text() -> None:
    assert tags("Bob Smith: ok. Later Bob said the build was green.") == ["entity:person:bob-smith"]


def test_interjection_before_a_vocative_is_not_part_of_the_name() -> None:
    assert tags("Woah Joanna, that's great!") == ["entity:person:joanna"]


def test_role_speakers_and_label_prefixes_are_not_people() -> None:
    text = "USER: hello\nAssistant: hi there\nNote: remember this\nSummary: nothing new"
    assert tags(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Benchmarks ran on the staging cluster.",
        "Migrations ran overnight and nobody noticed.",
        "Builds started failing after lunch.",
        "Customers complained, then Servers went down.",
    ],
)
def test_sentence_initial_plural_nouns_are_not_people(text: str) -> None:
    assert of_kind(text, "person") == []


def test_sentence_initial_names_ending_in_s_still_count_with_evidence() -> None:
    assert of_kind("James said the build is green.", "person") == ["james"]
    assert of_kind("Jones said it works.", "person") == ["jones"]
    assert of_kind("Lucas went home early.", "person") == ["lucas"]
    text = "Benchmarks ran on the staging cluster and Alice said it was fine."
    assert of_kind(text, "person") == ["alice"]


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ("Kafka lagged during the load test on the staging cluster.", "kafka"),
        ("We deployed Helm and Prometheus.", "helm"),
        ("Jenkins failed the build again.", "jenkins"),
        ("Hey Jenkins, rerun the build.", "jenkins"),
        ("Its API is written in Helm with Kafka for background jobs.", "kafka"),
    ],
)
def test_tool_names_in_technical_text_are_never_people(text: str, tool: str) -> None:
    assert of_kind(text, "person") == []
    assert tool in of_kind(text, "tool")


def test_name_like_tool_words_stay_people_outside_technical_text() -> None:
    assert tags("Kafka said nothing about it.") == ["entity:person:kafka"]


@pytest.mark.parametrize(
    "text",
    [
        "Priya joined Initech last year.",
        "She works for Initech.",
        "The team at Initech uses Kafka.",
        "Met Priya Shah from Initech in Berlin.",
        "We signed a contract with Initech.",
        "Tom will confirm with Initech by Friday.",
        "Initech hired two engineers.",
    ],
)
def test_invented_company_names_lean_organisation(text: str) -> None:
    assert "initech" in of_kind(text, "organization")
    assert "initech" not in of_kind(text, "person")


def test_company_frames_do_not_swallow_people() -> None:
    assert of_kind("I joined Priya for dinner.", "organization") == []
    assert of_kind("Got a lovely card from Priya.", "organization") == []


# --- vendors that share their product's name --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("We use Datadog for monitoring.", "datadog"),
        ("Deployed on Cloudflare last night.", "cloudflare"),
        ("We host the code on GitHub.", "github"),
        ("Payments go through Stripe using webhooks.", "stripe"),
    ],
)
def test_vendor_names_used_as_products_are_tools(text: str, slug: str) -> None:
    assert of_kind(text, "tool") == [slug]
    assert of_kind(text, "organization") == []


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Stripe announced a new pricing tier.", "stripe"),
        ("She works at Shopify.", "shopify"),
        ("We signed a contract with GitLab.", "gitlab"),
        ("The startup was acquired by Cloudflare.", "cloudflare"),
        ("Alice joined GitHub last year.", "github"),
        ("The Datadog team called us back.", "datadog"),
    ],
)
def test_vendor_names_acting_as_companies_are_organisations(text: str, slug: str) -> None:
    assert of_kind(text, "organization") == [slug]
    assert of_kind(text, "tool") == []


# --- places named in declarations -------------------------------------------------------------


def test_a_city_declared_as_a_repo_is_the_project_only() -> None:
    assert tags("Keep the config in the Berlin repo.") == ["entity:project:berlin"]
    assert tags("The Paris project kicked off.") == ["entity:project:paris"]
    assert tags("Kickoff for project Berlin was in Berlin.") == [
        "entity:project:berlin",
        "entity:place:berlin",
    ]


def test_a_city_before_other_heads_is_the_place() -> None:
    assert tags("The Paris service is down.") == ["entity:place:paris"]
    assert tags("Benchmarks ran on the Berlin cluster.") == ["entity:place:berlin"]


# --- quality gates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Wow! That's amazing. Thanks! Yes. Oh. I'm happy.",
        "Happy Birthday, Mom! Love, Dad.",
        "See you Monday in January, after Christmas.",
        "I'm learning Spanish and French.",
        "Quarterly Planning Meeting Notes",
        "The meeting was with the Marketing team and Sales.",
        "Painting's a fun way to relax. Yoga's been great.",
        "Recently started; Winning felt amazing.",
        "My favorite recipe is Chicken Pot Pie.",
    ],
)
def test_capitalised_common_words_are_not_entities(text: str) -> None:
    assert tags(text) == []


def test_code_and_env_var_fragments_are_rejected() -> None:
    text = "Set FOO_BAR=1 and call getUser() in src/app/main.py; see https://example.com/Apollo"
    assert tags(text) == []


def test_fenced_code_is_ignored() -> None:
    assert tags("```python\nimport redis\nBob = Person()\n```\nDone.") == []


def test_class_and_error_names_are_not_people_or_tools() -> None:
    assert tags("UserManager throws ValueError; PaymentHandler logs TIMEOUT_MS.") == []


def test_numbers_dates_durations_and_ticket_ids_are_rejected() -> None:
    assert tags("Spent 3 hours on JIRA-1234 on 2024-05-01; 45 min in Q3, v2.1 at 10am, covid-19.") == []


def test_tool_names_are_never_people() -> None:
    found = extract_entities("Docker said the build failed, and Redis's memory grew.")
    assert [e.kind for e in found] == ["tool", "tool"]


# --- salience, dedup and limit ----------------------------------------------------------------


def test_speakers_then_explicit_declarations_then_order_of_mention() -> None:
    text = "Maria: Redis is down, Tom says project Apollo slips and `uvicorn` too."
    assert tags(text) == [
        "entity:person:maria",
        "entity:project:apollo",
        "entity:tool:uvicorn",
        "entity:tool:redis",
        "entity:person:tom",
    ]


def test_same_slug_may_exist_under_two_kinds() -> None:
    assert tags("Notes on the Phoenix repo: we met in Phoenix.") == [
        "entity:project:phoenix",
        "entity:place:phoenix",
    ]


def test_limit_keeps_the_most_salient() -> None:
    text = "Ana: we use Redis, Kafka, Docker, Python, Go, Rust and Java."
    assert tags(text, limit=3) == ["entity:person:ana", "entity:tool:redis", "entity:tool:kafka"]
    assert tags(text, limit=0) == []
    assert len(extract_entities(text)) == 8


def test_dedup_keeps_one_entity_per_kind_and_slug() -> None:
    found = extract_entities("We talked about kubernetes, k8s and Kubernetes with Bob and bob's friend Bob.")
    keys = [(e.kind, e.slug) for e in found]
    assert keys == [("tool", "kubernetes"), ("person", "bob")]


def test_every_entity_is_well_formed() -> None:
    text = (
        "Alice: Jane Doe at Acme Corp switched from MySQL to Postgres in São Paulo for project Apollo; "
        "Dr. Lee from the University of Tokyo uses `ripgrep` and Next.js."
    )
    found = extract_entities(text)
    assert len(found) >= 8
    for entity in found:
        assert entity.kind in KINDS
        assert entity.slug == entity.slug.lower()
        assert all(part.isalnum() and part.isascii() for part in entity.slug.split("-"))
        assert 1 <= len(entity.name.split()) <= 6


_SLUGS = st.sampled_from(["ann", "lee", "ann-lee", "lee-ann", "shimano", "shimano-ultegra", "ultegra"])
_FOUND = st.dictionaries(
    st.tuples(st.sampled_from(["person", "person", "tool", "place"]), _SLUGS),
    st.tuples(st.integers(0, 2), st.integers(0, 99), st.just("Name")),
    max_size=8,
)


@given(_FOUND)
def test_shadowed_persons_leave_in_any_order(best: dict[tuple[str, str], tuple[int, int, str]]) -> None:
    """A person named like another kind, or by the first or last word of a fuller person name,
    leaves; the fuller name may itself have left (LongMemEval: a tool "Shimano Ultegra" also
    read as a person raised KeyError when the shorter name came after it)."""
    found = _Found()
    found.best = dict(best)
    found._drop_shadowed_persons()
    others = {slug for kind, slug in best if kind != "person"}
    persons = {slug for kind, slug in found.best if kind == "person"}
    assert not persons & others
    for slug in persons:
        assert not [f for f in persons if "-" in f and slug in (f.split("-")[0], f.split("-")[-1])]
    assert {k for k in best if k[0] != "person"} <= set(found.best)
    for key, (rank, pos, _) in found.best.items():  # salience only ever moves earlier
        assert (rank, pos) <= best[key][:2]


# --- performance sanity -----------------------------------------------------------------------


def test_many_texts_extract_consistently() -> None:
    templates = [
        "Alice: I moved to Lisbon and Bob helped me set up Postgres #{n}.",
        "Decided to use FastAPI instead of Flask for project Apollo, iteration {n}.",
        "Thanks, Priya! The Kubernetes cluster at Initech Inc is up ({n} nodes).",
        "Note {n}: nothing to extract here, just ordinary words.",
    ]
    texts = [templates[n % len(templates)].format(n=n) for n in range(1000)]
    results = [extract_entities(t) for t in texts]
    assert results[0] == results[4] and results[1] == results[5]
    assert sum(len(r) for r in results) == 250 * (4 + 3 + 3 + 0)
