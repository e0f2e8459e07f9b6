"""The end_state check of a rubric task: the gold run's exact diff, in the program verifier's terms.

Row checks look only at the rows the gold touched, so a run that also writes elsewhere (the same update on
every row of the table, a delete on the side) passed them. This check holds what the program verifier's
state comparison needs (the gold's changes per table, each table's key, the ignored columns), so rubric and
program tasks judge the state the same way: the diff must be the gold's, on every table.
"""

from __future__ import annotations

from factory.models import EnvSpec, RubricCheck, Snapshot
from factory.tasks.programs.verifier import expected_changes, ignored_columns


def end_state_check(spec: EnvSpec, initial: Snapshot, final: Snapshot) -> RubricCheck:
    """The check that the state goes from `initial` to exactly `final` (read-only gold: it must not change)."""
    tables = expected_changes(spec, initial.tables, final.tables)
    value = {
        "tables": tables,
        "keys": spec.primary_keys(),
        "ignore": ignored_columns(spec),
    }
    description = "the end state is the gold's, and nothing else changed" if tables else "the state is left unchanged"
    return RubricCheck(kind="end_state", value=value, description=description)
