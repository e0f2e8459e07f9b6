"""The LLM gateway, exercised with litellm's own mock support: never a live call."""

import pytest

from factory.llm import LLMGateway, LLMOutputError, OfflineError


def test_offline_refuses_to_call_a_model():
    gw = LLMGateway("offline")
    with pytest.raises(OfflineError, match="FACTORY_LLM"):
        gw.complete([{"role": "user", "content": "hi"}])


def test_completion_is_cached_and_accounted_once():
    gw = LLMGateway("gpt-4o-mini")
    messages = [{"role": "user", "content": "name a tool"}]
    first = gw.complete(messages, asset="tasks", mock_response="list_orders")
    second = gw.complete(messages, asset="tasks", mock_response="list_orders")
    assert first.text == second.text == "list_orders"
    assert not first.cached and second.cached
    assert len(gw.ledger()) == 1, "the cached call spends no tokens"
    assert gw.spent("tasks").prompt_tokens == first.usage.prompt_tokens
    other = gw.complete([{"role": "user", "content": "another"}], asset="tasks", mock_response="x")
    assert not other.cached and len(gw.ledger()) == 2


def test_complete_json_parses_fenced_json_and_rejects_garbage():
    gw = LLMGateway("gpt-4o-mini")
    value = gw.complete_json([{"role": "user", "content": "a"}], mock_response='```json\n{"a": 1}\n```')
    assert value == {"a": 1}
    with pytest.raises(LLMOutputError, match="did not return JSON"):
        gw.complete_json([{"role": "user", "content": "b"}], mock_response="sure! here you go")
