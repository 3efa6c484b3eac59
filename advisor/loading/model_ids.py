"""Hugging Face model ids → built-in model profiles, and suggestions for unknown ids.

``model: meta-llama/Llama-3.1-70B-Instruct`` names the same architecture as the built-in
profile ``llama-3.1-70b``: a profile answers to its Hugging Face repository ids, compared
case-insensitively and with or without the ``-Instruct`` (chat fine-tune) suffix, which changes
the weights but not the architecture the cost model reads. Quantised repositories
(``-FP8``, ``-AWQ``, …) are not aliases: their precision belongs in ``precision:``.

An id that matches nothing gets the closest profile ids (difflib on the repository name) and
the ``config.json`` route: any Hugging Face checkpoint's ``config.json`` (or the folder that
holds it) can be named in ``model:`` instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

HF_IDS: dict[str, tuple[str, ...]] = {
    "llama-2-7b": ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"),
    "llama-2-70b": ("meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"),
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B"),
    "llama-3.1-70b": ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                      "meta-llama/Llama-3.3-70B-Instruct"),
    "llama-3.1-405b": ("meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B"),
    "mistral-7b": ("mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1"),
    "mixtral-8x7b": ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1"),
    "mixtral-8x22b": ("mistralai/Mixtral-8x22B-Instruct-v0.1", "mistralai/Mixtral-8x22B-v0.1"),
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B-Instruct",),
    "qwen2.5-32b": ("Qwen/Qwen2.5-32B-Instruct",),
    "qwen2.5-72b": ("Qwen/Qwen2.5-72B-Instruct",),
    "qwen3-8b": ("Qwen/Qwen3-8B",),
    "qwen3-32b": ("Qwen/Qwen3-32B",),
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B",),
    "qwen3-235b-a22b": ("Qwen/Qwen3-235B-A22B",),
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-0324",
                    "deepseek-ai/DeepSeek-R1"),
    "gpt-oss-20b": ("openai/gpt-oss-20b",),
    "gpt-oss-120b": ("openai/gpt-oss-120b",),
    "opt-13b": ("facebook/opt-13b",),
    "opt-66b": ("facebook/opt-66b",),
    "opt-175b": ("facebook/opt-175b",),
}
"""Repository ids per built-in profile (the first is the one launch commands serve). Each
repository's ``config.json`` has the profile's architecture (same layers, widths, heads,
vocabulary); DeepSeek-R1 and V3-0324 share V3's, Llama-3.3-70B shares Llama-3.1-70B's."""

_SUFFIXES = ("-instruct", "-chat-hf", "-hf", "-chat")


def _key(ref: str) -> str:
    """Case-folded, without a ``-Instruct``/``-hf`` suffix."""
    key = ref.lower()
    for suffix in _SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def _aliases(profile_ids: Iterable[str]) -> dict[str, str]:
    """Every accepted spelling (folded) → profile id."""
    known = set(profile_ids)
    table: dict[str, str] = {}
    for pid, repos in HF_IDS.items():
        if pid not in known:
            continue
        for repo in repos:
            table.setdefault(_key(repo), pid)
            table.setdefault(_key(repo.split("/", 1)[-1]), pid)  # the name without its org
    for pid in known:
        table.setdefault(_key(pid), pid)
    return table


def looks_like_repo_id(ref: str) -> bool:
    """``org/name`` without a file suffix: a Hugging Face repository id."""
    parts = ref.split("/")
    return (len(parts) == 2 and all(parts)
            and not ref.lower().endswith((".yaml", ".yml", ".json")))


def profile_for(ref: str, profile_ids: Iterable[str]) -> str | None:
    """The built-in profile id ``ref`` names (an id or a Hugging Face repo id), else None."""
    return _aliases(profile_ids).get(_key(ref))


def suggestions(ref: str, profile_ids: Iterable[str], limit: int = 3) -> list[str]:
    """Profile ids closest to ``ref`` (difflib on the repository name, folded)."""
    table = _aliases(profile_ids)
    name = _key(ref.split("/")[-1])
    close = difflib.get_close_matches(name, list(table), n=limit * 3, cutoff=0.5)
    found: list[str] = []
    for alias in close:
        if table[alias] not in found:
            found.append(table[alias])
    return found[:limit]


def unknown_model_message(ref: str, profile_ids: Iterable[str], looked_for: str | None) -> str:
    """The problem text for a ``model:`` that is neither a profile, a known id nor a file."""
    ids = list(profile_ids)
    close = suggestions(ref, ids)
    where = f" and no file at '{ref}' (looked for {looked_for})" if looked_for else ""
    hint = f"closest built-in profiles: {', '.join(close)}; " if close else ""
    return (f"unknown model '{ref}': not a built-in profile or a Hugging Face id of one{where}; "
            f"{hint}or save the checkpoint's config.json and write `model: path/to/config.json` "
            "(see `pd-advisor profiles list models`)")
