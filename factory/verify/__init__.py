"""Verifier building blocks (trusted code): state hash and diff, lenient answers, rubric checks, and the
contract for generated code verifiers, which run in the sandbox."""

from factory.verify.answers import answer_contains, answers_match
from factory.verify.code import check_verifier_source, run_code_verifier, verdict_from_result
from factory.verify.rubric import rubric_verdict
from factory.verify.state import StateDiff, canonical_state_hash, state_diff

__all__ = [
    "StateDiff",
    "answer_contains",
    "answers_match",
    "canonical_state_hash",
    "check_verifier_source",
    "rubric_verdict",
    "run_code_verifier",
    "state_diff",
    "verdict_from_result",
]
