"""Router policies as the routers name them, and the dispatch model each is evaluated as.

The model has four dispatch policies (``advisor.core.scenario.RouterPolicy``; docs/model.md
§7): ``least-loaded`` (join the shortest queue), ``round-robin``, ``random`` and
``power-of-two``. The routers in front of real pools name theirs differently and have some the
model does not:

* the vLLM Router (vllm-project/router ``docs/cli_reference.md``): ``--policy`` /
  ``--prefill-policy`` / ``--decode-policy`` one of ``round_robin``, ``random``,
  ``consistent_hash``, ``sticky_least_loaded``, ``power_of_two``, ``cache_aware`` (default);
* the SGLang Model Gateway (``sglang-router`` 0.3.2 ``router_args.py``): ``random``,
  ``round_robin``, ``power_of_two``, ``cache_aware`` (default), ``manual`` (prefill also
  ``bucket``);
* the Dynamo frontend (ai-dynamo/dynamo ``components/src/dynamo/frontend/frontend_args.py``):
  ``--router-mode`` ``round-robin`` (default), ``random``, ``kv``, ``direct``.

Reading a manifest (:func:`model_policy`) maps each to the policy it is evaluated as and says
when that is an approximation; writing one (:func:`router_policy`) picks the router's policy
closest to the one the model assumed and says when it is not the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.core.scenario import RouterPolicy

RouterKind = Literal["vllm-router", "sglang-router", "dynamo"]


@dataclass(frozen=True)
class PolicyReading:
    """What a router's policy is evaluated as."""

    policy: RouterPolicy | None
    """None: the model has nothing close (the workload's ``operations.router`` stays)."""
    note: str | None
    """Why the mapping is an approximation (None when it is the same policy)."""


_LOAD_AWARE = ("the model has no prefix-affinity term, so it is evaluated as least-loaded "
               "(join the shortest queue), which it does when the load is imbalanced")

_READ: dict[str, PolicyReading] = {
    "round_robin": PolicyReading("round-robin", None),
    "round-robin": PolicyReading("round-robin", None),
    "random": PolicyReading("random", None),
    "power_of_two": PolicyReading("power-of-two", None),
    "cache_aware": PolicyReading("least-loaded", (
        "cache_aware sends a request to the worker holding its longest cached prefix unless "
        "the workers' loads are imbalanced, then to the least-loaded one; " + _LOAD_AWARE)),
    "kv": PolicyReading("least-loaded", (
        "Dynamo's kv mode weighs each worker's cached-prefix overlap against its load; "
        + _LOAD_AWARE)),
    "sticky_least_loaded": PolicyReading("least-loaded", (
        "sticky_least_loaded keeps a session on its worker and sends new sessions to the "
        "least-loaded one; the model has no sessions, so it is evaluated as least-loaded")),
    "consistent_hash": PolicyReading(None, (
        "consistent_hash routes by a hash of the request key, which the model cannot "
        "represent; the workload's operations.router is evaluated instead")),
    "direct": PolicyReading(None, (
        "direct lets the client pick the worker; the workload's operations.router is "
        "evaluated instead")),
    "manual": PolicyReading(None, (
        "manual lets the client pick the worker; the workload's operations.router is "
        "evaluated instead")),
}


def model_policy(name: str) -> PolicyReading:
    """The dispatch policy a router's ``name`` is evaluated as."""
    return _READ.get(name, PolicyReading(None, (
        f"{name} is not a router policy pd-advisor knows; the workload's operations.router "
        "is evaluated instead")))


Stage = Literal["colocated", "prefill", "decode"]

_LEAST_LOADED: dict[RouterKind, dict[Stage, str]] = {
    "vllm-router": {"colocated": "power_of_two", "prefill": "cache_aware",
                    "decode": "power_of_two"},
    "sglang-router": {"colocated": "cache_aware", "prefill": "cache_aware",
                      "decode": "cache_aware"},
    "dynamo": {"colocated": "kv", "prefill": "kv", "decode": "kv"},
}
"""No router joins the shortest queue; for ``least-loaded`` each stage runs the router's
load-aware policy its documentation recommends: the vLLM Router ``--prefill-policy
cache_aware --decode-policy power_of_two`` (its PD example), the SGLang Model Gateway its
default ``cache_aware``, Dynamo ``kv``."""

_SAME: dict[RouterKind, dict[RouterPolicy, str]] = {
    "vllm-router": {"round-robin": "round_robin", "random": "random",
                    "power-of-two": "power_of_two"},
    "sglang-router": {"round-robin": "round_robin", "random": "random",
                      "power-of-two": "power_of_two"},
    "dynamo": {"round-robin": "round-robin", "random": "random", "power-of-two": "kv"},
}


def router_policy(kind: RouterKind, policy: RouterPolicy, stage: Stage, workers: int) -> str:
    """The router's policy for the model's ``policy`` on a stage of ``workers`` workers.

    With one worker every policy picks it; the vLLM Router refuses power_of_two on a stage of
    fewer than two workers ("A PD stage using an explicit power-of-two policy needs two
    workers for that stage", vllm-project/router ``docs/cli_reference.md``), and Dynamo's kv
    mode needs workers to weigh, so round-robin stands in.
    """
    name = (_LEAST_LOADED[kind][stage] if policy == "least-loaded" else _SAME[kind][policy])
    if workers < 2 and name in ("power_of_two", "kv"):
        return "round-robin" if kind == "dynamo" else "round_robin"
    return name


def router_note(kind: RouterKind, policy: RouterPolicy, chosen: dict[str, str]) -> str | None:
    """A note when the router's policies (``chosen``: stage -> name) are not the one the
    model evaluated; None when they are."""
    differ = {stage: name for stage, name in chosen.items()
              if _READ[name].policy != policy and not name.startswith("round")}
    if not differ and policy != "least-loaded":
        return None
    if policy == "least-loaded":
        runs = ", ".join(f"{name} on {stage}" for stage, name in chosen.items())
        single = [stage for stage, name in chosen.items() if name.startswith("round")]
        why = (f" ({' and '.join(single)}: one worker, so no load to weigh)" if single else "")
        return (f"Router: the model evaluated least-loaded dispatch (join the shortest queue); "
                f"{kind} has no such policy and runs {runs}: its load-aware policies"
                f"{why} (operations.router picks another: round-robin, random, "
                "power-of-two)")
    runs = ", ".join(f"{name} on {stage}" for stage, name in differ.items())
    return (f"Router: the model evaluated {policy} dispatch; {kind} has no such policy and "
            f"runs {runs}")
