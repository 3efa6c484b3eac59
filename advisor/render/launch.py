"""Launch commands that realise a recommendation on vLLM or SGLang.

:func:`launch_commands` is pure: it reads the canonical recommendation document
(:func:`advisor.render.report_json.build_report`) and returns shell lines — ``#`` comments and
one command per engine process — for the plan of the verdict (or of ``mode``):

* **chunked prefill** (colocated pool): one serve command per instance with its tensor-parallel
  size (and pipeline stages when an instance spans nodes), token budget
  (vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``), running-sequence cap
  (``--max-num-seqs`` / ``--max-running-requests``) and memory fraction
  (``--gpu-memory-utilization`` / ``--mem-fraction-static``); with several instances, the
  endpoints to balance (SGLang: a router command);
* **disaggregation**: one prefill and one decode command per instance with the KV transfer
  settings — vLLM's NixlConnector (engines.md §2.5: ``--kv-transfer-config``,
  ``VLLM_NIXL_SIDE_CHANNEL_HOST``/``PORT``, ``UCX_NET_DEVICES``), SGLang's
  ``--disaggregation-mode`` with the Mooncake transfer backend and one bootstrap port per
  prefill server (engines.md §3.2, trap 11) — and the router that pairs them (vLLM's NIXL
  proxy, ``sglang_router.launch_router --pd-disaggregation``), instance counts from the plan.

Where the numbers come from (all from the document):

* instance counts, tensor parallelism, pipeline stages and the token budget: the plan;
* running sequences per instance: the model's ``max_running_sequences`` (colocated: the decode
  batch at the plan's goodput, within memory) and ``decode_max_running_sequences`` (decode
  pool: the largest batch within memory and the TPOT SLO); never above the engine cap of 1024
  nor, for vLLM's colocated budget, above the token budget (vLLM requires budget >=
  max_num_seqs);
* prefill token budget under disaggregation: the plan's saturating token count
  (``prefill_saturating_tokens``), raised to the p95 prompt rounded up to a power of two so
  that 95 % of prompts prefill in one pass, at most 16384;
* memory fraction: ``policy.memory_fraction`` (the fraction the memory plan assumed);
* ``--max-model-len`` / ``--context-length``: longest prompt + longest output when every phase
  bounds both (``max``); omitted otherwise (the model's own context applies);
* KV cache dtype: ``fp8`` when the workload's precision is fp8.

Placement: instances are packed onto nodes in order (prefill first), none straddling a node
unless it is larger than one; host names ``node0``, ``node1``, ... stand for your machines.
With more than :data:`MAX_LISTED` instances, only the first node of each role is spelled out
and a comment says how the pattern repeats; router commands always list every endpoint.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.render.formats import EmitEngine


class LaunchError(ValueError):
    """The document has no plan that commands can be emitted for."""


"""Margin over the mean decode batch at the plan's goodput (the batch fluctuates around it)."""
ENGINE_MAX_SEQS = 1024
"""Engine cap on running sequences (engines.md §0.2 trap 9; same as the model's cap)."""
PREFILL_BUDGET_RANGE = (2048, 16384)
MAX_LISTED = 64
"""More instances than this: spell out the first node of each role only."""
CONTINUATION = " \\\n    "

HF_REPOSITORIES: dict[str, str] = {
    "llama-2-7b": "meta-llama/Llama-2-7b-hf",
    "llama-2-70b": "meta-llama/Llama-2-70b-hf",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "llama-3.1-70b": "meta-llama/Llama-3.1-70B-Instruct",
    "llama-3.1-405b": "meta-llama/Llama-3.1-405B-Instruct",
    "mistral-7b": "mistralai/Mistral-7B-v0.1",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "mixtral-8x22b": "mistralai/Mixtral-8x22B-Instruct-v0.1",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
    "qwen2.5-72b": "Qwen/Qwen2.5-72B-Instruct",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "opt-13b": "facebook/opt-13b",
    "opt-66b": "facebook/opt-66b",
}
"""Checkpoint served for each built-in model profile (same architecture as the profile)."""


@dataclass(frozen=True)
class _Slot:
    """Where one instance runs."""

    role: str
    """``colocated``, ``prefill`` or ``decode``."""
    index: int
    """0-based index within its role."""
    nodes: tuple[int, ...]
    """Node(s) it occupies (several when it spans nodes)."""
    gpus: tuple[int, ...]
    """Local GPU ids on its node (all of them when it spans nodes)."""
    local: int
    """Index among the instances of its role on its first node (for ports)."""

    @property
    def host(self) -> str:
        """Host name of its (first) node as printed: ``node<N>``, for the user to map to a
        real host (the plan knows node numbers, not machines)."""
        return f"node{self.nodes[0]}"


def checkpoint_from_workload(model_ref: str | None, workload: Path) -> str | None:
    """The checkpoint folder a workload's ``model:`` names, when it names a config.json.

    ``model: ckpt/config.json`` or ``model: ckpt`` (a folder) → ``ckpt`` resolved against the
    workload's folder; ids and profile YAML paths → None. Path arithmetic only, no I/O.
    """
    if not model_ref or model_ref.lower().endswith((".yaml", ".yml")):
        return None
    if "/" not in model_ref and "\\" not in model_ref and not model_ref.endswith(".json"):
        return None
    path = Path(model_ref).expanduser()
    path = path if path.is_absolute() else workload.parent / path
    return str(path.parent if path.suffix.lower() == ".json" else path)


def launch_commands(report: Mapping[str, Any], engine: EmitEngine | str,
                    model: str | None = None, mode: str | None = None) -> list[str]:
    """Shell lines (comments and commands) that launch the recommended plan.

    ``model`` is the checkpoint to serve (default: the Hugging Face repository of a built-in
    profile, else the profile id); ``mode`` forces ``colocated`` or ``disaggregated`` instead
    of the verdict's plan. Raises :class:`LaunchError` when that plan does not exist.
    """
    engine = EmitEngine(engine)
    inputs = report["inputs"]
    checkpoint = model or HF_REPOSITORIES.get(inputs["model"]["id"], inputs["model"]["id"])
    chosen = mode or ("disaggregated" if report["verdict"] == "disaggregate" else "colocated")
    if chosen not in ("colocated", "disaggregated"):
        raise LaunchError(f"unknown mode {chosen!r}; expected colocated or disaggregated")
    ctx = _Context(report, engine, checkpoint)
    lines = ctx.colocated() if chosen == "colocated" else ctx.disaggregated()
    if not report.get("slo_met", True):
        lines.insert(1, "# WARNING: the report says this plan misses the SLOs on these GPUs.")
    return lines


def render_launch(report: Mapping[str, Any], engine: EmitEngine | str,
                  model: str | None = None, mode: str | None = None) -> str:
    """:func:`launch_commands` as one text block (blank line between sections)."""
    return "\n".join(launch_commands(report, engine, model, mode)) + "\n"


def render_launch_for_workload(report: Mapping[str, Any], engine: EmitEngine | str,
                               model_ref: Any, workload: Path) -> str:
    """:func:`render_launch` serving the checkpoint a workload's ``model:`` names, if any.

    ``model_ref`` is the raw ``model:`` value (a config.json or its folder becomes the served
    path, resolved against the workload's folder; ids use :data:`HF_REPOSITORIES`).
    """
    ref = model_ref if isinstance(model_ref, str) else None
    return render_launch(report, engine, model=checkpoint_from_workload(ref, workload))


# --------------------------------------------------------------------------- numbers
def _running_sequences(model_value: int | float | None) -> int:
    """The model's running-sequence figure for one instance, within the engine cap."""
    return max(1, min(int(model_value or 1), ENGINE_MAX_SEQS))


def _pow2_at_least(value: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(value, 1.0))))


def _prefill_budget(phases: list[Mapping[str, Any]]) -> int:
    p95 = max(float(p["prompt_tokens"]["p95"]) for p in phases)
    low, high = PREFILL_BUDGET_RANGE
    return min(max(_pow2_at_least(math.floor(p95 + 1e-6)), low), high)


def _max_model_len(phases: list[Mapping[str, Any]]) -> int | None:
    lengths = []
    for phase in phases:
        top_in, top_out = phase["prompt_tokens"].get("max"), phase["output_tokens"].get("max")
        if top_in is None or top_out is None:
            return None
        lengths.append(math.ceil(top_in) + math.ceil(top_out))
    return max(lengths) if lengths else None


def _place(roles: list[tuple[str, int, int]], gpus_per_node: int) -> list[_Slot]:
    """Pack (role, count, gpus each) in order onto nodes of ``gpus_per_node`` GPUs."""
    slots: list[_Slot] = []
    node, used = 0, 0
    per_node_role: dict[tuple[int, str], int] = {}
    for role, count, each in roles:
        for index in range(count):
            if each > gpus_per_node:  # spans whole nodes
                if used:
                    node, used = node + 1, 0
                span = math.ceil(each / gpus_per_node)
                slots.append(_Slot(role, index, tuple(range(node, node + span)),
                                   tuple(range(gpus_per_node)), 0))
                node += span
                continue
            if used + each > gpus_per_node:
                node, used = node + 1, 0
            local = per_node_role.get((node, role), 0)
            per_node_role[(node, role)] = local + 1
            slots.append(_Slot(role, index, (node,), tuple(range(used, used + each)), local))
            used += each
    return slots


def _command(words: list[str], env: list[str] | None = None, width: int = 88) -> str:
    """Join a command, one backslash-continued line per group of options.

    Environment assignments get the first line; the program and its positional words start
    the next; each option travels with its values, and a line is broken before an option once
    it would exceed ``width`` characters.
    """
    groups: list[str] = []
    for word in words:
        if not groups or (word.startswith("--") and groups[-1] != ""):
            groups.append(word)
        else:
            groups[-1] += " " + word
    # the program's own words (before the first option) form the first group
    first_option = next((i for i, g in enumerate(groups) if g.startswith("--")), len(groups))
    head = " ".join(groups[:first_option])
    lines = [" ".join(env)] if env else []
    current = head
    for group in groups[first_option:]:
        if len(current) + 1 + len(group) <= width:
            current += " " + group
            continue
        lines.append(current)
        current = ""
        for word in group.split(" "):  # a long value list wraps too
            if current and len(current) + 1 + len(word) > width:
                lines.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
    lines.append(current)
    return CONTINUATION.join(lines)


def _comment(text: str) -> list[str]:
    """A ``#`` comment wrapped at 98 columns (continuation lines indented)."""
    return textwrap.wrap(text, width=98, initial_indent="# ", subsequent_indent="#   ",
                         break_on_hyphens=False, break_long_words=False)


class _Context:
    """Everything the per-engine builders share."""

    def __init__(self, report: Mapping[str, Any], engine: EmitEngine, checkpoint: str) -> None:
        self.report = report
        self.engine = engine
        self.checkpoint = checkpoint
        inputs = report["inputs"]
        self.gpu = inputs["cluster"]["gpu"]["id"]
        self.gpus_per_node = int(inputs["cluster"]["gpus_per_node"])
        self.phases = list(inputs["traffic"])
        self.fp8 = inputs["precision"] == "fp8"
        self.memory_fraction = float(report["policy"]["memory_fraction"])
        self.max_len = _max_model_len(self.phases)

    # ---- shared flags ----------------------------------------------------------------------
    def _common_flags(self) -> list[str]:
        flags: list[str] = []
        if self.engine is EmitEngine.vllm:
            flags += ["--gpu-memory-utilization", f"{self.memory_fraction:g}"]
            if self.max_len is not None:
                flags += ["--max-model-len", str(self.max_len)]
            if self.fp8:
                flags += ["--kv-cache-dtype", "fp8"]
        else:
            flags += ["--mem-fraction-static", f"{self.memory_fraction:g}"]
            if self.max_len is not None:
                flags += ["--context-length", str(self.max_len)]
            if self.fp8:
                flags += ["--kv-cache-dtype", "fp8_e4m3"]
        return flags

    def _header(self, title: str, detail: list[str]) -> list[str]:
        text = [*detail, (f"Model: {self.checkpoint}. Hosts node0, node1, ... stand for your "
                "machines; run each command in its own shell or service unit.")]
        if self.fp8:
            text.append("Precision fp8: serve an FP8 checkpoint, or add --quantization fp8 for "
                        "online FP8 weight quantization.")
        lines = [f"# pd-advisor launch plan ({self.engine.value}): {title}"]
        for paragraph in text:
            lines += _comment(paragraph)
        return lines

    def _listed(self, slots: list[_Slot]) -> tuple[list[_Slot], list[str]]:
        """The slots to spell out, and comments for the ones left out."""
        if len(slots) <= MAX_LISTED:
            return slots, []
        shown: list[_Slot] = []
        notes: list[str] = []
        for role in dict.fromkeys(s.role for s in slots):
            of_role = [s for s in slots if s.role == role]
            first = of_role[0].nodes[0]
            head = [s for s in of_role if s.nodes[0] == first]
            shown += head
            nodes = sorted({n for s in of_role for n in s.nodes})
            if len(of_role) > len(head):
                notes += _comment(
                    f"... {role}: the same commands with the host name changed on "
                    f"node{nodes[1] if len(nodes) > 1 else nodes[0]} ... node{nodes[-1]} "
                    f"({len(of_role)} {role} instances in total; GPU ids and ports repeat "
                    "per node)")
        return shown, notes

    # ---- colocated -----------------------------------------------------------------------
    def colocated(self) -> list[str]:
        plan = self.report.get("colocated")
        if not plan or not plan.get("instances"):
            raise LaunchError("the report has no colocated plan (no instance shape fits the "
                              "GPUs); nothing to launch")
        tp, pp = int(plan["tensor_parallel"]), int(plan["pipeline_stages"])
        n = int(plan["instances"])
        budget = plan.get("chunk_tokens")
        seqs = _running_sequences(plan["max_running_sequences"])
        if budget and self.engine is EmitEngine.vllm:
            seqs = min(seqs, int(budget))
        slots = _place([("colocated", n, tp * pp)], self.gpus_per_node)
        nodes = len({node for s in slots for node in s.nodes})
        chunking = (f"token budget {budget} per step" if budget else
                    "chunking off (whole prompts per step)")
        lines = self._header(
            "chunked prefill on a colocated pool" if budget else "colocated pool, unchunked",
            [(f"{n} instance{'s' * (n != 1)} x TP{tp}{f' x PP{pp}' if pp > 1 else ''} = "
             f"{n * tp * pp} x {self.gpu} on {nodes} node{'s' * (nodes != 1)}; {chunking}, up to "
             f"{seqs} running sequences and memory fraction {self.memory_fraction:g} per "
             "instance.")])
        shown, notes = self._listed(slots)
        lines.append("")
        for slot in shown:
            lines += self._colocated_command(slot, tp, pp, budget, seqs)
        lines += notes
        endpoints = [f"http://{s.host}:{self._port('colocated', s)}" for s in slots]
        if len(slots) > 1:
            lines.append("")
            if self.engine is EmitEngine.sglang:
                lines.append("# router: one OpenAI-compatible endpoint over every instance")
                lines.append(_command(["python", "-m", "sglang_router.launch_router",
                                       "--worker-urls", *endpoints, "--host", "0.0.0.0",
                                       "--port", "8000"]))
            else:
                lines += _comment(f"balance requests over the {len(slots)} endpoints with "
                                  "any HTTP load balancer: " + " ".join(endpoints))
        return lines

    def _port(self, role: str, slot: _Slot) -> int:
        if self.engine is EmitEngine.vllm:
            base = {"colocated": 8000, "prefill": 8100, "decode": 8200}[role]
        else:
            base = {"colocated": 30000, "prefill": 30000, "decode": 31000}[role]
        return base + slot.local

    def _colocated_command(self, slot: _Slot, tp: int, pp: int, budget: int | None,
                           seqs: int) -> list[str]:
        port = str(self._port("colocated", slot))
        if self.engine is EmitEngine.vllm:
            words = ["vllm", "serve", self.checkpoint, "--port", port,
                     "--tensor-parallel-size", str(tp)]
            if pp > 1:
                words += ["--pipeline-parallel-size", str(pp)]
            if budget:
                words += ["--max-num-batched-tokens", str(budget)]
            else:
                words += ["--no-enable-chunked-prefill"]
            words += ["--max-num-seqs", str(seqs), *self._common_flags()]
            return self._vllm_placed(slot, words, [])
        words = ["python", "-m", "sglang.launch_server", "--model-path", self.checkpoint,
                 "--host", "0.0.0.0", "--port", port, "--tp-size", str(tp)]
        if pp > 1:
            words += ["--pp-size", str(pp)]
        words += ["--chunked-prefill-size", str(budget) if budget else "-1",
                  "--max-running-requests", str(seqs), *self._common_flags()]
        return self._sglang_placed(slot, words)

    def _vllm_placed(self, slot: _Slot, words: list[str], env: list[str]) -> list[str]:
        """A vLLM command on its node(s) (Ray when an instance spans nodes)."""
        if len(slot.nodes) > 1:
            head = slot.host
            return [*_comment(f"{slot.role} instance {slot.index}: spans node{slot.nodes[0]}"
                              f"..node{slot.nodes[-1]}; start Ray there first (`ray start "
                              f"--head` on {head}, `ray start --address={head}:6379` on the "
                              f"others), then on {head}:"),
                    _command([*words, "--distributed-executor-backend", "ray"], env)]
        gpus = ",".join(str(g) for g in slot.gpus)
        return [f"# {slot.role} instance {slot.index} on {slot.host}, GPUs {gpus}",
                _command(words, [f"CUDA_VISIBLE_DEVICES={gpus}", *env])]

    def _sglang_placed(self, slot: _Slot, words: list[str]) -> list[str]:
        """An SGLang command on its node(s) (one process per node when it spans nodes)."""
        if len(slot.nodes) > 1:
            lines = [(f"# {slot.role} instance {slot.index}: spans node{slot.nodes[0]}..node"
                     f"{slot.nodes[-1]}; one process per node")]
            for rank, node in enumerate(slot.nodes):
                lines.append(f"# on node{node}:")
                lines.append(_command([*words, "--nnodes", str(len(slot.nodes)), "--node-rank",
                                       str(rank), "--dist-init-addr", f"{slot.host}:5000"]))
            return lines
        gpus = ",".join(str(g) for g in slot.gpus)
        return [f"# {slot.role} instance {slot.index} on {slot.host}, GPUs {gpus}",
                _command([*words, "--base-gpu-id", str(slot.gpus[0])])]

    # ---- disaggregated --------------------------------------------------------------------
    def disaggregated(self) -> list[str]:
        plan = self.report.get("disaggregated")
        if not plan or not plan.get("prefill_instances") or not plan.get("decode_instances"):
            raise LaunchError("the report has no disaggregated plan (no prefill/decode split "
                              "fits the GPUs); nothing to launch")
        p_tp, d_tp = int(plan["prefill_tensor_parallel"]), int(plan["decode_tensor_parallel"])
        p_pp = int(plan.get("prefill_pipeline_stages") or 1)
        d_pp = int(plan.get("decode_pipeline_stages") or 1)
        p_n, d_n = int(plan["prefill_instances"]), int(plan["decode_instances"])
        d_seqs = _running_sequences(plan["decode_max_running_sequences"])
        p_budget = max(_prefill_budget(self.phases),
                       min(_pow2_at_least(float(plan["prefill_saturating_tokens"])),
                           PREFILL_BUDGET_RANGE[1]))
        slots = _place([("prefill", p_n, p_tp * p_pp), ("decode", d_n, d_tp * d_pp)],
                       self.gpus_per_node)
        nodes = len({node for s in slots for node in s.nodes})
        transfer = ("NixlConnector" if self.engine is EmitEngine.vllm
                    else "Mooncake transfer engine")
        kv = self.report.get("kv_transfer") or {}
        link = f" over {kv['link_id']}" if kv.get("link_id") else ""
        lines = self._header("prefill/decode disaggregation", [
            (f"prefill: {p_n} x TP{p_tp}{f' x PP{p_pp}' if p_pp > 1 else ''} "
            f"({p_n * p_tp * p_pp} GPUs), token budget {p_budget}; decode: {d_n} x TP{d_tp}"
            f"{f' x PP{d_pp}' if d_pp > 1 else ''} ({d_n * d_tp * d_pp} GPUs), up to {d_seqs} "
            "running sequences each;"),
            (f"{nodes} node{'s' * (nodes != 1)} of {self.gpus_per_node} x {self.gpu}; KV cache "
            f"moved by {transfer}{link}; memory fraction {self.memory_fraction:g}.")])
        if self.engine is EmitEngine.sglang and p_tp != d_tp:
            lines += _comment(
                f"WARNING: SGLang disaggregation requires the same tensor parallelism on prefill "
                f"and decode unless one side runs large expert parallelism (NVIDIA "
                f"aiconfigurator require_same_tp, ai-dynamo/dynamo#5870); this plan uses TP{p_tp} "
                f"/ TP{d_tp}: launch it with vLLM (--emit vllm) or re-plan with equal TPs.")
        shown, notes = self._listed(slots)
        lines.append("")
        for slot in shown:
            if slot.role == "prefill":
                lines += self._prefill_command(slot, p_tp, p_pp, p_budget)
            else:
                lines += self._decode_command(slot, d_tp, d_pp, d_seqs)
        lines += notes
        lines.append("")
        lines += self._router(slots)
        return lines

    def _nixl_env(self, slot: _Slot) -> list[str]:
        return [f"VLLM_NIXL_SIDE_CHANNEL_HOST={slot.host}",
                f"VLLM_NIXL_SIDE_CHANNEL_PORT={5600 + slot.gpus[0]}", "UCX_NET_DEVICES=all"]

    def _kv_config(self, role: str) -> str:
        config = {"kv_connector": "NixlConnector", "kv_role": role}
        return "'" + json.dumps(config, separators=(",", ":")) + "'"

    def _prefill_command(self, slot: _Slot, tp: int, pp: int, budget: int) -> list[str]:
        port = str(self._port("prefill", slot))
        if self.engine is EmitEngine.vllm:
            words = ["vllm", "serve", self.checkpoint, "--port", port,
                     "--tensor-parallel-size", str(tp)]
            if pp > 1:
                words += ["--pipeline-parallel-size", str(pp)]
            words += ["--max-num-batched-tokens", str(budget), *self._common_flags(),
                      "--kv-transfer-config", self._kv_config("kv_producer")]
            return self._vllm_placed(slot, words, self._nixl_env(slot))
        words = ["python", "-m", "sglang.launch_server", "--model-path", self.checkpoint,
                 "--disaggregation-mode", "prefill", "--host", "0.0.0.0", "--port", port,
                 "--tp-size", str(tp)]
        if pp > 1:
            words += ["--pp-size", str(pp)]
        words += ["--chunked-prefill-size", str(budget), *self._common_flags(),
                  "--disaggregation-transfer-backend", "mooncake",
                  "--disaggregation-bootstrap-port", str(8998 + slot.local)]
        return self._sglang_placed(slot, words)

    def _decode_command(self, slot: _Slot, tp: int, pp: int, seqs: int) -> list[str]:
        port = str(self._port("decode", slot))
        if self.engine is EmitEngine.vllm:
            words = ["vllm", "serve", self.checkpoint, "--port", port,
                     "--tensor-parallel-size", str(tp)]
            if pp > 1:
                words += ["--pipeline-parallel-size", str(pp)]
            words += ["--max-num-seqs", str(seqs), *self._common_flags(),
                      "--kv-transfer-config", self._kv_config("kv_consumer")]
            return self._vllm_placed(slot, words, self._nixl_env(slot))
        words = ["python", "-m", "sglang.launch_server", "--model-path", self.checkpoint,
                 "--disaggregation-mode", "decode", "--host", "0.0.0.0", "--port", port,
                 "--tp-size", str(tp)]
        if pp > 1:
            words += ["--pp-size", str(pp)]
        words += ["--max-running-requests", str(seqs), *self._common_flags(),
                  "--disaggregation-transfer-backend", "mooncake"]
        return self._sglang_placed(slot, words)

    def _router(self, slots: list[_Slot]) -> list[str]:
        prefill = [s for s in slots if s.role == "prefill"]
        decode = [s for s in slots if s.role == "decode"]
        if self.engine is EmitEngine.vllm:
            return [
                *_comment(f"router: pairs the {len(prefill)} prefill and {len(decode)} decode "
                          "instances (vLLM's NIXL proxy; run it from a vLLM source checkout)"),
                _command(["python", "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py",
                          "--host", "0.0.0.0", "--port", "8000",
                          "--prefiller-hosts", *[s.host for s in prefill],
                          "--prefiller-ports", *[str(self._port("prefill", s)) for s in prefill],
                          "--decoder-hosts", *[s.host for s in decode],
                          "--decoder-ports", *[str(self._port("decode", s)) for s in decode]])]
        words = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
        for s in prefill:
            words += ["--prefill", f"http://{s.host}:{self._port('prefill', s)}",
                      str(8998 + s.local)]
        for s in decode:
            words += ["--decode", f"http://{s.host}:{self._port('decode', s)}"]
        words += ["--host", "0.0.0.0", "--port", "8000"]
        return [f"# router: pairs the {len(prefill)} prefill and {len(decode)} decode instances",
                _command(words)]
