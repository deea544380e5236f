"""Curated word lists for rule-based entity extraction (enrichment.entities).

Everything is generic: common technology names, well-known companies, a world gazetteer and the
capitalised English words that are not names. Nothing is keyed to any particular user's data.

The lists are package data: one UTF-8 text file per list in ``enrichment/data/``, named after its
constant in lower case (``TOOLS`` is ``data/tools.txt``), read once at import through
``importlib.resources``. In every file a line whose first non-blank character is ``#`` is a comment
and blank lines are ignored; no entry starts with ``#``. There are three formats:

* Alias tables (``tools.txt``, ``companies.txt``, ``places.txt``) hold one entity a line,
  ``Display: alias, alias``. The display name ends at the first colon; its lowercase is an alias too
  unless listed explicitly. An alias may carry a flag:

  * ``~`` the alias is also an ordinary English word ("go", "slack", "nice"): it only counts with
    supporting context (capitalised mid-sentence, or after a trigger like "using" or "in").
  * ``@`` the alias is also a given name or a very common noun ("ruby", "jordan", "chef"): it only
    counts with explicit context ("using Chef", "in Jordan"), and person rules may still claim it.

  Within one table an alias belongs to a single display name; loading fails otherwise.
* Word lists (every other file but one) hold words separated by spaces or line breaks.
* ``named_heads.txt`` holds ``kind: head head`` lines (see NAMED_HEADS).
"""

from __future__ import annotations

from importlib.resources import files

AMBIGUOUS = "~"
NAME_LIKE = "@"
_FLAGS = AMBIGUOUS + NAME_LIKE
_COMMENT = "#"


def _read(name: str) -> str:
    """The text of data file `name`, from the installed package (never relative to the cwd)."""
    return (files("enrichment") / "data" / name).read_text(encoding="utf-8")


def _content_lines(text: str) -> list[str]:
    """Stripped lines of a data file, without blank lines and ``#`` comments."""
    return [line for raw in text.splitlines() if (line := raw.strip()) and not line.startswith(_COMMENT)]


def _parse_words(text: str) -> frozenset[str]:
    return frozenset(word for line in _content_lines(text) for word in line.split())


def _parse_table(text: str, source: str = "<table>") -> dict[str, tuple[str, str]]:
    """Parse ``Display: alias, ~alias`` lines into alias -> (display, flag)."""
    table: dict[str, tuple[str, str]] = {}
    for line in _content_lines(text):
        display, _, rest = line.partition(":")
        display = display.strip()
        if not display:
            raise ValueError(f"{source}: no display name in {line!r}")
        aliases = [a.strip() for a in rest.split(",") if a.strip()]
        if not any(a.lstrip(_FLAGS) == display.lower() for a in aliases):
            aliases.append(display.lower())
        for alias in aliases:
            flag = alias[0] if alias[0] in _FLAGS else ""
            key = alias.lstrip(_FLAGS)
            if not key:
                raise ValueError(f"{source}: empty alias {alias!r} in {line!r}")
            if key in table and table[key][0] != display:
                raise ValueError(f"{source}: alias {key!r} of {display!r} already names {table[key][0]!r}")
            table[key] = (display, flag)
    return table


def _parse_heads(text: str) -> dict[str, str]:
    """Parse ``kind: head head`` lines into head -> kind, in file order."""
    return {
        head: kind.strip()
        for kind, _, heads in (line.partition(":") for line in _content_lines(text))
        for head in heads.split()
    }


def _words(name: str) -> frozenset[str]:
    return _parse_words(_read(name))


def _table(name: str) -> dict[str, tuple[str, str]]:
    return _parse_table(_read(name), name)


# Display names whose plain slug would collide or vanish ("C++" and "C#" would both become "c").
SLUG_OVERRIDES = {"C++": "cpp", "C#": "csharp", "F#": "fsharp", ".NET": "dotnet", "ASP.NET": "aspnet"}

TOOLS = _table("tools.txt")
COMPANIES = _table("companies.txt")
PLACES = _table("places.txt")

# Tools whose vendor shares the product's name. They are tools by default ("we use Datadog") and
# organisations in a company context ("works at Shopify", "Stripe announced", "a contract with GitLab").
PRODUCT_COMPANIES = _words("product_companies.txt")

# A capitalised token ending one of these (with a name before it) makes an organisation.
ORG_SUFFIXES = _words("org_suffixes.txt")
# These head an organisation on their own when followed by "of X": "University of Michigan".
ORG_OF_HEADS = _words("org_of_heads.txt")
PLACE_SUFFIXES = _words("place_suffixes.txt")
PLACE_PREFIXES = _words("place_prefixes.txt")

# Capitalised words that are never names: sentence starters, pronouns, interjections, time words,
# greetings, kinship terms, generic nouns, status words and nationality/language adjectives.
STOPWORDS = _words("stopwords.txt")

# Ordinary capitalised words: block a token from joining a multi-word name ("the Annual Report")
# and from becoming a person on weak evidence.
COMMON_WORDS = _words("common_words.txt")

# Plural and work nouns that open sentences in technical notes ("Benchmarks ran ...", "Builds broke").
# They are never names; a sentence-initial capitalised plural outside this list is still checked by
# shape (see GIVEN_NAMES_S).
COMMON_NOUNS = _words("common_nouns.txt")
# Given names ending in "s": a sentence-initial capitalised word ending in "s" is read as a plural
# noun ("Benchmarks", "Deploys") unless it is one of these or carries strong person evidence.
GIVEN_NAMES_S = _words("given_names_s.txt")
# Verbs after a name that make it a person even where shape or vocabulary says otherwise.
SPEECH_VERBS = _words("speech_verbs.txt")
# Lowercase words that make a text technical, so that "Helm" or "Kafka" there is the tool.
TECH_WORDS = _words("tech_words.txt")

# Tokens that end a name-like class or code symbol rather than a person's name.
CLASS_SUFFIXES = tuple(_words("class_suffixes.txt"))

# Verbs that follow a person's name often and a thing's name rarely.
PERSON_VERBS = _words("person_verbs.txt")
# Verbs right before a name: "met Alice", "told Sam".
PERSON_TRIGGERS = _words("person_triggers.txt")
# Greetings and thanks before a vocative name: "hey Sam", "thanks, Bob".
GREETINGS = _words("greetings.txt")
# Words before "X and Y" that make the pair things or places rather than people: "to Nomad and Consul".
THING_PREPOSITIONS = _words("thing_prepositions.txt")
# "called X" names a person only after a caller; "a tool called X" does not.
CALLERS = _words("callers.txt")
# Verbs that make a following "to X" address a person: "talked to Bob".
TALK_VERBS = _words("talk_verbs.txt")
TITLES = _words("titles.txt")
RELATIONS = _words("relations.txt")
# Words after "X's" that make it "X is/has" rather than a possessive: "Yoga's been great".
CONTRACTION_FOLLOWERS = _words("contraction_followers.txt")
# Abbreviations whose trailing dot does not end a sentence.
ABBREVIATIONS = _words("abbreviations.txt")
NAME_PARTICLES = _words("name_particles.txt")

# Words before an unknown capitalised name that make it a technology.
TOOL_TRIGGERS = _words("tool_triggers.txt")
# Verbs that make "to/from X" a technology: "switched to X", "migrated from X".
SWITCH_VERBS = _words("switch_verbs.txt")
# Verbs that make "in X" a language: "written in X".
WRITTEN_VERBS = _words("written_verbs.txt")
# Verbs that make "with/on X" a technology: "built with X", "deployed on X".
BUILT_VERBS = _words("built_verbs.txt")

# Words before a place name that make an ambiguous gazetteer entry a place: "in Jordan".
PLACE_PREPOSITIONS = _words("place_prepositions.txt")
# "works at X", "internship at X": words that make a following "at X" an employer.
EMPLOYMENT_WORDS = _words("employment_words.txt")
# "CEO of X", "founder of X".
LEADER_WORDS = _words("leader_words.txt")
# Words before a known company that make it an employer rather than a product.
ORG_CONTEXT = _words("org_context.txt")
# "<word> with X" and "<word> by X": a deal or an acquisition names a company.
DEAL_WORDS = _words("deal_words.txt")
ACQUIRED_WORDS = _words("acquired_words.txt")
# "the team at X", "folks from X": groups of people belong to a company.
GROUP_WORDS = _words("group_words.txt")
# Words after a known company name that make it the company: "Stripe announced", "the Datadog team".
ORG_VERBS = _words("org_verbs.txt")
ORG_NOUNS = _words("org_nouns.txt")
# Fused endings of invented company names: "Initech", "Microsoft", "Globalware", "Shopify".
COMPANY_ENDINGS = tuple(_words("company_endings.txt"))

# Lowercase prefixes of camelCase code identifiers ("useState", "getUser"), not product names.
CODE_PREFIXES = _words("code_prefixes.txt")
# Lowercase words that are usually code identifiers when put in backticks, not product names.
CODE_WORDS = _words("code_words.txt")
# Prefixes of versioned tokens that are not products: "covid-19", "top-10", "utf-8".
VERSION_STOP = _words("version_stop.txt")

# Head nouns of "a <noun> called X" and the kind X becomes, in file order (the order of the regex
# alternation built from them in enrichment.entities).
NAMED_HEADS = _parse_heads(_read("named_heads.txt"))
