"""Hypothesis strategies for workload files: valid ones across the whole input space, broken ones.

Valid documents (:func:`workloads`) cover every built-in model and GPU profile, 1 to 100,000
GPUs, arrival rates from 1e-3 to 1e5 requests/s (and out to the format's bounds, 1e-6 and
1e9), burstiness up to 1000, token lengths from 1 to 1,000,000 (and out to 10,000,000; plain
counts or statistics ``{mean, p50, p95, max}``), 1 to 12 phases that inherit what they do not
override, extreme SLO targets and percentiles, policy overrides and both deployment modes.
With ``resolvable=True`` the documents also pass every cross-check that needs a profile
(prompts fit the context window, a multi-node cluster names its NIC, tensor-parallel degrees
divide the heads, pools fit the cluster), so the advisor must evaluate them. (``calibration``
needs a file and is left out; broken documents name files there.)

Broken inputs come in four kinds: a valid document with structural mutations
(:func:`broken_documents`: keys deleted, renamed or added, values replaced by junk of any type,
unicode, NaN/infinity, numbers at and beyond every bound, deep nesting, files of the wrong
kind as profiles), YAML-ish text (:func:`yaml_texts`: token soup, arbitrary unicode, nesting
20,000 levels deep), a valid file with character-level edits (:func:`mutated_yaml_texts`),
and raw bytes that need not be UTF-8 (:func:`raw_bytes`).

Everything here is plain data or text; :mod:`tests.fuzz.contract` runs the CLI on it.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from advisor.loading.catalog import ProfileCatalog
from advisor.loading.workload_schema import (
    MAX_BURSTINESS,
    MAX_GPUS,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MIN_RATE_RPS,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

Document = dict[str, Any]
PathTo = tuple[str | int, ...]
"""A path into a document: mapping keys and list indices."""

TYPICAL_MAX_TOKENS = 1_000_000
"""Most generated lengths are at most this; the rest reach the format's bound (10,000,000)."""
TYPICAL_RATES_RPS = (1e-3, 1e5)
"""Where most generated rates lie; the rest spread over everything the format accepts."""
MAX_PHASES = 12
SMALL_GPUS = 64
SMALL_PHASES = 3
"""Bounds of the documents that broken inputs start from: the structure matters there, not
the scale, and small documents are quick to generate and to evaluate."""
POLICY_KEYS = ("max_rounding_loss", "max_kv_link_utilization", "max_kv_transfer_share_of_ttft",
               "max_static_mix_loss", "min_disagg_gain", "split_tolerance", "memory_fraction",
               "assumed_mix_drift")
"""The keys of ``policy:`` (``tests/fuzz/test_fuzz_cli.py`` checks this against the schema)."""


NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-"
"""Characters of the plain names (the other names are arbitrary unicode)."""


@functools.cache
def catalog() -> ProfileCatalog:
    """The built-in profiles only (``$PD_ADVISOR_PROFILES`` ignored)."""
    return ProfileCatalog(env={})


@functools.cache
def model_ids() -> tuple[str, ...]:
    """Every built-in model profile id."""
    return tuple(catalog().ids("models"))


@functools.cache
def gpu_ids() -> tuple[str, ...]:
    """Every built-in GPU profile id."""
    return tuple(catalog().ids("gpus"))


@functools.cache
def link_ids() -> tuple[str, ...]:
    """Every built-in interconnect profile id."""
    return tuple(catalog().ids("interconnects"))


@functools.cache
def model_limits(model_id: str) -> tuple[int, int]:
    """(attention heads, context window in tokens) of a built-in model."""
    spec = catalog().model(model_id)
    return int(spec.num_attention_heads), int(spec.max_context_tokens)


@functools.cache
def gpus_per_node_of(gpu_id: str) -> int:
    """The node size a built-in GPU profile defaults to."""
    return int(catalog().gpu(gpu_id).gpus_per_node)


# --------------------------------------------------------------------------- numbers
def log_uniform(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats spread evenly over the decades of ``[low, high]`` (both > 0), bounds included."""
    spread = st.floats(math.log10(low), math.log10(high)).map(
        lambda exponent: min(high, max(low, 10.0 ** exponent)))
    return st.one_of(st.sampled_from([low, high]), spread)


def log_integers(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers spread evenly over the decades of ``[low, high]`` (``low`` >= 1)."""
    return st.one_of(st.integers(low, min(high, low + 16)),
                     log_uniform(low, high).map(lambda x: min(high, max(low, round(x)))),
                     st.sampled_from([low, high]))


def rates_rps() -> st.SearchStrategy[float | int]:
    """Arrival rates, mostly from 1e-3 to 1e5 requests/s, up to the format's bounds (1e-6 and
    1e9), as floats or integers."""
    return st.one_of(log_uniform(*TYPICAL_RATES_RPS), log_uniform(MIN_RATE_RPS, MAX_RATE_RPS),
                     log_integers(1, int(TYPICAL_RATES_RPS[1])))


def burstiness() -> st.SearchStrategy[float]:
    """Coefficients of variation of inter-arrival times: 0 (even), 1 (Poisson), up to the
    format's bound (1000)."""
    return st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 4.0),
                     log_uniform(1e-3, MAX_BURSTINESS))


def gpu_counts(most: int = MAX_GPUS) -> st.SearchStrategy[int]:
    """1 to ``most`` GPUs, often at sizes people deploy (up to 64)."""
    return st.one_of(st.integers(1, min(16, most)),
                     st.sampled_from([n for n in (24, 32, 48, 64) if n <= most] or [most]),
                     log_integers(1, most))


# --------------------------------------------------------------------------- lengths
@st.composite
def token_lengths(draw: st.DrawFn, limit: int = MAX_TOKENS) -> int | dict[str, float | int]:
    """A token length: a count, or consistent statistics {mean, p50, p95, max}.

    Every value is at most ``limit``. Four values are drawn and sorted so that
    p50 <= mean <= p95 <= max, as the format requires; mean or p50 is always given (p95 alone
    is refused).
    """
    typical = min(limit, TYPICAL_MAX_TOKENS)
    count = st.one_of(log_integers(1, typical), log_integers(1, limit))
    value = st.one_of(count, log_uniform(1.0, float(typical)), log_uniform(1.0, float(limit)))
    if draw(st.booleans()):
        return draw(count)
    p50, mean, p95, top = sorted(draw(st.lists(value, min_size=4, max_size=4)))
    stats = {"mean": mean, "p50": p50, "p95": p95}
    keys = draw(st.sampled_from([("mean",), ("p50",), ("mean", "p50"), ("mean", "p95"),
                                 ("p50", "p95"), ("mean", "p50", "p95")]))
    chosen: dict[str, float | int] = {key: stats[key] for key in sorted(keys)}
    if draw(st.booleans()):
        chosen["max"] = top
    return chosen


# --------------------------------------------------------------------------- sections
def _powers_of_two_dividing(*values: int) -> list[int]:
    """Powers of two that divide every value in ``values``."""
    limit = min(values)
    return [p for p in (2 ** k for k in range(limit.bit_length())) if p <= limit
            and all(v % p == 0 for v in values)]


@st.composite
def deployments(draw: st.DrawFn, gpus: int, heads: int) -> Document:
    """A deployment block that fits ``gpus`` and the model's ``heads``."""
    disaggregated = gpus >= 2 and draw(st.booleans())
    block: Document = {"mode": "disaggregated" if disaggregated else "colocated"}
    if draw(st.booleans()):
        block["chunked_prefill"] = draw(st.booleans())
    if draw(st.booleans()):
        block["chunk_tokens"] = draw(log_integers(1, MAX_TOKENS))
    if not disaggregated:
        if draw(st.booleans()):
            block["tensor_parallel"] = draw(st.sampled_from(_powers_of_two_dividing(gpus, heads)))
        return block
    prefill = draw(log_integers(1, gpus - 1))
    decode = draw(log_integers(1, gpus - prefill))
    block["prefill_gpus"], block["decode_gpus"] = prefill, decode
    for pool, size in (("prefill", prefill), ("decode", decode)):
        if draw(st.booleans()):
            block[f"{pool}_tensor_parallel"] = draw(
                st.sampled_from(_powers_of_two_dividing(size, heads)))
    return block


@st.composite
def policies(draw: st.DrawFn) -> Document:
    """Overrides of some rule thresholds: fractions from 0 to 1 (memory_fraction above 0)."""
    keys = draw(st.lists(st.sampled_from(POLICY_KEYS), max_size=len(POLICY_KEYS), unique=True))
    fraction = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))
    result: Document = {}
    for key in keys:
        if key == "memory_fraction":
            result[key] = draw(st.one_of(st.just(1.0), log_uniform(1e-6, 1.0)))
        else:
            result[key] = draw(fraction)
    return result


@st.composite
def slos(draw: st.DrawFn) -> Document:
    """Latency targets from 1 µs to 11 days (each optional) and a percentile in 50..99.9."""
    target = log_uniform(1e-3, 1e9)
    block: Document = {}
    if draw(st.booleans()):
        block["ttft_ms"] = draw(target)
    if draw(st.booleans()):
        block["tpot_ms"] = draw(target)
    if draw(st.booleans()):
        block["percentile"] = draw(st.one_of(st.sampled_from([50, 95, 99.9]),
                                             st.floats(50.0, 99.9)))
    return block


def phase_names() -> st.SearchStrategy[str]:
    """Phase names: short ASCII or arbitrary unicode text."""
    return st.one_of(st.text(NAME_ALPHABET, min_size=1, max_size=12),
                     st.text(min_size=1, max_size=12))


@st.composite
def traffic(draw: st.DrawFn, prompt_limit: int, max_phases: int = MAX_PHASES) -> Document:
    """A traffic block: one mix, or 1..``max_phases`` phases whose shares add up to 1.

    Rate and lengths may be left to the phases; each phase then gives them itself.
    """
    count = draw(st.one_of(st.just(0), st.integers(1, min(3, max_phases)),
                           st.integers(1, max_phases)))
    makers = {"rate_rps": rates_rps(), "prompt_tokens": token_lengths(prompt_limit),
              "output_tokens": token_lengths()}
    block: Document = {}
    for key, maker in makers.items():
        if count == 0 or draw(st.booleans()):
            block[key] = draw(maker)
    if draw(st.booleans()):
        block["burstiness"] = draw(burstiness())
    if count == 0:
        return block
    weights = draw(st.lists(st.integers(1, 1000), min_size=count, max_size=count))
    names = draw(st.lists(phase_names(), min_size=count, max_size=count, unique=True))
    phases = []
    for name, weight in zip(names, weights, strict=True):
        phase: Document = {"name": name, "share": weight / sum(weights)}
        for key, maker in makers.items():
            if key not in block or draw(st.booleans()):
                phase[key] = draw(maker)
        if draw(st.booleans()):
            phase["burstiness"] = draw(burstiness())
        phases.append(phase)
    block["phases"] = phases
    return block


@st.composite
def workloads(draw: st.DrawFn, resolvable: bool = True, max_gpus: int = MAX_GPUS,
              max_phases: int = MAX_PHASES) -> Document:
    """A workload document that passes the format checks.

    With ``resolvable`` it also passes the checks against the profiles (see the module
    docstring); without, prompts may reach 1,000,000 tokens beyond any context window and a
    multi-node cluster may lack ``inter_node`` (both are reported as located problems).
    ``max_gpus`` and ``max_phases`` bound the cost of evaluating it (the verdict boundaries
    of 100,000 GPUs in 12 phases take seconds).
    """
    model = draw(st.sampled_from(model_ids()))
    heads, context = model_limits(model)
    gpu = draw(st.sampled_from(gpu_ids()))
    gpus = draw(gpu_counts(max_gpus))
    doc: Document = {"version": 1}
    if draw(st.booleans()):
        doc["name"] = draw(st.one_of(st.text(min_size=1, max_size=40),
                                     st.text(NAME_ALPHABET, min_size=1, max_size=20)))
    doc["model"] = model
    doc["precision"] = draw(st.sampled_from(["bf16", "fp8"]))
    if draw(st.booleans()):
        doc["engine"] = draw(st.sampled_from(["vllm", "sglang", "trtllm"]))
    cluster: Document = {"gpu": gpu, "gpus": gpus}
    if draw(st.booleans()):
        cluster["gpus_per_node"] = draw(st.one_of(st.sampled_from([1, 2, 4, 8, 72]),
                                                  log_integers(1, 1024)))
    if draw(st.booleans()):
        cluster["intra_node"] = draw(st.sampled_from(link_ids()))
    per_node = cluster.get("gpus_per_node", gpus_per_node_of(gpu))
    multi_node = gpus > per_node
    if (multi_node and resolvable) or draw(st.booleans()):
        cluster["inter_node"] = draw(st.sampled_from(link_ids()))
    doc["cluster"] = cluster
    doc["traffic"] = draw(traffic(context if resolvable else MAX_TOKENS, max_phases))
    if draw(st.booleans()):
        doc["slo"] = draw(slos())
    if draw(st.booleans()):
        doc["operations"] = {"autoscaling": draw(st.booleans())}
    if draw(st.booleans()):
        doc["deployment"] = draw(deployments(gpus, heads))
    if draw(st.booleans()):
        doc["policy"] = draw(policies())
    return doc


# --------------------------------------------------------------------------- junk
_TRICKY_STRINGS = (
    "", " ", "\t", "~", "null", "NULL", "yes", "no", "on", "off", "True", "false", "1e3",
    "0x10", "0o17", "1_000", "12:30", ".inf", "-.inf", ".nan", "NaN", "16", "-1", "0",
    "2024-01-01", "h100-sxm", "llama-3.1-8b", "ib-ndr-400", "colocated", "disaggregated",
    "bf16", "fp8", "version", "<<", "&anchor", "*alias", "!!python/object", "%YAML",
    "x.yaml", "config.json", "models/missing.yaml", "../../etc/passwd", "/", ".", "..",
    "~/nowhere.yaml", "C:\\profiles\\gpu.yaml", "\u00e9\u00e8\u00ea", "\u2028", "\u0085",
    "\ufeff", "\u202e", "\U0001f600", "\u4e2d\u6587", "\x00", "\x1b[31m", "a" * 500,
)


def _repo_paths() -> list[str]:
    """Existing files and folders given where a profile or calibration is expected: profiles
    of each kind, a Hugging Face config.json (and its folder), a workload, a README."""
    return [str(REPO_ROOT / part) for part in (
        "profiles/gpus/h100-sxm.yaml", "profiles/models/llama-3.1-8b.yaml",
        "profiles/interconnects/nvlink4.yaml", "examples/chat-8b-single-node.yaml",
        "tests/data/ecosystem/hf/llama-3.1-8b", "tests/data/ecosystem/hf/qwen3-8b/config.json",
        "README.md", "profiles", "tests/data/ecosystem/hf")]


def scalars() -> st.SearchStrategy[Any]:
    """Scalars of every YAML type: nulls, booleans, huge and negative numbers, NaN, text."""
    return st.one_of(
        st.none(), st.booleans(),
        st.integers(-(10 ** 30), 10 ** 30), st.integers(-2, 3),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-320, 1e308, 0.5]),
        st.text(max_size=30), st.sampled_from(_TRICKY_STRINGS),
        st.sampled_from(_repo_paths()),
    )


EXTREME_INTS = (0, -1, 100_000, 100_001, 2 ** 31, 2 ** 53 + 1, 2 ** 62, 2 ** 63, 2 ** 64,
                10 ** 12, 10 ** 30, 10 ** 400, 10 ** 4000)
"""Integers at and beyond every bound: int64, float range, nearly Python's 4300-digit limit
(longer numbers come as text, from :func:`pathological_texts`)."""
EXTREME_FLOATS = (0.0, -0.0, 5e-324, 1e-308, 1e-300, 9.99e-7, 1e-6, 0.999, 1000.0, 1000.5,
                  1e9, 1.5e9, 1e20, 1e300, 1e308, -1e308, 1.7976931348623157e308)
"""Floats at and beyond every bound, down to the smallest subnormal and up to the largest."""


def nested(depth: int, leaf: Any, kind: str) -> Any:
    """``leaf`` wrapped in ``depth`` single-element lists or single-key mappings."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


MAX_JUNK_DEPTH = 150
"""Deepest nesting of a junk value (pd-advisor refuses documents deeper than 100 levels;
deeper text, up to 20,000 levels, comes from :func:`pathological_texts`)."""


def junk() -> st.SearchStrategy[Any]:
    """Any value: scalars, small containers of them, or deep nesting."""
    keys = st.one_of(st.sampled_from(["", "a", "version", "model", "0", " "]),
                     st.text(max_size=10))
    containers = st.recursive(
        scalars(), lambda inner: st.one_of(st.lists(inner, max_size=3),
                                           st.dictionaries(keys, inner, max_size=3)),
        max_leaves=8)
    deep = st.builds(nested, st.integers(1, MAX_JUNK_DEPTH), scalars(),
                     st.sampled_from(["list", "dict"]))
    return st.one_of(scalars(), containers, deep)


# --------------------------------------------------------------------------- mutations
def paths_in(value: Any, prefix: PathTo = ()) -> list[PathTo]:
    """Every path in a document (the root ``()`` first), depth first."""
    found: list[PathTo] = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_in(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths_in(item, (*prefix, index))
    return found


def _get(doc: Any, path: PathTo) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _replace(doc: Any, path: PathTo, new: Any) -> Any:
    """A copy of ``doc`` with the value at ``path`` replaced by ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in doc.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(doc)]


def _delete(doc: Any, path: PathTo) -> Any:
    """A copy of ``doc`` without the value at ``path`` (``path`` not the root)."""
    parent_path, last = path[:-1], path[-1]
    parent = _get(doc, parent_path)
    if isinstance(parent, dict):
        smaller: Any = {k: v for k, v in parent.items() if k != last}
    else:
        smaller = [v for i, v in enumerate(parent) if i != last]
    return _replace(doc, parent_path, smaller)


def _typo(key: str, index: int, replacement: str) -> str:
    """``key`` with one character replaced (or ``replacement`` appended to an empty key)."""
    if not key:
        return replacement
    index %= len(key)
    return key[:index] + replacement + key[index + 1:]


@st.composite
def mutate(draw: st.DrawFn, doc: Any) -> Any:
    """One structural mutation of ``doc``: delete, replace, retype, rename or add a key, or
    push a number to an extreme of its type."""
    paths = paths_in(doc)
    path = draw(st.sampled_from(paths))
    target = _get(doc, path)
    actions = ["replace", "add"]
    if path:
        actions += ["delete", "rename"]
    if isinstance(target, bool | int | float):
        actions.append("stringify")
    if isinstance(target, int | float) and not isinstance(target, bool):
        actions.append("extreme")
    action = draw(st.sampled_from(actions))
    if action == "replace":
        return _replace(doc, path, draw(junk()))
    if action == "extreme":
        pool = EXTREME_INTS if isinstance(target, int) else EXTREME_FLOATS
        return _replace(doc, path, draw(st.sampled_from(pool)))
    if action == "delete":
        return _delete(doc, path)
    if action == "stringify":
        return _replace(doc, path, str(target).lower() if isinstance(target, bool)
                        else repr(target))
    if action == "add":
        holder_path = path if isinstance(target, dict | list) else path[:-1]
        holder = _get(doc, holder_path)
        if isinstance(holder, list):
            return _replace(doc, holder_path, [*holder, draw(junk())])
        if not isinstance(holder, dict):
            return _replace(doc, holder_path, draw(junk()))
        key = draw(st.one_of(st.sampled_from(["extra", "Version", "rate_rsp", "gpu", "phases",
                                              "calibration"]),
                             st.text(min_size=1, max_size=10)))
        return _replace(doc, holder_path, {**holder, key: draw(junk())})
    parent = _get(doc, path[:-1])
    last = path[-1]
    if isinstance(parent, list):
        return _replace(doc, path[:-1], list(reversed(parent)))
    new_key = _typo(str(last), draw(st.integers(0, 40)),
                    draw(st.sampled_from(["_", "s", "", "X", "\u00e9"])))
    renamed = {(new_key if k == last else k): v for k, v in parent.items()}
    return _replace(doc, path[:-1], renamed)


@st.composite
def broken_documents(draw: st.DrawFn) -> Any:
    """A valid document with one to four structural mutations (it may stay valid)."""
    doc: Any = draw(workloads(resolvable=draw(st.booleans()), max_gpus=SMALL_GPUS,
                              max_phases=SMALL_PHASES))
    for _ in range(draw(st.integers(1, 4))):
        doc = draw(mutate(doc))
    return doc


def _numeric_paths(doc: Any) -> list[PathTo]:
    """Paths of the numbers (not booleans) in a document."""
    return [path for path in paths_in(doc)
            if isinstance(_get(doc, path), int | float) and not isinstance(_get(doc, path), bool)]


@st.composite
def extreme_documents(draw: st.DrawFn) -> Any:
    """A valid document with exactly one number pushed to an extreme (at or beyond a bound,
    int64, float range or Python's digit limit), so that everything else stays valid."""
    doc: Any = draw(workloads(max_gpus=SMALL_GPUS, max_phases=SMALL_PHASES))
    path = draw(st.sampled_from(_numeric_paths(doc)))
    value = draw(st.sampled_from(EXTREME_INTS + EXTREME_FLOATS))
    return _replace(doc, path, value)


# --------------------------------------------------------------------------- text
CORE_12_NON_STRING_RE = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN)|0o[0-7]+|0x[0-9a-fA-F]+|true|True|TRUE|false|False|FALSE"
    r"|~|null|Null|NULL|")
"""Plain scalars that the YAML 1.2 core schema (what pd-advisor reads) resolves to a number,
boolean or null. PyYAML writes YAML 1.1, where ``1e100`` is a string and needs no quotes."""


class _Core12SafeDumper(yaml.SafeDumper):
    """A safe dumper whose strings read back as strings under the YAML 1.2 core schema."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """Quote core-1.2 look-alikes; put non-printable text in double quotes, where PyYAML
    escapes it (in single quotes it would write a raw U+0085, which reads back as a space)."""
    style = None
    if not value.isprintable():
        style = '"'
    elif CORE_12_NON_STRING_RE.fullmatch(value):
        style = "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Core12SafeDumper.add_representer(str, _represent_str)


def to_yaml(doc: Any, flow: bool = False) -> str:
    """``doc`` as YAML text (block style unless ``flow``), unicode kept, key order kept.

    Strings stay strings for pd-advisor's YAML 1.2 reader (``'1e100'`` is quoted).
    """
    return yaml.dump(doc, Dumper=_Core12SafeDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=flow, width=10_000)


_YAML_TOKENS = (
    "version", "model", "precision", "cluster", "gpu", "gpus", "traffic", "rate_rps",
    "prompt_tokens", "output_tokens", "phases", "share", "slo", "deployment", "mode", "policy",
    "name", "mean", "p95", ":", ": ", " ", "  ", "\n", "\n  ", "\n    ", "- ", "-", "{", "}",
    "[", "]", ",", "'", '"', "#", "&a ", "*a", "&b ", "*b", "<<: *a", "? ", "|", ">", "!!str ",
    "!!int ", "!!float ", "!!binary ", "!!set ", "!!omap ", "!!timestamp ", "!tag ",
    "!!python/name:os.system ", "---\n", "...\n", "%YAML 1.2\n", "%TAG ! tag:x,2000:\n",
    "\t", "\r\n", "\ufeff", "\\", "\x07", "1", "0", "-1", "1e3", "1e400", "0x1F", ".inf",
    ".nan", "null", "~", "true", "yes", "1", "8", "h100-sxm", "llama-3.1-8b", "bf16", "1" * 40,
)


def pathological_texts() -> st.SearchStrategy[str]:
    """A workload key holding collections nested up to 20,000 levels deep, or a number with up
    to 20,000 digits (Python refuses to convert more than 4,300)."""
    def text(size: int, kind: str) -> str:
        if kind == "flow-list":
            value = "[" * size + "]" * size
        elif kind == "flow-map":
            value = "{a: " * size + "1" + "}" * size
        elif kind == "block-list":
            value = "\n" + "".join(" " * level + "- \n" for level in range(1, size + 1))
        else:
            value = "{gpu: h100-sxm, gpus: 1" + "0" * size + "}"
            return f"version: 1\nmodel: llama-3.1-8b\ncluster: {value}\n"
        return f"version: 1\nmodel: {value}\n"
    return st.builds(text, st.one_of(st.integers(1, 200), st.integers(1, 20_000)),
                     st.sampled_from(["flow-list", "flow-map", "block-list", "long-number"]))


def yaml_texts() -> st.SearchStrategy[str]:
    """Random YAML-ish text: token soup from YAML syntax and workload keys, any unicode, deep
    nesting or huge numbers."""
    soup = st.lists(st.sampled_from(_YAML_TOKENS), max_size=60).map("".join)
    return st.one_of(soup, st.text(max_size=200), pathological_texts())


@st.composite
def mutated_yaml_texts(draw: st.DrawFn) -> str:
    """A valid workload file with one to three character-level edits."""
    doc = draw(workloads(max_gpus=SMALL_GPUS, max_phases=SMALL_PHASES))
    text = to_yaml(doc, flow=draw(st.integers(0, 4)) == 0)
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines(keepends=True)
        action = draw(st.sampled_from(["delete", "insert", "duplicate-line", "drop-line",
                                       "indent", "swap-lines"]))
        if not lines:
            text = draw(yaml_texts())
            continue
        position = draw(st.integers(0, len(text)))
        line_index = draw(st.integers(0, len(lines) - 1))
        if action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 20)):]
        elif action == "insert":
            text = text[:position] + draw(st.sampled_from(_YAML_TOKENS)) + text[position:]
        elif action == "duplicate-line":
            lines.insert(line_index, lines[line_index])
            text = "".join(lines)
        elif action == "drop-line":
            del lines[line_index]
            text = "".join(lines)
        elif action == "indent":
            lines[line_index] = draw(st.sampled_from([" ", "  ", "\t", ""])) + \
                lines[line_index].lstrip(" ")
            text = "".join(lines)
        else:
            other = draw(st.integers(0, len(lines) - 1))
            lines[line_index], lines[other] = lines[other], lines[line_index]
            text = "".join(lines)
    return text


@st.composite
def raw_bytes(draw: st.DrawFn) -> bytes:
    """Bytes of a workload file that need not be UTF-8: a valid file with bytes spliced in."""
    text = to_yaml(draw(workloads(max_gpus=SMALL_GPUS, max_phases=SMALL_PHASES))).encode()
    position = draw(st.integers(0, len(text)))
    splice = draw(st.one_of(st.binary(min_size=1, max_size=8),
                            st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf",
                                             b"\xed\xa0\x80", b"\r"])))
    return text[:position] + splice + text[position:]
