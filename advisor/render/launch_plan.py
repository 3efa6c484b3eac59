"""What a launch plan holds: pools of identical instances, where each runs, and the limits
every one of them starts with (decided by ``advisor.usecases.launch.plan_launch``; spelled out
by the launch script, ``advisor.render.launch``, and the Kubernetes manifests,
``advisor.render.k8s_*``)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.scenario import DEFAULT_ROUTER, RouterPolicy
from advisor.render.formats import EmitEngine


@dataclass(frozen=True, kw_only=True)
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
        """Name of its (first) node in comments: ``node<N>``."""
        return f"node{self.nodes[0]}"


@dataclass(frozen=True, kw_only=True)
class Pool:
    """Identical instances of one role."""

    role: str
    """``colocated``, ``prefill`` or ``decode``."""
    instances: int
    tensor_parallel: int
    pipeline_stages: int
    token_budget: int | None
    """Tokens per step (colocated: None = chunking off; decode: None, not set)."""
    running_sequences: int
    """Running-sequence cap per instance (an EP instance: over all its attention ranks)."""
    expert_parallel: int = 1
    """EP degree (1: none). An EP instance has this many GPUs; ``tensor_parallel`` is then the
    attention TP inside each of its :attr:`attention_ranks` DP-attention ranks."""
    redundant_experts: int = 0
    """Redundant experts for the balancer (EPLB) of an EP instance."""

    @property
    def gpus_per_instance(self) -> int:
        """GPUs of one instance."""
        if self.expert_parallel > 1:
            return self.expert_parallel
        return self.tensor_parallel * self.pipeline_stages

    @property
    def attention_ranks(self) -> int:
        """DP-attention ranks of one instance (1 without expert parallelism)."""
        if self.expert_parallel > 1:
            return max(1, self.expert_parallel // self.tensor_parallel)
        return 1

    @property
    def shape(self) -> str:
        """``TP8``, ``TP8 x PP2``, ``EP32 (DP attention)`` or ``EP8 (TP8 attention)``."""
        if self.expert_parallel > 1:
            ep, tp = self.expert_parallel, self.tensor_parallel
            if self.attention_ranks == 1:
                return f"EP{ep} (TP{tp} attention)"
            return f"EP{ep} (DP attention{f' x TP{tp}' if tp > 1 else ''})"
        pp = self.pipeline_stages
        return f"TP{self.tensor_parallel}" + (f" x PP{pp}" if pp > 1 else "")


@dataclass(frozen=True, kw_only=True)
class SpeculativeLaunch:
    """The speculative decoding every decoding server starts with
    (``inputs.deployment.speculative``; docs/model.md §3.6)."""

    method: str
    """``eagle3``, ``mtp``, ``ngram`` or ``draft-model``."""
    draft_tokens: int
    draft_checkpoint: str | None
    """The draft's checkpoint (eagle3, draft-model); None: not named."""


@dataclass(frozen=True, kw_only=True)
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
    max_model_len: int
    max_model_len_note: str
    """Where ``max_model_len`` comes from (a comment)."""
    fp8: bool
    pools: tuple[Pool, ...]
    """One pool (colocated) or prefill then decode."""
    slots: tuple[Slot, ...]
    nodes: int
    """Nodes the slots occupy."""
    kv_link: str | None
    """The interconnect the KV cache crosses (disaggregated)."""
    slo_met: bool
    warnings: tuple[str, ...] = ()
    """Pools that fail the start-up memory check with the emitted flags."""
    notes: tuple[str, ...] = ()
    """Caveats the commands carry (another engine's plan, ...)."""
    gpu_name: str = ""
    """The GPU's board name (the profile's ``name``)."""
    router: RouterPolicy = DEFAULT_ROUTER
    """The dispatch policy the model evaluated (``operations.router`` /
    ``deployment.router``); the emitted routers run the closest they have
    (:mod:`advisor.core.router_names`)."""
    speculative: SpeculativeLaunch | None = None
    """Speculative decoding of the colocated and decode servers (None: off)."""
