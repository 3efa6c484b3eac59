"""A Hugging Face ``config.json`` turned into a model profile.

A workload's ``model:`` (and ``pd-advisor profiles show``) may name a checkpoint's
``config.json``, or a folder holding one, instead of a profile YAML. The fields are mapped per
``model_type`` onto the same :class:`~advisor.loading.profile_schema.ModelProfile` a YAML
profile validates into, so ``profiles show`` displays it like any other profile and the core
receives the same :class:`~advisor.core.model_arch.ModelSpec`. The architecture block's source
is the file itself (kind ``datasheet``: the checkpoint's own configuration).

Supported ``model_type`` values (:data:`SUPPORTED_ARCHITECTURES`) and what each implies beyond
the common fields (``num_hidden_layers``, ``hidden_size``, ``intermediate_size``,
``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``vocab_size``,
``max_position_embeddings``, ``tie_word_embeddings``), following the defaults of the
``transformers`` configuration classes when a key is absent:

* ``llama``: ``attention_bias``, ``mlp_bias`` (default false);
* ``mistral``: ``sliding_window`` on every layer (default 4096; ``null`` means none);
* ``qwen2``: q/k/v projections carry a bias; ``use_sliding_window`` (default false) with
  ``max_window_layers``, or ``layer_types``;
* ``qwen3``: explicit ``head_dim`` (default 128), q/k RMSNorm, sliding window as qwen2;
* ``mixtral``: ``num_local_experts``, ``num_experts_per_tok``, experts of ``intermediate_size``;
* ``qwen3_moe``: ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``,
  ``decoder_sparse_step`` and ``mlp_only_layers`` (dense layers must be the leading ones);
* ``deepseek_v3``: MLA (``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``,
  ``qk_nope_head_dim``, ``v_head_dim``) and MoE (``n_routed_experts``, ``n_shared_experts``,
  ``num_experts_per_tok``, ``moe_intermediate_size``, ``first_k_dense_replace``); the
  multi-token-prediction layer is not counted, as in the built-in profile;
* ``gpt_oss``: ``num_local_experts``, ``num_experts_per_tok`` (or ``experts_per_token``),
  biased experts and router, ``layer_types`` with ``sliding_window``, MXFP4 experts
  (4.25 bits per parameter) when ``quantization_config.quant_method`` is ``mxfp4``;
* ``opt``: plain ReLU FFN of ``ffn_dim``, biases (``enable_bias``), LayerNorm with bias,
  tied embeddings, ``max_position_embeddings + 2`` learned positions.

Whatever the architecture, a ``quantization_config`` (ModelOpt NVFP4/FP8, compressed-tensors,
fp8 block, mxfp4) gives the weight format of each layer group as the checkpoint stores it
(``architecture.checkpoint_precision``; :mod:`advisor.loading.quant_config`).

``model_type`` missing is recovered from ``architectures`` (``LlamaForCausalLM`` → llama), and
so is a ``model_type`` this module does not know whose ``architectures`` names a class it maps:
checkpoints that reuse another model's architecture under their own type — Kimi K2
(``model_type: kimi_k2``, ``architectures: [DeepseekV3ForCausalLM]``; MoonshotAI/Kimi-K2
``docs/deploy_guidance.md``: "Kimi-K2 reuses the DeepSeekV3CausalLM architecture … we set
``"model_type": "kimi_k2"`` in config.json" so engines can tell them apart, and renaming it to
``deepseek_v3`` is the documented workaround for other frameworks) — are read by that class's
mapper, and the profile's source says so. Anything else is a
:class:`~advisor.loading.profile_errors.ProfileInvalidError` naming the field and
listing the supported architectures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from advisor.core.limits import MAX_CONFIG_COUNT, MAX_CONFIG_FILE_BYTES, MAX_MODEL_LAYERS
from advisor.loading.input_file import InputTooLarge, UnreadableFileError, read_input
from advisor.loading.profile_errors import ProfileInvalidError
from advisor.loading.quant_config import checkpoint_formats

SUPPORTED_ARCHITECTURES: tuple[str, ...] = (
    "deepseek_v3", "gpt_oss", "llama", "mistral", "mixtral", "opt", "qwen2", "qwen3",
    "qwen3_moe")
"""``model_type`` values this module maps."""

ARCHITECTURE_CLASSES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "MixtralForCausalLM": "mixtral",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
    "OPTForCausalLM": "opt",
}
"""``architectures`` entries → ``model_type``, for configs that lack ``model_type``."""

MXFP4_BYTES_PER_PARAM = 4.25 / 8
"""MXFP4: 4-bit values plus one 8-bit scale per 32 values = 4.25 bits per parameter."""

MAX_CONFIG_BYTES = MAX_CONFIG_FILE_BYTES

_MISSING: Any = object()


def load_hf_profile(path: Path) -> Any:
    """Read a ``config.json`` and return the :class:`ModelProfile` derived from it.

    Raises :class:`ProfileInvalidError` with one line per problem (unreadable or invalid
    JSON, unsupported architecture, missing or mistyped fields).
    """
    try:  # read once, never more than the limit, however big the file (#33)
        raw = read_input(path, MAX_CONFIG_BYTES)
    except InputTooLarge:
        raise ProfileInvalidError(path, ["file is larger than 1 MiB; not a model config.json"]
                                  ) from None
    except UnreadableFileError as exc:
        raise ProfileInvalidError(path, [exc.message]) from None
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text, parse_constant=_refuse_number, parse_float=_finite_float,
                          parse_int=_bounded_int)
    except UnicodeDecodeError as exc:
        raise ProfileInvalidError(path, [f"not UTF-8 text ({exc.reason})"]) from None
    except _NumberRefused as exc:
        raise ProfileInvalidError(path, [
            f"{_position(text, exc.token)}{exc.token[:24]}{'...' * (len(exc.token) > 24)}: "
            f"{exc.reason}; "
            "not a model config.json value"]) from None
    except json.JSONDecodeError as exc:
        raise ProfileInvalidError(path, [f"{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"]
                                  ) from None
    except RecursionError:
        raise ProfileInvalidError(
            path, ["invalid JSON: nested too deeply; not a model config.json"]) from None
    if not isinstance(data, dict):
        raise ProfileInvalidError(path, [("expected a JSON object (a model config.json) at the "
                                         f"top level, got {type(data).__name__}")])
    return profile_from_config(data, path, text)


class _NumberRefused(ValueError):
    """A JSON number pd-advisor refuses to read (#21); ``token`` as written."""

    def __init__(self, token: str, reason: str) -> None:
        super().__init__(reason)
        self.token = token
        self.reason = reason


def _refuse_number(token: str) -> Any:
    raise _NumberRefused(token, "NaN and Infinity are not JSON numbers")


def _finite_float(token: str) -> float:
    value = float(token)
    if value != value or value in (float("inf"), float("-inf")):
        raise _NumberRefused(token, "the number is beyond the floating-point range")
    return value


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > 308:  # past the floating-point range (and slow to convert)
        raise _NumberRefused(token, "the number is beyond the floating-point range")
    return int(token)


def _position(text: str, needle: str) -> str:
    """``LINE:COL: `` of the first ``needle`` in ``text`` (the start when it is absent)."""
    offset = max(text.find(needle), 0)
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}: "


def _key_position(text: str, key: str) -> str:
    """``LINE:COL: `` of the value of the first ``"key":`` in ``text``, or ""."""
    match = re.search(r'"' + re.escape(key) + r'"\s*:\s*', text)
    if match is None:
        return ""
    offset = match.end()
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}: "


def profile_from_config(data: dict[str, Any], path: Path, text: str = "") -> Any:
    """The :class:`ModelProfile` of parsed ``config.json`` data (``path`` names the source,
    ``text``, when given, places each problem at its key's line and column)."""
    from pydantic import ValidationError

    from advisor.loading.profile_schema import ModelProfile

    model_type = _model_type(data, path)
    declared = data.get("model_type")
    read_as = (f"model_type {model_type}" if declared == model_type or declared is None
               else f"model_type {_shown_type(declared)}, read as {model_type} by its "
                    f"architectures {_short(data.get('architectures'))}")
    reader = _Reader(data, model_type, text)
    architecture = _MAPPERS[model_type](reader)
    if not reader.problems:
        formats, quant_problems = checkpoint_formats(data, architecture, model_type)
        for key, message in quant_problems:
            last = key.rsplit(".", 1)[-1]
            where = _key_position(text, last) if text else ""
            reader.problems.append(f"{where}{key}: {message} (model_type {model_type})")
        if formats:
            architecture["checkpoint_precision"] = formats
    if reader.problems:
        raise ProfileInvalidError(path, reader.problems)
    name = _display_name(data, path)
    document = {
        "id": _slug(name),
        "name": name,
        "architecture": {
            "source": f"{path} (Hugging Face config.json, {read_as}; fields "
                      "mapped by pd-advisor's hf_config)",
            "kind": "datasheet",
            **architecture,
        },
    }
    try:
        return ModelProfile.model_validate(document)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            dotted = ".".join(str(p) for p in error["loc"]) or "(top level)"
            problems.append(f"derived {dotted}: {error['msg']}")
        raise ProfileInvalidError(path, problems) from None


# ---- helpers -------------------------------------------------------------------------------
def _supported() -> str:
    return ", ".join(SUPPORTED_ARCHITECTURES)


def _architecture_type(data: dict[str, Any]) -> str | None:
    """The ``model_type`` of the first ``architectures`` class this module maps (None)."""
    classes = data.get("architectures")
    if isinstance(classes, list):
        for cls in classes:
            if isinstance(cls, str) and cls in ARCHITECTURE_CLASSES:
                return ARCHITECTURE_CLASSES[cls]
    return None


def _shown_type(value: Any) -> str:
    """A declared ``model_type`` as the profile's source shows it (quoted when odd)."""
    return value if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", value) \
        else _short(value)


def _model_type(data: dict[str, Any], path: Path) -> str:
    """The ``model_type`` whose mapper reads ``data``: its own when supported, else the
    one its ``architectures`` names (a missing type, or a checkpoint that reuses a supported
    architecture under its own type, module docstring)."""
    model_type = data.get("model_type")
    if not (isinstance(model_type, str) and model_type in SUPPORTED_ARCHITECTURES):
        by_class = _architecture_type(data)
        if by_class is not None:
            return by_class
    if model_type is None:
        classes = data.get("architectures")
        raise ProfileInvalidError(path, [
            (f"model_type: missing (and architectures {_short(classes)} names no supported "
             "class); "
            f"supported architectures: {_supported()}")])
    if not isinstance(model_type, str) or model_type not in SUPPORTED_ARCHITECTURES:
        raise ProfileInvalidError(path, [
            (f"model_type: {_short(model_type)} is not supported; supported architectures: "
            f"{_supported()} (write a model profile YAML instead: see profiles/README.md)")])
    return model_type


def _display_name(data: dict[str, Any], path: Path) -> str:
    """``_name_or_path`` when it names a repository, else the folder holding the file."""
    given = data.get("_name_or_path")
    if isinstance(given, str) and given.strip() and not given.startswith(("/", ".")):
        return given.strip()
    folder = path.resolve().parent.name
    return folder or path.stem


def _slug(name: str) -> str:
    """A profile id from a name: lower case, runs of other characters become '-'."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    return (slug or "hf-config")[:64].rstrip("-._") or "hf-config"


def _short(value: Any) -> str:
    """``repr(value)``, cut at 80 characters (a list of 100,000 layers is not echoed)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Reader:
    """Typed access to config fields that records a problem instead of raising."""

    def __init__(self, data: dict[str, Any], model_type: str, text: str = "") -> None:
        self.data = data
        self.model_type = model_type
        self.text = text
        self.problems: list[str] = []

    def _problem(self, key: str, message: str) -> None:
        where = _key_position(self.text, key) if self.text and key in self.data else ""
        self.problems.append(f"{where}{key}: {message} (model_type {self.model_type})")

    def whole(self, key: str, default: Any = _MISSING, minimum: int = 1) -> int:
        """A whole number from ``minimum`` to :data:`MAX_CONFIG_COUNT`; ``default`` when
        absent or null."""
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                self._problem(key, "missing required field")
                return minimum
            return int(default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            self._problem(key, f"expected a whole number, got {value!r}")
            return minimum
        if value < minimum:
            self._problem(key, f"must be >= {minimum}, got {value!r}")
            return minimum
        if value > MAX_CONFIG_COUNT:
            self._problem(key, f"must be at most {MAX_CONFIG_COUNT:,} (no model has more), "
                               f"got {value:.6g}")
            return minimum
        return int(value)

    def optional_whole(self, key: str, default: int | None = None) -> int | None:
        """A whole number, or ``default`` when absent or null."""
        if self.data.get(key) is None:
            return default
        return self.whole(key)

    def flag(self, key: str, default: bool) -> bool:
        """A boolean; ``default`` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self._problem(key, f"expected true or false, got {value!r}")
            return default
        return value

    def whole_list(self, key: str) -> list[int]:
        """A list of whole numbers (empty when absent or null), at most
        :data:`MAX_MODEL_LAYERS` long (one entry per layer at most)."""
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, list) and len(value) > MAX_MODEL_LAYERS:
            self._problem(key, f"{len(value):,} entries; at most {MAX_MODEL_LAYERS:,} (one "
                               "per layer) are accepted")
            return []
        if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            self._problem(key, f"expected a list of whole numbers, got {_short(value)}")
            return []
        return list(value)

    def layers(self, key: str = "num_hidden_layers") -> int:
        """The layer count: a whole number from 1 to :data:`MAX_MODEL_LAYERS`."""
        value = self.data.get(key)
        if (isinstance(value, int | float) and not isinstance(value, bool)
                and value == int(value) and value > MAX_MODEL_LAYERS):
            self._problem(key, f"must be at most {MAX_MODEL_LAYERS:,} (80 times the deepest "
                               f"published model), got {value:.6g}")
            return 1
        return self.whole(key)


def _common(r: _Reader, tie_default: bool = False, head_dim_default: int | None = None
            ) -> dict[str, Any]:
    """The fields every decoder-only architecture here shares."""
    hidden = r.whole("hidden_size")
    heads = r.whole("num_attention_heads")
    kv_heads = r.whole("num_key_value_heads", default=heads)
    head_dim = r.optional_whole("head_dim", default=head_dim_default)
    if head_dim is None:
        if hidden % heads:
            r._problem("head_dim", f"absent, and hidden_size {hidden} is not a multiple of "
                                   f"num_attention_heads {heads}")
        head_dim = max(hidden // heads, 1)
    return {
        "num_layers": r.layers(),
        "hidden_size": hidden,
        "intermediate_size": r.whole("intermediate_size"),
        "num_attention_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": r.whole("vocab_size"),
        "max_context_tokens": r.whole("max_position_embeddings"),
        "attention": "mha" if kv_heads == heads else "gqa",
        "mlp": "gated",
        "tie_word_embeddings": r.flag("tie_word_embeddings", tie_default),
    }


def _sliding(r: _Reader, arch: dict[str, Any], use_flag: str | None = None,
             window_default: int | None = None) -> None:
    """Fill ``sliding_window_tokens``/``sliding_window_layers`` from the config.

    ``layer_types`` (newer configs) counts ``sliding_attention`` layers; otherwise a window
    applies to every layer (mistral) or, for qwen2/qwen3 with ``use_sliding_window``, to the
    layers from ``max_window_layers`` on.
    """
    if use_flag is not None and not r.flag(use_flag, False):
        return
    window = r.optional_whole("sliding_window", default=None if "sliding_window" in r.data
                            else window_default)
    if window is None:
        return
    layers = arch["num_layers"]
    types = r.data.get("layer_types")
    if isinstance(types, list) and len(types) > MAX_MODEL_LAYERS:
        r._problem("layer_types", f"{len(types):,} entries; at most {MAX_MODEL_LAYERS:,} (one "
                                  "per layer) are accepted")
        return
    if isinstance(types, list) and types:
        sliding = sum(1 for t in types if t == "sliding_attention")
    elif use_flag is not None:
        first = r.whole("max_window_layers", default=28, minimum=0)
        sliding = max(layers - first, 0)
    else:
        sliding = layers
    if sliding and window < arch["max_context_tokens"]:
        arch["sliding_window_tokens"] = window
        arch["sliding_window_layers"] = min(sliding, layers)


# ---- one mapper per model_type --------------------------------------------------------------
def _llama(r: _Reader) -> dict[str, Any]:
    arch = _common(r)
    arch["attention_bias"] = r.flag("attention_bias", False)
    arch["mlp_bias"] = r.flag("mlp_bias", False)
    return arch


def _mistral(r: _Reader) -> dict[str, Any]:
    arch = _common(r)
    _sliding(r, arch, window_default=4096)
    return arch


def _qwen2(r: _Reader) -> dict[str, Any]:
    arch = _common(r)
    arch["attention_bias"] = True  # Qwen2 q/k/v projections always carry a bias
    _sliding(r, arch, use_flag="use_sliding_window")
    return arch


def _qwen3(r: _Reader) -> dict[str, Any]:
    arch = _common(r, head_dim_default=128)
    arch["attention_bias"] = r.flag("attention_bias", False)
    arch["qk_norm"] = True
    _sliding(r, arch, use_flag="use_sliding_window")
    return arch


def _mixtral(r: _Reader) -> dict[str, Any]:
    arch = _common(r)
    _sliding(r, arch)
    arch["moe"] = {
        "num_experts": r.whole("num_local_experts", default=8),
        "experts_per_token": r.whole("num_experts_per_tok", default=2),
        "moe_intermediate_size": arch["intermediate_size"],
    }
    return arch


def _leading_dense_layers(r: _Reader, layers: int, step: int, dense_only: list[int]) -> int:
    """How many leading layers are dense; a dense layer after a MoE one is a problem.

    Layer ``i`` is MoE when it is not in ``mlp_only_layers`` and ``(i + 1) % step == 0``
    (transformers' Qwen3MoeDecoderLayer). Computed from the sparse set, in time linear in the
    list, not in the layer count (#33: a per-layer list of 10**8 entries took 37 s)."""
    dense = {i for i in dense_only if 0 <= i < layers}
    # the first MoE layer: the first multiple-of-step layer (0-based i = k*step - 1) not dense
    leading = layers
    index = step - 1
    while index < layers:
        if index not in dense:
            leading = index
            break
        index += step
    # any dense layer after it: a listed layer, or a layer that is not a multiple of step
    after_dense = (step > 1 and leading + 1 < layers) or any(i > leading for i in dense)
    if leading < layers and after_dense:
        r._problem("mlp_only_layers", "dense layers after the first MoE layer are not "
                                      f"supported (decoder_sparse_step {step}, mlp_only_layers "
                                      f"{_short(dense_only)}); only leading dense layers are "
                                      "modelled")
    return leading


def _qwen3_moe(r: _Reader) -> dict[str, Any]:
    arch = _common(r, head_dim_default=128)
    arch["attention_bias"] = r.flag("attention_bias", False)
    arch["qk_norm"] = True
    _sliding(r, arch, use_flag="use_sliding_window")
    step = r.whole("decoder_sparse_step", default=1)
    arch["moe"] = {
        "num_experts": r.whole("num_experts"),
        "experts_per_token": r.whole("num_experts_per_tok"),
        "moe_intermediate_size": r.whole("moe_intermediate_size"),
        "first_dense_layers": _leading_dense_layers(r, arch["num_layers"], step,
                                                    r.whole_list("mlp_only_layers")),
    }
    return arch


def _deepseek_v3(r: _Reader) -> dict[str, Any]:
    arch = _common(r)
    v_head_dim = r.whole("v_head_dim")
    arch.update(attention="mla", head_dim=v_head_dim,  # head_dim is unused under MLA
                attention_bias=r.flag("attention_bias", False))
    arch["mla"] = {
        "kv_lora_rank": r.whole("kv_lora_rank"),
        "q_lora_rank": r.optional_whole("q_lora_rank"),
        "qk_rope_head_dim": r.whole("qk_rope_head_dim"),
        "qk_nope_head_dim": r.whole("qk_nope_head_dim"),
        "v_head_dim": v_head_dim,
    }
    if r.whole("moe_layer_freq", default=1) != 1:
        r._problem("moe_layer_freq", "only 1 (every layer after first_k_dense_replace is MoE) "
                                     "is supported")
    arch["moe"] = {
        "num_experts": r.whole("n_routed_experts"),
        "experts_per_token": r.whole("num_experts_per_tok"),
        "moe_intermediate_size": r.whole("moe_intermediate_size"),
        "shared_experts": r.whole("n_shared_experts", default=0, minimum=0),
        "first_dense_layers": r.whole("first_k_dense_replace", default=0, minimum=0),
    }
    return arch


def _gpt_oss(r: _Reader) -> dict[str, Any]:
    arch = _common(r, head_dim_default=64)
    arch["attention_bias"] = r.flag("attention_bias", True)
    _sliding(r, arch, window_default=128)
    top_k_key = "num_experts_per_tok" if "num_experts_per_tok" in r.data else "experts_per_token"
    quant = r.data.get("quantization_config")
    mxfp4 = isinstance(quant, dict) and quant.get("quant_method") == "mxfp4"
    arch["moe"] = {
        "num_experts": r.whole("num_local_experts"),
        "experts_per_token": r.whole(top_k_key, default=4),
        "moe_intermediate_size": arch["intermediate_size"],
        "expert_bias": True,
        "router_bias": True,
        **({"expert_weight_bytes_per_param": MXFP4_BYTES_PER_PARAM} if mxfp4 else {}),
    }
    return arch


def _opt(r: _Reader) -> dict[str, Any]:
    hidden = r.whole("hidden_size")
    heads = r.whole("num_attention_heads")
    if hidden % heads:
        r._problem("num_attention_heads", f"does not divide hidden_size {hidden}")
    projection = r.whole("word_embed_proj_dim", default=hidden)
    if projection != hidden:
        r._problem("word_embed_proj_dim", f"{projection} differs from hidden_size {hidden}; "
                                          "the project_in/project_out layers are not modelled")
    bias = r.flag("enable_bias", True)
    positions = r.whole("max_position_embeddings")
    return {
        "num_layers": r.layers(),
        "hidden_size": hidden,
        "intermediate_size": r.whole("ffn_dim"),
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": max(hidden // heads, 1),
        "vocab_size": r.whole("vocab_size"),
        "max_context_tokens": positions,
        "attention": "mha",
        "mlp": "plain",
        "tie_word_embeddings": r.flag("tie_word_embeddings", True),
        "attention_bias": bias,
        "mlp_bias": bias,
        "norm_has_bias": r.flag("layer_norm_elementwise_affine", True),
        "learned_position_embeddings": positions + 2,  # OPT's position table has an offset of 2
    }


_MAPPERS = {
    "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "qwen3": _qwen3,
    "mixtral": _mixtral, "qwen3_moe": _qwen3_moe, "deepseek_v3": _deepseek_v3,
    "gpt_oss": _gpt_oss, "opt": _opt,
}
