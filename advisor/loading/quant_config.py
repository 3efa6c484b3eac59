"""A config.json ``quantization_config`` read as the weight format of each layer group.

The checkpoint decides what each layer group is stored in (docs/model.md §1.1, "Formats
from the checkpoint"): the routed experts, the attention projections, the dense layers
(dense FFNs, shared experts, routers, norms) and the LM head. Four families are read:

* **ModelOpt** (``quant_method: modelopt`` with ``quant_algo``; vLLM reads the same keys,
  ``ignore`` in config.json and ``exclude_modules`` in the older ``hf_quant_config.json``,
  vllm-project/vllm ``vllm/model_executor/layers/quantization/modelopt.py``): ``NVFP4`` →
  fp4, ``FP8`` → fp8, ``FP8_BLOCK_SCALES`` → fp8-block, on every linear layer but those
  ``ignore`` / ``exclude_modules`` names, which stay in the checkpoint's ``torch_dtype``
  (bf16 when absent). Evidence:
  nvidia/DeepSeek-V3-0324-FP4 ``hf_quant_config.json`` (as copied in ai-dynamo/aiconfigurator
  ``src/aiconfigurator/model_configs/nvidia--DeepSeek-V3-0324-NVFP4_hf_quant_config.json``):
  ``quant_algo: NVFP4``, ``group_size: 16``, excluded every layer's ``self_attn*``, every
  ``mlp.gate`` (the router), the norms, ``lm_head``, ``model.embed_tokens`` and the MTP layer
  ``model.layers.61*`` — the dense FFNs of layers 0–2 and the shared experts are *not*
  excluded, so experts and dense are fp4, attention and LM head 16 bit.
* **compressed-tensors** (``quant_method: compressed-tensors``): the first ``config_groups``
  entry that targets ``Linear``; its ``weights`` (``num_bits``, ``type``, ``strategy``,
  ``group_size``): 4-bit float group 16 → fp4 (NVFP4), 4-bit float group 32 → mxfp4, 4-bit int
  → int4, 8-bit float → fp8 (fp8-block with ``strategy: block``); ``ignore`` (``re:`` regular
  expressions or module names) stays 16 bit. Evidence: nvidia/Kimi-K2.5-NVFP4 config.json (as
  copied in ai-dynamo/aiconfigurator ``src/aiconfigurator/model_configs/nvidia--Kimi-K2.5-
  NVFP4_config.json``): 4-bit int weights, group 32, ``ignore: [lm_head, re:.*self_attn.*,
  re:.*shared_experts.*, re:.*mlp\\.(gate|up|gate_up|down)_proj.*]`` — int4 experts, the rest
  16 bit (its 4-bit int group-32 scales are read as int4, whose bytes assume group 128: an
  estimate, 0.7 % low on the experts).
* **fp8** (``quant_method: fp8``, DeepSeek-V3's own checkpoint): fp8-block with
  ``weight_block_size``, else fp8, on every linear layer and the experts but
  ``modules_to_not_convert`` / ``ignored_layers``; the LM head is not quantised (vLLM's
  ``Fp8Config.get_quant_method`` quantises ``LinearBase`` and ``FusedMoE`` layers only,
  vllm-project/vllm ``vllm/model_executor/layers/quantization/fp8.py``; the LM head is a
  vocabulary embedding layer).
* **mxfp4** (``quant_method: mxfp4``, gpt-oss): the routed experts mxfp4, attention, router,
  embeddings and LM head 16 bit — openai/gpt-oss-120b config.json
  ``modules_to_not_convert: [model.layers.*.self_attn, model.layers.*.mlp.router,
  model.embed_tokens, lm_head]``.

A group some of whose modules are excluded and others not takes the format most of its
modules have (module count over every layer; an approximation, docs/model.md §1.1). Other
``quant_method`` values (AWQ, GPTQ, bitsandbytes, …) are not read: the workload's
``precision`` decides every group, as before.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from advisor.core.precision import GROUPS

_UNQUANTISED = {"bfloat16": "bf16", "float16": "fp16"}
_MODELOPT_ALGOS = {"NVFP4": "fp4", "FP8": "fp8", "FP8_BLOCK_SCALES": "fp8-block"}
_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLA_ATTENTION = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
_FFN = ("gate_proj", "up_proj", "down_proj")


def checkpoint_formats(data: dict[str, Any], arch: dict[str, Any], model_type: str
                       ) -> tuple[dict[str, str] | None, list[tuple[str, str]]]:
    """(group → format, or None where the config says nothing this module reads; problems
    as (key, message)) of a config.json's ``quantization_config`` for the architecture
    ``arch`` the mapper derived."""
    quant = data.get("quantization_config")
    if quant is None:
        return None, []
    if not isinstance(quant, dict):
        return None, [("quantization_config", "expected a JSON object")]
    method = quant.get("quant_method")
    problems: list[tuple[str, str]] = []
    unquantised = _UNQUANTISED.get(str(data.get("torch_dtype", data.get("dtype", ""))), "bf16")
    fmt: str | None
    if method == "modelopt" or (method is None and "quant_algo" in quant):
        algo = quant.get("quant_algo")
        fmt = _MODELOPT_ALGOS.get(algo) if isinstance(algo, str) else None
        if fmt is None:
            problems.append(("quantization_config.quant_algo",
                             f"{algo!r} is not read (supported: "
                             f"{', '.join(_MODELOPT_ALGOS)})"))
            return None, problems
        excluded = _names(quant, ("exclude_modules", "ignore"), problems)
        head_quantised = True
    elif method == "compressed-tensors":
        fmt = _compressed_tensors_format(quant, problems)
        if fmt is None:
            return None, problems
        excluded = _names(quant, ("ignore",), problems)
        head_quantised = True
    elif method == "fp8":
        fmt = "fp8-block" if quant.get("weight_block_size") is not None else "fp8"
        excluded = _names(quant, ("modules_to_not_convert", "ignored_layers"), problems)
        head_quantised = False
    elif method == "mxfp4":
        if arch.get("moe") is None:
            problems.append(("quantization_config.quant_method",
                             "mxfp4 quantises the routed experts of an MoE model; this model "
                             "has none"))
            return None, problems
        return {"experts": "mxfp4", "attention": unquantised, "dense": unquantised,
                "lm_head": unquantised}, problems
    else:
        return None, []
    if problems:
        return None, problems
    formats = {}
    for group, names in _group_modules(arch, model_type).items():
        if not names:
            continue
        if group == "lm_head" and not head_quantised:
            formats[group] = unquantised
            continue
        hits = sum(1 for n in names if any(_matches(n, p) for p in excluded))
        formats[group] = unquantised if hits * 2 > len(names) else fmt
    return formats, problems


def _names(quant: dict[str, Any], keys: tuple[str, ...],
           problems: list[tuple[str, str]]) -> list[str]:
    """The module names or patterns under the first of ``keys`` present."""
    for key in keys:
        value = quant.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append((f"quantization_config.{key}", "expected a list of module names"))
            return []
        return value
    return []


def _compressed_tensors_format(quant: dict[str, Any], problems: list[tuple[str, str]]
                               ) -> str | None:
    """The weight format of the first ``config_groups`` entry that targets ``Linear``."""
    groups = quant.get("config_groups")
    if not isinstance(groups, dict):
        problems.append(("quantization_config.config_groups", "expected an object of "
                                                              "quantisation schemes"))
        return None
    for name, scheme in groups.items():
        if not isinstance(scheme, dict) or "Linear" not in (scheme.get("targets") or []):
            continue
        weights = scheme.get("weights")
        if not isinstance(weights, dict):
            problems.append((f"quantization_config.config_groups.{name}.weights",
                             "expected an object (num_bits, type, …)"))
            return None
        bits, kind = weights.get("num_bits"), weights.get("type")
        if bits == 4 and kind == "float":
            return "fp4" if weights.get("group_size") == 16 else "mxfp4"
        if bits == 4 and kind == "int":
            return "int4"
        if bits == 8 and kind == "float":
            return "fp8-block" if weights.get("strategy") == "block" else "fp8"
        problems.append((f"quantization_config.config_groups.{name}.weights",
                         f"{bits}-bit {kind} weights are not a format pd-advisor models "
                         "(4-bit float or int, 8-bit float)"))
        return None
    problems.append(("quantization_config.config_groups", "no scheme targets Linear"))
    return None


def _group_modules(arch: dict[str, Any], model_type: str) -> dict[str, list[str]]:
    """Every layer group's module names, Hugging Face style
    (``model.layers.3.self_attn.q_proj``)."""
    layers = int(arch["num_layers"])
    moe = arch.get("moe")
    first_dense = int(moe.get("first_dense_layers", 0)) if moe else layers
    attention = _MLA_ATTENTION if arch.get("mla") else _ATTENTION
    expert: tuple[str, ...]
    if model_type == "mixtral":
        expert = ("block_sparse_moe.experts.0.w1", "block_sparse_moe.experts.0.w2",
                  "block_sparse_moe.experts.0.w3")
    else:
        expert = tuple(f"mlp.experts.0.{f}" for f in _FFN)
    shared = "shared_experts" if model_type == "deepseek_v3" else "shared_expert"
    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for i in range(layers):
        base = f"model.layers.{i}."
        groups["attention"] += [f"{base}self_attn.{p}" for p in attention]
        if i < first_dense:
            groups["dense"] += [f"{base}mlp.{f}" for f in _FFN]
        else:
            groups["experts"] += [base + e for e in expert]
            if moe and moe.get("shared_experts"):
                groups["dense"] += [f"{base}mlp.{shared}.{f}" for f in _FFN]
    if not arch.get("tie_word_embeddings"):
        groups["lm_head"] = ["lm_head"]
    return groups


def _matches(name: str, pattern: str) -> bool:
    """Whether an exclusion names the module: ``re:`` a regular expression (compressed-
    tensors), a wildcard pattern matching it or a module above it (ModelOpt, transformers),
    else the module's name or a name part of it."""
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], name) is not None
        except re.error:
            return False
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
    return name == pattern or name.startswith(pattern + ".") or f".{pattern}." in f".{name}."
