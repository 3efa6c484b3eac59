"""``pd-advisor init``: write a commented, valid workload file to start from.

The file names a model and a GPU (checked against the profiles, so a typo fails here with a
suggestion rather than later), sizes the deployment so the model fits (the smallest
tensor-parallel degree whose weights and KV cache fit in memory; FP8 when BF16 weights cannot
fit on the GPUs given), and scales the example request lengths to the model's context window.

Editor support: next to the workload, ``init`` writes the workload JSON Schema
(``workload.schema.json``, what ``pd-advisor schema -o`` writes) and starts the workload with
``# yaml-language-server: $schema=workload.schema.json``, a path relative to the workload file
(yaml-language-server, the VS Code YAML extension, resolves a relative modeline path against
the file's directory: README of redhat-developer/yaml-language-server, "Using inlined schema"),
so editors complete and check every key offline, with the schema of the pd-advisor that wrote
the file. ``--schema-file`` writes the schema elsewhere; ``--no-schema`` writes neither the
schema nor the line. There is no hosted schema URL: no release publishes one.

Before anything is written, the text is validated exactly as ``pd-advisor validate`` would;
an existing workload file, or a schema file with other content, is only replaced with
``--force``. ``-o -`` prints the workload instead, without the schema line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.cli.output import fail as _fail
from advisor.cli.output import message, refuse_same_outputs, replaces_file, shown, write_output
from advisor.core.limits import MAX_GPUS
from advisor.escaping import yaml_comment, yaml_scalar

if TYPE_CHECKING:
    from advisor.core.hardware import GpuSpec
    from advisor.core.model_arch import ModelSpec
    from advisor.loading.catalog import ProfileCatalog

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_GPU = "h100-sxm"
DEFAULT_OUTPUT = Path("workload.yaml")
DEFAULT_INTER_NODE = "ib-ndr-400"

DEFAULT_SCHEMA_NAME = "workload.schema.json"
"""The schema file written beside the workload (``pd-advisor schema -o`` writes the same)."""

REFERENCE_CONTEXT = 4096
"""Context the example lengths are written for; smaller windows scale them down."""


def _fits(catalog: ProfileCatalog, model: ModelSpec, gpu: GpuSpec, precision: str, tp: int,
          context: float) -> bool:
    """Whether TP ``tp`` holds the weights and one request of ``context`` tokens."""
    from advisor.core.memory import build_instance, plan_memory

    link = catalog.link(gpu.intra_node_link_id)
    inst = build_instance(model, gpu, precision, catalog.engine("vllm"),
                          tp, 1, link, None)
    return plan_memory(inst, context, context, 0.9).fits


def choose_layout(catalog: ProfileCatalog, model: ModelSpec, gpu: GpuSpec, gpus: int,
                  context: float) -> tuple[str, int, bool]:
    """(precision, tensor_parallel, fits): the smallest TP that fits, BF16 before FP8."""
    per_node = gpu.gpus_per_node
    degrees = []
    tp = 1
    while tp <= min(per_node, gpus):
        if model.num_attention_heads % tp == 0 and gpus % tp == 0:
            degrees.append(tp)
        tp *= 2
    precisions = ["bf16", "fp8"] if gpu.has_fp8_compute else ["bf16"]
    for precision in precisions:
        for degree in degrees:
            if _fits(catalog, model, gpu, precision, degree, context):
                return precision, degree, True
    return precisions[-1], degrees[-1] if degrees else 1, False


def schema_ref(schema: Path, workload: Path) -> str:
    """The modeline path of ``schema``: relative to the workload's directory, with ``/``
    (absolute when no relative path exists, e.g. another drive)."""
    try:
        relative = os.path.relpath(schema.resolve(), workload.resolve().parent)
    except ValueError:
        return schema.resolve().as_posix()
    return Path(relative).as_posix()


def render_workload(*, model_ref: str, model: ModelSpec, gpu_ref: str, gpu: GpuSpec, gpus: int,
                    precision: str, tensor_parallel: int, fits: bool,
                    schema: str | None = None) -> str:
    """The commented workload text; ``schema`` is the modeline's schema path (None: none)."""
    scale = min(1.0, model.max_context_tokens / REFERENCE_CONTEXT)

    def tokens(value: float) -> int:
        return max(1, int(round(value * scale / 10.0) * 10))

    from advisor.core.scenario import nodes_spanned

    per_node = gpu.gpus_per_node
    nodes = nodes_spanned(gpus, per_node)
    weights_gb = model.weight_bytes(precision) / 1e9
    if nodes > 1:
        inter_node = _kv(2, "inter_node", DEFAULT_INTER_NODE,
                         f"per-GPU NIC between the {nodes} nodes (profiles list interconnects)")
    else:
        inter_node = _kv(2, "# inter_node", DEFAULT_INTER_NODE,
                         "per-GPU NIC; needed once gpus exceeds one node")
    fit_note = ("" if fits else
                "# NOTE: the model does not fit one node's GPUs at any tensor-parallel degree;\n"
                "# `recommend` considers pipeline stages across nodes when inter_node is set,\n"
                "# otherwise raise cluster.gpus or pick a GPU with more memory.\n")
    if fits:
        tp_line = _kv(2, "tensor_parallel", tensor_parallel,
                      "GPUs per replica (smallest degree that fits)")
    else:
        tp_line = _kv(2, "# tensor_parallel", tensor_parallel,
                      "does not fit; see the note at the top")
    if schema is None:
        schema_head = ""
        schema_note = "# Every key is described in the JSON Schema `pd-advisor schema` prints.\n"
    else:
        schema_head = f"# yaml-language-server: $schema={yaml_comment(schema)}\n#\n"
        schema_note = ("# Every key is described in the JSON Schema named on the first line;\n"
                       "# after upgrading pd-advisor, refresh it from this file's directory with\n"
                       f"#   pd-advisor schema -o {yaml_comment(schema)}\n")
    title = yaml_comment(f"{model.name} on {gpus} x {gpu.name}")
    return f"""\
{schema_head}# A pd-advisor workload, written by `pd-advisor init`: {title}.
# Replace the traffic and the SLO targets with your own numbers, then run
#   pd-advisor recommend {DEFAULT_OUTPUT}      # what to run, with the numbers
#   pd-advisor check {DEFAULT_OUTPUT}          # CI gate on the deployment: block below
{schema_note}{fit_note}{_kv(0, "version", 1, "format version; the only one so far")}
{_kv(0, "name", f"{model.id}-{gpu.id}", "shown in reports")}
{_kv(0, "model", model_ref, "profile id, HF id, profile YAML, or a config.json")}
{_kv(0, "precision", precision, f"weights and KV cache ({weights_gb:,.1f} GB of weights)")}
# precision: {{weights: fp8, kv_cache: bf16}}  # per tensor: weights bf16|fp16|fp8|fp8-block|
#                                           #   fp4|mxfp4|int4, kv_cache bf16|fp16|fp8
{_kv(0, "engine", "vllm", "vllm, sglang, trtllm or {name, version}: the engine profile")}
{_kv(0, "# calibration", "calibration.yaml", "factors fitted by `pd-advisor calibrate`")}

cluster:
{_kv(2, "gpu", gpu_ref, "GPU profile (`pd-advisor profiles list gpus`)")}
{_kv(2, "gpus", gpus, f"GPUs the deployment may use ({per_node} per node)")}
{inter_node}
  # nics_per_node: 8             # NICs of inter_node per node (carry the KV cache between
  #                              #   pools); default from its profile: one per GPU for IB/RoCE
  # price_per_gpu_hour: 2.50     # USD per GPU-hour; default: the GPU profile's reference price

traffic:
  rate_rps: 10                   # mean arrival rate, requests/s (open loop)
  # concurrency: 64              # or: closed-loop clients (instead of rate_rps)
  # prefix_cache_hit_rate: 0.3   # share of prompt tokens served from the prefix cache
  # shared_prefix_tokens: 1500   # or: a system prompt every request shares
  burstiness: 1.0                # CV of inter-arrival gaps: 0 even, 1 Poisson, >1 bursty
  prompt_tokens:                 # input length: an integer, or statistics a lognormal is fitted to
    mean: {tokens(1000)}
    p50: {tokens(800)}
    p95: {tokens(2500)}
  output_tokens:                 # generated length
    mean: {tokens(300)}
    p95: {tokens(800)}

slo:
  ttft_ms: 1000                  # time to first token target
  tpot_ms: 50                    # time per output token target (inter-token latency)
  percentile: 95                 # the targets must hold for this share of requests

operations:
  autoscaling: false             # can prefill and decode pools be resized as the mix shifts?
  router: least-loaded           # least-loaded | round-robin | random | power-of-two, every pool

deployment:                      # what runs today; `pd-advisor check` gates on it
  mode: colocated                # colocated or disaggregated
  chunked_prefill: true          # split long prompts into chunks batched with decodes
  # chunk_tokens: 2048           # token budget per step; omitted: the engine's default for the GPU
{tp_line}
  # for mode: disaggregated give prefill_gpus and decode_gpus instead of tensor_parallel
  # MoE models: expert_parallel: 32 (EP over whole nodes, DP attention) instead of tensor_parallel
  # max_num_seqs: 256            # engine limits you launch with (model and --emit honour them)
  # max_model_len: 32768         #   longest prompt + output a request may have
  # gpu_memory_utilization: 0.9  #   share of GPU memory the engine may use
  # router: round-robin          # the policy this deployment's router runs (default: operations)
  # speculative: {{method: eagle3, draft_tokens: 3}}  # speculative decoding (acceptance_rate:
  #                                #   default per method; docs/model.md §3.6)

policy: {{}}                       # rule thresholds; defaults in docs/model.md §9
"""


def _kv(indent: int, key: str, value: str | int | float | bool | None, comment: str) -> str:
    """``key: value`` with its comment aligned at column 34; the value written by the YAML
    emitter (:func:`advisor.escaping.yaml_scalar`: a model path cannot add keys, #33)."""
    text = f"{' ' * indent}{key}: {yaml_scalar(value)}"
    return f"{text.ljust(32)} # {comment}"


def _validate(text: str, output: Path) -> None:
    """Exit 2 (an internal error) if the generated text does not validate (in memory, placed
    where it will be written: nothing is written to check it)."""
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.errors import InputError
    from advisor.loading.resolve import load_scenario_and_document

    place = DEFAULT_OUTPUT if str(output) == "-" else output
    try:
        load_scenario_and_document(place, ProfileCatalog(), text=text)
    except InputError as exc:
        for problem in exc.problems:
            message(problem.format())
        _fail("internal error: the generated workload does not validate")


def register(app: typer.Typer) -> None:
    """Attach the ``init`` command to ``app``."""

    @app.command("init")
    def init(
        model: Annotated[str, typer.Option(
            "--model", metavar="ID", help="Model profile id (or a config.json / its folder).")
                         ] = DEFAULT_MODEL,
        gpu: Annotated[str, typer.Option("--gpu", metavar="ID", help="GPU profile id.")
                       ] = DEFAULT_GPU,
        gpus: Annotated[int | None, typer.Option(
            "--gpus", metavar="N", min=1, max=MAX_GPUS, show_default=False,
            help="GPUs the deployment may use (default: one node of the GPU).")] = None,
        output: Annotated[Path, typer.Option(
            "-o", "--output", metavar="FILE", help="File to write ('-' = stdout).")
                          ] = DEFAULT_OUTPUT,
        force: Annotated[bool, typer.Option(
            "--force", help="Replace an existing workload file or a different schema file.")
                         ] = False,
        schema_file: Annotated[Path | None, typer.Option(
            "--schema-file", metavar="FILE", show_default=False,
            help=f"Where to write the workload JSON Schema that the file's first line points "
                 f"editors at (default: {DEFAULT_SCHEMA_NAME} beside the workload file).")
                               ] = None,
        no_schema: Annotated[bool, typer.Option(
            "--no-schema", help="Write no schema file and no schema line.")] = False,
    ) -> None:
        """Write a commented workload file that validates, to edit and then `recommend`."""
        from advisor.loading.catalog import (
            ProfileCatalog,
            ProfileInvalidError,
            ProfileNotFoundError,
        )

        to_stdout = str(output) == "-"
        if not to_stdout and replaces_file(output) and not force:
            _fail(f"{shown(output)} exists; pass --force to replace it or -o to write elsewhere")
        if no_schema and schema_file is not None:
            _fail("--schema-file and --no-schema exclude each other")
        if to_stdout and schema_file is not None:
            _fail("--schema-file needs a workload file (-o FILE): the schema line is a path "
                  "relative to it")
        schema_path = None
        schema_text = ""
        schema_current = False  # the schema file exists with this pd-advisor's schema
        if not (to_stdout or no_schema):
            from advisor.loading.schema_export import render_schema

            schema_path = schema_file or output.parent / DEFAULT_SCHEMA_NAME
            refuse_same_outputs({"-o": output, "--schema-file": schema_path})
            schema_text = render_schema()
            if schema_path.is_dir():
                _fail(f"--schema-file {shown(schema_path)} is a directory")
            schema_current = (schema_path.is_file()
                              and schema_path.read_bytes() == schema_text.encode("utf-8"))
            if schema_path.exists() and not schema_current and not force:
                _fail(f"{shown(schema_path)} exists with other content (another pd-advisor's "
                      "schema?); pass --force to replace it, --schema-file to write elsewhere or "
                      "--no-schema")
        catalog = ProfileCatalog()
        from advisor.loading.model_ids import profile_for

        known = None if Path(model).exists() else profile_for(model, catalog.ids("models"))
        if known is not None:
            model = known  # a Hugging Face id of a built-in profile: write the profile id
        try:
            model_spec = catalog.model(model)
            gpu_spec = catalog.gpu(gpu)
        except (ProfileNotFoundError, ProfileInvalidError) as exc:
            _fail(str(exc))
        count = gpus or gpu_spec.gpus_per_node
        scale = min(1.0, model_spec.max_context_tokens / REFERENCE_CONTEXT)
        context = (2500 + 800) * scale
        precision, tp, fits = choose_layout(catalog, model_spec, gpu_spec, count, context)
        model_ref = model
        if "/" in model or model.lower().endswith((".json", ".yaml", ".yml")):
            model_ref = str(Path(model).resolve())  # valid wherever the file is written
        text = render_workload(model_ref=model_ref, model=model_spec, gpu_ref=gpu,
                               gpu=gpu_spec, gpus=count, precision=precision,
                               tensor_parallel=tp, fits=fits,
                               schema=None if schema_path is None
                               else schema_ref(schema_path, output))
        _validate(text, output)
        if schema_path is not None and not schema_current:
            write_output(schema_text, schema_path, wrote=" (the workload JSON Schema)")
        elif schema_path is not None:
            message(f"pd-advisor: {shown(schema_path)} holds this version's schema; kept")
        write_output(text, None if to_stdout else output,
                     wrote=f" ({model_spec.id}, {count} x {gpu_spec.id}, {precision}, TP{tp}); "
                     f"next: pd-advisor recommend {output}")
