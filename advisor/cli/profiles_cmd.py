"""``pd-advisor profiles``: list and show GPU, interconnect, model and engine profiles.

``profiles list [gpus|interconnects|models|engines]`` prints one table per kind with the key
numbers;
``profiles show ID_OR_PATH [--kind KIND]`` prints every number of one profile with its unit,
kind and source, followed by the numbers derived from it. User profile directories come from
``--profiles DIR`` (repeatable) and ``PD_ADVISOR_PROFILES``; they override built-in ids.
Tables go to stdout, errors to stderr (exit 2). pydantic, numpy and rich are imported inside
the commands so that ``pd-advisor --help`` stays fast.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli.output import console_text, shown, warn
from advisor.cli.output import fail as _fail

if TYPE_CHECKING:
    from rich.table import Table

    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.engine_profile import EngineProfile
    from advisor.loading.profile_schema import GpuProfile, LinkProfile, ModelProfile


GB = 1e9
GIB = 2.0**30
TERA = 1e12


class Kind(enum.StrEnum):
    """Profile kinds (directory names)."""

    gpus = "gpus"
    interconnects = "interconnects"
    models = "models"
    engines = "engines"


app = typer.Typer(
    name="profiles",
    no_args_is_help=True,
    help="List and inspect GPU, interconnect, model and engine profiles (built-in and your "
    "own).",
)

ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        help="Extra profile directory (with gpus/, interconnects/, models/, engines/ inside); "
        "searched before the built-in profiles. Repeatable. Also read from "
        "PD_ADVISOR_PROFILES (os.pathsep-separated).",
        exists=True, file_okay=False, dir_okay=True, show_default=False,
    ),
]


# ---- helpers -------------------------------------------------------------------------------
def _catalog(profiles: list[Path] | None) -> ProfileCatalog:
    from advisor.loading.catalog import ProfileCatalog

    return ProfileCatalog(extra_dirs=profiles or ())


def _console() -> Any:
    """A rich console on stdout; 140 columns when not a terminal and COLUMNS is unset."""
    import os

    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=140)
    return console


def _fmt(x: float | int | None) -> str:
    """A number for humans: thousands separators, at most ~4 significant digits."""
    if x is None:
        return "none"
    if float(x).is_integer() and abs(x) < 1e18:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def _scaled(key: str, value: float | None) -> tuple[str, str]:
    """(display value, unit) for a profile key in SI base units, using the key's unit suffix."""
    if value is None:
        return "none", "-"
    if key.endswith("flops_per_s"):
        return _fmt(value / TERA), "TFLOP/s"
    if key.endswith("bytes_per_s"):
        return _fmt(value / GB), "GB/s"
    if key.endswith("memory_bytes"):
        return f"{_fmt(value / GB)} ({_fmt(value / GIB)} GiB)", "GB"
    if key.endswith("_s"):
        if value == 0 or value >= 1e-3:
            return _fmt(value * 1e3), "ms"
        return _fmt(value * 1e6), "us"
    if key.endswith("_watts"):
        return _fmt(value), "W"
    if key.endswith("_params"):
        return _fmt(value / 1e9), "B params"
    if key.endswith("gpus_per_node"):
        return _fmt(value), "GPUs"
    if "efficiency" in key:
        return _fmt(value), "fraction"
    return _fmt(value), ""


def _table(title: str | None = None, caption: str | None = None) -> Table:
    """A table whose text cells are shown inert: every string cell goes through
    :func:`~advisor.cli.output.console_text` (control characters escaped, rich markup
    literal), since sources, ids and names come from user files (#33)."""
    from rich import box
    from rich.table import Table

    class _InertTable(Table):
        def add_row(self, *cells: Any, **options: Any) -> None:
            super().add_row(*[console_text(c) if isinstance(c, str) else c for c in cells],
                            **options)

    return _InertTable(title=title, caption=caption, title_justify="left",
                       caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                       title_style="bold")


def _listing(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    """A compact list table that never cuts ids or numbers.

    The ``name`` column (the only one that wraps) is dropped when the console is too narrow
    to give it 16 characters.
    """
    widths = [max([len(header)] + [len(row[i]) for row in rows])
              for i, header in enumerate(headers)]
    fixed = sum(w + 2 for h, w in zip(headers, widths, strict=True) if h != "name")
    keep = [i for i, h in enumerate(headers) if h != "name" or _console().width - fixed >= 16]
    table = _table(title)
    for i in keep:
        header = headers[i]
        if header == "name":
            table.add_column(header, ratio=1)
        else:
            table.add_column(header, no_wrap=True, min_width=widths[i],
                             justify="left" if header in ("id", "scope", "attention",
                                                          "scale-up", "from") else "right")
    for row in rows:  # names and ids come from user files: shown inert (#21, _table)
        table.add_row(*[row[i] for i in keep])
    return table


def _number_table(title: str) -> Table:
    """Table of sourced numbers: key, value, unit, kind, source (the source column wraps)."""
    table = _table(title)
    table.add_column("key", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("unit", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("source", overflow="fold", ratio=1)
    return table


# ---- list ----------------------------------------------------------------------------------
def _origin_label(catalog: ProfileCatalog, path: Path) -> str:
    """``built-in``, or ``user`` / ``userN`` (N = position of the user directory)."""
    origin = catalog.origin(path)
    if origin == "built-in":
        return origin
    dirs = [str(d) for d in catalog.user_dirs]
    if len(dirs) == 1 or origin not in dirs:
        return "user"
    return f"user{dirs.index(origin) + 1}"


def _origin_caption(catalog: ProfileCatalog) -> str:
    """Which directory each ``user`` label stands for."""
    dirs = [str(d) for d in catalog.user_dirs]
    if len(dirs) == 1:
        return f"user = {dirs[0]}"
    return "; ".join(f"user{i} = {d}" for i, d in enumerate(dirs, 1))


def _list_gpus(catalog: ProfileCatalog, show_origin: bool) -> tuple[Table, list[str]]:
    headers = ["id", "name", "BF16 TF", "FP8 TF", "mem GB", "TB/s", "GPUs",
               "scale-up"] + (["from"] if show_origin else [])
    rows: list[list[str]] = []
    errors: list[str] = []
    for gpu_id in catalog.ids("gpus"):
        try:
            _, path = catalog.raw("gpus", gpu_id)
        except (LookupError, ValueError) as exc:
            errors.append(str(exc))
            continue
        gpu = catalog.gpu(gpu_id)
        rows.append([gpu.id, gpu.name, _fmt(gpu.bf16_flops_per_s / TERA),
                     _fmt(None if gpu.fp8_flops_per_s is None else gpu.fp8_flops_per_s / TERA),
                     _fmt(round(gpu.memory_bytes / GB, 1)),
                     _fmt(gpu.memory_bandwidth_bytes_per_s / TERA), str(gpu.gpus_per_node),
                     gpu.intra_node_link_id]
                    + ([_origin_label(catalog, path)] if show_origin else []))
    return _listing("GPU profiles: dense TFLOP/s, memory GB, HBM TB/s, GPUs per node",
                    headers, rows), errors


def _list_links(catalog: ProfileCatalog, show_origin: bool) -> tuple[Table, list[str]]:
    headers = ["id", "name", "scope", "GB/s", "eff.", "lat us", "setup ms"] + (
        ["from"] if show_origin else [])
    rows: list[list[str]] = []
    errors: list[str] = []
    for link_id in catalog.ids("interconnects"):
        try:
            _, path = catalog.raw("interconnects", link_id)
        except (LookupError, ValueError) as exc:
            errors.append(str(exc))
            continue
        link = catalog.link(link_id)
        rows.append([link.id, link.name, link.scope, _fmt(link.bandwidth_bytes_per_s / GB),
                     _fmt(link.efficiency), _fmt(link.latency_s * 1e6),
                     _fmt(link.transfer_setup_s * 1e3)]
                    + ([_origin_label(catalog, path)] if show_origin else []))
    return _listing("Interconnect profiles: GB/s per direction per GPU or NIC, latency, "
                    "per-transfer setup", headers, rows), errors


def _list_models(catalog: ProfileCatalog, show_origin: bool) -> tuple[Table, list[str]]:
    headers = ["id", "name", "attention", "total B", "active B", "KV B/tok", "context"] + (
        ["from"] if show_origin else [])
    rows: list[list[str]] = []
    errors: list[str] = []
    for model_id in catalog.ids("models"):
        try:
            _, path = catalog.raw("models", model_id)
        except (LookupError, ValueError) as exc:
            errors.append(str(exc))
            continue
        model = catalog.model(model_id)
        attention = model.attention + ("+moe" if model.is_moe else "") + (
            "+swa" if model.sliding_window_layers else "")
        rows.append([model.id, model.name, attention,
                     _fmt(round(model.total_params / 1e9, 2)),
                     _fmt(round(model.active_params / 1e9, 2)),
                     _fmt(model.kv_bytes_per_token("bf16")), _fmt(model.max_context_tokens)]
                    + ([_origin_label(catalog, path)] if show_origin else []))
    return _listing("Model profiles: parameters in billions, KV bytes per token at BF16",
                    headers, rows), errors


def _list_engines(catalog: ProfileCatalog, show_origin: bool) -> tuple[Table, list[str]]:
    headers = ["id", "engine", "versions", "name", "step ms", "TTFT ms", "eta_w", "eta_kv",
               "AR us", "seqs"] + (["from"] if show_origin else [])
    rows: list[list[str]] = []
    errors: list[str] = []
    h100 = None
    for engine_id in catalog.ids("engines"):
        try:
            _, path = catalog.raw("engines", engine_id)
        except (LookupError, ValueError) as exc:
            errors.append(str(exc))
            continue
        spec = catalog.engine(engine_id)
        if h100 is None:
            h100 = catalog.gpu("h100-sxm") if "h100-sxm" in catalog.ids("gpus") else None
        eff = spec.efficiency_for(h100) if h100 is not None else None
        rows.append([spec.id, spec.name, spec.versions, spec.title,
                     _fmt(round(eff.step_overhead_s * 1e3, 3)) if eff else "-",
                     _fmt(round(eff.request_overhead_s * 1e3, 1)) if eff else "-",
                     _fmt(eff.decode_bandwidth_efficiency) if eff else "-",
                     _fmt(eff.kv_read_efficiency) if eff else "-",
                     _fmt(round(spec.allreduce_software_s(8) * 1e6, 1)),
                     _fmt(spec.max_num_seqs(h100)) if h100 is not None else "-"]
                    + ([_origin_label(catalog, path)] if show_origin else []))
    return _listing("Engine profiles: per-step and per-request (TTFT) cost, weight and KV "
                    "bandwidth efficiency and max running sequences on an H100, engine "
                    "all-reduce cost at TP8", headers, rows), errors


@app.command("list")
def list_profiles(
    kind: Annotated[Kind | None, typer.Argument(
        help="Only this kind: gpus, interconnects, models or engines (default: all).",
        show_default=False)] = None,
    profiles: ProfilesOption = None,
) -> None:
    """List profiles with their key numbers."""
    from advisor.loading.catalog import ProfileInvalidError, ProfileNotFoundError

    catalog = _catalog(profiles)
    show_origin = bool(catalog.user_dirs)
    listers = {Kind.gpus: _list_gpus, Kind.interconnects: _list_links, Kind.models: _list_models,
               Kind.engines: _list_engines}
    console = _console()
    errors: list[str] = []
    try:
        for k in [kind] if kind is not None else list(Kind):
            table, kind_errors = listers[k](catalog, show_origin)
            if show_origin:
                table.caption = _origin_caption(catalog)
            console.print(table)
            errors += kind_errors
    except (ProfileNotFoundError, ProfileInvalidError) as exc:
        _fail(str(exc))
    for error in errors:  # a broken file is a warning here, an error where it is used (#21)
        warn(f"{error} (not listed)")


# ---- show ----------------------------------------------------------------------------------
def _show_gpu(console: Any, catalog: ProfileCatalog, profile: GpuProfile) -> None:
    table = _number_table("numbers")
    efficiency = _number_table("efficiency (defaults; engines.* override them per engine)")
    for key, number in profile.sourced_items():
        value, unit = _scaled(key, number.value)
        if "." in key:
            efficiency.add_row(key.removeprefix("efficiency."), value, unit, number.kind,
                               number.source)
        else:
            table.add_row(key, value, unit, number.kind, number.source)
    table.add_row("intra_node", profile.intra_node, "link id", "", "GPU-to-GPU link in a node")
    table.add_row("host_link", profile.host_link, "link id", "", "GPU-to-host link")
    console.print(table)
    console.print(efficiency)

    gpu = profile.to_spec()
    derived = _number_table("derived")
    for precision in ("bf16", "fp8"):
        ridge = gpu.ridge_point_flops_per_byte(precision)
        note = "" if precision == "bf16" or gpu.has_fp8_compute else \
            " (no FP8 tensor cores: BF16 peak)"
        derived.add_row(f"ridge_point_{precision}", _fmt(round(ridge, 1)), "FLOP/byte",
                        "derived", f"dense {precision.upper()} peak / memory bandwidth{note}")
    derived.add_row("memory_gib", _fmt(round(gpu.memory_bytes / GIB, 2)), "GiB", "derived",
                    "memory_bytes / 2^30")
    for engine, factors in gpu.engine_efficiency.items():
        for field in ("prefill_compute_efficiency_bf16", "prefill_compute_efficiency_fp8",
                      "decode_bandwidth_efficiency", "step_overhead_s", "request_overhead_s"):
            value, unit = _scaled(field, getattr(factors, field))
            derived.add_row(f"{engine}.{field}", value, unit, "derived",
                            f"engines.{engine} override merged with the GPU default")
    console.print(derived)
    for link_id in (profile.intra_node, profile.host_link):
        if link_id not in catalog.ids("interconnects"):
            console.print(f"[yellow]warning:[/] interconnect '{console_text(link_id)}' has no "
                          "profile")


def _show_link(console: Any, profile: LinkProfile) -> None:
    table = _number_table("numbers")
    table.add_row("scope", profile.scope, "", "", "")
    for key, number in profile.sourced_items():
        value, unit = _scaled(key, number.value)
        table.add_row(key, value, unit, number.kind, number.source)
    console.print(table)

    link = profile.to_spec()
    derived = _number_table("derived")
    value, unit = _scaled("effective_bytes_per_s", link.effective_bytes_per_s)
    derived.add_row("effective_bytes_per_s", value, unit, "derived",
                    "efficiency x bandwidth_bytes_per_s (per direction)")
    for size_gb in (1.0, 2.68):
        seconds = link.transfer_setup_s + size_gb * GB / link.effective_bytes_per_s
        value, unit = _scaled("time_s", seconds)
        derived.add_row(f"transfer_{_fmt(size_gb)}_gb_s", value, unit, "derived",
                        f"transfer_setup_s + {_fmt(size_gb)} GB / effective bandwidth"
                        + (" (Llama-70B KV of an 8,192-token prompt)" if size_gb != 1 else ""))
    console.print(derived)


def _show_model(console: Any, profile: ModelProfile) -> None:
    arch = profile.architecture
    console.print(f"[bold]architecture[/] (kind: {arch.kind}) source: "
                  f"{console_text(arch.source)}",
                  highlight=False)
    table = _table()
    table.add_column("key", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    for key, value in arch:
        if key in ("source", "kind") or value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            table.add_row(key, _fmt(value))
        elif hasattr(value, "model_dump"):
            for sub_key, sub_value in value.model_dump().items():
                if sub_value is not None:
                    shown = (str(sub_value).lower() if isinstance(sub_value, bool) else
                             f"{sub_value:,}" if isinstance(sub_value, int) else
                             f"{sub_value:g}" if isinstance(sub_value, float) else
                             str(sub_value).lower())
                    table.add_row(f"{key}.{sub_key}", shown)
        else:
            table.add_row(key, str(value).lower() if isinstance(value, bool) else str(value))
    console.print(table)

    published = list(profile.sourced_items())
    if published:
        pub_table = _number_table("published")
        for key, number in published:
            value, unit = _scaled(key, number.value)
            pub_table.add_row(key, value, unit, number.kind, number.source)
        console.print(pub_table)

    model = profile.to_spec()
    derived = _number_table("derived")

    def row(key: str, value: float, unit: str, how: str) -> None:
        derived.add_row(key, _fmt(value), unit, "derived", how)

    row("total_params", round(model.total_params / 1e9, 3), "B params",
        "embeddings + attention + MLP/experts + norms (+ untied lm_head)")
    row("active_params", round(model.active_params / 1e9, 3), "B params",
        "total minus unused routed experts (top-k of E); embeddings included")
    row("matmul_params_per_token", round(model.matmul_params_per_token / 1e9, 3), "B params",
        "active params minus the input-embedding gather")
    row("flops_per_token", round(2 * model.active_params / 1e9, 2), "GFLOP/token",
        "2 x active params (convention of published MFU figures)")
    row("matmul_flops_per_token", round(2 * model.matmul_params_per_token / 1e9, 2),
        "GFLOP/token", "2 x matmul params; attention (2·L·heads·head_dim·S per token) extra")
    kv_how = ("(kv_lora_rank + qk_rope_head_dim) x layers x bytes (MLA)" if model.mla else
              "2 x layers x kv_heads x head_dim x bytes")
    if model.sliding_window_layers:
        kv_how += "; window layers counted as full (upper bound)"
    for precision in ("bf16", "fp8"):
        row(f"kv_bytes_per_token_{precision}", model.kv_bytes_per_token(precision),
            "B/token", f"{kv_how}; {precision} = {2 if precision == 'bf16' else 1} B")
    row("kv_bytes_8192_tokens_bf16", round(model.kv_bytes_per_sequence(8192, "bf16") / GB, 3),
        "GB", "one 8,192-token sequence" + (", sliding windows honoured"
                                           if model.sliding_window_layers else ""))
    for precision in ("bf16", "fp8"):
        how = f"all weights at {2 if precision == 'bf16' else 1} B/param"
        if model.moe is not None and model.moe.expert_weight_bytes_per_param is not None:
            how += (f"; routed experts at {model.moe.expert_weight_bytes_per_param:g} "
                    "B/param (checkpoint format)")
        if model.checkpoint_formats is not None:
            fixed = ", ".join(f"{g.replace('_', '-')} {f}"
                              for g, f in model.checkpoint_formats.items())
            how = (f"the checkpoint's formats ({fixed}), any other group at "
                   f"{2 if precision == 'bf16' else 1} B/param")
        row(f"weight_bytes_{precision}", round(model.weight_bytes(precision) / GB, 2), "GB", how)
    if model.is_moe:
        row("routed_expert_params", round(model.routed_expert_params / 1e9, 3), "B params",
            "all routed-expert weights")
    console.print(derived)


def _show_engine(console: Any, catalog: ProfileCatalog, profile: EngineProfile) -> None:
    console.print(f"engine [bold]{console_text(profile.engine)}[/], versions "
                  f"{console_text(profile.versions)}",
                  highlight=False)
    table = _number_table("numbers")
    for key, number in profile.sourced_items():
        value, unit = _scaled(key, number.value)
        if key.endswith("bytes_per_entry"):
            value, unit = _fmt(number.value), "B"
        elif key.endswith("reserve_bytes"):
            value, unit = _fmt(round(number.value / GIB, 3)), "GiB"
        elif key.endswith("max_batch"):
            unit = "sequences"
        table.add_row(key, value, unit, number.kind, number.source)
    console.print(table)

    launch = profile.launch_defaults
    tiers = _table(f"launch defaults (kind: {launch.kind}) source: {launch.source}")
    for header in ("GPU memory", "excluding", "token budget", "max_num_seqs"):
        tiers.add_column(header, no_wrap=True)
    for tier in launch.tiers:
        tiers.add_row(f">= {_fmt(tier.min_memory_gib)} GiB", tier.exclude or "-",
                      _fmt(tier.tokens), _fmt(tier.max_num_seqs))
    tiers.add_row("otherwise", "-", _fmt(launch.fallback_tokens),
                  _fmt(launch.fallback_max_num_seqs))
    console.print(tiers)

    sup = profile.supports
    supports = _table(f"supports (kind: {sup.kind}) source: {sup.source}")
    supports.add_column("feature", no_wrap=True)
    supports.add_column("value")
    supports.add_row("P/D transfer backends", ", ".join(sup.pd_transfer_backends) or "none")
    supports.add_row("different TP across pools", "yes" if sup.different_tp_across_pools else "no")
    supports.add_row("expert parallelism", "yes" if sup.expert_parallel else "no")
    supports.add_row("DP attention", "yes" if sup.dp_attention else "no")
    console.print(supports)

    kv = profile.kv_transfer
    if kv is not None:
        path = _table(f"kv_transfer (kind: {kv.kind}) source: {kv.source}")
        path.add_column("backend", no_wrap=True)
        path.add_column("moves the KV")
        for backend, timing in kv.timing.items():
            path.add_row(backend + (" (plans assume it)" if backend == kv.backend else ""),
                         timing)
        path.add_row("request path", kv.request_path)
        console.print(path)

    spec = profile.to_spec()
    derived = _number_table("derived")
    for tp in (2, 4, 8):
        derived.add_row(f"allreduce_software_tp{tp}", _fmt(round(spec.allreduce_software_s(tp)
                                                                 * 1e6, 2)), "us", "derived",
                        "allreduce_overhead + per_doubling x log2(TP/2), added to the link "
                        "latency per all-reduce")
    for gpu_id in ("h100-sxm", "a100-80gb-sxm", "b200"):
        if gpu_id not in catalog.ids("gpus"):
            continue
        gpu = catalog.gpu(gpu_id)
        derived.add_row(f"token_budget.{gpu_id}", _fmt(spec.default_token_budget(gpu)),
                        "tokens", "derived", "launch_defaults tier for this GPU")
        derived.add_row(f"logits_reserve.{gpu_id}",
                        _fmt(round(spec.reserve_bytes(gpu, 201_088) / GIB, 2)), "GiB",
                        "derived", "runtime reserve + logits bytes x max_num_seqs x 201,088 "
                        "(gpt-oss vocabulary)")
    console.print(derived)


@app.command("show")
def show_profile(
    ref: Annotated[str, typer.Argument(metavar="ID_OR_PATH",
                                       help="Profile id, path to a profile YAML file, or a "
                                            "model's config.json (or its folder).")],
    kind: Annotated[Kind | None, typer.Option(
        "--kind", "-k", help="Profile kind, when the id or file alone is ambiguous.",
        show_default=False)] = None,
    profiles: ProfilesOption = None,
) -> None:
    """Show every number of one profile with its unit, kind and source, plus derived numbers."""
    from advisor.loading.catalog import (
        KIND_SINGULAR,
        KINDS,
        ProfileInvalidError,
        ProfileNotFoundError,
    )

    catalog = _catalog(profiles)
    try:
        if kind is not None:
            kind_name = kind.value
        else:
            kinds = catalog.kind_of(ref)
            if not kinds and Path(ref).expanduser().is_file():
                _fail(f"cannot tell what kind of profile '{shown(ref)}' is; pass --kind "
                      "gpus|interconnects|models|engines")
            if not kinds:
                suggestions = [s for k in KINDS for s in catalog.suggest(k, ref)]
                raise ProfileNotFoundError(None, ref, suggestions[:5])
            if len(kinds) > 1:
                _fail(f"'{shown(ref)}' names a profile of several kinds ({', '.join(kinds)}); "
                      "pass --kind")
            kind_name = kinds[0]
        profile, path = catalog.raw(kind_name, ref)
    except (ProfileNotFoundError, ProfileInvalidError) as exc:
        _fail(str(exc))

    console = _console()
    console.print(f"[bold]{console_text(profile.name)}[/]  {KIND_SINGULAR[kind_name]} profile "
                  f"'{console_text(profile.id)}' ({console_text(catalog.origin(path))}: "
                  f"{console_text(path)})", highlight=False)
    if kind_name == "gpus":
        # Ignored below: raw() returns the union of profile types; kind_name picks the one each
        # _show_* takes.
        _show_gpu(console, catalog, profile)  # type: ignore[arg-type]
    elif kind_name == "interconnects":
        _show_link(console, profile)  # type: ignore[arg-type]
    elif kind_name == "engines":
        _show_engine(console, catalog, profile)  # type: ignore[arg-type]
    else:
        _show_model(console, profile)  # type: ignore[arg-type]
