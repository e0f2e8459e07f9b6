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
from factory.lexicon import CLOSED_STATES, COUNT_FIELDS, COUNTER_FIELDS
from factory.mining import values
from factory.models import EntitySpec, FieldSpec
from factory.naming import format_id

Row = dict[str, Any]

# Every seeded date lies in the 18 months before a fixed reference date, so a seed always means the
# same dates and no row is from another era (birth dates aside).
REFERENCE_DATE = dt.date(2026, 3, 31)
DATE_START = dt.date(2024, 10, 1)
SCOPE_ROWS = 5  # rows of the largest table per value of a field every table shares (`shared_fields`)
DATE_DAYS = (REFERENCE_DATE - DATE_START).days + 1  # DATE_START .. REFERENCE_DATE, both included

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
_AIRPORTS = ["JFK", "LAX", "SFO", "ORD", "ATL", "SEA", "BOS", "MIA", "DEN", "LHR", "CDG", "FRA", "AMS", "MAD", "NRT"]
_PERSON_ROLES = _PERSON | {"guide", "vet", "patient", "organizer", "requester", "recipient", "sender", "signer"}
_TIMEZONES = ["America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "Europe/London"]
_TIMEZONES += ["Europe/Berlin", "Europe/Paris", "Asia/Tokyo", "Asia/Singapore", "Australia/Sydney", "UTC"]
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
_HOUR, _DAY = 60, 24 * 60
# (start, end, shortest, longest): the end follows the start by a span in minutes (dates: whole days).
_DATE_PAIRS = [
    ("created_at", "updated_at", 0, 120 * _DAY),
    ("start_date", "end_date", 7 * _DAY, 180 * _DAY),
    ("starts_at", "ends_at", 30, 3 * _HOUR),
    ("start_time", "end_time", 30, 3 * _HOUR),
    ("check_in", "check_out", _DAY, 10 * _DAY),
    ("check_in_date", "check_out_date", _DAY, 10 * _DAY),
    ("departure", "arrival", _HOUR, 14 * _HOUR),
    ("departure_time", "arrival_time", _HOUR, 14 * _HOUR),
    ("departs_at", "arrives_at", _HOUR, 14 * _HOUR),
    ("pickup_date", "return_date", _DAY, 14 * _DAY),
    ("issued_on", "due_on", 14 * _DAY, 60 * _DAY),
    ("issue_date", "due_date", 14 * _DAY, 60 * _DAY),
    ("invoice_date", "due_date", 14 * _DAY, 60 * _DAY),
    ("opened_at", "closed_at", _HOUR, 10 * _DAY),
    ("borrowed_on", "due_on", 14 * _DAY, 28 * _DAY),
    ("borrowed_on", "due_date", 14 * _DAY, 28 * _DAY),
    ("assigned_on", "returned_on", 30 * _DAY, 300 * _DAY),
    ("start_on", "end_on", _DAY, 30 * _DAY),
    ("submitted_on", "approved_on", 0, 10 * _DAY),
    ("ordered_at", "completed_at", _HOUR, 3 * _DAY),
]
# Entities whose spans are shorter than the default of their pair: a leave lasts days, a shift hours.
_SHORT_SPANS = {
    ("leave_request", "start_date"): (0, 10 * _DAY),
    ("absence", "start_date"): (0, 10 * _DAY),
    ("time_off", "start_date"): (0, 10 * _DAY),
    ("shift", "starts_at"): (4 * _HOUR, 10 * _HOUR),
    ("shift", "start_time"): (4 * _HOUR, 10 * _HOUR),
}
# Datetimes people schedule fall on the quarter hour.
_SCHEDULED_WORDS = ("start", "scheduled", "send", "due", "depart", "pickup", "expires")


# Plausible ranges of number fields known by name.
_NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "story_points": (1, 13),
    "refills": (0, 5),
    "routing_order": (1, 5),
    "floor": (1, 20),
    "days": (1, 10),
    "leave_balance": (0, 30),
    "vacation_days": (0, 30),
    "version": (1, 20),
    "mileage": (1000, 90000),
    "odometer": (1000, 90000),
    "employees": (5, 5000),
    "employee_count": (5, 5000),
    "headcount": (5, 5000),
    "additions": (0, 400),
    "deletions": (0, 400),
    "gross": (1500, 12000),
    "net": (1200, 9000),
    "gross_pay": (1500, 12000),
    "net_pay": (1200, 9000),
    "cash": (500, 50000),
    "hourly_rate": (20, 150),
    "nightly_rate": (80, 600),
    "daily_rate": (30, 250),
    "fare": (80, 1500),
    "weight_kg": (0.5, 60),
    "max_points": (10, 100),
    "shares": (1, 500),
    "points_cost": (100, 5000),
    "capacity_units": (1000, 20000),
}


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


_FIRST_FIELDS = ("first_name", "last_name", "name", "full_name", "title", "make", "species", "city")


def _generation_order(f: FieldSpec) -> int:
    if f.primary_key or f.references or f.enum:
        return 0
    return 1 if f.name in _FIRST_FIELDS else 2


class _EntityRows:
    """Rows of one entity, generated with its own seeded Faker and random source."""

    def __init__(
        self,
        entity: EntitySpec,
        seed: int,
        parents: dict[str, list[Row]],
        by_name: dict[str, EntitySpec],
        shared: dict[str, list[Any]] | None = None,
        scopes: tuple[str, ...] = (),
    ):
        self.entity = entity
        self.shared = shared or {}  # field -> the values rows draw from (`shared_fields`)
        self.scopes = scopes  # every shared field, which a row takes from its parent when that has it
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
        # enums and names first, so dependent values follow them (a breed its species, an email its
        # person, a mime type its file name); the row keeps the entity's field order
        for f in sorted(self.entity.fields, key=_generation_order):
            if f.primary_key or f.name == self.entity.primary_key:
                row[f.name] = format_id(prefix, i) if f.type == "string" else i
            elif f.references:
                row[f.name] = self._reference(f, earlier)
            elif f.name in self.shared:
                row[f.name] = self.rng.choice(self.shared[f.name])
            else:
                row[f.name] = self._unique(f, row, i)
        row = {f.name: row[f.name] for f in self.entity.fields}
        self._inherit_scope(row)
        self._make_consistent(row)
        return row

    def _inherit_scope(self, row: Row) -> None:
        """A shared field takes the value of the first parent row that has it: a repository is in its owner's
        scope, a pull request in its repository's."""
        for name in self.scopes:
            for f in self.entity.fields:
                parent_name, _, col = (f.references or "").partition(".")
                parent = self.by_name.get(parent_name)
                if parent is None or parent_name == self.entity.name or row.get(f.name) is None:
                    continue
                key = col or parent.primary_key
                found = next((r for r in self.parents.get(parent.table) or [] if r.get(key) == row[f.name]), None)
                if found is not None and found.get(name) is not None:
                    row[name] = found[name]
                    break

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
            return _conform(f"{value}-{i}", f.pattern)
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
            return self._datetime(n).isoformat()
        if f.type in ("integer", "number"):
            return self._number(f, n)
        if f.format == "list":  # an entity's observations: a few distinct sentences
            said = [values.phrase(self.rng, self.entity.name, n) for _ in range(self.rng.randint(1, 3))]
            return list(dict.fromkeys(said))
        return _conform(self._string(f, n, row, i), f.pattern)

    def _date(self, n: str) -> dt.date:
        if n in ("dob", "birthday", "birth_date", "date_of_birth"):
            if self.entity.name in ("pet", "animal"):
                return REFERENCE_DATE - dt.timedelta(days=self.rng.randrange(180, 15 * 365))
            return dt.date(1950, 1, 1) + dt.timedelta(days=self.rng.randrange(20000))
        return DATE_START + dt.timedelta(days=self.rng.randrange(DATE_DAYS))

    def _datetime(self, n: str = "") -> dt.datetime:
        start = dt.datetime(DATE_START.year, DATE_START.month, DATE_START.day)
        moment = start + dt.timedelta(
            days=self.rng.randrange(DATE_DAYS), seconds=self.rng.randrange(8 * 3600, 20 * 3600)
        )
        if any(w in n for w in _SCHEDULED_WORDS):
            moment = moment.replace(minute=moment.minute // 15 * 15, second=0)
        return moment

    def _range(self, f: FieldSpec, n: str) -> tuple[float, float]:
        money = f.format == "money"
        if n in COUNT_FIELDS or n.startswith("num_"):
            lo, hi = 1, 5
        elif n in ("participants", "rooms", "openings", "max_guests", "guests_count", "attendee_count"):
            lo, hi = 1, 8
        elif n in _COUNTERS:
            lo, hi = 0, 200
        elif n in _NUMBER_RANGES:
            lo, hi = _NUMBER_RANGES[n]
        elif n.startswith("max_hours"):
            lo, hi = 20, 40
        elif n.endswith("_days") and not n.startswith("num_"):
            lo, hi = 7, 60
        elif n.endswith("_bytes"):
            lo, hi = 1_000, 50_000_000
        elif "seconds" in n:
            lo, hi = 20, 1800
        elif "salary" in n:
            lo, hi = 40000, 180000
        elif n.startswith("total_") and self.entity.name in ("pay_run", "payroll"):
            lo, hi = 20000, 400000
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
        if "currency" in n:
            return values.currency(rng)
        if f.format == "email" or n == "email" or n.endswith("_email"):
            return self._email(n, row)
        if f.format == "phone" or n in ("phone", "phone_number", "mobile", "fax") or n.endswith("_phone"):
            return f"+1-{rng.randint(2, 9)}{rng.randint(0, 99):02d}-{rng.randint(2, 9)}{rng.randint(0, 99):02d}-" + (
                f"{rng.randint(0, 9999):04d}"
            )
        if f.format == "uuid" or n == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if f.format == "url" or n in ("url", "website", "homepage", "link") or n.endswith("_url"):
            return self._url(n, row)
        if n == "first_name":
            return fake.first_name()
        if n == "last_name":
            return fake.last_name()
        if n in ("full_name", "contact_name", "customer_name", "author_name", "passenger_name", "guest_name"):
            return values.person_name(rng, fake)
        if n in ("username", "user_name", "login", "handle"):
            return fake.user_name()
        if n in values.PERSON_FIELDS or (n.endswith("_name") and n[: -len("_name")] in _PERSON_ROLES):
            return fake.user_name() if entity in values.DEV_ENTITIES else values.person_name(rng, fake)
        if n == "flight_number":
            return f"{rng.choice(['AA', 'UA', 'DL', 'BA', 'LH', 'AF'])}{rng.randint(100, 9999)}"
        if n == "sku" or n.endswith("_sku"):
            return f"SKU-{rng.randint(10000, 99999)}"
        if n == "number" or (n.endswith("_number") and not any(w in n for w in ("phone", "card", "account", "room"))):
            year = rng.randint(DATE_START.year, REFERENCE_DATE.year)
            return f"{(self.entity.id_prefix or 'N').rstrip('_').upper()}-{year}-{i:05d}"
        if n in ("address", "street", "street_address", "address_line1") or n.endswith("_address"):
            return fake.street_address()
        if n in ("zip", "zipcode", "zip_code", "postal_code", "postcode"):
            return fake.postcode()
        if n in ("company", "company_name", "employer", "organization", "vendor_name", "supplier_name"):
            return fake.company()
        if n in ("job_title", "position", "occupation", "role_title") or (n == "title" and entity in _PERSON):
            return fake.job()
        known = values.field_value(
            n, entity, row, rng, fake, (DATE_START.year, REFERENCE_DATE.year), REFERENCE_DATE.month, DATE_START.month
        )
        if known is not None:
            return known
        if n == "code" or n.endswith("_code"):
            return self._code(n, row)
        if n == "slug":
            return fake.slug()
        if n in ("timezone", "time_zone", "tz"):
            return rng.choice(_TIMEZONES)
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
            return values.ENTITY_LABELS["file"](rng, row, fake)
        if n == "path" or n.endswith("_path"):
            return f"/{rng.choice(values.FOLDERS).lower().replace(' ', '-')}/{fake.slug()}"
        if n in ("subject", "headline"):
            label = values.entity_label(entity, rng, row, fake)
            return label or rng.choice(values.MEETINGS)
        if n in _TEXT_FIELDS or n.endswith(("_description", "_notes", "_reason", "_text")):
            return values.phrase(rng, entity, n)
        if n in ("name", "title", "display_name", "label") or n.endswith("_name"):
            return self._name(n, entity, row)
        return f"{n.replace('_', ' ').title()} {rng.randint(1, 99)}"

    def _email(self, n: str, row: Row) -> str:
        role = n[: -len("_email")] if n.endswith("_email") else ""
        first, last = (row.get("first_name"), row.get("last_name")) if not role else (None, None)
        full = row.get(f"{role}_name") if role else row.get("name") or row.get("full_name")
        if role and not isinstance(full, str) and isinstance(row.get(role), str) and " " in row[role]:
            full = row[role]
        if not (first and last) and isinstance(full, str) and " " in full and (role or self.entity.name in _PERSON):
            first, last = full.split(" ")[0], full.split(" ")[-1]
        if not (first and last):
            first, last = self.fake.first_name(), self.fake.last_name()
        style = self.rng.random()
        local = f"{first}.{last}" if style < 0.7 else f"{first[0]}{last}" if style < 0.9 else f"{first}{last[0]}"
        local = re.sub(r"[^a-z0-9.]", "", local.lower()).strip(".")
        return f"{local or 'user'}@{self.fake.free_email_domain()}"

    def _url(self, n: str, row: Row) -> str:
        host = f"www.{values._domain(row, self.rng)}" if n in ("website", "homepage") else self.fake.domain_name()
        if n in ("website", "homepage"):
            return f"https://{host}"
        stem = {"resume_url": "resumes", "document_url": "documents", "avatar_url": "avatars"}.get(n, "files")
        return f"https://{host}/{stem}/{self.rng.getrandbits(40):010x}"

    def _code(self, n: str, row: Row) -> str:
        label = row.get("name") or row.get("title")
        if isinstance(label, str) and self.entity.name in ("course", "lab_test", "subject", "class", "school_class"):
            words = [w for w in re.split(r"[^A-Za-z]+", label) if w and w[0].isupper()]
            letters = "".join(w[0] for w in words[:4]).upper() or "X"
            return f"{letters[:4]}{self.rng.randint(100, 499)}"
        letters = "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3))
        return f"{letters}{self.rng.randint(100, 999)}"

    def _airport(self, n: str, row: Row) -> str:
        other = row.get("origin") if n in ("destination", "to_airport", "arrival_airport") else None
        choices = [a for a in _AIRPORTS if a != other]
        return self.rng.choice(choices)

    def _name(self, n: str, entity: str, row: Row) -> str:
        fake, rng = self.fake, self.rng
        if n.endswith("_name") and n not in ("display_name",):
            stem = n[: -len("_name")]
            if stem in _PRODUCT:
                return values.product_name(rng)
            label = values.entity_label(stem, rng, row, fake)
            if label is not None:
                return label
        if entity in _PERSON:
            return values.person_name(rng, fake)
        if entity in _COMPANY:
            return fake.company()
        label = values.entity_label(entity, rng, row, fake)
        if label is not None:
            return label
        if entity in _PRODUCT:
            return values.product_name(rng)
        if entity in _PLACE:
            return f"{values.city(rng)} {entity.replace('_', ' ').title()}"
        if entity in _TITLED or n == "title":
            return rng.choice(values.MEETINGS)
        return values.generic_label(entity, rng)

    # --- cross-field consistency ----------------------------------------------------------

    def _make_consistent(self, row: Row) -> None:
        fields = {f.name: f for f in self.entity.fields}
        self._date_spans(row, fields)
        if any(f.enum and row.get(f.name) in CLOSED_STATES for f in self.entity.fields):
            # a closed row (archived product, cancelled show) keeps little of what it once offered
            for name in fields:
                if name in _COUNTERS and isinstance(row.get(name), int) and name not in self.seen:
                    row[name] = min(row[name], self.rng.randint(0, 10))
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

    def _date_spans(self, row: Row, fields: dict[str, FieldSpec]) -> None:
        """Ends follow their starts by a plausible span (an hour-long meeting, a week's stay), inside the window."""
        last = dt.datetime.combine(REFERENCE_DATE, dt.time(23, 59))
        for start, end, shortest, longest in _DATE_PAIRS:
            a, b = row.get(start), row.get(end)
            if not (isinstance(a, str) and isinstance(b, str)) or start in self.seen or end in self.seen:
                continue
            if fields[start].type not in ("date", "datetime") or fields[end].type not in ("date", "datetime"):
                continue
            shortest, longest = _SHORT_SPANS.get((self.entity.name, start), (shortest, longest))
            begin = dt.datetime.fromisoformat(a)
            if fields[end].type == "date" or fields[start].type == "date":
                span = dt.timedelta(days=self.rng.randint(shortest // _DAY, max(shortest // _DAY, longest // _DAY)))
            else:
                span = dt.timedelta(minutes=self.rng.randrange(shortest, longest + 1, 5 if longest >= 5 else 1))
            finish = begin + span
            if finish > last:  # shift both back into the window
                begin, finish = begin - (finish - last), last
                if fields[start].type == "datetime" and fields[end].type == "datetime":
                    begin, finish = begin.replace(second=0), finish.replace(second=0)
            row[start] = _iso(begin, fields[start].type)
            row[end] = _iso(finish, fields[end].type)
        for count, (start, end, extra) in (
            ("days", ("start_date", "end_date", 1)),
            ("nights", ("check_in", "check_out", 0)),
        ):
            if isinstance(row.get(count), int) and isinstance(row.get(start), str) and isinstance(row.get(end), str):
                value = (dt.date.fromisoformat(row[end][:10]) - dt.date.fromisoformat(row[start][:10])).days + extra
                lo, hi = fields[count].minimum, fields[count].maximum
                if (lo is None or value >= lo) and (hi is None or value <= hi):
                    row[count] = value

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


def _conform(value: str, pattern: str | None) -> str:
    """`value`, or the nearest of a few spellings of it (spaces as dashes or underscores, letters and digits
    only, lower case) that the field's pattern accepts: "Account 43" for `^[^ :]+$` is "Account-43"."""
    if pattern is None or re.search(pattern, value):
        return value
    slug = re.sub(r"[^A-Za-z0-9]+", "-", value).strip("-")
    bare = re.sub(r"[^A-Za-z0-9]", "", value)
    digits = re.sub(r"\D", "", value) or "1"
    for candidate in (value.replace(" ", "-"), value.replace(" ", "_"), slug, slug.lower(), bare, bare.lower(), digits):
        if re.search(pattern, candidate):
            return candidate
    return value


def _iso(moment: dt.datetime, kind: str) -> str:
    return moment.date().isoformat() if kind == "date" else moment.isoformat()


def shared_fields(entities: list[EntitySpec]) -> list[str]:
    """Plain text fields that every entity has (git's `repo_path`, an API's `username`): the scope an API's calls
    all name. Their values are shared: several rows of each table fall in one scope, so a listing scoped to one
    has rows to count and filter, and the tables agree on which scopes there are."""
    if len(entities) < 2:
        return []
    first, *rest = entities
    plain = [
        f.name
        for f in first.fields
        if f.type == "string" and not (f.primary_key or f.references or f.enum or f.name == first.primary_key)
    ]

    def plain_in(e: EntitySpec, name: str) -> bool:
        f = next((f for f in e.fields if f.name == name), None)
        return f is not None and f.type == "string" and not (f.primary_key or f.references or f.enum)

    return [name for name in plain if all(plain_in(e, name) for e in rest)]


def _shared_values(entities: list[EntitySpec], name: str, seed: int, counts: dict[str, int]) -> list[Any]:
    """The pool a shared field draws from: about one value per SCOPE_ROWS rows of the largest table (a scope of
    a smaller table holds fewer, so its listing still fits one page)."""
    owner = next(e for e in entities if any(f.name == name for f in e.fields))
    f = next(f for f in owner.fields if f.name == name)
    maker = _EntityRows(owner, _derived_seed(seed, "shared", name), {}, {e.name: e for e in entities})
    size = max(2, max(counts.values()) // SCOPE_ROWS)
    return list(dict.fromkeys(maker._value(f, {}, i) for i in range(1, size + 1)))


def _owns(entity: EntitySpec, name: str, entities: list[EntitySpec]) -> bool:
    """`entity`'s rows give the shared field its values (each its own): the field is unique to them, or rows of
    another entity that point at them carry it too (a user's username, which its repositories are listed by)."""
    if any(f.name == name and f.unique for f in entity.fields):
        return True
    return any(
        (f.references or "").partition(".")[0] == entity.name and any(g.name == name for g in e.fields)
        for e in entities
        if e.name != entity.name
        for f in e.fields
    )


def generate_rows(entities: list[EntitySpec], seed: int, scale: float = 1.0) -> dict[str, list[Row]]:
    """Seed rows for every entity, keyed by table name; the same seed gives identical rows."""
    by_name = {e.name: e for e in entities}
    counts = row_counts(entities, scale)
    shared = {name: _shared_values(entities, name, seed, counts) for name in shared_fields(entities)}
    rows: dict[str, list[Row]] = {}
    for e in table_order(entities):
        mine = {n: v for n, v in shared.items() if not _owns(e, n, entities)}
        rows[e.table] = _EntityRows(e, seed, rows, by_name, mine, tuple(shared)).generate(counts[e.name])
    return {e.table: rows[e.table] for e in entities}
