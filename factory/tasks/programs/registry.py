"""The registry of program families: name -> proposer, in the order synthesis draws them from."""

from __future__ import annotations

import random

from factory.models import Task
from factory.tasks.programs.aggregate import propose_aggregate
from factory.tasks.programs.branch import propose_branch
from factory.tasks.programs.bulk_update import propose_bulk_update
from factory.tasks.programs.cascade import propose_cascade
from factory.tasks.programs.draft import Proposer
from factory.tasks.programs.join import propose_join
from factory.tasks.programs.notify import propose_notify
from factory.tasks.programs.pagination import propose_pagination
from factory.tasks.programs.recovery import propose_recovery
from factory.tasks.programs.reschedule import propose_reschedule
from factory.tasks.programs.restock import propose_restock
from factory.tasks.programs.top_k import propose_top_k
from factory.tasks.programs.view import EnvView

FAMILY_MARK = "-program-"  # task ids: <env id>-program-<family>-<hash>

FAMILIES: dict[str, Proposer] = {
    "aggregate": propose_aggregate,
    "top_k": propose_top_k,
    "bulk_update": propose_bulk_update,
    "pagination": propose_pagination,
    "join": propose_join,
    "restock": propose_restock,
    "cascade": propose_cascade,
    "notify": propose_notify,
    "branch": propose_branch,
    "recovery": propose_recovery,
    "reschedule": propose_reschedule,
}


def applicable_families(view: EnvView, rng: random.Random | None = None) -> list[str]:
    """The families that have at least one instance on this environment."""
    rng = rng or random.Random(0)
    return [name for name, propose in FAMILIES.items() if next(iter(propose(view, rng)), None) is not None]


def family_of(task: Task) -> str | None:
    """The program family a task was made from (it is part of the task id), or None."""
    _, mark, rest = task.id.rpartition(FAMILY_MARK)
    family = rest.rsplit("-", 1)[0] if mark else ""
    return family if family in FAMILIES else None
