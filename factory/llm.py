"""The one LLM gateway: litellm behind a content-addressed cache and a token/cost ledger.

`FACTORY_LLM=offline` (the default) means no model: generative stages use their procedural
generator and any attempt to call a model is an error, never a silent network call. With a
litellm model name, every completion is cached under FACTORY_HOME/llm-cache by the hash of its
request, so a rerun with unchanged inputs costs no tokens; each call that did cost tokens is
appended to the ledger with the asset that asked for it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from factory.models import Model
from factory.store import Store, hash_value, read_json, write_json_atomic

OFFLINE = "offline"


class OfflineError(RuntimeError):
    """A model was asked for while FACTORY_LLM=offline."""


class LLMOutputError(ValueError):
    """A model answered with something that is not what was asked for (e.g. not JSON)."""


class Usage(Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Completion(Model):
    model: str
    text: str
    usage: Usage
    cached: bool = False


class LedgerEntry(Model):
    asset: str
    model: str
    request_hash: str
    usage: Usage


def configured_model() -> str:
    return os.environ.get("FACTORY_LLM", OFFLINE) or OFFLINE


class LLMGateway:
    """Cached, accounted completions. `model` is a litellm model name or "offline"."""

    def __init__(self, model: str | None = None, store: Store | None = None):
        self.model = model or configured_model()
        self.store = store or Store()
        self._lock = threading.Lock()

    @property
    def offline(self) -> bool:
        return self.model == OFFLINE

    def _cache_path(self, key: str) -> Path:
        return self.store.llm_cache / key[:2] / f"{key}.json"

    def complete(
        self, messages: list[dict[str, Any]], *, asset: str = "", temperature: float = 0.0, **params: Any
    ) -> Completion:
        """One chat completion; served from the cache when this exact request was made before."""
        if self.offline:
            raise OfflineError("FACTORY_LLM=offline: this step needs a model; set FACTORY_LLM to a litellm model name")
        request = {"model": self.model, "messages": messages, "temperature": temperature, **params}
        key = hash_value(request)
        path = self._cache_path(key)
        if path.is_file():
            return Completion.model_validate(read_json(path)).model_copy(update={"cached": True})
        import litellm  # slow import (about 4 s): only when a model is really used

        response = litellm.completion(**request)
        text = response.choices[0].message.content or ""
        raw_usage = getattr(response, "usage", None)
        usage = Usage(
            prompt_tokens=getattr(raw_usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(raw_usage, "completion_tokens", 0) or 0,
            cost_usd=_cost(litellm, response),
        )
        completion = Completion(model=self.model, text=text, usage=usage)
        write_json_atomic(path, completion)
        self._record(LedgerEntry(asset=asset, model=self.model, request_hash=key, usage=usage))
        return completion

    def complete_json(self, messages: list[dict[str, Any]], **kw: Any) -> Any:
        """A completion parsed as JSON (fenced code blocks tolerated); garbage raises LLMOutputError."""
        text = self.complete(messages, **kw).text.strip()
        if text.startswith("```"):
            text = text.strip("`")
            text = text.split("\n", 1)[1] if "\n" in text else text
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise LLMOutputError(f"model {self.model} did not return JSON: {e}; got {text[:200]!r}") from e

    def _record(self, entry: LedgerEntry) -> None:
        ledger = self.store.llm_cache / "ledger.jsonl"
        ledger.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(ledger, "a", encoding="utf-8") as f:
            f.write(entry.model_dump_json() + "\n")

    def ledger(self) -> list[LedgerEntry]:
        path = self.store.llm_cache / "ledger.jsonl"
        if not path.is_file():
            return []
        return [LedgerEntry.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]

    def spent(self, asset: str | None = None) -> Usage:
        total = Usage()
        for e in self.ledger():
            if asset is None or e.asset == asset:
                total.prompt_tokens += e.usage.prompt_tokens
                total.completion_tokens += e.usage.completion_tokens
                total.cost_usd += e.usage.cost_usd
        return total


def _cost(litellm: Any, response: Any) -> float:
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unknown model prices: tokens are still recorded
        return 0.0
