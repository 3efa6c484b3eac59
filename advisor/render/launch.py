"""Launch script for a launch plan, on vLLM or SGLang: a pure function of the plan.

:func:`launch_commands` spells out a :class:`~advisor.usecases.launch.LaunchPlan` (every
number decided there, from the recommendation) as the lines of one bash script:

* ``bash launch.sh`` (``NODE_RANK=k`` on machine ``k`` of a multi-node plan) starts that node's
  engine processes; ``bash launch.sh router`` starts the router. The machines are listed in a
  hosts file (``$HOSTS_FILE``, default ``hosts.txt``: one host per line, line ``k`` = node rank
  ``k``); each distinct node layout is written once, with the node's rank and host as shell
  variables, so a 128-node plan is as long as a 2-node one.
* **chunked prefill** (colocated pool): one server per instance with its tensor-parallel size
  (pipeline stages and ``--nnodes``/``--node-rank`` when an instance spans nodes), token budget
  (vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``), running-sequence cap
  (``--max-num-seqs`` / ``--max-running-requests``), memory fraction
  (``--gpu-memory-utilization`` / ``--mem-fraction-static``), maximum length
  (``--max-model-len`` / ``--context-length``) and KV dtype (``--kv-cache-dtype``); with several
  instances, a router over them.
* **disaggregation**: prefill and decode servers with the KV transfer settings — vLLM's
  NixlConnector (``--kv-transfer-config``, ``VLLM_NIXL_SIDE_CHANNEL_HOST``/``PORT``,
  ``UCX_NET_DEVICES``; vLLM docs, "NixlConnector usage guide"), SGLang's
  ``--disaggregation-mode`` with the Mooncake transfer backend and one bootstrap port per
  prefill server, prefill and decode TP chosen independently (SGLang docs, "PD
  disaggregation") — and the engine's PD router: the vLLM Router (``vllm-router
  --vllm-pd-disaggregation``, vllm-project/router) or the SGLang Model Gateway
  (``python -m sglang_router.launch_router --pd-disaggregation``), its worker URLs built from
  the hosts file.

Everything interpolated is quoted with :func:`advisor.escaping.shell_word` (``shlex.quote``, or
``$'...'`` with escapes for a value holding a control or bidirectional character); comment
text goes through :func:`advisor.escaping.visible`, so no value can end a comment or a
command or reach the terminal raw; the checkpoint path goes through
:func:`advisor.escaping.path_argument` (``./--x``), so it is never read as an option.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from advisor.escaping import shell_word, visible
from advisor.render.engine_flags import router_notes, router_policy_flags, server_flags
from advisor.render.ep_flags import DP_RPC_PORT
from advisor.render.formats import EmitEngine
from advisor.render.launch_plan import LaunchPlan, Pool, Slot

__all__ = ["LaunchPlan", "Pool", "Raw", "Slot", "launch_commands", "render_launch"]

CONTINUATION = " \\\n    "
ROUTER_PORT = 8000
ENGINE_INFO_PORT = 6789
"""SGLang's default ``--engine-info-bootstrap-port``; the k-th instance on a node gets
6789 + k."""
MASTER_PORT = 29501
"""vLLM multi-node (``--master-port``) and SGLang ``--dist-init-addr`` port of a spanning
instance's head node."""


class Raw(str):
    """Shell text written as it is (built here from quoted parts and shell variables)."""


def launch_commands(plan: LaunchPlan) -> list[str]:
    """The lines of the launch script of ``plan``."""
    return _Script(plan).lines()


def render_launch(plan: LaunchPlan) -> str:
    """:func:`launch_commands` as one text block."""
    return "\n".join(launch_commands(plan)) + "\n"


# --------------------------------------------------------------------------- shell text
def _word(word: str) -> str:
    return str(word) if isinstance(word, Raw) else shell_word(word)


def _command(words: list[str], env: list[str] | None = None, width: int = 88,
             indent: str = "", background: bool = False) -> list[str]:
    """One command: quoted words, one backslash-continued line per option group (an option
    travels with its values; a long value list wraps too)."""
    groups: list[list[str]] = []
    for word in words:
        option = not isinstance(word, Raw) and word.startswith("--")
        if not groups or option:
            groups.append([_word(word)])
        else:
            groups[-1].append(_word(word))
    head_end = next((i for i, g in enumerate(groups) if g[0].startswith("--")), len(groups))
    lines = [" ".join(env)] if env else []
    current = " ".join(w for g in groups[:head_end] for w in g)
    for group in groups[head_end:]:
        text = " ".join(group)
        if len(current) + 1 + len(text) <= width:
            current += " " + text
            continue
        lines.append(current)
        current = ""
        for token in group:
            if current and len(current) + 1 + len(token) > width:
                lines.append(current)
                current = token
            else:
                current = f"{current} {token}" if current else token
    if background:
        current += " &"
    lines.append(current)
    # a quoted value may hold a newline: indent the continuation lines only, never split
    return [indent + CONTINUATION.replace("\n", "\n" + indent).join(lines)]


def _comment(text: str, indent: str = "") -> list[str]:
    """A ``#`` comment wrapped at 98 columns; control characters (a newline in a model path)
    are escaped so that the text cannot leave the comment."""
    return textwrap.wrap(visible(text), width=98, initial_indent=f"{indent}# ",
                         subsequent_indent=f"{indent}#   ", break_on_hyphens=False,
                         break_long_words=False)


@dataclass(frozen=True)
class _Entry:
    """One instance's share of a node."""

    role: str
    gpus: tuple[int, ...]
    local: int
    span: int
    """Nodes the instance spans (1: inside the node)."""


@dataclass(frozen=True)
class _Layout:
    """Consecutive nodes running the same processes."""

    first: int
    last: int
    entries: tuple[_Entry, ...]


def _layouts(slots: tuple[Slot, ...]) -> list[_Layout]:
    per_node: dict[int, list[_Entry]] = {}
    for slot in slots:
        for node in slot.nodes:
            per_node.setdefault(node, []).append(
                _Entry(slot.role, slot.gpus, slot.local, len(slot.nodes)))
    layouts: list[_Layout] = []
    for node in sorted(per_node):
        entries = tuple(per_node[node])
        if layouts and layouts[-1].entries == entries and layouts[-1].last == node - 1:
            layouts[-1] = _Layout(layouts[-1].first, node, entries)
        else:
            layouts.append(_Layout(node, node, entries))
    return layouts


def _pool_text(pool: Pool) -> str:
    return f"{pool.instances} x {pool.shape} ({pool.instances * pool.gpus_per_instance} GPUs)"


class _Script:
    """The launch script of one plan."""

    def __init__(self, plan: LaunchPlan) -> None:
        self.plan = plan
        self.vllm = plan.engine is EmitEngine.vllm
        self.pools = {p.role: p for p in plan.pools}
        self.layouts = _layouts(plan.slots)

    # ---- the whole script ------------------------------------------------------------------
    def lines(self) -> list[str]:
        plan = self.plan
        lines = self._header()
        lines += ["", "set -euo pipefail"]
        if plan.nodes > 1:
            lines += [
                'HOSTS_FILE=${HOSTS_FILE:-hosts.txt}',
                'mapfile -t HOSTS < "$HOSTS_FILE"',
                f'if (( ${{#HOSTS[@]}} < {plan.nodes} )); then',
                f'    echo "$HOSTS_FILE: {plan.nodes} hosts needed, one per line" >&2; exit 2',
                "fi"]
        else:
            lines.append('HOSTS=("${HOST:-localhost}")')
        lines += ["", "start_node() {", "    local rank=$1", '    local host=${HOSTS[rank]}']
        for number, layout in enumerate(self.layouts):
            keyword = "if" if number == 0 else "elif"
            lines.append(f"    {keyword} (( rank >= {layout.first} && rank <= {layout.last} ));"
                         " then")
            lines += self._layout_commands(layout)
        lines += ["    else",
                  f'        echo "node rank $rank: the plan has nodes 0..{plan.nodes - 1}" >&2',
                  "        exit 2", "    fi", "    wait", "}", ""]
        router = self._router()
        if router:
            lines += ["start_router() {", *router, "}", ""]
        rank = ('"${NODE_RANK:?set NODE_RANK to the line of this machine in $HOSTS_FILE, from 0}"'
                if plan.nodes > 1 else '"${NODE_RANK:-0}"')
        lines += ['case "${1:-node}" in', f"    node) start_node {rank} ;;"]
        if router:
            lines.append("    router) start_router ;;")
        lines += ['    *) echo "usage: bash launch.sh [node' + ("|router" if router else "")
                  + ']" >&2; exit 2 ;;', "esac"]
        return lines

    def _header(self) -> list[str]:
        plan = self.plan
        if plan.mode == "colocated":
            [pool] = plan.pools
            budget = pool.token_budget
            title = ("chunked prefill on a colocated pool" if budget
                     else "colocated pool, unchunked")
            chunking = (f"token budget {budget} per step" if budget
                        else "chunking off (whole prompts per step)")
            summary = [f"{_pool_text(pool)} x {plan.gpu}; {chunking}, up to "
                       f"{pool.running_sequences} running sequences per instance."]
        else:
            prefill, decode = self.pools["prefill"], self.pools["decode"]
            transfer = "NixlConnector" if self.vllm else "the Mooncake transfer engine"
            link = f" over {plan.kv_link}" if plan.kv_link else ""
            title = "prefill/decode disaggregation"
            summary = [f"prefill: {_pool_text(prefill)}, token budget {prefill.token_budget}, "
                       f"up to {prefill.running_sequences} running sequences each; decode: "
                       f"{_pool_text(decode)}, up to {decode.running_sequences} running "
                       f"sequences each; {plan.gpu}; KV cache moved by {transfer}{link}."]
            if (not self.vllm and prefill.tensor_parallel != decode.tensor_parallel
                    and prefill.expert_parallel == decode.expert_parallel == 1):
                summary.append(f"Prefill TP{prefill.tensor_parallel} and decode "
                               f"TP{decode.tensor_parallel} differ: SGLang >= 0.5.18 maps "
                               "the KV between attention-TP layouts itself (no extra flag).")
        summary += [
            f"Model: {plan.checkpoint}. Memory fraction {plan.memory_fraction:g}; KV cache "
            f"{'fp8' if plan.fp8 else 'in the model dtype (auto)'}.",
            f"Maximum request length {plan.max_model_len} tokens: {plan.max_model_len_note}.",
        ]
        if any(p.expert_parallel > 1 for p in plan.pools):
            summary.append(
                "Expert parallel (DeepEP all-to-all, EPLB, two-batch overlap): running "
                "sequences and token budgets above are per instance; "
                + ("vLLM applies --max-num-seqs and --max-num-batched-tokens per DP rank, so "
                   "they are written divided by the ranks; one `vllm serve` per node, node 0 "
                   "of an instance serves HTTP." if self.vllm else
                   "SGLang divides --max-running-requests and --chunked-prefill-size by the "
                   "attention-DP size itself; SGLang <= 0.5.18 spells --attn-dp-size N as "
                   "--dp-size N --enable-dp-attention."))
        if plan.fp8:
            summary.append("Precision fp8: serve an FP8 checkpoint, or add --quantization fp8 "
                           "for online FP8 weight quantization.")
        if plan.nodes > 1:
            summary.append(
                f"{plan.nodes} nodes of {plan.gpus_per_node} GPUs: list them in $HOSTS_FILE "
                "(default hosts.txt; one host per line, line k = node rank k, from 0); run "
                "`NODE_RANK=k bash launch.sh` on node k and `bash launch.sh router` on the "
                "router's machine.")
        else:
            summary.append("One node: `bash launch.sh` starts the servers ($HOST, default "
                           "localhost, is the name clients use); `bash launch.sh router` "
                           "starts the router, if any.")
        lines = ["#!/usr/bin/env bash",
                 f"# pd-advisor launch plan ({plan.engine.value}): {title}"]
        for paragraph in summary:
            lines += _comment(paragraph)
        if not plan.slo_met:
            lines += _comment("WARNING: the report says this plan misses the SLOs on these "
                              "GPUs.")
        for warning in plan.warnings:
            lines += _comment(f"WARNING: {warning}")
        routed = plan.mode == "disaggregated" or plan.pools[0].instances > 1
        for note in (*plan.notes, *(router_notes(plan) if routed else ())):
            lines += _comment(f"NOTE: {note}")
        return lines

    # ---- one node layout --------------------------------------------------------------------
    def _layout_commands(self, layout: _Layout) -> list[str]:
        indent = " " * 8
        lines: list[str] = []
        nodes = layout.last - layout.first + 1
        roles = ", ".join(dict.fromkeys(e.role for e in layout.entries))
        lines += _comment(f"node{layout.first}"
                          + (f"..node{layout.last} ({nodes} nodes)" if nodes > 1 else "")
                          + f": {roles}", indent)
        for entry in layout.entries:
            pool = self.pools[entry.role]
            if entry.span > 1:
                lines += _comment(f"one {entry.role} instance spans {entry.span} nodes; this "
                                  "node's rank inside it:", indent)
                lines.append(f"{indent}local span_rank=$(( (rank - {layout.first}) % "
                             f"{entry.span} ))")
                lines.append(f"{indent}local head=${{HOSTS[rank - span_rank]}} headless=()")
                if self.vllm and pool.expert_parallel > 1:  # one DP-rank group per node
                    local = pool.attention_ranks * self.plan.gpus_per_node // pool.gpus_per_instance
                    lines += [f"{indent}if (( span_rank > 0 )); then",
                              f'{indent}    headless=(--data-parallel-start-rank '
                              f'"$(( span_rank * {local} ))" --headless)',
                              f"{indent}else",
                              f"{indent}    headless=(--api-server-count {local})",
                              f"{indent}fi"]
                elif self.vllm:  # only the head node serves HTTP
                    lines.append(f"{indent}if (( span_rank > 0 )); then headless=(--headless); "
                                 "fi")
            words, env = self._server(pool, entry)
            lines += _command(words, env, indent=indent, background=True)
        return lines

    def _port(self, role: str, local: int) -> int:
        if self.vllm:
            base = {"colocated": 8100, "prefill": 8100, "decode": 8200}[role]
        else:
            base = {"colocated": 30000, "prefill": 30000, "decode": 31000}[role]
        return base + local

    def _bootstrap_port(self, local: int) -> int:
        return 8998 + local

    def _server(self, pool: Pool, entry: _Entry) -> tuple[list[str], list[str]]:
        """The argument vector and environment of one server process: the engine flags of
        the pool (:func:`advisor.render.engine_flags.server_flags`, the table the manifests
        use too) and where this server runs."""
        plan = self.plan
        port = str(self._port(pool.role, entry.local))
        flags = server_flags(plan, pool)
        env: list[str] = []
        if self.vllm:
            words = ["vllm", "serve", plan.checkpoint, "--port", port, *flags]
            if pool.role != "colocated":
                env += [Raw('VLLM_NIXL_SIDE_CHANNEL_HOST="$host"'),
                        f"VLLM_NIXL_SIDE_CHANNEL_PORT={5600 + entry.gpus[0]}",
                        "UCX_NET_DEVICES=all"]
            if pool.expert_parallel > 1 and entry.span > 1:
                words += ["--data-parallel-address", Raw('"$head"'),
                          "--data-parallel-rpc-port", str(DP_RPC_PORT), Raw('"${headless[@]}"')]
            elif pool.expert_parallel > 1:
                words += ["--api-server-count",
                          str(max(1, len(entry.gpus) // pool.tensor_parallel))]
            elif entry.span > 1:
                words += ["--nnodes", str(entry.span), "--node-rank", Raw('"$span_rank"'),
                          "--master-addr", Raw('"$head"'), "--master-port", str(MASTER_PORT),
                          Raw('"${headless[@]}"')]
            if entry.span == 1:
                env.insert(0, f"CUDA_VISIBLE_DEVICES={','.join(str(g) for g in entry.gpus)}")
            return words, [_word(e) for e in env]
        words = ["python", "-m", "sglang.launch_server", "--model-path", plan.checkpoint,
                 "--host", "0.0.0.0", "--port", port, *flags]
        if pool.role == "prefill":
            words += ["--disaggregation-bootstrap-port", str(self._bootstrap_port(entry.local))]
        # one engine-info bootstrap server per SGLang instance; several on a node need their
        # own port (sglang==0.5.23 srt/arg_groups/fields/model.py: "Must be set explicitly when
        # running multiple instances on the same node")
        words += ["--engine-info-bootstrap-port",
                  str(ENGINE_INFO_PORT + self._node_index(entry))]
        if entry.span > 1:
            words += ["--nnodes", str(entry.span), "--node-rank", Raw('"$span_rank"'),
                      "--dist-init-addr", Raw(f'"$head":{MASTER_PORT}')]
        else:
            words += ["--base-gpu-id", str(entry.gpus[0])]
        return words, env

    def _node_index(self, entry: _Entry) -> int:
        """The index of ``entry`` among every instance on its node (any role)."""
        for layout in self.layouts:
            if entry in layout.entries:
                return layout.entries.index(entry)
        return 0

    # ---- router -----------------------------------------------------------------------------
    def _router(self) -> list[str]:
        """The body of ``start_router`` (empty: one instance, no router)."""
        plan = self.plan
        if plan.mode == "colocated" and len(plan.slots) < 2:
            return []
        indent = " " * 4
        lines = [f"{indent}local args=() rank"]
        for layout in self.layouts:
            span = max(e.span for e in layout.entries)
            step = f"rank += {span}" if span > 1 else "rank++"
            lines.append(f"{indent}for (( rank = {layout.first}; rank <= {layout.last}; "
                         f"{step} )); do")
            items: list[str] = []
            for entry in layout.entries:
                url = f'"http://${{HOSTS[rank]}}:{self._port(entry.role, entry.local)}"'
                if entry.role == "colocated":
                    items.append(url)
                elif entry.role == "prefill":
                    items.append(f"--prefill {url}"
                                 + ("" if self.vllm else f" {self._bootstrap_port(entry.local)}"))
                else:
                    items.append(f"--decode {url}")
            lines.append(f"{indent}    args+=(")
            lines += [f"{indent}        {item}" for item in items]
            lines.append(f"{indent}    )")
            lines.append(f"{indent}done")
        if plan.mode == "colocated":
            if self.vllm:
                lines += _comment("vLLM Router (pip install vllm-router; vllm-project/router): "
                                  "one OpenAI-compatible endpoint over every instance", indent)
                words = ["vllm-router", "--worker-urls", Raw('"${args[@]}"'),
                         *router_policy_flags(plan)]
            else:
                lines += _comment("SGLang Model Gateway (pip install sglang-router): one "
                                  "OpenAI-compatible endpoint over every instance", indent)
                words = ["python", "-m", "sglang_router.launch_router", "--worker-urls",
                         Raw('"${args[@]}"'), *router_policy_flags(plan)]
        elif self.vllm:
            lines += _comment(
                "vLLM Router (pip install vllm-router; vllm-project/router) pairs the prefill "
                "and decode servers; on Kubernetes it can find them itself instead "
                "(--service-discovery --vllm-pd-disaggregation --prefill-selector K=V "
                "--decode-selector K=V)", indent)
            words = ["vllm-router", "--vllm-pd-disaggregation", Raw('"${args[@]}"'),
                     *router_policy_flags(plan)]
        else:
            lines += _comment(
                "SGLang Model Gateway (pip install sglang-router) pairs the prefill servers "
                "(URL and bootstrap port) with the decode servers; on Kubernetes it can find "
                "them itself instead (--service-discovery --prefill-selector K=V "
                "--decode-selector K=V, bootstrap port from the pod annotation "
                "sglang.ai/bootstrap-port)", indent)
            words = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation",
                     Raw('"${args[@]}"')]
        words += ["--host", "0.0.0.0", "--port", str(ROUTER_PORT)]
        lines += _command(words, indent=indent)
        return lines
