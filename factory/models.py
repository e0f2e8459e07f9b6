"""Typed artifacts shared by every stage (README, "Layout").

Every model here is what crosses a boundary: a file in FACTORY_HOME, a CLI output, a message
between the orchestrator and a sandbox worker. Keep them plain data: no behaviour beyond
small derived helpers.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

JsonSchema = dict[str, Any]
Generator = str  # "procedural" or "llm:<model>"


class Model(BaseModel):
    """Base for artifacts: unknown keys are errors, so a malformed file is caught where it is read."""

    model_config = ConfigDict(extra="forbid")


class Lineage(Model):
    """Where an artifact came from: enough to say whether a rerun would change it."""

    stage: str
    code_version: str
    inputs: dict[str, str] = Field(default_factory=dict)  # input name -> content hash
    round: int = 0
    generator: Generator = "procedural"
    guideline_id: str | None = None


# --- topics and taxonomy -------------------------------------------------------------------


OperationKind = Literal["list", "get", "search", "create", "update", "delete", "aggregate", "action"]
ActionKind = Literal["increment", "decrement", "transition", "transfer", "append", "remove"]


class _OmitsUnset(Model):
    """A model whose newer optional fields are left out of its dump while unset, so specs that do not use
    them keep their bytes (and their content hashes)."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for name in self.omitted_when_none:
            if data.get(name) is None:
                data.pop(name, None)
        return data


class ToolOperation(_OmitsUnset):
    """What a tool does to which entity; the offline generator writes code from this.

    Semantics (the contract between entity inference and code generation):
    - list: optional exact-match filters named like fields, `min_<f>`/`max_<f>` range filters on
      numbers and dates, `limit` (default 10, at most 20) and `offset`; returns
      `{"items": [...], "total": n, "next_offset": int | None}`. A tool from a document pages in the
      document's own style instead: a page number (`page` + `per_page`...; `next_page`) or a cursor
      (`cursor`, `after`...; the opaque `next_cursor` the previous page returned).
    - search: `query` (case-insensitive substring over text fields) + `limit`/`offset`; same shape.
    - get: `<entity>_id`; returns the record, or error `not_found`.
    - create: fields as parameters; returns the created record including its new id.
    - update: `<entity>_id` + optional fields; returns the updated record.
    - delete: `<entity>_id`; returns `{"deleted": true, "<entity>_id": id}`; error `conflict`
      while other rows reference it, except rows of the `cascade` tables, deleted with it.
    - aggregate: optional filters, `field` (numeric, for sum/avg/min/max) and `group_by`; returns
      `{"count", "sum", "avg", "min", "max"}` or `{"groups": [{<group_by>: v, "count", ...}]}`.
    - action: see `action`; `field` is the entity field it changes, `amount_param` the parameter
      holding the amount (increment, decrement, transfer), `to_value`/`from_values` the status
      change (transition). transfer moves `amount_param` of `field` between two rows named by the
      parameters `from_<entity>_id` and `to_<entity>_id`.

    A batch tool (`batch_param` set) applies its single-item create, delete or get to every item of the
    array parameter `batch_param`, which keeps its declared name, as do its items' keys (`entityType`,
    stored in the column `entity_type`). Every item is checked (required values, formats, references,
    uniqueness against the rows and the other items) before any is written, and the call runs in one
    transaction (the runtime's savepoint): one refused item fails the whole call and writes nothing.
    - create: items are objects whose properties name fields; returns `{"<table>": [records]}`.
    - get: items are the values of `key_field` (the primary key when None), or objects whose properties
      (all fields) match rows; returns `{"<table>": [records]}` in item order, or error `not_found` when an
      item names no row.
    - delete: items name rows as in get; returns `{"deleted": true, "<batch_param>": items}`; errors
      `not_found`, and `conflict` while other rows reference one of them.
    - action append / remove (`field` a list field): items are objects, one property naming the row by
      `key_field` (`entityName`: the entity's `name`), one array of values (`contents`); append adds the values
      the row's list lacks, in order, remove drops those it holds; returns `{"<table>": [updated records]}`.
    """

    kind: OperationKind
    entity: str  # entity name (singular, snake_case), e.g. "order"
    action: ActionKind | None = None
    field: str | None = None
    amount_param: str | None = None
    to_value: str | None = None
    from_values: list[str] | None = None
    batch_param: str | None = None  # the array parameter a batch tool takes its items in, as declared
    key_field: str | None = None  # the field a batch get/delete names rows by (`name`), None: the primary key
    # delete: the tables whose rows pointing at a deleted row go with it, as the tool says ("delete entities and
    # their associated relations"); rows of other tables that point at it still refuse the delete (`conflict`)
    cascade: list[str] | None = None

    omitted_when_none = ("batch_param", "key_field", "cascade")  # single-item operations dump as before


class ToolSpec(_OmitsUnset):
    """One tool as an MCP server or API offers it."""

    name: str
    description: str
    parameters: JsonSchema = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output: JsonSchema | None = None  # JSON schema of a successful result, when known
    mutates: bool = False
    operation: ToolOperation | None = None
    # MCP tool annotations as the server declares them (readOnlyHint, destructiveHint...): hints that
    # outrank guesses from the name; None when the source states none, so "read-only" and "not stated" differ.
    annotations: dict[str, Any] | None = None
    # The names the source declared for parameters the contract renamed (`pet_id` -> `id`, `per_page` ->
    # `perPage`): clients see and send the declared ones (factory.envs.interface); "" for an optional parameter
    # the source does not have (a singleton's key, whose default names its one row): not shown. None: none differ.
    declared_names: dict[str, str] | None = None

    omitted_when_none = ("annotations", "declared_names")  # tools of sources without them dump as before


FieldType = Literal["string", "integer", "number", "boolean", "date", "datetime"]


class FieldSpec(_OmitsUnset):
    """A column of an entity. `format` refines values (email, money, phone, url, uuid, name...; `list`: a list
    of texts, `json`: any JSON value); `pattern` is the regular expression the API's parameters hold its values
    to (seed values match it)."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ("pattern",)

    name: str
    type: FieldType = "string"
    format: str | None = None
    enum: list[str] | None = None
    required: bool = False
    unique: bool = False
    primary_key: bool = False
    references: str | None = None  # "entity.field" for a foreign key
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None


class Rule(Model):
    """A business invariant the topic implies; generated tool code enforces it.

    - non_negative: `field` of this entity never goes below 0 (stock, balance, seats_available);
      a write that would break it fails with error `insufficient_<field>`.
    - consumes: creating a row of this entity with quantity `field` (None: each row takes one unit)
      subtracts it from `target` ("entity.field") on the row this one references by foreign key; fails
      with `insufficient_<target field>` when not enough is left (an order cannot exceed supply, a
      purchase cannot exceed the budget). Deleting the row gives it back.
    - releases: a row of this entity whose status `field` is one of `fields` holds none of the supply
      `target` ("entity.field", a consumes rule's target): moving it into such a state (cancelling an
      order, ending a booking) gives its quantity back; deleting it then gives nothing back.
    - ledger: every amount change of `field` on a row of this entity (increment, decrement, transfer:
      a deposit, withdrawal or transfer) writes one row per moved row into the entity `target` (a
      transaction or ledger entry referencing this entity).
    - terminal: a row whose status `field` is one of `fields` (closed, cancelled, archived...) is done
      with: updates and amount changes on it, and new rows referencing it, fail with `invalid_state`.
    - unique_together: `fields` may not repeat across rows.
    """

    kind: Literal["non_negative", "consumes", "releases", "ledger", "terminal", "unique_together"]
    field: str | None = None
    target: str | None = None
    fields: list[str] | None = None


class EntitySpec(Model):
    """A table (sqlite backend) or a collection (files backend)."""

    name: str  # singular snake_case, e.g. "order"
    table: str  # plural snake_case, e.g. "orders"
    fields: list[FieldSpec]
    primary_key: str = "id"
    description: str = ""
    rules: list[Rule] = Field(default_factory=list)
    # Text before the number in generated ids ("ord_" -> "ord_0001"); None for keys that are not generated.
    id_prefix: str | None = None


TopicSource = Literal["catalog", "mcp", "mcp-registry", "openapi", "prd", "agent-world"]


class Topic(Model):
    """A real-world service to build an environment for."""

    id: str  # slug
    title: str
    description: str
    source: TopicSource = "catalog"
    category_hint: str | None = None  # a catalog's own l1 grouping, if it has one
    taxonomy_hint: TaxonomyPath | None = None  # the bundled catalog's own l1/l2/l3 placement
    tools: list[ToolSpec]
    entities: list[EntitySpec] = Field(default_factory=list)  # known entities (OpenAPI); else inferred
    origin: str | None = None  # file path or URL the topic was read from


class TaxonomyPath(Model):
    l1: str
    l2: str
    l3: str


class TaxonomyNode(Model):
    slug: str
    title: str
    children: list[TaxonomyNode] = Field(default_factory=list)


class TopicMerge(Model):
    kept: str
    merged: str
    similarity: float


class Taxonomy(Model):
    """Three levels of slugs; l1 slugs are the Dagster `category` partition keys."""

    roots: list[TaxonomyNode]
    assignments: dict[str, TaxonomyPath]  # topic id -> path
    merges: list[TopicMerge] = Field(default_factory=list)
    merge_threshold: float = 0.85
    lineage: Lineage | None = None

    def categories(self) -> list[str]:
        return [r.slug for r in self.roots]


class TopicsArtifact(Model):
    """topics.json: the discovered topics and the source files they were read from."""

    topics: list[Topic]
    sources: list[str] = Field(default_factory=list)
    lineage: Lineage


# --- environments --------------------------------------------------------------------------


StateBackend = Literal["sqlite", "files"]
# What the runtime checks of a call's arguments before tool code sees them: the whole declared schema, or only
# the top level (names, the required set, types), for imported code that judges the rest itself.
ArgumentCheck = Literal["schema", "top_level"]


class EnvSpec(Model):
    """env.json of an environment bundle."""

    id: str
    title: str
    topic_id: str
    taxonomy: TaxonomyPath | None = None
    description: str
    backend: StateBackend = "sqlite"
    argument_check: ArgumentCheck = "schema"
    tools: list[ToolSpec]
    entities: list[EntitySpec] = Field(default_factory=list)
    seed: int = 0
    scale: float = 1.0  # row-count multiplier of the seeded data (complexify raises it)
    version: int = 1
    parent: str | None = None  # content hash of the bundle this one was complexified from
    # State columns a verifier ignores (timestamps, audit logs): "table.column" or "table.*".
    bookkeeping: list[str] = Field(default_factory=list)
    lineage: Lineage | None = None

    def tool(self, name: str) -> ToolSpec:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)

    def primary_keys(self) -> dict[str, str]:
        """Each table's key column: what rows of two states are matched on."""
        return {e.table: e.primary_key for e in self.entities}


class TestExpect(Model):
    """What a test case expects: an error code, or success whose result contains `match`."""

    __test__ = False  # not a pytest class
    ok: bool = True
    error_code: str | None = None
    match: Any = None  # subset the result must contain (dict keys / list item / scalar equality)
    count: int | None = None  # exact number of items in a list result (or result["items"])


class StateCheck(Model):
    """What the state must hold after a successful call: the rows of `table` equal to `where` number `count`
    (when given) and one of them contains `match` (when given)."""

    table: str
    where: dict[str, Any]
    match: dict[str, Any] | None = None
    count: int | None = None


class TestCase(Model):
    __test__ = False  # not a pytest class

    tool: str
    args: dict[str, Any]
    expect: TestExpect
    name: str = ""
    state: list[StateCheck] = Field(default_factory=list)  # the effects the call must leave (stock back, a ledger row)


class ToolReport(Model):
    cases: int
    passed: int
    accuracy: float
    kept: bool
    failures: list[str] = Field(default_factory=list)
    # Successful results checked against the tool's advertised output schema, and how many broke it.
    results_checked: int = 0
    results_invalid: int = 0


class GateReport(Model):
    """report.json: the gate's verdict on an environment."""

    compiled: bool
    compile_error: str | None = None
    tools: dict[str, ToolReport] = Field(default_factory=dict)
    kept_tools: list[str] = Field(default_factory=list)
    kept: bool
    reasons: list[str] = Field(default_factory=list)
    threshold: float = 0.5


# --- runtime -------------------------------------------------------------------------------


class ToolError(Model):
    code: str
    message: str


class ToolResult(Model):
    """The result of one `session.call`.

    `error` is set when the call failed. `env_error` separates environment faults (crash, timeout,
    sandbox limit) from errors the tool returned on purpose for bad input, which an agent must handle.
    """

    ok: bool
    value: Any = None
    error: ToolError | None = None
    env_error: bool = False
    wall_ms: float = 0.0


class Snapshot(Model):
    """A read-only state: table/collection name -> rows (each row a dict), sorted by primary key."""

    tables: dict[str, list[dict[str, Any]]]


# --- tasks and verifiers -------------------------------------------------------------------


TaskKind = Literal["graph", "program"]
Split = Literal["train", "arena", "heldout"]


class ToolCall(Model):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class RubricCheck(Model):
    """One check of a rubric verifier.

    kind: "answer_contains" (value must appear in the answer, and none of `competitors`), "row_exists"
    (a row of `table` matching `where` exists in the final state), "row_absent", "field_equals" (row
    matching `where` has `field` == `value`), "end_state" (the diff from the initial to the final state
    equals `value`, the gold's diff, on every table; an empty diff for a read-only task).
    """

    kind: Literal["answer_contains", "row_exists", "row_absent", "field_equals", "end_state"]
    value: Any = None
    table: str | None = None
    where: dict[str, Any] | None = None
    field: str | None = None
    competitors: list[Any] = Field(default_factory=list)  # answer values a wrong reading would give
    description: str = ""


class Difficulty(Model):
    """What a task reached on each difficulty knob (factory/tasks/difficulty.py says what they mean)."""

    level: str | None = None  # the preset the task was synthesized at (easy, medium, hard)
    chain_length: int = 1
    weak_edge_share: float = 0.0
    obscured: bool = False
    pages: int = 1  # most pages of one listing the gold reads
    constraints: list[str] = Field(default_factory=list)
    distractors: int = 0
    recovery: int = 0


class Refusal(Model):
    """A gold call that is refused on purpose: the task asks the agent to meet the refusal and recover."""

    call: int  # index of the call in the gold chain
    code: str  # the error code the tool answers with (invalid_state, insufficient_stock, ...)


class Origin(Model):
    round: int = 0
    guideline_id: str | None = None


class Task(Model):
    id: str
    env_id: str
    kind: TaskKind
    question: str
    answer: Any = None
    gold: list[ToolCall] | str  # tool-call chain (graph) or program source (program)
    rubric: list[RubricCheck] = Field(default_factory=list)
    verifier: str | None = None  # source defining verify(initial, final, answer) -> dict
    difficulty: Difficulty = Field(default_factory=Difficulty)
    capabilities: list[str] = Field(default_factory=list)
    mutates: bool = False
    gold_calls: int = 0  # tool calls the gold makes (pages and refused calls included)
    refusals: list[Refusal] = Field(default_factory=list)  # gold calls refused on purpose (graph tasks)
    needs_pagination: bool = False  # true only when reading the first page of each listing cannot answer it
    split: Split = "train"
    origin: Origin = Field(default_factory=Origin)
    lineage: Lineage | None = None


class CheckResult(Model):
    name: str
    passed: bool
    detail: str = ""


class Verdict(Model):
    passed: bool
    score: float
    checks: list[CheckResult] = Field(default_factory=list)


class Trajectory(Model):
    """What an agent did on a task, as the verifier replays it."""

    tool_calls: list[ToolCall] = Field(default_factory=list)
    final_answer: str | None = None


class Rollout(Model):
    """A row of the rollouts table."""

    task_id: str
    env_id: str
    policy_id: str
    round: int = 0
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    final_answer: str | None = None
    reward: float = 0.0
    verdict: Verdict | None = None
    env_errors: list[str] = Field(default_factory=list)
    turns: int = 0
    wall_s: float = 0.0


class Guideline(Model):
    id: str
    category: str
    capability: str
    knobs: dict[str, Any] = Field(default_factory=dict)
    evidence: list[str] = Field(default_factory=list)  # trajectory / task ids


class Diagnosis(Model):
    round: int
    failure_rate_by_env: dict[str, float]
    failure_rate_by_category: dict[str, float]
    weak_envs: list[str]
    guidelines: list[Guideline]
    lineage: Lineage | None = None
