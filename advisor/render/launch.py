"""Launch commands for a launch plan, on vLLM or SGLang: a pure function of the plan.

:func:`launch_commands` spells out a :class:`~advisor.usecases.launch.LaunchPlan` (every
number decided there, from the recommendation) as shell lines — ``#`` comments and one
command per engine process:

* **chunked prefill** (colocated pool): one serve command per instance with its tensor-parallel
  size (and pipeline stages when an instance spans nodes), token budget
  (vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``), running-sequence cap
  (``--max-num-seqs`` / ``--max-running-requests``) and memory fraction
  (``--gpu-memory-utilization`` / ``--mem-fraction-static``); with several instances, the
  endpoints to balance (SGLang: a router command);
* **disaggregation**: one prefill and one decode command per instance with the KV transfer
  settings — vLLM's NixlConnector (``--kv-transfer-config``,
  ``VLLM_NIXL_SIDE_CHANNEL_HOST``/``PORT``, ``UCX_NET_DEVICES``; vLLM docs, "NixlConnector
  usage guide"), SGLang's ``--disaggregation-mode`` with the Mooncake transfer backend and one
  bootstrap port per prefill server (SGLang docs, "PD disaggregation") — and the router that
  pairs them (vLLM's NIXL proxy, ``sglang_router.launch_router --pd-disaggregation``);
* ``--max-model-len`` / ``--context-length`` when the plan bounds the request length; the KV
  cache in FP8 when the workload's precision is fp8.

With more than :data:`MAX_LISTED` instances, only the first node of each role is spelled out
and a comment says how the pattern repeats; router commands always list every endpoint.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

from advisor.render.ep_flags import (
    per_rank,
    sglang_ep_flags,
    vllm_ep_flags,
    vllm_node_flags,
)
from advisor.render.formats import EmitEngine

MAX_LISTED = 64
"""More instances than this: spell out the first node of each role only."""
CONTINUATION = " \\\n    "


@dataclass(frozen=True)
class Slot:
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


@dataclass(frozen=True)
class Pool:
    """Identical instances of one role."""

    role: str
    """``colocated``, ``prefill`` or ``decode``."""
    instances: int
    tensor_parallel: int
    pipeline_stages: int
    token_budget: int | None
    """Tokens per step (colocated: None = chunking off; decode: None, not set)."""
    running_sequences: int | None
    """Running-sequence cap per instance (prefill: None, not set)."""
    expert_parallel: int = 1
    """EP degree with DP attention (1: none); the instance then has this many GPUs."""
    redundant_experts: int = 0
    """Redundant experts for the balancer (EPLB) when ``expert_parallel`` > 1."""

    @property
    def gpus_per_instance(self) -> int:
        """GPUs of one instance."""
        if self.expert_parallel > 1:
            return self.expert_parallel
        return self.tensor_parallel * self.pipeline_stages


@dataclass(frozen=True)
class LaunchPlan:
    """Everything the launch commands of one plan carry (decided by
    ``advisor.usecases.launch.plan_launch``)."""

    engine: EmitEngine
    mode: str
    """``colocated`` or ``disaggregated``."""
    checkpoint: str
    gpu: str
    """GPU profile id (comments only)."""
    gpus_per_node: int
    memory_fraction: float
    max_model_len: int | None
    fp8: bool
    pools: tuple[Pool, ...]
    """One pool (colocated) or prefill then decode."""
    slots: tuple[Slot, ...]
    nodes: int
    """Nodes the slots occupy."""
    kv_link: str | None
    """The interconnect the KV cache crosses (disaggregated)."""
    slo_met: bool



def launch_commands(plan: LaunchPlan) -> list[str]:
    """Shell lines (comments and commands) that launch ``plan``."""
    ctx = _Context(plan)
    lines = ctx.colocated() if plan.mode == "colocated" else ctx.disaggregated()
    if not plan.slo_met:
        lines.insert(1, "# WARNING: the report says this plan misses the SLOs on these GPUs.")
    return lines


def render_launch(plan: LaunchPlan) -> str:
    """:func:`launch_commands` as one text block."""
    return "\n".join(launch_commands(plan)) + "\n"


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

    def __init__(self, plan: LaunchPlan) -> None:
        self.plan = plan
        self.engine = plan.engine
        self.checkpoint = plan.checkpoint
        self.gpu = plan.gpu
        self.gpus_per_node = plan.gpus_per_node
        self.fp8 = plan.fp8
        self.memory_fraction = plan.memory_fraction
        self.max_len = plan.max_model_len
        self.pools = {p.role: p for p in plan.pools}

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
        if self.engine is EmitEngine.sglang and any(p.expert_parallel > 1
                                                   for p in self.plan.pools):
            text.append("Expert parallel with DP attention: SGLang <= 0.5.18 spells "
                        "--attn-dp-size N as --dp-size N --enable-dp-attention.")
        lines = [f"# pd-advisor launch plan ({self.engine.value}): {title}"]
        for paragraph in text:
            lines += _comment(paragraph)
        return lines

    def _listed(self, slots: list[Slot]) -> tuple[list[Slot], list[str]]:
        """The slots to spell out, and comments for the ones left out."""
        if len(slots) <= MAX_LISTED:
            return slots, []
        shown: list[Slot] = []
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
        [pool] = self.plan.pools
        tp, pp, n = pool.tensor_parallel, pool.pipeline_stages, pool.instances
        budget = pool.token_budget
        seqs = pool.running_sequences or 1
        slots = list(self.plan.slots)
        nodes = self.plan.nodes
        chunking = (f"token budget {budget} per step" if budget else
                    "chunking off (whole prompts per step)")
        lines = self._header(
            "chunked prefill on a colocated pool" if budget else "colocated pool, unchunked",
            [(f"{n} instance{'s' * (n != 1)} x {_shape(pool)} = "
             f"{n * pool.gpus_per_instance} x {self.gpu} on {nodes} node{'s' * (nodes != 1)}; "
             f"{chunking}, up to "
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

    def _port(self, role: str, slot: Slot) -> int:
        if self.engine is EmitEngine.vllm:
            base = {"colocated": 8000, "prefill": 8100, "decode": 8200}[role]
        else:
            base = {"colocated": 30000, "prefill": 30000, "decode": 31000}[role]
        return base + slot.local

    def _colocated_command(self, slot: Slot, tp: int, pp: int, budget: int | None,
                           seqs: int) -> list[str]:
        port = str(self._port("colocated", slot))
        if self.pools["colocated"].expert_parallel > 1:
            return self._ep_command(slot, self.pools["colocated"], port, budget, seqs)
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

    def _vllm_placed(self, slot: Slot, words: list[str], env: list[str]) -> list[str]:
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

    def _sglang_placed(self, slot: Slot, words: list[str]) -> list[str]:
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
        prefill, decode = self.plan.pools
        p_tp, d_tp = prefill.tensor_parallel, decode.tensor_parallel
        p_pp, d_pp = prefill.pipeline_stages, decode.pipeline_stages
        p_n, d_n = prefill.instances, decode.instances
        d_seqs = decode.running_sequences or 1
        p_budget = _budget(prefill)
        slots = list(self.plan.slots)
        nodes = self.plan.nodes
        transfer = ("NixlConnector" if self.engine is EmitEngine.vllm
                    else "Mooncake transfer engine")
        link = f" over {self.plan.kv_link}" if self.plan.kv_link else ""
        lines = self._header("prefill/decode disaggregation", [
            (f"prefill: {p_n} x {_shape(prefill)} ({p_n * prefill.gpus_per_instance} GPUs), "
             f"token budget {p_budget}; decode: {d_n} x {_shape(decode)} "
             f"({d_n * decode.gpus_per_instance} GPUs), up to {d_seqs} running sequences each;"),
            (f"{nodes} node{'s' * (nodes != 1)} of {self.gpus_per_node} x {self.gpu}; KV cache "
            f"moved by {transfer}{link}; memory fraction {self.memory_fraction:g}.")])
        if self.engine is EmitEngine.sglang and p_tp != d_tp and max(
                prefill.expert_parallel, decode.expert_parallel) == 1:
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

    def _nixl_env(self, slot: Slot) -> list[str]:
        return [f"VLLM_NIXL_SIDE_CHANNEL_HOST={slot.host}",
                f"VLLM_NIXL_SIDE_CHANNEL_PORT={5600 + slot.gpus[0]}", "UCX_NET_DEVICES=all"]

    def _kv_config(self, role: str) -> str:
        config = {"kv_connector": "NixlConnector", "kv_role": role}
        return "'" + json.dumps(config, separators=(",", ":")) + "'"

    def _prefill_command(self, slot: Slot, tp: int, pp: int, budget: int) -> list[str]:
        port = str(self._port("prefill", slot))
        if self.pools["prefill"].expert_parallel > 1:
            return self._ep_command(slot, self.pools["prefill"], port, budget, None)
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

    def _decode_command(self, slot: Slot, tp: int, pp: int, seqs: int) -> list[str]:
        port = str(self._port("decode", slot))
        if self.pools["decode"].expert_parallel > 1:
            return self._ep_command(slot, self.pools["decode"], port, None, seqs)
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

    def _ep_command(self, slot: Slot, pool: Pool, port: str, budget: int | None,
                    seqs: int | None) -> list[str]:
        """An expert-parallel instance (DP attention) with the flags of
        :mod:`advisor.render.ep_flags`; one process per node."""
        role, ep = pool.role, pool.expert_parallel
        if self.engine is EmitEngine.sglang:
            words = ["python", "-m", "sglang.launch_server", "--model-path", self.checkpoint]
            if role != "colocated":
                words += ["--disaggregation-mode", role]
            words += ["--host", "0.0.0.0", "--port", port,
                      *sglang_ep_flags(ep, role, pool.redundant_experts)]
            if role != "decode":
                words += ["--chunked-prefill-size", str(budget) if budget else "-1"]
            if seqs is not None:
                words += ["--max-running-requests", str(seqs)]
            words += self._common_flags()
            if role != "colocated":
                words += ["--disaggregation-transfer-backend", "mooncake"]
            if role == "prefill":
                words += ["--disaggregation-bootstrap-port", str(8998 + slot.local)]
            return self._sglang_placed(slot, words)
        words = ["vllm", "serve", self.checkpoint, "--port", port,
                 *vllm_ep_flags(ep, self.gpus_per_node, role, pool.redundant_experts)]
        rank_budget = per_rank(budget or 0, ep) if budget else None
        rank_seqs = per_rank(seqs, ep) if seqs is not None else None
        if rank_budget is not None:
            words += ["--max-num-batched-tokens", str(rank_budget)]
        if rank_seqs is not None:
            words += ["--max-num-seqs", str(rank_seqs)]
            if rank_budget is None:  # batched-DP MoE defaults both to 256 per rank
                words += ["--max-num-batched-tokens", str(max(rank_seqs, 256))]
        words += self._common_flags()
        if role != "colocated":
            words += ["--kv-transfer-config", self._kv_config("kv_both")]
        lines = _comment(f"{role} instance {slot.index}: EP{ep} with DP attention over "
                         f"node{slot.nodes[0]}..node{slot.nodes[-1]}; one command per node "
                         f"(only node{slot.nodes[0]} serves HTTP)")
        for rank, node in enumerate(slot.nodes):
            env = self._nixl_env(Slot(role, slot.index, (node,), slot.gpus, slot.local)) \
                if role != "colocated" else []
            lines.append(f"# on node{node}:")
            lines.append(_command([*words, *vllm_node_flags(rank, self.gpus_per_node,
                                                            slot.host, ep)], env))
        return lines

    def _router(self, slots: list[Slot]) -> list[str]:
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


def _shape(pool: Pool) -> str:
    """``TP8``, ``TP8 x PP2`` or ``EP32 (DP attention)``."""
    if pool.expert_parallel > 1:
        return f"EP{pool.expert_parallel} (DP attention)"
    pp = pool.pipeline_stages
    return f"TP{pool.tensor_parallel}" + (f" x PP{pp}" if pp > 1 else "")


def _budget(pool: Pool) -> int:
    assert pool.token_budget is not None  # the plan sets the prefill budget
    return pool.token_budget
