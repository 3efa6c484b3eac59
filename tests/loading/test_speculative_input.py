"""``deployment.speculative`` (#30): bad input is a located ``path:line:col: error: key:
message`` with exit 2 and no traceback; a good block reaches the engine spec of every
decoding instance, the JSON report (additively) and ``--emit``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli.app import make_app
from advisor.loading.catalog import ProfileCatalog
from advisor.loading.resolve import load_scenario

BASE = """\
version: 1
model: llama-3.1-8b
precision: bf16
engine: {engine}
cluster: {{gpu: h100-sxm, gpus: 8}}
traffic:
  rate_rps: 4
  prompt_tokens: 1000
  output_tokens: 200
slo: {{ttft_ms: 1000, tpot_ms: 50}}
deployment:
  mode: colocated
  speculative:
{speculative}
"""


def _write(tmp_path: Path, speculative: str, engine: str = "vllm") -> Path:
    path = tmp_path / "w.yaml"
    body = "\n".join(f"    {line}" for line in speculative.strip().splitlines())
    path.write_text(BASE.format(engine=engine, speculative=body), encoding="utf-8")
    return path


def _recommend(path: Path, *extra: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(make_app(), ["recommend", str(path), *extra])
    return done.exit_code, done.stdout, done.stderr


BAD = [
    ("method: eagle3\ndraft_tokens: 3\nacceptance_rate: 1.5", "vllm", 16, 22,
     "deployment.speculative.acceptance_rate", "less than or equal to 1"),
    ("method: eagle3\ndraft_tokens: 3\nacceptance_rate: -0.1", "vllm", 16, 22,
     "deployment.speculative.acceptance_rate", "greater than or equal to 0"),
    ("method: medusa\ndraft_tokens: 3", "vllm", 14, 13, "deployment.speculative.method",
     "must be 'eagle3', 'mtp', 'ngram' or 'draft-model'"),
    ("method: eagle3\ndraft_tokens: 3", '{name: sglang, version: "0.3.0"}', 14, 13,
     "deployment.speculative.method", "eagle3 is not supported by SGLang 0.2-0.3"),
    ("method: eagle3\ndraft_tokens: 3", "{name: vllm, version: \"0.6.0\"}", 14, 13,
     "deployment.speculative.method", "supports.speculative_methods: draft-model, ngram"),
    ("method: mtp\ndraft_tokens: 2\naccepted_tokens_per_step: 3.5", "vllm", 16, 31,
     "deployment.speculative.accepted_tokens_per_step", "exceeds draft_tokens + 1 = 3"),
    ("method: mtp\ndraft_tokens: 2\nacceptance_rate: 0.8\naccepted_tokens_per_step: 2",
     "vllm", 17, 31, "deployment.speculative.accepted_tokens_per_step", "not both"),
    ("method: draft-model\ndraft_tokens: 2", "vllm", 14, 5, "deployment.speculative",
     "missing required key 'draft_model'"),
    ("method: ngram\ndraft_tokens: 0", "vllm", 15, 19, "deployment.speculative.draft_tokens",
     "greater than or equal to 1"),
]


@pytest.mark.parametrize(("block", "engine", "line", "col", "key", "message"), BAD)
def test_bad_input_is_located_exit_2(tmp_path: Path, block: str, engine: str, line: int,
                                     col: int, key: str, message: str) -> None:
    path = _write(tmp_path, block, engine)
    code, out, err = _recommend(path)
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    located = re.compile(rf"^{re.escape(str(path))}:{line}:{col}: error: {re.escape(key)}: "
                         rf".*{re.escape(message)}", re.MULTILINE)
    assert located.search(err), err


def test_finite_batch_with_speculation_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "method: ngram\ndraft_tokens: 3")
    text = path.read_text(encoding="utf-8").replace("  rate_rps: 4\n",
                                                   "  requests: 100\n  arrival: all-at-once\n")
    path.write_text(text, encoding="utf-8")
    code, _, err = _recommend(path)
    assert code == 2
    assert re.search(r":15:5: error: deployment.speculative: finite batches", err), err


def test_block_reaches_engine_report_and_emit(tmp_path: Path) -> None:
    """The resolved setting with its sourced default; the JSON report's
    ``inputs.deployment.speculative`` and its effect on both plans; the engines' flags."""
    path = _write(tmp_path, "method: eagle3\ndraft_tokens: 3\ndraft_model: some/eagle3-head")
    sc = load_scenario(path, ProfileCatalog())
    spec = sc.engine.speculative
    assert spec is not None and sc.deployment is not None and sc.deployment.speculative == spec
    assert (spec.acceptance_source, spec.acceptance_rate) == ("default", 0.75)
    code, out, err = _recommend(path, "--format", "json")
    assert code in (0, 1), err
    doc = json.loads(out)
    block = doc["inputs"]["deployment"]["speculative"]
    assert block["accepted_tokens_per_step"] == pytest.approx((1 - 0.75**4) / 0.25, rel=1e-5)
    assert block["verify_tokens_per_sequence"] == 4
    assert "EAGLE-3" in block["default_acceptance_source"]
    assert {e["plan"] for e in block["effect"]} <= {"colocated", "disaggregated"}
    for effect in block["effect"]:
        assert effect["tpot_ms_at_batch_1"] < effect["tpot_ms_at_batch_1_without"]
    code, out, _ = _recommend(path, "--format", "none", "--emit", "vllm")
    assert '{"method":"eagle3","model":"some/eagle3-head","num_speculative_tokens":3}' in out
    code, out, _ = _recommend(path, "--format", "none", "--emit", "sglang")
    assert "--speculative-algorithm EAGLE3" in out
    assert "--speculative-num-draft-tokens 4" in " ".join(out.split())


def test_simulate_refuses_speculation(tmp_path: Path) -> None:
    path = _write(tmp_path, "method: ngram\ndraft_tokens: 3")
    done = CliRunner().invoke(make_app(), ["simulate", str(path)])
    assert done.exit_code == 2
    assert "does not model speculative decoding" in done.stderr


def test_mtp_effect_is_reported_for_expert_parallel_plans(tmp_path: Path) -> None:
    """#29 item 5: MTP on the DeepSeek-V3 96 × H100 example (SGLang, EP plans on both sides).
    The step already charged the draft layer and the verify batch in EP decode; the report's
    ``effect`` now covers the EP instances too (it skipped every EP plan before): the best
    plans' EP instances (the search's, beside the declared layout) with MTP at the published
    acceptance (DeepSeek-V3 report §5.4.3, 0.85) have a lower TPOT at batch 1 and more tokens
    per step."""
    text = (Path(__file__).resolve().parents[2] / "examples" /
            "deepseek-v3-96xh100.yaml").read_text(encoding="utf-8")
    text = text.replace("  decode_expert_parallel: 64 ",
                        "  speculative: {method: mtp, draft_tokens: 1}\n"
                        "  decode_expert_parallel: 64 ", 1)
    assert "method: mtp" in text
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = _recommend(path, "--format", "json")
    assert code in (0, 1), err
    effects = json.loads(out)["inputs"]["deployment"]["speculative"]["effect"]
    decode = [e for e in effects if e["plan"] == "disaggregated"]
    assert len(decode) == 1 and decode[0]["instance"].startswith("EP"), effects
    assert decode[0]["tokens_per_step"] == pytest.approx(1.85, rel=1e-6)
    for effect in effects:
        assert effect["tpot_ms_at_batch_1"] < effect["tpot_ms_at_batch_1_without"]
        assert effect["draft_ms_at_batch_1"] > 0
