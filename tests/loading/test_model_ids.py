"""Model ids (#16): built-in profiles answer to Hugging Face ids; unknown ids get suggestions."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.loading.catalog import ProfileCatalog
from advisor.loading.errors import InputError
from advisor.loading.model_ids import HF_IDS, profile_for, suggestions
from advisor.loading.resolve import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-8b-single-node.yaml"


@pytest.fixture(scope="module")
def ids() -> list[str]:
    return ProfileCatalog().ids("models")


@pytest.mark.parametrize(("ref", "expected"), [
    ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
    ("META-LLAMA/llama-3.1-70b-instruct", "llama-3.1-70b"),
    ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
    ("Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen3-8B", "qwen3-8b"),
    ("qwen/qwen2.5-7b", "qwen2.5-7b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3"),
    ("llama-3.1-8b", "llama-3.1-8b"),
])
def test_hugging_face_ids_name_profiles(ids: list[str], ref: str, expected: str) -> None:
    assert profile_for(ref, ids) == expected


def test_every_alias_points_at_an_existing_profile(ids: list[str]) -> None:
    assert set(HF_IDS) <= set(ids)


def test_quantised_repositories_are_not_aliases(ids: list[str]) -> None:
    assert profile_for("Qwen/Qwen3-8B-FP8", ids) is None
    assert suggestions("Qwen/Qwen3-8B-FP8", ids)[0] == "qwen3-8b"


def _workload(tmp_path: Path, model: str) -> Path:
    text = EXAMPLE.read_text().replace("model: llama-3.1-8b ", f"model: {model} ", 1)
    path = tmp_path / "w.yaml"
    path.write_text(text)
    return path


def test_workload_with_a_hugging_face_id_resolves(tmp_path: Path) -> None:
    sc = load_scenario(_workload(tmp_path, "meta-llama/Llama-3.1-8B-Instruct"), ProfileCatalog())
    assert sc.model.id == "llama-3.1-8b"


def test_unknown_id_suggests_profiles_and_the_config_json_route(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_scenario(_workload(tmp_path, "acme/Llama-3.1-7B-Instruct"), ProfileCatalog())
    (problem,) = info.value.problems
    assert (problem.line, problem.col, problem.key) == (9, 8, "model")
    assert "closest built-in profiles: llama-3.1-70b, llama-3.1-8b" in problem.message
    assert "config.json" in problem.message


def test_hidden_characters_are_not_folded_away(ids: list[str]) -> None:
    """An id with a trailing line separator or space is not the profile (fuzz regression)."""
    assert profile_for("llama-3.1-8b\u2028", ids) is None
    assert profile_for(" meta-llama/Llama-3.1-8B-Instruct", ids) is None
