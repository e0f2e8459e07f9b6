"""Program tasks: a library of program families instantiated on each environment's own schema and data.

A program task (Agent-World's second task kind) needs loops, aggregation and state-dependent decisions
that a short tool chain cannot express. Each family (one module each, listed in `registry`) reads the
environment's entities, tools and seed state, declares whether it applies (a numeric field, a status enum
with a transition tool, a foreign key, a budget that purchases consume...) and proposes instances whose
answer is not trivial. For each instance the gold program, Python source defining `solve(tools)` that only
calls the environment's tools, runs in a fresh session through the sandbox (`session.run_program`); its
answer and the state it leaves behind become the verifier (`verifier`): the source of
`factory.verify.program_verifier` with the expected values embedded, checking the answer leniently and the
final state exactly (the rows the gold wrote, nothing else changed).
"""

from factory.tasks.programs.conditions import Condition, conditions
from factory.tasks.programs.draft import PRELUDE, Draft, Proposer
from factory.tasks.programs.registry import FAMILIES, FAMILY_MARK, applicable_families, family_of
from factory.tasks.programs.restock import PurchasePlan, purchase_plan, simulate_restock
from factory.tasks.programs.synthesis import names_a_tool, realize, synthesize_program_tasks
from factory.tasks.programs.verifier import expected_changes, ignored_columns, verifier_source
from factory.tasks.programs.view import PAGE_SIZE, EnvView, default_page, page_size

__all__ = [
    "FAMILIES",
    "FAMILY_MARK",
    "PAGE_SIZE",
    "PRELUDE",
    "Condition",
    "Draft",
    "EnvView",
    "Proposer",
    "PurchasePlan",
    "applicable_families",
    "conditions",
    "default_page",
    "expected_changes",
    "family_of",
    "ignored_columns",
    "names_a_tool",
    "page_size",
    "purchase_plan",
    "realize",
    "simulate_restock",
    "synthesize_program_tasks",
    "verifier_source",
]
