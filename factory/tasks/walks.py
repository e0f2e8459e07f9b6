"""Graph-walk tasks (Agent-World, "tool graph" task synthesis), offline and deterministic for an rng.

One task comes from one weighted random walk over the tool graph:
1. `weighted_walk` proposes a chain of tools, starting at a tool that returns data and needs no other
   tool first.
2. Each tool is called in a private session with arguments taken from upstream records (the strong and
   weak edge reasons say which output field feeds which parameter), from one consistent seed record
   (a name to search for, a filter value), or fresh values for writes that the question then states.
   Calls with empty, error or duplicate results are dropped from the chain.
3. Every step picks one record a question can single out (the highest price, the one named "X", the
   only one) and says what it means as a phrasing `Intent`.
4. The gold chain is replayed in a fresh session: answers and state checks that do not agree
   (clock- or uuid-derived values) are dropped, and a chain whose calls fail on replay is discarded.
5. The answer (values to report) and the rubric come from the executed chain: answer_contains per value,
   with the values a near miss would state instead as its competitors; row_exists, row_absent and
   field_equals from the state diff of the gold run; and end_state, the whole diff, so that writes beyond
   the gold's fail (a read-only chain: the state must not change).
A chain is kept only when it is solvable: every value a write uses appears in the question or in the
output of an earlier call, and the question names no tool; and when echoing the question cannot pass it.

Recovery (`Knobs.recovery`): a goal's records are then chosen without regard to whether its write is allowed on
them (a scratch session tries it on each), so the environment refuses it on some (a state that takes no change,
a transition the status does not allow, a balance or supply that does not cover it). The gold makes each refused
call (`Task.refusals`: its index and error code, replayed as expected), leaves the record as it is, and the
question asks, in its fallback, for the refused records' IDs: the answer lists them, with every other ID of
the table (those acted on first) as competitors, so a run that skips the checking and guesses fails.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from factory.envs.bundle import Bundle
from factory.envs.codegen import batch_items
from factory.envs.entities.outputs import paging_style
from factory.envs.entities.params import list_edit_keys
from factory.envs.runtime import Session
from factory.envs.toolkit.common import MAX_LIMIT
from factory.graphs import GENERIC_PARAMS, tool_entity, walk_edges, weighted_walk
from factory.lexicon import CRUD_VERBS
from factory.mining.values import phrase
from factory.models import (
    Difficulty,
    EntitySpec,
    EnvSpec,
    FieldSpec,
    Lineage,
    Refusal,
    RubricCheck,
    Snapshot,
    Task,
    ToolCall,
    ToolSpec,
)
from factory.naming import singular
from factory.pipeline.registry import TASKS
from factory.sandbox import compile_schema
from factory.store import canonical_json, hash_value
from factory.tasks.difficulty import Knobs
from factory.tasks.end_state import end_state_check
from factory.tasks.phrasing import (
    Action,
    Condition,
    Filter,
    Goal,
    Intent,
    Style,
    compose_goal,
    compose_question,
    humanize,
    value_text,
)
from factory.verify.answers import answer_contains, answers_match
from factory.verify.rubric import run_check
from factory.verify.state import ColumnFilter, RowChange, state_diff

DEFAULT_LENGTHS = (4, 4, 5, 5, 6)  # default chain lengths (calls); the mean is at least 4
MIN_DEFAULT_LENGTH = 4
WALK_SLACK = 4  # extra tools proposed per walk, since calls with empty/error/duplicate results are dropped
ATTEMPTS_PER_TASK = 15
MAX_PAGES = 6
PAGE_SIZE = MAX_LIMIT  # rows per page a goal's gold asks for (the largest page a listing serves)
GOAL_MAX_PAGES = 8
MAX_ASKS = 2
MAX_COMPETITORS = 200  # per answer check: every other row's value for a catalog table, the nearest for bigger ones
# Fields that make a record easy to name in a question, best first.
LABEL_FIELDS = (
    "name",
    "title",
    "full_name",
    "subject",
    "display_name",
    "username",
    "flight_number",
    "code",
    "email",
    "slug",
)
LABEL_SUFFIXES = ("name", "title", "number", "code", "email")
STATISTICS = ("sum", "avg", "max", "min")

SessionFactory = Callable[[], Session]
Ask = tuple[int, str, str, Any]  # (step index, entity, field, value) of a value the answer must state


@dataclass
class Step:
    """One kept step of a chain: its calls (several when it pages), results and meaning."""

    tool: ToolSpec
    kind: str
    entity: str | None
    calls: list[ToolCall]
    results: list[Any]
    record: dict[str, Any] | None
    intent: Intent
    stated: list[Any] = field(default_factory=list)  # values the question states for this step
    constraint: str | None = None
    pages: int = 1
    uses: set[int] = field(default_factory=set)  # earlier steps whose records this one drew on
    refused: str | None = None  # the error code the environment refuses this step's write with (recovery)


class _WalkFailed(Exception):
    """This walk cannot give a task (a cheap, local way to abandon an attempt)."""


def operation_kind(tool: ToolSpec) -> str | None:
    """The tool's operation kind; for a tool without a typed operation, its verb when it is a plain CRUD one."""
    if tool.operation is not None:
        return tool.operation.kind
    verb = tool.name.split("_", 1)[0]
    return {"list": "list", "get": "get", "search": "search", "create": "create", "update": "update"}.get(
        verb, "delete" if verb in ("delete", "remove") else None
    )


class GraphTaskSynthesizer:
    """Turns weighted walks over one environment's tool graph into verified graph tasks."""

    def __init__(
        self,
        bundle: Bundle,
        session_factory: SessionFactory,
        graph: nx.DiGraph,
        rng: random.Random,
        knobs: Knobs | None = None,
    ):
        self.bundle = bundle
        self.spec: EnvSpec = bundle.spec
        self.session_factory = session_factory
        self.graph = graph
        self.rng = rng
        self.strict = False  # a goal must reach every chain-length and pages floor
        self.tools = {t.name: t for t in self.spec.tools}
        self.entities = {e.name: e for e in self.spec.entities}
        self.columns = ColumnFilter(self.spec.bookkeeping)
        self.by_entity: dict[str, list[ToolSpec]] = {}  # entity -> its tools, in the spec's order
        self.goal_listed: dict[str, list[ToolSpec]] = {}  # entity -> goal_listings
        for t in self.spec.tools:
            if (e := self.entity_of(t)) is not None:
                self.by_entity.setdefault(e.name, []).append(t)
        with session_factory() as s:
            self.seed: Snapshot = s.snapshot()
        self.knobs = self.within_reach(knobs)
        self.active: Knobs | None = self.knobs  # the floors of the goal being built
        self.lineage = Lineage(
            stage=TASKS.name,
            code_version=TASKS.code_version,
            inputs={"bundle": bundle.content_hash},
            generator="procedural",
        )

    def within_reach(self, knobs: Knobs | None) -> Knobs | None:
        """`knobs` with the pages floor lowered to the most pages any listing here can span: an API whose
        listings do not page (or whose tables fit one page) still gets tasks, and each counts as a shortfall."""
        if knobs is None or knobs.pages <= 1:
            return knobs
        reach = max((self.listing_pages(e) for e in self.spec.entities), default=1)
        return knobs if reach >= knobs.pages else knobs.model_copy(update={"pages": max(1, reach)})

    def listing_pages(self, entity: EntitySpec) -> int:
        """The pages reading every row of `entity` takes with a listing that pages (1 when none does)."""
        pages = [
            min(GOAL_MAX_PAGES, -(-len(self.rows(entity)) // PAGE_SIZE))
            for t in self.listings(entity)
            if "offset" in (t.parameters.get("properties") or {})
        ]
        return max(pages, default=1)

    def goal_listings(self, entity: EntitySpec) -> list[ToolSpec]:
        """The list tools of `entity` a goal can read: those needing no argument, or only the id of one parent
        (the goal's anchor) that a listing of its own reaches, or only scope arguments (`scope_args`);
        computed once per entity: options scan them all."""
        if entity.name in self.goal_listed:
            return self.goal_listed[entity.name]
        fks = {
            f.name: self.entities[t]
            for f in entity.fields
            if (t := self.reference_target(entity, f.name)) in self.entities
            and self.anchor_listings(entity, self.entities[t])
        }
        self.goal_listed[entity.name] = [
            t
            for t in self.tools_of(entity, "list", "search")
            if not (need := t.parameters.get("required") or [])
            or (
                operation_kind(t) == "list"
                and (
                    any(self.nested_in(entity, fk, a, need) for fk, a in fks.items())
                    or self.scope_args(t, entity) == need
                )
            )
        ]
        return self.goal_listed[entity.name]

    def nested_in(self, entity: EntitySpec, fk: str, anchor: EntitySpec, need: list[str]) -> bool:
        """A listing needing `need` lists the children of one `anchor` record: `fk`, its id, and otherwise only
        fields that its rows carry too (a repository's pull requests need its id and its owner's name)."""
        return fk in need and all(p == fk or self.carries(entity, anchor, p) for p in need)

    def carries(self, entity: EntitySpec, anchor: EntitySpec, name: str) -> bool:
        """`entity` and `anchor` both hold `name` as a plain field (the scope a child shares with its parent)."""
        mine, theirs = self.field_spec(entity, name), self.field_spec(anchor, name)
        return all(f is not None and not f.primary_key and not f.references for f in (mine, theirs))

    def anchor_listings(self, entity: EntitySpec, anchor: EntitySpec) -> list[ToolSpec]:
        """The listings an `anchor` record of a goal on `entity` is found with: those needing no argument, else
        those needing only scope arguments that `entity`'s rows carry too (the goal states their values)."""
        return self.listings(anchor) or [
            t
            for t in self.tools_of(anchor, "list")
            if (need := t.parameters.get("required") or [])
            and self.scope_args(t, anchor) == need
            and all(self.carries(entity, anchor, p) for p in need)
        ]

    def goal_scopes(self, rows: list[dict[str, Any]], needed: list[str], target: int) -> list[dict[str, Any]]:
        """The scopes a goal reads (each a listing's arguments): a seed row's; with one scope argument, a few
        more of the seed's values (one scope's listing is one call, too short a chain), never all of them."""
        first = self.rng.choice(rows)
        scopes = [{p: first[p] for p in needed}]
        if len(needed) != 1:
            return scopes
        (p,) = needed
        others = sorted({r[p] for r in rows} - {first[p]}, key=str)
        if len(others) < 2:
            return scopes
        self.rng.shuffle(others)
        return scopes + [{p: v} for v in others[: self.rng.randint(1, max(1, min(len(others) - 1, target - 2)))]]

    def listings(self, entity: EntitySpec) -> list[ToolSpec]:
        """The list tools of `entity` callable with no argument (a search whose query is optional lists too)."""
        return [t for t in self.tools_of(entity, "list", "search") if not t.parameters.get("required")]

    def scope_args(self, tool: ToolSpec, entity: EntitySpec) -> list[str]:
        """The required arguments of a listing that name a plain field of its rows, with seed values valid for
        the parameter (`repo_path` of git, `account` of an API that serves many): a goal scopes the listing to
        one value, as a nested listing is scoped to its parent."""
        props = tool.parameters.get("properties") or {}
        out = []
        for name in tool.parameters.get("required") or []:
            f = self.field_spec(entity, name)
            if f is None or f.primary_key or self.reference_target(entity, name) or self.ignored(entity, name):
                continue
            valid = compile_schema({"type": "object", "properties": {name: props.get(name) or {}}})
            values = [r.get(name) for r in self.rows(entity)]
            if values and all(isinstance(v, str) and v and valid({name: v}) is None for v in values):
                out.append(name)
        return out

    # --- entity helpers ----------------------------------------------------------------------

    def entity_of(self, tool: ToolSpec) -> EntitySpec | None:
        name = tool.operation.entity if tool.operation is not None else tool_entity(tool, self.spec)
        return self.entities.get(name or "")

    def rows(self, entity: EntitySpec) -> list[dict[str, Any]]:
        return self.seed.tables.get(entity.table, [])

    def field_spec(self, entity: EntitySpec, name: str) -> FieldSpec | None:
        return next((f for f in entity.fields if f.name == name), None)

    def ignored(self, entity: EntitySpec, name: str) -> bool:
        return self.columns.ignored(entity.table, name)

    def label_field(self, entity: EntitySpec) -> str | None:
        """A text field whose values tell the seed rows apart (names a record in a question)."""
        rows = self.rows(entity)
        texts = [
            f.name
            for f in entity.fields
            if f.type == "string" and not f.references and not f.enum and f.name != entity.primary_key
        ]
        ordered = [n for n in LABEL_FIELDS if n in texts]
        ordered += [n for n in texts if n not in LABEL_FIELDS and n.endswith(LABEL_SUFFIXES)]
        for name in ordered:
            values = [r.get(name) for r in rows]
            if rows and all(isinstance(v, str) and v for v in values) and len(set(values)) == len(values):
                return name
        return None

    def reference_target(self, entity: EntitySpec, name: str) -> str | None:
        """The entity a field of `entity` points at (`customer_id` -> customer)."""
        f = self.field_spec(entity, name)
        if f is not None and f.references:
            return singular(f.references.split(".", 1)[0])
        if name.endswith("_id") and name[:-3] in self.entities:
            return name[:-3]
        return None

    # --- one task -----------------------------------------------------------------------------

    def synthesize(self, n: int, misses: Counter[str] | None = None) -> list[Task]:
        """Goal tasks first; walks of the older errand kind only fill up when goals do not give `n`. Each
        attempt that gave no task is counted in `misses` under why ("walk: <reason>")."""
        misses = Counter() if misses is None else misses
        tasks: list[Task] = []
        seen: set[str] = set()
        passes = [(self.goal_attempt, True), (self.goal_attempt, False), (self.attempt, False)]
        for make, strict in passes:
            self.strict = strict
            for _ in range(n * ATTEMPTS_PER_TASK // (1 if strict else 4)):
                if len(tasks) >= n:
                    break
                try:
                    task = make()
                except _WalkFailed as e:
                    misses[f"walk: {e}"] += 1
                    continue
                key = hash_value([c.model_dump() for c in task.gold])  # type: ignore[union-attr]
                if key in seen:
                    misses["walk: the same gold as an earlier task"] += 1
                    continue
                seen.add(key)
                tasks.append(task)
        return tasks

    def attempt(self) -> Task:
        knobs = self.knobs
        rng = self.rng
        target = knobs.chain_length if knobs is not None and knobs.chain_length > 1 else rng.choice(DEFAULT_LENGTHS)
        minimum = max(2, target - 1) if knobs is not None and knobs.chain_length > 1 else MIN_DEFAULT_LENGTH
        want_pages = knobs.pages > 1 if knobs is not None else rng.random() < 0.3
        want_constraint = bool(knobs.constraints) if knobs is not None else rng.random() < 0.3
        style = Style(obscured=knobs.obscured if knobs is not None else rng.random() < 0.25)
        walk = weighted_walk(self.graph, rng, target + WALK_SLACK)
        steps: list[Step] = []
        with self.session_factory() as session:
            for name in walk:
                if sum(len(s.calls) for s in steps) >= target:
                    break
                tool = self.tools.get(name)
                if tool is None:
                    continue
                step = self.try_step(session, tool, steps, want_pages, want_constraint)
                if step is not None:
                    steps.append(step)
            final = session.snapshot()
        asks = self.choose_asks(steps)
        steps, asks = _prune(steps, asks)
        gold = [c for s in steps for c in s.calls]
        if len(gold) < minimum or len(steps) < 2:
            raise _WalkFailed("chain too short")
        if knobs is not None and knobs.pages > 1 and not any(s.pages > 1 for s in steps):
            raise _WalkFailed("no pagination")
        if knobs is not None and knobs.constraints and not any(s.constraint for s in steps):
            raise _WalkFailed("no constraint")
        checks = self.state_checks(steps, final)
        end_state = end_state_check(self.spec, self.seed, final)
        replay_results, replay_final = self.replay(gold)
        if not run_check(end_state, self.seed, replay_final, None).passed:
            raise _WalkFailed("the gold's end state differs on replay")
        asks = self.stable_asks(steps, asks, replay_results)
        checks = [c for c in checks if run_check(c, self.seed, replay_final, None).passed]
        mutates = any(s.tool.mutates for s in steps)
        if not asks and not checks:
            raise _WalkFailed("nothing stable to verify")
        if mutates and not checks:
            raise _WalkFailed("the writes cancel out")  # the audit wants an answer-only run to fail
        question = compose_question([s.intent for s in steps], [(e, f) for _, e, f, _ in asks], rng, style)
        self.check_question(question, steps)
        if any(isinstance(v, str) and answer_contains(question, v) for *_, v in asks):
            raise _WalkFailed("the question gives the answer away")
        if not mutates and all(answer_contains(question, v) for *_, v in asks):
            # Only the state could tell a real run from an echo, and a read-only task leaves it as it was.
            raise _WalkFailed("every answer value is in the question: echoing the question would pass")
        answer_values: dict[str, Any] = {}
        for i, e, f, v in asks:
            key = f"{e} {f}".strip().replace("_", " ")
            answer_values[key if key not in answer_values else f"{key} (step {i + 1})"] = v
        answer_checks = [
            RubricCheck(kind="answer_contains", value=v, description=f"answer states the {k}")
            for k, v in answer_values.items()
        ]
        stated = [question, *(canonical_json(v).decode() for v in answer_values.values())]
        for check, ask in zip(answer_checks, asks, strict=True):
            check.competitors = [c for c in self.competitors(steps, ask, final) if not _stated(stated, c)]
        rubric = [*answer_checks, *checks, end_state]
        answer: Any = None
        if len(answer_values) == 1:
            answer = next(iter(answer_values.values()))
        elif answer_values:
            answer = answer_values
        return self.task(
            question,
            answer,
            gold,
            rubric,
            self.difficulty(steps, gold, style),
            capabilities=self.capabilities(steps),
            mutates=mutates,
            needs_pagination=any(s.intent.pages for s in steps),
        )

    def task(
        self,
        question: str,
        answer: Any,
        gold: list[ToolCall],
        rubric: list[RubricCheck],
        difficulty: Difficulty,
        **fields: Any,
    ) -> Task:
        """A graph task of this environment; its id is a content hash of the question and the gold."""
        return Task(
            id=f"{self.spec.id}-graph-{hash_value([question, [c.model_dump() for c in gold]])[:12]}",
            env_id=self.spec.id,
            kind="graph",
            question=question,
            answer=answer,
            gold=gold,
            rubric=rubric,
            verifier=None,
            difficulty=difficulty,
            gold_calls=len(gold),
            lineage=self.lineage,
            **fields,
        )

    # --- steps --------------------------------------------------------------------------------

    def try_step(
        self, session: Session, tool: ToolSpec, steps: list[Step], want_pages: bool, want_constraint: bool
    ) -> Step | None:
        kind = operation_kind(tool)
        entity = self.entity_of(tool)
        if kind is None or entity is None:
            return None
        try:
            if kind in ("list", "search"):
                return self.list_step(session, tool, kind, entity, steps, want_pages)
            if kind == "get":
                return self.get_step(session, tool, entity, steps)
            if kind == "aggregate":
                return self.aggregate_step(session, tool, entity, steps)
            if kind == "create":
                return self.create_step(session, tool, entity, steps, want_constraint)
            if kind in ("update", "delete"):
                return self.write_step(session, tool, kind, entity, steps)
            if kind == "action":
                return self.action_step(session, tool, entity, steps, want_constraint)
        except _WalkFailed:
            return None
        return None

    def latest(self, steps: list[Step], entity: str) -> int | None:
        """Index of the last step whose record is of `entity` ("that customer" always means this one)."""
        for i in range(len(steps) - 1, -1, -1):
            if steps[i].record is not None and steps[i].entity == entity:
                return i
        return None

    def upstream_id(self, steps: list[Step], tool: ToolSpec, param: str) -> tuple[Any, int, bool] | None:
        """A value for an id parameter from the chain so far: (value, step index, direct) where `direct`
        means the step's record is the entity itself; only the latest record of each entity counts."""
        best: tuple[Any, int, bool] | None = None
        for i, s in enumerate(steps):
            if s.record is None or s.entity is None:
                continue
            data = self.graph.get_edge_data(s.tool.name, tool.name)
            if data is None or self.latest(steps, s.entity) != i:
                continue
            for r in data["reasons"]:
                if r["param"] != param or not r["value"].endswith("_id"):
                    continue
                name = r["field"].rsplit(".", 1)[-1].removeprefix("items[]")
                value = s.record.get(name)
                if value is not None:
                    best = (value, i, name == self.entities[s.entity].primary_key)
        return best

    def target_entity(self, tool: ToolSpec, param: str) -> str | None:
        entity = self.entity_of(tool)
        if entity is not None and param in (f"{entity.name}_id", entity.primary_key):
            return entity.name
        base = re.sub(r"^(from|to|source|target)_", "", param)
        return base[:-3] if base.endswith("_id") and base[:-3] in self.entities else None

    def call(self, session: Session, tool: ToolSpec, args: dict[str, Any]) -> Any:
        result = session.call(tool.name, args)
        if not result.ok or (isinstance(result.value, dict) and "error" in result.value):
            raise _WalkFailed(f"{tool.name} failed")
        return result.value

    def duplicate(self, steps: list[Step], record: dict[str, Any]) -> bool:
        mine = canonical_json(record)
        return any(s.record is not None and canonical_json(s.record) == mine for s in steps)

    def id_args(
        self, steps: list[Step], tool: ToolSpec, entity: EntitySpec, required_only: bool
    ) -> tuple[dict[str, Any], dict[str, tuple[int, bool]]]:
        """Id parameters filled from upstream records, with the (step, direct) each came from; a required
        one without a source abandons the step."""
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or [])
        args: dict[str, Any] = {}
        sources: dict[str, tuple[int, bool]] = {}
        for p in sorted(props):
            if not p.endswith("_id") and p != entity.primary_key:
                continue
            if p not in required and required_only:
                continue
            found = self.upstream_id(steps, tool, p)
            if found is None:
                if p in required:
                    raise _WalkFailed(f"no source for {p}")
                continue
            args[p] = found[0]
            sources[p] = (found[1], found[2])
        return args, sources

    def list_step(
        self, session: Session, tool: ToolSpec, kind: str, entity: EntitySpec, steps: list[Step], want_pages: bool
    ) -> Step | None:
        rng = self.rng
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or [])
        args, sources = self.id_args(steps, tool, entity, required_only=False)
        if args and rng.random() < 0.2 and not required & set(args):
            args, sources = {}, {}
        filters = [
            Filter(field=p, relation=steps[sources[p][0]].entity)
            for p in sorted(args)
            if p in sources and sources[p][1]
        ]
        if len(filters) != len(args):  # only filters on records the question already named
            raise _WalkFailed("indirect filter")
        seed_rows = self.rows(entity)
        named: dict[str, Any] | None = None
        label = self.label_field(entity)
        stated: list[Any] = []
        if kind == "search":
            if "query" not in props or label is None or not seed_rows:
                return None
            named = rng.choice(seed_rows)
            args["query"] = named[label]
            stated.append(named[label])
        elif not args and seed_rows:
            enums = [p for p in sorted(props) if p not in GENERIC_PARAMS and (props[p].get("enum"))]
            enums = [p for p in enums if self.field_spec(entity, p) is not None]
            if enums and (rng.random() < 0.6 or any(p in required for p in enums)):
                p = rng.choice(enums)
                args[p] = rng.choice(seed_rows).get(p)
                if args[p] is None:
                    raise _WalkFailed("no filter value")
                filters.append(Filter(field=p, value=args[p]))
                stated.append(args[p])
        if any(p not in args for p in required):
            return None
        calls = [ToolCall(tool=tool.name, args=dict(args))]
        first = self.call(session, tool, args)
        results = [first]
        items = list(_items(first))
        if not items:
            return None
        first_page = len(items)
        paging = want_pages and _next_offset(first) is not None and "offset" in props
        while paging and _next_offset(results[-1]) is not None and len(results) < MAX_PAGES:
            page_args = {**args, "offset": _next_offset(results[-1])}
            calls.append(ToolCall(tool=tool.name, args=page_args))
            results.append(self.call(session, tool, page_args))
            items.extend(_items(results[-1]))
        complete = not _unseen(results[-1], len(items))
        pages = len(results)
        record, intent = self.select(entity, items, filters, complete, named, label, first_page if pages > 1 else 0)
        if record is None or intent is None or self.duplicate(steps, record):
            return None
        if intent.kind == "find_named":
            stated.append(intent.value)
        uses = {i for i, _ in sources.values()}
        return Step(tool, kind, entity.name, calls, results, record, intent, stated, pages=pages, uses=uses)

    def select(
        self,
        entity: EntitySpec,
        items: list[dict[str, Any]],
        filters: list[Filter],
        complete: bool,
        named: dict[str, Any] | None,
        label: str | None,
        beyond: int,
    ) -> tuple[dict[str, Any] | None, Intent | None]:
        """Pick the record a question can single out among `items` (beyond index `beyond` when paging)."""
        rng = self.rng
        pk = entity.primary_key
        if named is not None:
            match = [r for r in items if r.get(pk) == named.get(pk)]
            if not match or label is None:
                return None, None
            return match[0], Intent(kind="find_named", entity=entity.name, value=named[label])
        options: list[tuple[dict[str, Any], Intent]] = []
        filtered = {f.field for f in filters}
        if complete:
            for at, f, direction in self.unique_extremes(entity, items, filtered):
                if at >= beyond:
                    intent = Intent(
                        kind="find_extreme",
                        entity=entity.name,
                        filters=filters,
                        field=f.name,
                        direction=direction,
                        pages=beyond > 0,
                        temporal=f.type in ("date", "datetime"),
                    )
                    options.append((items[at], intent))
            if len(items) == 1:
                options.append((items[0], Intent(kind="find_only", entity=entity.name, filters=filters)))
        if label is not None and not beyond:
            labels = [r.get(label) for r in self.rows(entity)]
            pool = [r for r in items if isinstance(r.get(label), str) and labels.count(r.get(label)) == 1]
            if pool and (not options or rng.random() < 0.3):
                r = rng.choice(pool)
                return r, Intent(kind="find_named", entity=entity.name, filters=filters, value=r[label])
        if not options:
            return None, None
        return rng.choice(options)

    def get_step(self, session: Session, tool: ToolSpec, entity: EntitySpec, steps: list[Step]) -> Step | None:
        args, sources = self.id_args(steps, tool, entity, required_only=True)
        if not args:
            return None
        (src, direct) = next(iter(sources.values()))
        if direct:
            return None  # looking up a record the chain already holds repeats it
        record = self.call(session, tool, args)
        if not isinstance(record, dict) or self.duplicate(steps, record):
            return None
        intent = Intent(kind="lookup", entity=entity.name, source=steps[src].entity)
        call = ToolCall(tool=tool.name, args=args)
        return Step(tool, "get", entity.name, [call], [record], record, intent, uses={src})

    def aggregate_step(self, session: Session, tool: ToolSpec, entity: EntitySpec, steps: list[Step]) -> Step | None:
        rng = self.rng
        props = tool.parameters.get("properties") or {}
        args, sources = self.id_args(steps, tool, entity, required_only=False)
        filters = [Filter(field=p, relation=steps[i].entity) for p, (i, direct) in sources.items() if direct]
        if len(filters) != len(args):
            raise _WalkFailed("indirect filter")
        stated: list[Any] = []
        rows = self.rows(entity)
        enums = [
            p
            for p in sorted(props)
            if p not in ("field", "group_by") and props[p].get("enum") and self.field_spec(entity, p) is not None
        ]
        if enums and rows and rng.random() < 0.6:
            p = rng.choice(enums)
            args[p] = rng.choice(rows).get(p)
            if args[p] is not None:
                filters.append(Filter(field=p, value=args[p]))
                stated.append(args[p])
        statistic = "count"
        field_options = (props.get("field") or {}).get("enum") or []
        if field_options and rng.random() < 0.7:
            args["field"] = rng.choice(field_options)
            statistic = rng.choice(STATISTICS)
        value = self.call(session, tool, {k: v for k, v in args.items() if v is not None})
        if not isinstance(value, dict) or not value.get("count") or value.get(statistic) is None:
            return None
        intent = Intent(
            kind="aggregate", entity=entity.name, filters=filters, field=args.get("field"), statistic=statistic
        )
        call = ToolCall(tool=tool.name, args=args)
        record = {statistic: value[statistic]}
        uses = {i for i, _ in sources.values()}
        return Step(tool, "aggregate", entity.name, [call], [value], record, intent, stated, uses=uses)

    def create_step(
        self, session: Session, tool: ToolSpec, entity: EntitySpec, steps: list[Step], want_constraint: bool
    ) -> Step | None:
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or [])
        args, sources = self.id_args(steps, tool, entity, required_only=False)
        links = []
        for _, (i, direct) in sorted(sources.items()):
            if not direct:
                raise _WalkFailed("indirect link")
            links.append(steps[i].entity or "")
        changes: dict[str, Any] = {}
        constraint = None
        note = None
        for p in sorted(props):
            if p in args or p in GENERIC_PARAMS:
                continue
            f = self.field_spec(entity, p)
            if f is None or f.references:
                if p in required:
                    return None
                continue
            optional_ok = props[p].get("enum") and p not in ("status", "state") and self.rng.random() < 0.3
            if p not in required and not optional_ok:
                continue
            supply = self.supply_of(entity, p, args, steps)
            if supply is not None and want_constraint:
                limit, available, label = supply
                args[p] = available
                constraint = label
                note = f"{humanize(p)}: as many as possible, at most {limit}"
                continue
            args[p] = self.fresh_value(entity, f, props[p])
            changes[p] = args[p]
        record = self.call(session, tool, args)
        if not isinstance(record, dict):
            return None
        intent = Intent(kind="create", entity=entity.name, changes=changes, links=links)
        if note:
            intent.limit_note = note
            intent.changes = {**changes}
        step = Step(tool, "create", entity.name, [ToolCall(tool=tool.name, args=args)], [record], record, intent)
        step.stated = list(changes.values())
        step.constraint = constraint
        step.uses = {i for i, _ in sources.values()}
        return step

    def supply_of(
        self, entity: EntitySpec, param: str, args: dict[str, Any], steps: list[Step]
    ) -> tuple[int, Any, str] | None:
        """(limit stated, amount available, constraint label) when `param` consumes a supply a read showed."""
        for rule in entity.rules:
            if rule.kind != "consumes" or rule.field != param or not rule.target:
                continue
            target, _, supply_field = rule.target.partition(".")
            target = singular(target)
            fk = next((f.name for f in entity.fields if (f.references or "").split(".")[0] in (target,)), None)
            i = self.latest(steps, target)
            if fk is None or fk not in args or i is None:
                continue
            record = steps[i].record or {}
            available = record.get(supply_field)
            if record.get(self.entities[target].primary_key) != args[fk] or not isinstance(available, int):
                continue
            if available <= 0:
                continue
            return available + self.rng.randint(1, 5), available, _constraint_label(supply_field)
        return None

    def fresh_value(self, entity: EntitySpec, f: FieldSpec, prop: dict[str, Any]) -> Any:
        """A valid new value for a field: an enum choice, a small number, a date, or a text no row holds."""
        rng = self.rng
        choices = prop.get("enum") or f.enum
        if choices:
            return rng.choice(choices)
        low = max(x for x in (f.minimum, prop.get("minimum"), 0) if x is not None)
        high = min((x for x in (f.maximum, prop.get("maximum")) if x is not None), default=None)
        if f.type == "integer" or prop.get("type") == "integer":
            value = int(low) + rng.randint(1, 5)
            return min(value, int(high)) if high is not None else value
        if f.type == "number":
            value = float(low) + rng.choice((12.5, 25.0, 40.0, 75.0, 120.0))
            return min(value, float(high)) if high is not None else value
        if f.type == "boolean":
            return rng.random() < 0.5
        if f.type == "date":
            return f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"
        if f.type == "datetime":
            return f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 17)}:00:00"
        taken = {str(r.get(f.name)) for r in self.rows(entity)}
        word = rng.choice(_WORDS)
        candidates = [
            ".".join(rng.sample(_WORDS, 2)) + "@example.org" if f.format == "email" or "email" in f.name else "",
            f"+1 555 01{rng.randint(10, 99)}" if f.format == "phone" or "phone" in f.name else "",
            " ".join(w.capitalize() for w in rng.sample(_WORDS, 2)),
            f"{word.upper()}-{rng.randint(100, 999)}",
            f"{rng.randint(100, 999)} {word.capitalize()} Street",
        ]
        existing = sorted(v for v in taken if v)
        shifted = [_shift(v, rng) for v in rng.sample(existing, min(3, len(existing)))]
        # Code-like values (ISBNs, card numbers) keep their shape; names and addresses get fresh words.
        code_like = sum(any(c.isdigit() for c in v) for v in existing) > len(existing) / 2
        candidates = shifted + candidates if code_like else candidates + shifted
        for c in candidates:
            if c and c not in taken and _allowed(prop, c):
                return c
        raise _WalkFailed(f"no fresh value for {f.name}")

    def written_before(self, steps: list[Step], entity: EntitySpec, key: Any) -> bool:
        """An earlier write of the chain touched this record (created, changed or removed it)."""
        for s in steps:
            if not s.tool.mutates or s.entity != entity.name:
                continue
            for c in s.calls:
                if key in c.args.values() or (s.record or {}).get(entity.primary_key) == key:
                    return True
        return False

    def write_step(
        self, session: Session, tool: ToolSpec, kind: str, entity: EntitySpec, steps: list[Step]
    ) -> Step | None:
        props = tool.parameters.get("properties") or {}
        args, sources = self.id_args(steps, tool, entity, required_only=True)
        key = next((p for p in args if self.target_entity(tool, p) == entity.name), None)
        if key is None or not sources[key][1]:
            return None
        target = steps[sources[key][0]].record or {}
        if self.written_before(steps, entity, args[key]):
            return None  # a second write to the same record would undo or repeat the first
        if kind == "delete":
            value = self.call(session, tool, args)
            intent = Intent(kind="delete", entity=entity.name)
            call = ToolCall(tool=tool.name, args=args)
            return Step(tool, kind, entity.name, [call], [value], None, intent, uses={sources[key][0]})
        options = []
        for p in sorted(props):
            f = self.field_spec(entity, p)
            if p in args or f is None or f.references or f.primary_key or self.ignored(entity, p) or f.unique:
                continue
            options.append((p, f))
        if not options:
            return None
        p, f = self.rng.choice(options)
        new = self.changed_value(entity, f, props[p], target.get(p))
        args[p] = new
        record = self.call(session, tool, args)
        if not isinstance(record, dict):
            return None
        intent = Intent(kind="update", entity=entity.name, changes={p: new})
        call = ToolCall(tool=tool.name, args=args)
        return Step(tool, kind, entity.name, [call], [record], record, intent, [new], uses={sources[key][0]})

    def changed_value(self, entity: EntitySpec, f: FieldSpec, prop: dict[str, Any], current: Any) -> Any:
        choices = [c for c in (prop.get("enum") or f.enum or []) if c != current]
        if choices:
            return self.rng.choice(choices)
        if f.type in ("integer", "number") and isinstance(current, int | float):
            step = self.rng.choice((1, 2, 3)) if f.type == "integer" else self.rng.choice((5.0, 10.0, 20.0))
            value = current + step
            return int(value) if f.type == "integer" else round(value, 2)
        for _ in range(5):
            value = self.fresh_value(entity, f, prop)
            if value != current:
                return value
        raise _WalkFailed("no changed value")

    def action_step(
        self, session: Session, tool: ToolSpec, entity: EntitySpec, steps: list[Step], want_constraint: bool
    ) -> Step | None:
        op = tool.operation
        if op is None or op.action in ("transfer", "remove"):
            return None
        if op.action == "append":
            return self.append_step(session, tool, entity, steps)
        props = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or [])
        args, sources = self.id_args(steps, tool, entity, required_only=True)
        key = next((p for p in args if self.target_entity(tool, p) == entity.name), None)
        if key is None or not sources[key][1]:
            return None
        target = steps[sources[key][0]].record or {}
        if self.written_before(steps, entity, args[key]):
            return None  # a second write to the same record would undo or repeat the first
        verb = _verb(tool.name, entity.name)
        stated: list[Any] = []
        constraint = None
        if op.action == "transition":
            if op.from_values and target.get(op.field or "status") not in op.from_values:
                return None
            intent = Intent(kind="transition", entity=entity.name, value=op.to_value, verb=verb)
            stated.append(op.to_value)
        else:
            amount_param = op.amount_param or "amount"
            current = target.get(op.field or "")
            integer = (props.get(amount_param) or {}).get("type") == "integer"
            amount: Any = self.rng.randint(1, 5) if integer else float(self.rng.choice((25, 50, 75, 100, 150, 250)))
            note = None
            stated_amount = amount
            if op.action == "decrement":
                if not isinstance(current, int | float) or current <= 0:
                    return None
                if want_constraint and self.non_negative(entity, op.field):
                    limit = (int(current) + self.rng.randint(1, 5)) if integer else float(int(current) + 100)
                    amount = current
                    constraint = _constraint_label(op.field or "")
                    note = f"as much as possible, at most {value_text(limit)}, without going below zero"
                    stated_amount = limit
                elif amount > current:
                    return None
            args[amount_param] = amount
            sign = -1 if op.action == "decrement" else 1
            intent = Intent(
                kind="adjust",
                entity=entity.name,
                field=op.field,
                value=stated_amount,
                verb=verb,
                sign=sign,
                limit_note=note,
            )
            if not constraint:
                stated.append(amount)
        if required - set(args):
            return None
        record = self.call(session, tool, args)
        if not isinstance(record, dict):
            return None
        step = Step(tool, "action", entity.name, [ToolCall(tool=tool.name, args=args)], [record], record, intent)
        step.stated = stated
        step.constraint = constraint
        step.uses = {sources[key][0]}
        return step

    def append_step(self, session: Session, tool: ToolSpec, entity: EntitySpec, steps: list[Step]) -> Step | None:
        """Add a new text to the list field of the chain's latest record of `entity` (`add_observations`): the
        one item names the row by its key field and carries the text, which the question states."""
        op = tool.operation
        src = self.latest(steps, entity.name)
        if op is None or op.batch_param is None or op.field is None or src is None:
            return None
        keys = list_edit_keys(
            entity.name, {f.name for f in entity.fields}, batch_items(op, tool.parameters.get("properties") or {})
        )
        target = steps[src].record or {}
        if keys is None or not isinstance(target.get(keys[2]), str):
            return None
        if self.written_before(steps, entity, target.get(entity.primary_key)):
            return None
        named, values, key_field = keys
        text = phrase(self.rng, entity.name, op.field)
        if text in (target.get(op.field) or []):
            return None
        args = {op.batch_param: [{named: target[key_field], values: [text]}]}
        result = self.call(session, tool, args)
        rows = result.get(entity.table) if isinstance(result, dict) else None
        if not rows or not isinstance(rows[0], dict):
            return None
        intent = Intent(kind="append", entity=entity.name, field=op.field, value=text)
        step = Step(tool, "action", entity.name, [ToolCall(tool=tool.name, args=args)], [result], rows[0], intent)
        step.stated = [text]
        step.uses = {src}
        return step

    def non_negative(self, entity: EntitySpec, name: str | None) -> bool:
        return any(r.kind == "non_negative" and r.field == name for r in entity.rules)

    # --- goals: an anchor, the records related to it, a write on each -------------------------

    def tools_of(self, entity: EntitySpec, *kinds: str) -> list[ToolSpec]:
        return [t for t in self.by_entity.get(entity.name, []) if operation_kind(t) in kinds]

    def key_param(self, tool: ToolSpec, entity: EntitySpec) -> str | None:
        required = tool.parameters.get("required") or []
        return next((p for p in required if self.target_entity(tool, p) == entity.name), None)

    def read_all(
        self, session: Session, tool: ToolSpec, args: dict[str, Any]
    ) -> tuple[list[ToolCall], list[Any], list[dict[str, Any]]]:
        """Every page of a listing (the largest page the tool serves); at most GOAL_MAX_PAGES."""
        props = tool.parameters.get("properties") or {}
        size = paging_style(props).size
        maximum = (props.get(size) or {}).get("maximum", PAGE_SIZE) if size else None
        if size and isinstance(maximum, int) and maximum >= PAGE_SIZE:
            args = {**args, size: PAGE_SIZE}
        calls = [ToolCall(tool=tool.name, args=dict(args))]
        results = [self.call(session, tool, args)]
        while _next_offset(results[-1]) is not None and "offset" in props:
            if len(results) >= GOAL_MAX_PAGES:
                raise _WalkFailed("too many pages")
            page = {**args, "offset": _next_offset(results[-1])}
            calls.append(ToolCall(tool=tool.name, args=page))
            results.append(self.call(session, tool, page))
        return calls, results, [r for res in results for r in _items(res)]

    def writes_for(self, entity: EntitySpec, row: dict[str, Any]) -> list[tuple[ToolSpec, Action]]:
        """The writes a goal can make to one row of `entity` (one field each), with what they mean."""
        out: list[tuple[ToolSpec, Action]] = []
        for tool in self.tools_of(entity, "action", "update", "delete"):
            if self.key_param(tool, entity) is None:
                continue
            required = set(tool.parameters.get("required") or []) - {self.key_param(tool, entity)}
            op = tool.operation
            kind = operation_kind(tool)
            if kind == "delete" and not required:
                out.append((tool, Action(kind="delete", entity=entity.name)))
            elif kind == "action" and op is not None and op.action == "transition" and not required:
                out.append(
                    (
                        tool,
                        Action(
                            "transition", entity.name, op.field or "status", op.to_value, _verb(tool.name, entity.name)
                        ),
                    )
                )
            elif kind == "action" and op is not None and op.action in ("increment", "decrement"):
                amount_param = op.amount_param or "amount"
                if required - {amount_param}:
                    continue
                integer = ((tool.parameters.get("properties") or {}).get(amount_param) or {}).get("type") == "integer"
                amount: Any = self.rng.choice((2, 5, 10)) if integer else float(self.rng.choice((10, 25, 50)))
                sign = 1 if op.action == "increment" else -1
                out.append((tool, Action("adjust", entity.name, op.field, amount, _verb(tool.name, entity.name), sign)))
            elif kind == "update" and not required:
                props = tool.parameters.get("properties") or {}
                for p in sorted(props):
                    f = self.field_spec(entity, p)
                    if f is None or not f.enum or f.primary_key or self.ignored(entity, p) or len(f.enum) < 3:
                        continue
                    value = self.rng.choice(f.enum)
                    out.append((tool, Action("update", entity.name, p, value)))
        return out

    def write_args(self, tool: ToolSpec, entity: EntitySpec, action: Action, row: dict[str, Any]) -> dict[str, Any]:
        key = self.key_param(tool, entity)
        args: dict[str, Any] = {key or "id": row[entity.primary_key]}
        if action.kind == "update":
            args[action.field or ""] = action.value
        if action.kind == "adjust":
            op = tool.operation
            args[(op.amount_param if op else None) or "amount"] = action.value
        return args

    def applies(self, tool: ToolSpec, action: Action, row: dict[str, Any], entity: EntitySpec) -> bool:
        """The write changes `row` and the tool's rules allow it (checked on the data, not by calling)."""
        op = tool.operation
        if action.kind == "transition":
            current = row.get(action.field or "status")
            return current != action.value and (not op or not op.from_values or current in op.from_values)
        if action.kind == "update":
            return row.get(action.field or "") != action.value
        if action.kind == "adjust":
            current = row.get(action.field or "")
            if not isinstance(current, int | float):
                return False
            return action.sign > 0 or (current >= action.value or not self.non_negative(entity, action.field))
        return True

    def goal_attempt(self) -> Task:
        rng = self.rng
        knobs = self.knobs or Knobs(chain_length=rng.choice(DEFAULT_LENGTHS), pages=rng.choice((1, 1, 2)))
        self.active = knobs
        target = knobs.chain_length
        style = Style(obscured=knobs.obscured)
        # The records the goal is about: an entity with a listing; its anchor, a record it points at.
        options = [e for e in self.spec.entities if self.goal_listings(e) and len(self.rows(e)) >= 2]
        if not options:
            raise _WalkFailed(
                "no listing a goal can read (one needing no argument, a listed parent's id, or a scope its rows hold)"
            )
        entity = rng.choice(options)
        if not self.strict and knobs.pages > self.listing_pages(entity):  # this listing cannot span that many
            knobs = knobs.model_copy(update={"pages": self.listing_pages(entity)})
            self.active = knobs
        list_tool = rng.choice(self.goal_listings(entity))
        props = list_tool.parameters.get("properties") or {}
        needed = list_tool.parameters.get("required") or []
        rows = self.rows(entity)
        pk = entity.primary_key
        conditions: list[Condition] = []
        server: dict[str, Any] = {}
        constraints: list[str] = []
        steps: list[Step] = []
        anchor_intent: Intent | None = None
        anchor_row: dict[str, Any] | None = None
        anchor_entity: EntitySpec | None = None
        links = [
            (f.name, self.entities[t])
            for f in entity.fields
            if f.name in props and (t := self.reference_target(entity, f.name)) in self.entities and t != entity.name
        ]
        links = [(fk, a) for fk, a in links if self.anchor_listings(entity, a) and len(self.rows(a)) >= 2]
        scoped = bool(needed) and self.scope_args(list_tool, entity) == needed
        scopes: list[dict[str, Any]] = [{}]  # the arguments of each read of the listing
        if scoped:  # the listing of one scope (a repository's files): the records of seed rows' scopes
            scopes = self.goal_scopes(rows, needed, target)
            for p in needed:
                values = sorted({s[p] for s in scopes}, key=str)
                conditions.append(Condition(p, "eq", values[0]) if len(values) == 1 else Condition(p, "in", values))
                constraints.append(f"{p} is {' or '.join(map(str, values))}")
            rows = [r for r in rows if all(_meets(r, c) for c in conditions)]
            use_anchor = False
        elif needed:  # a nested listing (a parent's children): the parent is the anchor, its id the argument
            links = [(fk, a) for fk, a in links if self.nested_in(entity, fk, a, needed)]
            use_anchor = bool(links)
            if not use_anchor:
                raise _WalkFailed("the listing needs a parent no listing reaches")
        else:
            use_anchor = bool(links) and rng.random() < (0.7 if target <= 8 else 0.35)
        with self.session_factory() as session:
            if use_anchor:
                fk, anchor_entity = rng.choice(links)
                anchor_tool = rng.choice(self.anchor_listings(entity, anchor_entity))
                anchor_pk = anchor_entity.primary_key
                scope_of = anchor_tool.parameters.get("required") or []
                parents = [a for a in self.rows(anchor_entity) if any(r.get(fk) == a.get(anchor_pk) for r in rows)]
                if scope_of and not parents:
                    raise _WalkFailed("the anchor has no related records")
                in_scope = rng.choice(parents) if scope_of else {}
                calls, results, items = self.read_all(session, anchor_tool, {p: in_scope[p] for p in scope_of})
                if _unseen(results[-1], len(items)):  # "the customer with the most orders" means of them all
                    raise _WalkFailed("the anchor's listing shows one page of more rows")
                label = self.label_field(anchor_entity)
                counts = {}
                for r in rows:
                    counts[r.get(fk)] = counts.get(r.get(fk), 0) + 1
                record, intent = self.anchor_select(anchor_entity, items, label, style, counts, len(results) > 1)
                if record is None or intent is None:
                    raise _WalkFailed("no anchor")
                for p in scope_of:  # the anchor's scope, said of the records the goal is about
                    conditions.append(Condition(p, "eq", record[p]))
                    constraints.append(f"{p} is {record[p]}")
                anchor_row, anchor_intent = record, intent
                pages = len(calls) if intent.pages else 1
                if not intent.pages:
                    at = next(
                        i
                        for i, r in enumerate(items)
                        if r.get(anchor_entity.primary_key) == record.get(anchor_entity.primary_key)
                    )
                    keep = at // PAGE_SIZE + 1
                    calls, results, pages = calls[:keep], results[:keep], keep
                steps.append(Step(anchor_tool, "list", anchor_entity.name, calls, results, record, intent, pages=pages))
                server[fk] = record[anchor_entity.primary_key]
                server.update({p: record[p] for p in needed if p != fk})  # the scope the anchor's children share
                rows = [r for r in rows if all(r.get(p) == v for p, v in server.items())]
                if not rows:
                    raise _WalkFailed("the anchor has no related records")
            # A condition the listing can filter on (an enum), and one it cannot (a threshold).
            writes = []
            if rows:
                writes = [w for w in self.writes_for(entity, rows[0]) if knobs.chain_length > 1]
            write = rng.choice(writes) if writes and rng.random() < 0.85 else None
            # Recovery: the records are chosen without regard to whether the write is allowed on them; the
            # environment refuses it on some, and the goal says what to do then.
            recovering = knobs.recovery >= 1 and write is not None
            enums = [
                p
                for p in sorted(props)
                if p not in GENERIC_PARAMS
                and props[p].get("enum")
                and self.field_spec(entity, p)
                and not (recovering and write is not None and p == write[1].field)
            ]
            if (
                write is not None
                and not recovering
                and write[1].kind == "transition"
                and write[0].operation
                and write[0].operation.from_values
            ):
                field_name = write[1].field or "status"
                allowed = [v for v in write[0].operation.from_values if any(r.get(field_name) == v for r in rows)]
                if not allowed:
                    raise _WalkFailed("nothing the transition applies to")
                if field_name in props and knobs.pages <= 1 and (len(allowed) == 1 or rng.random() < 0.5):
                    server[field_name] = rng.choice(allowed)
                    conditions.append(Condition(field_name, "eq", server[field_name]))
                else:
                    conditions.append(Condition(field_name, "in", sorted(allowed)))
                constraints.append(f"{field_name} allows the change")
            elif enums and (knobs.constraints >= 1 or rng.random() < 0.4) and not use_anchor:
                p = rng.choice(enums)
                value = rng.choice(rows).get(p)
                if value is None:
                    raise _WalkFailed("no enum value")
                if knobs.pages <= 1:
                    server[p] = value  # the listing filters; with a pages floor, the solver reads every page
                conditions.append(Condition(p, "eq", value))
                constraints.append(f"{p} is {value}")
            calls, results, items, pages, shown = [], [], [], 0, 0
            for scope in scopes:
                more_calls, more_results, more_items = self.read_all(session, list_tool, {**server, **scope})
                calls, results, items = calls + more_calls, results + more_results, items + more_items
                pages = max(pages, len(more_calls))
                if _unseen(more_results[-1], len(more_items)):  # a listing that cannot page on
                    shown = len(more_items)
            if shown and len(scopes) > 1:
                raise _WalkFailed("a scope's listing shows one page of more rows")
            if shown and not set(server) <= set(needed):
                raise _WalkFailed("a filtered first page: which rows it shows depends on the filter")
            pool = [r for r in items if all(_meets(r, c) for c in conditions)]
            outcome: dict[str, str | None] = {}  # recovery: row key -> refusal code (None: the write applies)
            if recovering and write is not None:
                write = self.refusable(write, pool, entity)
                outcome = self.probe_writes(write, pool, entity)
                pool = [r for r in pool if canonical_json(r.get(pk)).decode() in outcome]
            elif write is not None:
                pool = [r for r in pool if self.applies(write[0], write[1], r, entity)]
            # How many records to act on: enough for the chain-length floor, a threshold to single them out.
            used = sum(len(s.calls) for s in steps) + len(calls)
            want = max(1, target - used) + rng.randint(0, max(1, target))
            threshold = None
            if len(pool) > want or (knobs.constraints >= 2 and len(pool) > 1):
                k = min(want, len(pool) - 1) if len(pool) > 1 else 1
                threshold = self.threshold(entity, pool, k)
                if recovering:
                    threshold = self.mixing_threshold(entity, pool, k, threshold, outcome, knobs)
                if threshold is not None:
                    conditions.append(threshold)
                    constraints.append(f"{threshold.field} {threshold.op} {threshold.value}")
                    pool = [r for r in pool if _meets(r, threshold)]
            if not pool:
                raise _WalkFailed("no records")
            set_step = Step(
                list_tool,
                "list",
                entity.name,
                calls,
                results,
                None,
                Intent(kind="find_only", entity=entity.name),
                pages=pages,
            )
            set_step.uses = {0} if steps else set()
            steps.append(set_step)
            acted: list[dict[str, Any]] = []
            rejected: list[dict[str, Any]] = []  # records the environment refused the write for
            branch = otherwise = None
            if write is not None and (target >= 6 and rng.random() < 0.7):
                branch, otherwise, lookup = self.branch_for(entity, pool, write, anchor_entity)
                if branch is not None:
                    constraints.append(f"{branch.via}.{branch.field} {branch.op} {branch.value}")
            if write is not None:
                tool, action = write
                fetched: dict[Any, dict[str, Any]] = {}
                set_index = len(steps) - 1
                for r in sorted(pool, key=lambda r: str(r.get(pk))):
                    chosen: tuple[ToolSpec, Action] | None = write
                    if branch is not None:
                        get_tool, fk, related = lookup
                        key = r.get(fk)
                        if key not in fetched:
                            args = {self.key_param(get_tool, related) or "id": key}
                            record = self.call(session, get_tool, args)
                            if not isinstance(record, dict):
                                raise _WalkFailed("lookup failed")
                            fetched[key] = record
                            intent = Intent(kind="lookup", entity=related.name, source=entity.name)
                            look = Step(
                                get_tool,
                                "get",
                                related.name,
                                [ToolCall(tool=get_tool.name, args=args)],
                                [record],
                                None,
                                intent,
                            )
                            look.uses = {set_index}
                            steps.append(look)
                        chosen = (
                            write
                            if _meets(
                                fetched[key], Condition(branch.field, branch.op, branch.value, temporal=branch.temporal)
                            )
                            else otherwise
                        )
                    if chosen is None:
                        continue
                    tool, action = chosen
                    args = self.write_args(tool, entity, action, r)
                    if recovering:
                        record, refused = self.refusable_call(session, tool, args)
                    else:
                        record, refused = self.call(session, tool, args), None
                    kind = operation_kind(tool) or "action"
                    kept = record if isinstance(record, dict) and action.kind != "delete" and not refused else None
                    step = Step(
                        tool,
                        kind,
                        entity.name,
                        [ToolCall(tool=tool.name, args=args)],
                        [record],
                        kept,
                        Intent(kind="update", entity=entity.name),
                    )
                    step.uses = {set_index}
                    step.refused = refused
                    steps.append(step)
                    if refused:
                        rejected.append(r)
                    elif chosen is write:
                        acted.append(r)
                if branch is not None and not acted:
                    raise _WalkFailed("the branch acts on nothing")
            final = session.snapshot()
        goal = Goal(
            entity=entity.name,
            anchor=anchor_intent,
            conditions=conditions,
            action=write[1] if write else None,
            branch=branch,
            otherwise=otherwise[1] if otherwise else None,
            every_page=pages > 1,
            shown=shown,
            fallback_report=bool(rejected),
        )
        answer_values: dict[str, Any] = {}
        competitors: dict[str, list[Any]] = {}
        count = len(acted) if write is not None else len(pool)
        codes = {s.refused for s in steps if s.refused}
        rule = self.refusal_rule(write, codes)
        if codes:  # the environment's rule the goal has the solver meet (and recover from)
            constraints.append(f"{rule.field if rule else 'state'} allows the change")
        near = self.near_misses(entity, anchor_row, [*conditions, *([rule] if rule else [])], server, write)
        if write is None or rng.random() < 0.6:
            goal.report.append(("count", ""))
            answer_values["count"] = count
            competitors["count"] = (
                [count - 1, count + 1, count + len(near)] if count > 1 else [count + 1, count + len(near)]
            )
            if rejected:
                competitors["count"].append(count + len(rejected))  # the refused calls counted as done
        numeric = [
            f.name for f in entity.fields if f.type == "number" and not self.ignored(entity, f.name) and f.name != pk
        ]
        if write is None and numeric and rng.random() < 0.6:
            name = rng.choice(numeric)
            values = [r.get(name) for r in pool]
            if all(isinstance(v, int | float) for v in values) and values:
                total = round(sum(values), 2)
                goal.report.append(("sum", name))
                answer_values[f"total {name}"] = total
                competitors[f"total {name}"] = [round(total + (r.get(name) or 0), 2) for r in near][:50]
        if anchor_row is not None and anchor_intent is not None and anchor_intent.kind != "find_named":
            label = self.label_field(anchor_entity) if anchor_entity else None
            if label:
                goal.report.append(("anchor", label))
                answer_values[f"{anchor_entity.name} {label}"] = anchor_row[label]
                competitors[f"{anchor_entity.name} {label}"] = [
                    r.get(label) for r in self.rows(anchor_entity) if r is not anchor_row
                ]
        if rejected:
            # The fallback's report: the refused records' ids; every other id of the table competes (an answer
            # that names the records acted on too, or all of them, did not check which were refused).
            refused_ids = sorted({r[pk] for r in rejected}, key=str)
            key = f"{entity.name} ids refused"
            answer_values[key] = refused_ids if len(refused_ids) > 1 else refused_ids[0]
            mine = {canonical_json(v) for v in refused_ids}
            own = [r[pk] for r in acted] + [r[pk] for r in pool]
            others = own + [r.get(pk) for r in self.rows(entity)]
            competitors[key] = [v for v in dict.fromkeys(others) if canonical_json(v) not in mine]
        if not answer_values and write is None:
            raise _WalkFailed("nothing to report")
        question = compose_goal(goal, rng, style)
        difficulty = Difficulty(
            chain_length=0,
            obscured=style.obscured,
            pages=max(s.pages for s in steps),
            constraints=constraints,
            distractors=len(near),
            recovery=sum(s.refused is not None for s in steps),
        )
        return self.finish(
            steps, question, answer_values, competitors, final, difficulty, pages > 1 or any(s.pages > 1 for s in steps)
        )

    # --- recovery: writes the environment refuses ----------------------------------------------

    def refusable(
        self, write: tuple[ToolSpec, Action], pool: list[dict[str, Any]], entity: EntitySpec
    ) -> tuple[ToolSpec, Action]:
        """The write, with a decrement's amount set between the records' values when the field may not go below
        zero (some records have enough, the others are refused)."""
        tool, action = write
        if action.kind != "adjust" or action.sign > 0 or not self.non_negative(entity, action.field):
            return write
        values = sorted({v for r in pool if isinstance(v := r.get(action.field or ""), int | float) and v > 0})
        if len(values) < 2:
            return write
        k = max(1, min(len(values) - 1, len(values) // 3 + self.rng.randint(0, 1)))
        amount = _nice_threshold(values[k], values[k - 1], "min", False)
        if not isinstance(amount, int | float) or amount <= 0 or not values[k - 1] < amount <= values[k]:
            return write
        props = tool.parameters.get("properties") or {}
        op = tool.operation
        integer = (props.get((op.amount_param if op else None) or "amount") or {}).get("type") == "integer"
        if integer and not float(amount).is_integer():
            return write
        return tool, replace(action, value=int(amount) if integer else float(amount))

    def refusal_rule(self, write: tuple[ToolSpec, Action] | None, codes: set[str]) -> Condition | None:
        """The rule a refused write breaks, as a condition on the record (a transition's allowed statuses, a
        decrement's amount): the records meeting the goal's conditions but not this one are near misses."""
        if write is None:
            return None
        tool, action = write
        op = tool.operation
        if action.kind == "transition" and op is not None and op.from_values and "invalid_transition" in codes:
            return Condition(action.field or "status", "in", sorted(op.from_values))
        insufficient = any(c.startswith("insufficient_") for c in codes)
        if action.kind == "adjust" and action.sign < 0 and isinstance(action.value, int | float) and insufficient:
            return Condition(action.field or "", "min", action.value)
        return None

    def probe_writes(
        self, write: tuple[ToolSpec, Action], pool: list[dict[str, Any]], entity: EntitySpec
    ) -> dict[str, str | None]:
        """What the write does to each record, tried in a scratch session (each record once, so one try does not
        change another's record): None where it changes the record, the error code where the environment refuses
        it (a state, a transition or a supply rule); a record where it does neither is left out."""
        tool, action = write
        out: dict[str, str | None] = {}
        with self.session_factory() as session:
            for r in pool:
                key = canonical_json(r.get(entity.primary_key)).decode()
                result = session.call(tool.name, self.write_args(tool, entity, action, r))
                if result.ok and not (isinstance(result.value, dict) and "error" in result.value):
                    if self.applies(tool, action, r, entity):
                        out[key] = None
                elif not result.ok and result.error is not None and _refusal(result.error.code):
                    out[key] = result.error.code
        return out

    def mixing_threshold(
        self,
        entity: EntitySpec,
        pool: list[dict[str, Any]],
        k: int,
        first: Condition | None,
        outcome: dict[str, str | None],
        knobs: Knobs,
    ) -> Condition | None:
        """A threshold whose records mix refused and allowed ones (`mixed`); else, of the few tried, the one
        with the smallest share of refused records that still has some of both."""
        pk = entity.primary_key
        best: tuple[float, Condition] | None = None
        threshold = first
        for i in range(8):
            if threshold is not None:
                kept = [r for r in pool if _meets(r, threshold)]
                if self.mixed(kept, outcome, knobs, pk):
                    return threshold
                refused = sum(outcome.get(canonical_json(r.get(pk)).decode()) is not None for r in kept)
                share = refused / len(kept) if kept else 1.0
                if knobs.recovery <= refused < len(kept) and (best is None or share < best[0]):
                    best = (share, threshold)
            threshold = self.threshold(entity, pool, k if i % 2 else max(1, min(len(pool) - 1, k + k // 2)))
        return best[1] if best is not None else first

    def mixed(self, pool: list[dict[str, Any]], outcome: dict[str, str | None], knobs: Knobs, pk: str) -> bool:
        """`pool` holds at least `knobs.recovery` records the write is refused for, and more it applies to."""
        refused = sum(outcome.get(canonical_json(r.get(pk)).decode()) is not None for r in pool)
        return knobs.recovery <= refused <= max(knobs.recovery, (len(pool) - 1) // 2)

    def refusable_call(self, session: Session, tool: ToolSpec, args: dict[str, Any]) -> tuple[Any, str | None]:
        """Make the call: (its result, None), or ({"error": code}, code) when the environment refuses it on a
        state, transition or supply rule (any other failure abandons the goal)."""
        result = session.call(tool.name, args)
        if result.ok and not (isinstance(result.value, dict) and "error" in result.value):
            return result.value, None
        if not result.ok and result.error is not None and _refusal(result.error.code):
            return {"error": result.error.code}, result.error.code
        raise _WalkFailed(f"{tool.name} failed")

    def branch_for(
        self,
        entity: EntitySpec,
        pool: list[dict[str, Any]],
        write: tuple[ToolSpec, Action],
        anchor: EntitySpec | None,
    ) -> tuple[Condition | None, tuple[ToolSpec, Action] | None, Any]:
        """A condition on the record each one points at (looked up one by one), and the write for the others."""
        rng = self.rng
        for f in rng.sample(entity.fields, len(entity.fields)):
            target = self.reference_target(entity, f.name)
            related = self.entities.get(target or "")
            if related is None or related.name == entity.name or (anchor is not None and related.name == anchor.name):
                continue
            gets = [t for t in self.tools_of(related, "get") if self.key_param(t, related)]
            if not gets:
                continue
            by_id = {r.get(related.primary_key): r for r in self.rows(related)}
            linked = [by_id[r.get(f.name)] for r in pool if r.get(f.name) in by_id]
            if len(linked) != len(pool) or len(pool) < 2:
                continue
            distinct = list({canonical_json(r): r for r in linked}.values())
            if len(distinct) < 2:
                continue
            c = self.threshold(related, distinct, max(1, len(distinct) // 2))
            if c is None:
                continue
            c.via = related.name
            others = [w for w in self.writes_for(entity, pool[0]) if w[0].name != write[0].name]
            others = [w for w in others if all(self.applies(w[0], w[1], r, entity) for r in pool)]
            otherwise = rng.choice(others) if others and rng.random() < 0.6 else None
            return c, otherwise, (gets[0], f.name, related)
        return None, None, None

    def unique_extremes(
        self, entity: EntitySpec, items: list[dict[str, Any]], skip: Collection[str] = ()
    ) -> Iterator[tuple[int, FieldSpec, str]]:
        """(index in `items`, field, "highest"/"lowest") for each number or date field, not in `skip`, whose
        highest or lowest value among the items only one of them holds: a record a question can single out."""
        if len(items) < 2:
            return
        for f in entity.fields:
            if f.type not in ("integer", "number", "date", "datetime") or f.name in skip:
                continue
            if f.name == entity.primary_key or f.references or self.ignored(entity, f.name):
                continue
            values = [r.get(f.name) for r in items]
            if any(v is None for v in values):
                continue
            for direction in ("highest", "lowest"):
                best = max(values) if direction == "highest" else min(values)
                at = [i for i, v in enumerate(values) if v == best]
                if len(at) == 1:
                    yield at[0], f, direction

    def anchor_select(
        self,
        entity: EntitySpec,
        items: list[dict[str, Any]],
        label: str | None,
        style: Style,
        counts: dict[Any, int],
        every_page: bool,
    ) -> tuple[dict[str, Any] | None, Intent | None]:
        """The anchor: the record with the highest/lowest value of a field over every page, or (plain
        phrasing) one named by its label; it must have related records."""
        pk = entity.primary_key
        options: list[tuple[dict[str, Any], Intent]] = []
        for at, f, direction in self.unique_extremes(entity, items):
            if counts.get(items[at].get(pk), 0) >= 1:
                temporal = f.type in ("date", "datetime")
                intent = Intent(
                    "find_extreme", entity.name, field=f.name, direction=direction, pages=every_page, temporal=temporal
                )
                options.append((items[at], intent))
        if label is not None and not style.obscured and (not options or self.rng.random() < 0.3):
            pool = [r for r in items if counts.get(r.get(pk), 0) >= 1 and isinstance(r.get(label), str)]
            if pool:
                r = self.rng.choice(pool)
                return r, Intent(kind="find_named", entity=entity.name, value=r[label])
        if not options:
            return None, None
        return self.rng.choice(options)

    def threshold(self, entity: EntitySpec, pool: list[dict[str, Any]], k: int) -> Condition | None:
        """A condition on a number or date that exactly `k` (or a nearby count) of `pool` meet."""
        rng = self.rng
        fields = [
            f
            for f in entity.fields
            if f.type in ("integer", "number", "date", "datetime")
            and f.name != entity.primary_key
            and not f.references
            and not self.ignored(entity, f.name)
        ]
        rng.shuffle(fields)
        for f in fields:
            temporal = f.type in ("date", "datetime")
            values = [r.get(f.name) for r in pool]
            if any(v is None or isinstance(v, bool) for v in values):
                continue
            for op in rng.sample(("min", "max"), 2):
                ordered = sorted(values, reverse=op == "min")
                for kk in (k, k + 1, k - 1, k + 2, k - 2):
                    if kk < 1 or kk >= len(ordered):
                        continue
                    inside, outside = ordered[kk - 1], ordered[kk]
                    t = _nice_threshold(inside, outside, op, temporal)
                    if t is None:
                        continue
                    c = Condition(f.name, op, t, temporal=temporal)  # type: ignore[arg-type]
                    if sum(_meets(r, c) for r in pool) == kk:
                        return c
        return None

    def near_misses(
        self,
        entity: EntitySpec,
        anchor: dict[str, Any] | None,
        conditions: list[Condition],
        server: dict[str, Any],
        write: tuple[ToolSpec, Action] | None,
    ) -> list[dict[str, Any]]:
        """Seed rows of `entity` that meet all but one of the goal's conditions (the anchor link included)."""
        conds = list(conditions)
        for p, v in server.items():
            if not any(c.field == p for c in conds):
                conds.append(Condition(p, "eq", v))
        if len(conds) < 2:
            return []
        out = []
        for r in self.rows(entity):
            failed = sum(not _meets(r, c) for c in conds)
            if failed == 1:
                out.append(r)
        return out

    def finish(
        self,
        steps: list[Step],
        question: str,
        answer_values: dict[str, Any],
        competitors: dict[str, list[Any]],
        final: Snapshot,
        difficulty: Difficulty,
        needs_pagination: bool,
    ) -> Task:
        gold = [c for s in steps for c in s.calls]
        knobs = self.active
        if knobs is not None and len(gold) < min(knobs.chain_length, 2):
            raise _WalkFailed("chain too short")
        if knobs is not None and difficulty.pages < knobs.pages:
            raise _WalkFailed("below the pages floor")
        if knobs is not None and self.strict:
            if len(gold) < knobs.chain_length:
                raise _WalkFailed("below a floor")
            if len(difficulty.constraints) < knobs.constraints or difficulty.distractors < knobs.distractors:
                raise _WalkFailed("below a floor")
            if difficulty.recovery < knobs.recovery:
                raise _WalkFailed("below the recovery floor")
        refusals, at = [], 0
        for s in steps:
            if s.refused is not None:
                refusals.append(Refusal(call=at, code=s.refused))  # a refused step is one call
            at += len(s.calls)
        mutates = any(s.tool.mutates for s in steps)
        checks = self.state_checks(steps, final)
        end_state = end_state_check(self.spec, self.seed, final)
        replay_results, replay_final = self.replay(gold, refusals)
        if not run_check(end_state, self.seed, replay_final, None).passed:
            raise _WalkFailed("the gold's end state differs on replay")
        if canonical_json(replay_results) != canonical_json([r for s in steps for r in s.results]):
            raise _WalkFailed("the replay reads differently")
        checks = [c for c in checks if run_check(c, self.seed, replay_final, None).passed]
        if mutates and not checks:
            raise _WalkFailed("the writes cancel out")
        if not mutates and not answer_values:
            raise _WalkFailed("nothing to verify")
        self.check_question(question, steps)
        values = list(answer_values.values())
        if any(isinstance(v, str) and answer_contains(question, v) for v in values):
            raise _WalkFailed("the question gives the answer away")
        if not mutates and all(answer_contains(question, v) for v in values):
            raise _WalkFailed("echoing the question would pass")
        stated = [question, *(canonical_json(v).decode() for v in values)]
        answer_checks = []
        for k, v in answer_values.items():
            check = RubricCheck(kind="answer_contains", value=v, description=f"answer states the {k}")
            said = [question] if k == "count" else stated
            if k.endswith(" ids refused"):  # the records acted on come first, whatever the table's size
                near = [c for c in competitors.get(k, []) if not _stated(said, c)]
                check.competitors = list(dict.fromkeys(near))[:MAX_COMPETITORS]
            else:
                check.competitors = [c for c in _others(v, competitors.get(k, [])) if not _stated(said, c)]
            if k == "count":  # a count's neighbours always compete (0 included)
                near = [x for x in (v - 1, v + 1) if x >= 0 and not _stated(said, x) and x not in check.competitors]
                check.competitors = near + check.competitors
            answer_checks.append(check)
        answer: Any = None
        if len(answer_values) == 1:
            answer = values[0]
        elif answer_values:
            answer = dict(answer_values)
        weak = self.weak_edge_share(steps)
        difficulty = difficulty.model_copy(update={"chain_length": len(gold), "weak_edge_share": weak})
        return self.task(
            question,
            answer,
            gold,
            [*answer_checks, *checks, end_state],
            difficulty,
            capabilities=sorted({*self.capabilities(steps), *(["constraint"] if difficulty.constraints else [])}),
            mutates=mutates,
            needs_pagination=needs_pagination,
            refusals=refusals,
        )

    # --- answers, rubric, replay --------------------------------------------------------------

    def choose_asks(self, steps: list[Step]) -> list[Ask]:
        """(step, entity, field, value) to report: aggregates always, else fields of the latest records."""
        asks: list[Ask] = []
        stated = {canonical_json(v) for s in steps for v in s.stated}
        for i, s in enumerate(steps):
            if s.kind == "aggregate" and s.record:
                (stat, value), *_ = s.record.items()
                asks.append((i, "", stat, value))
        candidates: list[tuple[int, str, str, Any]] = []
        for i, s in enumerate(steps):
            if s.record is None or s.entity is None or s.kind == "aggregate" or self.latest(steps, s.entity) != i:
                continue
            entity = self.entities[s.entity]
            for name, value in sorted(s.record.items()):
                if value is None or isinstance(value, bool | dict | list) or canonical_json(value) in stated:
                    continue
                if self.ignored(entity, name) or self.reference_target(entity, name) is not None:
                    continue
                if name == entity.primary_key and s.kind != "create":
                    continue
                if isinstance(value, str) and (len(value) < 2 or len(value) > 60):
                    continue
                candidates.append((i, s.entity, name, value))
        if candidates:
            last = max(c[0] for c in candidates)
            pool = [c for c in candidates if c[0] == last] if self.rng.random() < 0.7 else candidates
            picks = self.rng.sample(pool, min(len(pool), MAX_ASKS - len(asks) if len(asks) < MAX_ASKS else 0))
            asks += sorted(picks)
        return asks

    def competitors(self, steps: list[Step], ask: Ask, final: Snapshot) -> list[Any]:
        """Values a near miss would state instead of the asked one: another row's value of the same column
        (another id of the table, another amount), or for an aggregate what a wrong count or filter gives."""
        i, entity_name, name, value = ask
        step = steps[i]
        if not entity_name:
            return self.aggregate_competitors(step, name, value)
        entity = self.entities[entity_name]
        pk = entity.primary_key
        own = (step.record or {}).get(pk)
        rows = [*self.rows(entity), *final.tables.get(entity.table, [])]
        mine = {canonical_json(r.get(name)) for r in rows if r.get(pk) == own}  # its value before or after a write
        return _others(value, [r.get(name) for r in rows if canonical_json(r.get(name)) not in mine])

    def aggregate_competitors(self, step: Step, statistic: str, value: Any) -> list[Any]:
        """A count's neighbours; the statistic without the question's filters; for min and max the column's other
        values, for sum and mean those of the rows left out. Rows only count when they reproduce the value
        (an earlier write in the chain may have changed the table)."""
        near: list[Any] = [value - 1, value + 1] if statistic == "count" else []
        entity = self.entities[step.entity or ""]
        args = step.calls[0].args
        column = args.get("field")
        filters = {p: v for p, v in args.items() if p not in ("field", "group_by") and v is not None}
        rows = self.rows(entity)
        covered = [r for r in rows if all(r.get(p) == v for p, v in filters.items())]
        got = _statistic(statistic, covered, column)
        if got is None or not isinstance(value, int | float) or abs(got - value) > 0.01:
            return _others(value, near)
        if filters:
            near.append(_statistic(statistic, rows, column))
        if column is not None and statistic != "count":
            others = rows if statistic in ("min", "max") else [r for r in rows if r not in covered]
            near += [r.get(column) for r in others]
        return _others(value, near)

    def state_checks(self, steps: list[Step], final: Snapshot) -> list[RubricCheck]:
        """Checks of the gold run's end state: changed fields, new rows, removed rows (bookkeeping ignored).
        Every write must leave a trace: a chain that creates a row and deletes it again is no errand."""
        keys = self.spec.primary_keys()
        diff = state_diff(self.seed, final, self.spec.bookkeeping, keys=keys)
        touched = {
            (table, canonical_json(r.key if isinstance(r, RowChange) else r.get(d.key)))
            for table, d in diff.tables.items()
            for r in [*d.changed, *d.added, *d.removed]
        }
        for s in steps:
            if s.tool.mutates and s.entity is not None and s.refused is None:
                entity = self.entities[s.entity]
                args = s.calls[0].args
                own = [v for p, v in sorted(args.items()) if self.target_entity(s.tool, p) == entity.name]
                key = s.record.get(entity.primary_key) if s.record else next(iter(own), None)
                if (entity.table, canonical_json(key)) not in touched:
                    raise _WalkFailed(f"{s.tool.name} leaves no trace in the end state")
        checks: list[RubricCheck] = []
        for table, d in sorted(diff.tables.items()):
            for change in d.changed:
                for name, value in sorted(change.after.items()):
                    where = {d.key: change.key}
                    checks.append(RubricCheck(kind="field_equals", table=table, where=where, field=name, value=value))
            for row in d.added:
                where = {k: v for k, v in row.items() if k != d.key and v is not None}
                checks.append(RubricCheck(kind="row_exists", table=table, where=where))
            for row in d.removed:
                where = {d.key: row[d.key]} if d.key else row
                checks.append(RubricCheck(kind="row_absent", table=table, where=where))
        return checks

    def replay(self, gold: list[ToolCall], refusals: Sequence[Refusal] = ()) -> tuple[list[Any], Snapshot]:
        """Run the gold chain in a fresh session; a call that fails there discards the chain, unless it is an
        expected refusal, which must come with its code."""
        expected = {r.call: r.code for r in refusals}
        out = []
        with self.session_factory() as session:
            for i, c in enumerate(gold):
                r = session.call(c.tool, c.args)
                code = None if r.ok else (r.error.code if r.error is not None else "error")
                if code != expected.get(i):
                    raise _WalkFailed(f"replay: {c.tool} failed" if code else f"replay: {c.tool} was not refused")
                out.append({"error": code} if code else r.value)
            return out, session.snapshot()

    def stable_asks(self, steps: list[Step], asks: list[Ask], replayed: list[Any]) -> list[Ask]:
        """Keep the asked values that the replay reproduces."""
        if canonical_json(replayed) == canonical_json([r for s in steps for r in s.results]):
            return asks
        flat = canonical_json(replayed).decode()
        return [a for a in asks if canonical_json(a[3]).decode() in flat]

    def check_question(self, question: str, steps: list[Step]) -> None:
        """Solvability: no tool named; every value a write uses is stated or was read earlier."""
        low = question.lower()
        for name in self.tools:
            if name.lower() in low or name.lower().replace("_", " ") in low:
                raise _WalkFailed("question names a tool")
        seen_outputs: list[str] = []
        for s in steps:
            for c, r in zip(s.calls, s.results, strict=True):
                if s.tool.mutates:
                    for p, v in c.args.items():
                        if isinstance(v, dict | list) or v is None:
                            continue
                        if not answer_contains(question, v) and not any(_holds(o, v) for o in seen_outputs):
                            raise _WalkFailed(f"{c.tool}.{p} is neither stated nor read")
                seen_outputs.append(canonical_json(r).decode())

    def weak_edge_share(self, steps: list[Step]) -> float:
        """The share of consecutive steps joined by a weak or independent edge of the tool graph."""
        kinds = [k for _, _, k in walk_edges(self.graph, [s.tool.name for s in steps])]
        return round(sum(k != "strong" for k in kinds) / len(kinds), 3) if kinds else 0.0

    def difficulty(self, steps: list[Step], gold: list[ToolCall], style: Style) -> Difficulty:
        return Difficulty(
            chain_length=len(gold),
            weak_edge_share=self.weak_edge_share(steps),
            obscured=style.obscured,
            pages=max(s.pages for s in steps),
            constraints=sorted({s.constraint for s in steps if s.constraint}),
        )

    def capabilities(self, steps: list[Step]) -> list[str]:
        caps = set()
        if len(steps) >= 2:
            caps.add("multi-hop")
        if any(s.pages > 1 for s in steps):
            caps.add("pagination")
        if any(s.tool.mutates for s in steps):
            caps.add("mutation")
        if any(s.kind == "aggregate" or s.intent.kind == "find_extreme" for s in steps):
            caps.add("aggregation")
        if any(s.constraint for s in steps):
            caps.add("constraint")
        if any(s.kind == "search" for s in steps):
            caps.add("search")
        if any(s.refused is not None for s in steps):
            caps.add("recovery")
        return sorted(caps)


# --- small helpers --------------------------------------------------------------------------

_UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_WORDS = ("harbor", "maple", "summit", "cedar", "lumen", "orbit", "willow", "quartz", "ember", "falcon", "meadow")


def _prune(steps: list[Step], asks: list[Ask]) -> tuple[list[Step], list[Ask]]:
    """Drop reads whose record nothing later uses and nothing asks about: a chain is one connected errand."""
    needed = {a[0] for a in asks}
    keep: set[int] = set()
    for i in range(len(steps) - 1, -1, -1):
        if steps[i].tool.mutates or i in needed or any(i in steps[j].uses for j in keep):
            keep.add(i)
    index = {old: new for new, old in enumerate(sorted(keep))}
    kept = [steps[i] for i in sorted(keep)]
    for s in kept:
        s.uses = {index[u] for u in s.uses if u in index}
    return kept, [(index[a[0]], *a[1:]) for a in asks]


def _meets(row: dict[str, Any], c: Condition) -> bool:
    """`row` meets the condition (dates compared on the condition's own precision)."""
    v = row.get(c.field)
    if c.op == "eq":
        return v == c.value
    if c.op == "in":
        return v in c.value
    if v is None or isinstance(v, bool):
        return False
    if c.temporal:
        v = str(v)[: len(str(c.value))]
    try:
        return v >= c.value if c.op == "min" else v <= c.value
    except TypeError:
        return False


def _nice_threshold(inside: Any, outside: Any, op: str, temporal: bool) -> Any:
    """A round value that `inside` meets and `outside` does not ("at least 50" rather than 51.37)."""
    if temporal:
        for cut in (10, 7, 4):
            t = str(inside)[:cut]
            o = str(outside)[:cut]
            if (op == "min" and o < t) or (op == "max" and o > t):
                return t
        return None
    if not isinstance(inside, int | float) or not isinstance(outside, int | float) or inside == outside:
        return None
    for step in (100, 50, 10, 5, 1):
        t = (inside // step) * step if op == "min" else -((-inside) // step) * step
        if (op == "min" and outside < t <= inside) or (op == "max" and inside <= t < outside):
            return int(t) if float(t).is_integer() else t
    return inside


def _items(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get("items"), list):
        return [r for r in value["items"] if isinstance(r, dict)]
    if isinstance(value, list):
        return [r for r in value if isinstance(r, dict)]
    return []


def _next_offset(value: Any) -> int | None:
    return value.get("next_offset") if isinstance(value, dict) else None


def _unseen(last: Any, seen: int) -> bool:
    """Whether a listing holds rows beyond the `seen` read so far: a next page, or (a listing whose only paging
    parameter is a count, with no next page to give) a total above what it showed."""
    total = last.get("total") if isinstance(last, dict) else None
    return _next_offset(last) is not None or (isinstance(total, int) and total > seen)


def _allowed(prop: dict[str, Any], value: str) -> bool:
    pattern = prop.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, value):
        return False
    return prop.get("minLength", 0) <= len(value) <= prop.get("maxLength", len(value))


def _shift(value: str, rng: random.Random) -> str:
    """`value` with one digit or letter changed: the same shape, usually a value no row holds."""
    chars = list(value)
    spots = [i for i, c in enumerate(chars) if c.isalnum()]
    for i in reversed(spots):
        c = chars[i]
        pool = "0123456789" if c.isdigit() else (_UPPER if c.isupper() else _UPPER.lower())
        chars[i] = rng.choice([x for x in pool if x != c])
        return "".join(chars)
    return value


def _statistic(statistic: str, rows: list[dict[str, Any]], column: str | None) -> float | None:
    """An aggregate tool's statistic recomputed over `rows` (2 decimals, as answers are asked for)."""
    if statistic == "count":
        return len(rows)
    values = [r.get(column or "") for r in rows]
    if not values or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    stats: dict[str, Callable[[list[Any]], float]] = {"sum": sum, "avg": statistics.fmean, "max": max, "min": min}
    return round(stats[statistic](values), 2) if statistic in stats else None


def _others(value: Any, candidates: list[Any]) -> list[Any]:
    """Distinct scalar candidates other than `value`, nearest first (by distance for numbers, by the prefix
    shared with `value` for text, so "ord_0041" comes before "ord_0001"), at most MAX_COMPETITORS. Common words
    stay in ("back" as another doctor's room): an answer that hedges with one must fail like any other hedge."""
    seen: dict[str, Any] = {}
    for c in candidates:
        if c is not None and not isinstance(c, bool | dict | list) and not answers_match(value, c):
            seen.setdefault(canonical_json(c).decode(), c)
    found = list(seen.values())
    if isinstance(value, int | float) and all(isinstance(c, int | float) for c in found):
        found.sort(key=lambda c: (abs(c - value), c))
    else:
        found.sort(key=lambda c: (-_shared_prefix(str(value), str(c)), str(c)))
    return found[:MAX_COMPETITORS]


def _shared_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _stated(texts: list[str], value: Any) -> bool:
    return any(answer_contains(t, value) for t in texts)


def _holds(output_json: str, value: Any) -> bool:
    return canonical_json(value).decode() in output_json


def _verb(tool_name: str, entity: str) -> str | None:
    """The tool's own verb when its name is `<verb>_<entity>` ("cancel_order" -> "cancel")."""
    verb, _, rest = tool_name.partition("_")
    if verb in CRUD_VERBS or singular(rest) != entity:
        return None
    return verb


REFUSAL_CODES = ("invalid_state", "invalid_transition")  # and insufficient_<field>: the environment's rules


def _refusal(code: str) -> bool:
    """An error code the environment answers a write with on purpose because of the data (a record in a state
    that takes no change, a transition its status does not allow, a supply that does not cover it)."""
    return code in REFUSAL_CODES or code.startswith("insufficient_")


def _constraint_label(field_name: str) -> str:
    name = field_name.lower()
    if any(w in name for w in ("seat", "capacity", "slot", "room", "spot")):
        return "capacity"
    if any(w in name for w in ("balance", "budget", "credit", "fund", "limit")):
        return "budget"
    return "supply"


def synthesize_graph_tasks(
    bundle: Bundle,
    session_factory: SessionFactory,
    graph: nx.DiGraph,
    rng: random.Random,
    n: int,
    knobs: Knobs | None = None,
    misses: Counter[str] | None = None,
) -> list[Task]:
    """Up to `n` graph-walk tasks of one environment, deterministic for the rng's state.

    `knobs` steers difficulty (chain length, pagination, constraints, obscured phrasing); None draws a
    default mix whose chains average at least four calls. Each task's `difficulty` records what it got;
    `misses` counts the attempts that gave none, by reason."""
    if n <= 0:
        return []
    return GraphTaskSynthesizer(bundle, session_factory, graph, rng, knobs).synthesize(n, misses)


__all__ = ["GraphTaskSynthesizer", "SessionFactory", "Step", "operation_kind", "synthesize_graph_tasks"]
