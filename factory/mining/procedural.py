"""Procedural dataset mining: seeded, realistic rows for an environment's entities.

Values follow field names and formats (emails from the person's name, phones, addresses,
companies, ISO dates in a fixed window, 2-decimal money, SKU codes, enum values), foreign keys
point at rows that exist, unique fields never repeat, and counters respect the entity's rules.
Every entity gets its own generators seeded from (seed, entity name) — never the clock — so the
same seed gives the same rows, and adding an entity does not reshuffle the others.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import random
import re
import uuid
from typing import Any

from faker import Faker

from factory.envs.schema import table_order
from factory.lexicon import COUNT_FIELDS, COUNTER_FIELDS
from factory.models import EntitySpec, FieldSpec
from factory.naming import format_id

Row = dict[str, Any]

DATE_START = dt.date(2024, 1, 1)
DATE_DAYS = 730  # the window 2024-01-01 .. 2025-12-30: fixed, so a seed always means the same dates

_PERSON = {
    "user",
    "customer",
    "person",
    "member",
    "employee",
    "contact",
    "student",
    "patient",
    "passenger",
    "guest",
    "author",
    "agent",
    "candidate",
    "driver",
    "owner",
    "tutor",
    "pupil",
    "doctor",
    "worker",
    "signer",
    "attendee",
    "subscriber",
    "client",
    "seller",
    "teacher",
    "instructor",
    "provider",
    "assignee",
    "reviewer",
    "participant",
    "buyer",
    "recipient",
    "staff",
    "vet",
    "physician",
    "nurse",
    "manager",
}
_COMPANY = {"company", "vendor", "supplier", "organization", "org", "merchant", "brand", "account", "partner", "firm"}
_PLACE = {"hotel", "venue", "restaurant", "branch", "warehouse", "store", "clinic", "office", "location", "site"}
_PRODUCT = {"product", "item", "medication", "material", "menu_item", "listing", "stock_item", "part", "reward"}
_TITLED = {
    "issue",
    "ticket",
    "task",
    "post",
    "article",
    "page",
    "note",
    "email",
    "event",
    "thread",
    "message",
    "pull_request",
    "incident",
    "job",
    "course",
    "campaign",
    "deal",
    "assignment",
    "document",
    "envelope",
    "show",
    "tour",
}
_LOOKUP = {"category", "tag", "label", "department", "region", "country", "currency", "role", "genre", "brand", "type"}
_ADJECTIVES = ["Classic", "Smart", "Eco", "Ultra", "Compact", "Deluxe", "Rugged", "Light", "Pro", "Vintage", "Fresh"]
_MATERIALS = ["Steel", "Cotton", "Bamboo", "Leather", "Ceramic", "Glass", "Wool", "Oak", "Carbon", "Linen"]
_GOODS = ["Lamp", "Backpack", "Mug", "Chair", "Jacket", "Speaker", "Bottle", "Notebook", "Kettle", "Blanket", "Watch"]
_AIRPORTS = ["JFK", "LAX", "SFO", "ORD", "ATL", "SEA", "BOS", "MIA", "DEN", "LHR", "CDG", "FRA", "AMS", "MAD", "NRT"]
_CURRENCIES = ["USD", "EUR", "GBP"]
_TEXT_FIELDS = {
    "description",
    "body",
    "content",
    "text",
    "message",
    "notes",
    "note",
    "comment",
    "bio",
    "summary",
    "details",
    "reason",
    "instructions",
    "feedback",
    "review",
    "answer",
}
_COUNTERS = COUNTER_FIELDS | {"copies_available"}
_TOTALS = ("total", "amount", "total_price", "subtotal", "total_amount", "total_cost", "cost")
_UNIT_PRICES = ("unit_price", "price", "unit_cost", "cost_per_unit", "rate")
_DATE_PAIRS = [
    ("created_at", "updated_at"),
    ("start_date", "end_date"),
    ("starts_at", "ends_at"),
    ("start_time", "end_time"),
    ("check_in", "check_out"),
    ("check_in_date", "check_out_date"),
    ("departure_time", "arrival_time"),
    ("departs_at", "arrives_at"),
    ("pickup_date", "return_date"),
    ("issued_on", "due_on"),
    ("issue_date", "due_date"),
    ("opened_at", "closed_at"),
    ("borrowed_on", "due_on"),
    ("start_on", "end_on"),
]


# A trip's end follows its start within hours.
_TRIPS = [("departure", "arrival"), ("departure_time", "arrival_time"), ("departs_at", "arrives_at")]


def _derived_seed(seed: int, *parts: str) -> int:
    digest = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def row_counts(entities: list[EntitySpec], scale: float = 1.0) -> dict[str, int]:
    """Rows per entity: deeper entities (orders under customers) get more, so lists need pagination.

    Roots get 30, each FK level 25 more (at most 120); lookup tables 12; small reference tables 20.
    """
    by_name = {e.name: e for e in entities}
    depth: dict[str, int] = {}

    def level(e: EntitySpec, seen: frozenset[str]) -> int:
        if e.name in depth:
            return depth[e.name]
        parents = [f.references.split(".")[0] for f in e.fields if f.references]
        parents = [p for p in parents if p in by_name and p != e.name and p not in seen]
        d = 1 + max((level(by_name[p], seen | {e.name}) for p in parents), default=-1)
        depth[e.name] = d
        return d

    counts: dict[str, int] = {}
    for e in entities:
        plain = [f for f in e.fields if not f.primary_key and not f.references]
        if e.name in _LOOKUP:
            n = 12
        elif len(plain) <= 2 and not any(f.enum for f in plain) and level(e, frozenset()) == 0:
            n = 20
        else:
            n = min(120, 30 + 25 * level(e, frozenset()))
        counts[e.name] = max(1, round(n * scale))
    return counts


class _EntityRows:
    """Rows of one entity, generated with its own seeded Faker and random source."""

    def __init__(self, entity: EntitySpec, seed: int, parents: dict[str, list[Row]], by_name: dict[str, EntitySpec]):
        self.entity = entity
        s = _derived_seed(seed, entity.name)
        self.rng = random.Random(s)
        self.fake = Faker("en_US")
        self.fake.seed_instance(s)
        self.parents = parents
        self.by_name = by_name
        self.seen: dict[str, set[Any]] = {f.name: set() for f in entity.fields if f.unique or f.primary_key}
        self.together = [tuple(r.fields) for r in entity.rules if r.kind == "unique_together" and r.fields]
        self.seen_together: dict[tuple[str, ...], set[tuple[Any, ...]]] = {k: set() for k in self.together}
        self.non_negative = {r.field for r in entity.rules if r.kind == "non_negative"}
        self.budget = entity.name in ("budget", "wallet", "allowance", "grant", "fund", "cost_center")

    def generate(self, n: int) -> list[Row]:
        rows: list[Row] = []
        prefix = self.entity.id_prefix or f"{self.entity.name[:3]}_"
        for i in range(1, n + 1):
            for _attempt in range(20):
                row = self._row(i, prefix, rows)
                keys = [tuple(row[f] for f in fields) for fields in self.together]
                if all(k not in self.seen_together[fields] for k, fields in zip(keys, self.together, strict=True)):
                    break
            else:
                continue  # no free combination left: fewer rows rather than a broken constraint
            for k, fields in zip(keys, self.together, strict=True):
                self.seen_together[fields].add(k)
            rows.append(row)
        # ids stay dense after skipped rows
        pk = self.entity.primary_key
        for i, row in enumerate(rows, start=1):
            row[pk] = format_id(prefix, i) if isinstance(row[pk], str) else row[pk]
        return rows

    def _row(self, i: int, prefix: str, earlier: list[Row]) -> Row:
        row: Row = {}
        for f in self.entity.fields:
            if f.primary_key or f.name == self.entity.primary_key:
                row[f.name] = format_id(prefix, i) if f.type == "string" else i
            elif f.references:
                row[f.name] = self._reference(f, earlier)
            else:
                row[f.name] = self._unique(f, row, i)
        self._make_consistent(row)
        return row

    def _reference(self, f: FieldSpec, earlier: list[Row]) -> Any:
        parent_name, _, col = (f.references or "").partition(".")
        if parent_name == self.entity.name:
            if not earlier or self.rng.random() < 0.4:
                return None
            return self.rng.choice(earlier)[col or "id"]
        parent = self.by_name[parent_name]
        pool = self.parents.get(parent.table) or []
        if not pool:
            return None
        return self.rng.choice(pool)[col or parent.primary_key]

    def _unique(self, f: FieldSpec, row: Row, i: int) -> Any:
        if f.name not in self.seen:
            return self._value(f, row, i)
        seen = self.seen[f.name]
        value = self._value(f, row, i)
        for _ in range(20):
            if value not in seen:
                break
            value = self._value(f, row, i)
        if value in seen:
            value = self._disambiguate(f, value, i)
        seen.add(value)
        return value

    def _disambiguate(self, f: FieldSpec, value: Any, i: int) -> Any:
        if isinstance(value, str):
            if f.format == "email" and "@" in value:
                local, domain = value.split("@", 1)
                return f"{local}{i}@{domain}"
            return f"{value}-{i}"
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value + i * 1000
        return value

    # --- values ---------------------------------------------------------------------------

    def _value(self, f: FieldSpec, row: Row, i: int) -> Any:
        n = f.name.lower()
        if f.enum:
            return self.rng.choice(f.enum)
        if f.type == "boolean":
            likely = n in ("active", "is_active", "enabled", "is_enabled", "available", "is_available", "verified")
            return self.rng.random() < (0.8 if likely else 0.5)
        if f.type == "date":
            return self._date(n).isoformat()
        if f.type == "datetime":
            return self._datetime().isoformat()
        if f.type in ("integer", "number"):
            return self._number(f, n)
        return self._string(f, n, row, i)

    def _date(self, n: str) -> dt.date:
        if n in ("dob", "birthday", "birth_date", "date_of_birth"):
            return dt.date(1950, 1, 1) + dt.timedelta(days=self.rng.randrange(20000))
        return DATE_START + dt.timedelta(days=self.rng.randrange(DATE_DAYS))

    def _datetime(self) -> dt.datetime:
        start = dt.datetime(DATE_START.year, DATE_START.month, DATE_START.day)
        return start + dt.timedelta(days=self.rng.randrange(DATE_DAYS), seconds=self.rng.randrange(8 * 3600, 20 * 3600))

    def _range(self, f: FieldSpec, n: str) -> tuple[float, float]:
        money = f.format == "money"
        if n in COUNT_FIELDS or n.startswith("num_"):
            lo, hi = 1, 5
        elif n in _COUNTERS:
            lo, hi = 0, 200
        elif n == "capacity" or n.endswith("_capacity"):
            lo, hi = 10, 300
        elif n in ("remaining", "amount_remaining", "remaining_amount", "remaining_budget", "available_funds"):
            lo, hi = 500, 50000
        elif n in ("balance", "available_balance", "credit_balance"):
            lo, hi = 0, 20000
        elif n in ("salary", "annual_salary", "base_salary"):
            lo, hi = 30000, 200000
        elif n in ("budget", "credit_limit", "limit_amount") or n.endswith("_budget") or (money and self.budget):
            lo, hi = 1000, 100000
        elif n in ("price", "unit_price", "cost", "unit_cost", "fee", "rate") or n.endswith(("_price", "_fee")):
            lo, hi = 1, 500
        elif money or n in _TOTALS or n.endswith(("_amount", "_total")):
            lo, hi = 5, 2000
        elif n in ("rating", "stars", "priority", "severity", "level"):
            lo, hi = 1, 5
        elif n in ("score", "grade", "percent", "percentage", "progress"):
            lo, hi = 0, 100
        elif n in ("discount", "discount_percent", "tax_rate"):
            lo, hi = 0, 50
        elif n in ("age",):
            lo, hi = 18, 90
        elif n in ("year",) or n.endswith("_year"):
            lo, hi = 2000, 2025
        elif n in ("points", "loyalty_points", "credits"):
            lo, hi = 0, 5000
        elif "minutes" in n or n == "duration":
            lo, hi = 15, 240
        elif "hours" in n:
            lo, hi = 1, 12
        elif n in ("latitude", "lat"):
            lo, hi = -60, 70
        elif n in ("longitude", "lng", "lon"):
            lo, hi = -170, 170
        else:
            lo, hi = (0, 100) if f.type == "integer" else (0, 1000)
        if f.minimum is not None:
            lo = max(lo, f.minimum)
            hi = max(hi, lo)
        if f.maximum is not None:
            hi = min(hi, f.maximum)
            lo = min(lo, hi)
        if f.name in self.non_negative:
            lo, hi = max(lo, 0), max(hi, 0)
        return lo, hi

    def _number(self, f: FieldSpec, n: str) -> int | float:
        lo, hi = self._range(f, n)
        if f.type == "integer":
            low = math.ceil(lo)
            return self.rng.randint(low, max(low, math.floor(hi)))
        return round(self.rng.uniform(lo, hi), 2)

    def _string(self, f: FieldSpec, n: str, row: Row, i: int) -> str:
        fake, rng, entity = self.fake, self.rng, self.entity.name
        if f.format == "email" or n == "email" or n.endswith("_email"):
            return self._email(row)
        if f.format == "phone" or n in ("phone", "phone_number", "mobile", "fax") or n.endswith("_phone"):
            return fake.numerify("+1-###-###-####")
        if f.format == "uuid" or n == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if f.format == "url" or n in ("url", "website", "homepage", "link") or n.endswith("_url"):
            return f"https://{fake.domain_name()}/{fake.slug()}"
        if n == "first_name":
            return fake.first_name()
        if n == "last_name":
            return fake.last_name()
        if n in ("full_name", "contact_name", "customer_name", "author_name", "passenger_name", "guest_name"):
            return fake.name()
        if n in ("username", "user_name", "login", "handle"):
            return fake.user_name()
        if n == "flight_number":
            return f"{rng.choice(['AA', 'UA', 'DL', 'BA', 'LH', 'AF'])}{rng.randint(100, 9999)}"
        if n == "sku" or n.endswith("_sku"):
            return f"SKU-{rng.randint(10000, 99999)}"
        if n.endswith("_number") and not any(w in n for w in ("phone", "card")):
            return f"{(self.entity.id_prefix or 'N').rstrip('_').upper()}-{2024 + rng.randint(0, 1)}-{i:05d}"
        if n == "code" or n.endswith("_code"):
            return self._code(n)
        if n == "slug":
            return fake.slug()
        if n in ("address", "street", "street_address", "address_line1", "billing_address", "shipping_address"):
            return fake.street_address()
        if n == "city":
            return fake.city()
        if n in ("state", "province", "region"):
            return fake.state_abbr()
        if n == "country":
            return fake.country()
        if n in ("zip", "zipcode", "zip_code", "postal_code", "postcode"):
            return fake.postcode()
        if n in ("company", "company_name", "employer", "organization", "vendor", "vendor_name", "supplier_name"):
            return fake.company()
        if n in ("job_title", "position", "occupation", "role_title"):
            return fake.job()
        if n in ("currency", "currency_code"):
            return rng.choice(_CURRENCIES)
        if n in ("timezone", "time_zone", "tz"):
            return fake.timezone()
        if n in ("color", "colour"):
            return fake.color_name()
        if n in ("ip", "ip_address"):
            return fake.ipv4()
        if n == "isbn":
            return fake.isbn13()
        if n == "iban":
            return fake.iban()
        if n in ("origin", "destination", "from_airport", "to_airport", "departure_airport", "arrival_airport"):
            return self._airport(n, row)
        if n in ("seat", "seat_number"):
            return f"{rng.randint(1, 40)}{rng.choice('ABCDEF')}"
        if n in ("file_name", "filename"):
            return fake.file_name()
        if n in ("mime_type", "content_type"):
            return fake.mime_type()
        if n == "path" or n.endswith("_path"):
            return fake.file_path(depth=2)
        if n in ("subject", "headline"):
            return fake.sentence(nb_words=rng.randint(3, 6)).rstrip(".")
        if n in _TEXT_FIELDS or n.endswith(("_description", "_notes", "_reason", "_text")):
            return fake.sentence(nb_words=rng.randint(8, 16))
        if n in ("name", "title", "display_name", "label") or n.endswith("_name"):
            return self._name(n, entity)
        return fake.word()

    def _email(self, row: Row) -> str:
        first, last = row.get("first_name"), row.get("last_name")
        full = row.get("name") or row.get("full_name")
        if not (first and last) and isinstance(full, str) and " " in full and self.entity.name in _PERSON:
            first, last = full.split(" ")[0], full.split(" ")[-1]
        if first and last:
            local = re.sub(r"[^a-z0-9.]", "", f"{first}.{last}".lower())
        else:
            local = re.sub(r"[^a-z0-9._]", "", self.fake.user_name().lower())
        return f"{local or 'user'}@{self.fake.free_email_domain()}"

    def _code(self, n: str) -> str:
        letters = "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3))
        return f"{letters}{self.rng.randint(100, 999)}"

    def _airport(self, n: str, row: Row) -> str:
        other = row.get("origin") if n in ("destination", "to_airport", "arrival_airport") else None
        choices = [a for a in _AIRPORTS if a != other]
        return self.rng.choice(choices)

    def _name(self, n: str, entity: str) -> str:
        fake, rng = self.fake, self.rng
        if entity in _PERSON:
            return fake.name()
        if entity in _COMPANY:
            return fake.company()
        if entity in _PRODUCT:
            return f"{rng.choice(_ADJECTIVES)} {rng.choice(_MATERIALS)} {rng.choice(_GOODS)}"
        if entity in _PLACE:
            return f"{fake.city()} {entity.replace('_', ' ').title()}"
        if entity in _TITLED or n == "title":
            return fake.sentence(nb_words=rng.randint(3, 7)).rstrip(".")
        return " ".join(w.title() for w in fake.words(nb=2))

    # --- cross-field consistency ----------------------------------------------------------

    def _make_consistent(self, row: Row) -> None:
        fields = {f.name: f for f in self.entity.fields}
        for start, end in _DATE_PAIRS:
            a, b = row.get(start), row.get(end)
            if isinstance(a, str) and isinstance(b, str) and b < a:
                row[start], row[end] = b, a
        for start, end in _TRIPS:
            a = row.get(start)
            if isinstance(a, str) and end in fields and fields[start].type == fields[end].type == "datetime":
                later = dt.datetime.fromisoformat(a) + dt.timedelta(minutes=self.rng.randrange(60, 14 * 60, 5))
                row[end] = later.isoformat()
        capacity = row.get("capacity")
        if isinstance(capacity, int):
            for name in fields:
                if name in _COUNTERS and isinstance(row.get(name), int) and name not in self.seen:
                    row[name] = self.rng.randint(0, capacity)
        total = next((row[k] for k in ("amount", "total", "budget") if isinstance(row.get(k), int | float)), None)
        for name in ("remaining", "amount_remaining", "remaining_amount", "remaining_budget"):
            if total is not None and isinstance(row.get(name), int | float) and name not in self.seen:
                row[name] = round(self.rng.uniform(0, max(total, 0)), 2) if fields[name].type == "number" else 0
        self._price_totals(row, fields)

    def _price_totals(self, row: Row, fields: dict[str, FieldSpec]) -> None:
        """An order line's total is quantity x the referenced product's price, when both are known."""
        qty_name = next((q for q in ("quantity", "qty", "units", "seats", "tickets") if q in row), None)
        total_name = next((t for t in _TOTALS if t in fields and fields[t].type == "number"), None)
        if qty_name is None or total_name is None or not isinstance(row.get(qty_name), int):
            return
        for f in self.entity.fields:
            if not f.references or row.get(f.name) is None:
                continue
            parent = self.by_name[f.references.split(".")[0]]
            if parent.name == self.entity.name:
                continue
            match = next((r for r in self.parents.get(parent.table, []) if r[parent.primary_key] == row[f.name]), None)
            price = next((match[p] for p in _UNIT_PRICES if match and isinstance(match.get(p), int | float)), None)
            if price is not None:
                value = round(price * row[qty_name], 2)
                lo = fields[total_name].minimum
                hi = fields[total_name].maximum
                if (lo is None or value >= lo) and (hi is None or value <= hi):
                    row[total_name] = value
                return


def generate_rows(entities: list[EntitySpec], seed: int, scale: float = 1.0) -> dict[str, list[Row]]:
    """Seed rows for every entity, keyed by table name; the same seed gives identical rows."""
    by_name = {e.name: e for e in entities}
    counts = row_counts(entities, scale)
    rows: dict[str, list[Row]] = {}
    for e in table_order(entities):
        rows[e.table] = _EntityRows(e, seed, rows, by_name).generate(counts[e.name])
    return {e.table: rows[e.table] for e in entities}
