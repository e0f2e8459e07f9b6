"""The seeds of every catalog topic hold values a person would believe: real currency codes, no lorem
filler as names, dates in one window with ends after starts, and tables larger than a page."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from faker.providers.job.en_US import Provider as JobProvider
from faker.providers.lorem.en_US import Provider as LoremProvider
from faker.providers.person.en_US import Provider as PersonProvider

from factory.envs.toolkit.common import MAX_LIMIT
from factory.mining import values
from factory.mining.datasets import draft_environment
from factory.mining.procedural import _DATE_PAIRS, DATE_START, REFERENCE_DATE
from factory.models import EntitySpec, EnvSpec
from factory.topics import load_catalog

# Faker's lorem words, less the ones that are also people's names ("White", "Will").
NAMES = {*PersonProvider.first_names, *PersonProvider.last_names}
LOREM = {w.lower() for w in LoremProvider.word_list} - {n.lower() for n in NAMES}
ISO_4217 = set(values.CURRENCIES)
# Fields whose values are labels of the domain: names, titles, periods, places, groupings.
LABEL_NAMES = {"name", "title", "subject", "headline", "label", "period", "building", "room", "location"}
LABEL_NAMES |= {"category", "department", "team", "tag", "cohort", "author", "owner", "reviewer", "topic", "make"}
LABEL_NAMES |= {"model", "breed", "unit", "merchant", "allergies", "symbol", "bin", "branch", "repository", "domain"}
LABEL_NAMES |= {"status", "type", "kind", "city", "country", "industry", "prescriber", "triggered_by"}
BIRTH = {"dob", "birthday", "birth_date", "date_of_birth"}


def _curated() -> set[str]:
    """The phrases of the value vocabularies (and Faker's job titles): real-world labels, some made
    only of common words."""
    phrases: set[str] = set(JobProvider.jobs)
    for name in dir(values):
        vocab = getattr(values, name)
        lists = vocab.values() if isinstance(vocab, dict) else [vocab]
        for items in lists:
            if name.isupper() and isinstance(items, list):
                phrases |= {v for v in items if isinstance(v, str)}
    return phrases


CURATED = _curated()


def is_lorem(value: str) -> bool:
    """A value made only of Faker lorem words ("Back Yeah", "recent"): filler, not a domain value.

    The lorem list holds ~1000 everyday words, so a curated phrase ("Customer Support") may consist of
    them; those are domain values, not filler.
    """
    words = re.findall(r"[A-Za-z]+|\d+", value)
    return bool(words) and all(w.lower() in LOREM for w in words) and value not in CURATED


def test_lorem_filler_is_detected() -> None:
    assert is_lorem("Back Yeah") and is_lorem("recent") and is_lorem("Take Common")
    assert not is_lorem("North Wing") and not is_lorem("Building 4") and not is_lorem("2026-Q1")


def is_label(field: str) -> bool:
    return field in LABEL_NAMES or field.endswith(("_name", "_title", "_period", "_branch")) or field == "symbol"


@pytest.fixture(scope="module")
def seeds() -> list[tuple[EnvSpec, dict[str, list[dict[str, Any]]]]]:
    return [draft_environment(t) for t in load_catalog()]


def test_catalog_has_its_topics(seeds: list) -> None:
    assert len(seeds) >= 48


def test_currencies_are_iso_codes(seeds: list) -> None:
    seen = 0
    for spec, rows in seeds:
        for e in spec.entities:
            for f in e.fields:
                if "currency" in f.name and f.type == "string":
                    allowed = set(f.enum) if f.enum else ISO_4217
                    bad = {r[f.name] for r in rows[e.table]} - allowed - {None}
                    assert not bad, (spec.id, e.name, f.name, bad)
                    seen += 1
    assert seen


def test_labels_are_not_lorem_words(seeds: list) -> None:
    checked = 0
    for spec, rows in seeds:
        for e in spec.entities:
            for f in e.fields:
                if f.type != "string" or f.enum or f.primary_key or f.references or not is_label(f.name):
                    continue
                lorem = sorted({v for r in rows[e.table] if isinstance(v := r[f.name], str) and is_lorem(v)})
                assert not lorem, (spec.id, e.name, f.name, lorem[:5])
                checked += 1
    assert checked > 100


def test_free_text_reads_as_sentences_not_lorem(seeds: list) -> None:
    for spec, rows in seeds:
        for e in spec.entities:
            for f in e.fields:
                if f.name in ("description", "body", "content", "notes", "note", "reason", "summary", "comment"):
                    for r in rows[e.table]:
                        text = r[f.name]
                        if isinstance(text, str):
                            words = re.findall(r"[a-z]+", text.lower())
                            assert sum(w not in LOREM for w in words) >= 1, (spec.id, e.name, f.name, text)


def _moment(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


def test_dates_in_one_window_and_pairs_ordered(seeds: list) -> None:
    first = dt.datetime.combine(DATE_START, dt.time())
    last = dt.datetime.combine(REFERENCE_DATE, dt.time(23, 59, 59))
    assert (REFERENCE_DATE - DATE_START).days <= 550  # about 18 months
    pairs = [(a, b) for a, b, _, _ in _DATE_PAIRS]
    for spec, rows in seeds:
        for e in spec.entities:
            timed = [f.name for f in e.fields if f.type in ("date", "datetime") and f.name not in BIRTH]
            for r in rows[e.table]:
                for name in timed:
                    if isinstance(r[name], str):
                        assert first <= _moment(r[name]) <= last, (spec.id, e.name, name, r[name])
                for a, b in pairs:
                    if isinstance(r.get(a), str) and isinstance(r.get(b), str):
                        assert _moment(r[a]) <= _moment(r[b]), (spec.id, e.name, a, b, r[a], r[b])


def _has_parent(e: EntitySpec) -> bool:
    return any(f.references and f.references.split(".")[0] != e.name for f in e.fields)


def test_child_tables_need_several_pages(seeds: list) -> None:
    assert MAX_LIMIT <= 20
    for spec, rows in seeds:
        for e in spec.entities:
            if _has_parent(e):
                assert len(rows[e.table]) > MAX_LIMIT, (spec.id, e.name, len(rows[e.table]))


def test_dependent_values_follow_their_source(seeds: list) -> None:
    by_id = {spec.id: (spec, rows) for spec, rows in seeds}
    _, vet = by_id["veterinary-clinic"]
    for pet in vet["pets"]:
        assert pet["breed"] in values.BREEDS[pet["species"]]
    _, rental = by_id["car-rental"]
    for car in rental["vehicles"]:
        assert car["model"] in values.CAR_MODELS[car["make"]]
    _, drive = by_id["cloud-drive"]
    for f in drive["files"]:
        assert values.FILE_TYPES[f["name"].rsplit(".", 1)[1]] == f["mime_type"]
    _, crm = by_id["crm-deals"]
    for c in crm["contacts"]:
        assert c["email"].split("@")[0].replace(".", "").startswith(c["first_name"].lower()[0])
