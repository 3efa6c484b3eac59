"""The package's architecture, enforced over every module of ``advisor/`` (an AST scan).

* the layers: ``core`` imports only ``core``; ``loading`` and ``render`` only ``core`` and
  themselves; ``usecases`` everything but ``cli``; only ``cli`` is the Typer app;
* no module imports another module's private (``_name``) names, or reaches into them through
  a module or class it imported;
* no import cycle between modules, imports inside functions included;
* the sub-layers of ``core`` (:data:`CORE_LAYERS`): the flat modules of ``core`` (the physics:
  step times, memory, the colocated and disaggregated instance models, queueing) import none
  of its sub-packages; ``plan`` (plans from a scenario) builds on them, ``verdict`` (rules
  and the one decision) judges results, ``simulate`` (the model's check) may run ``plan``'s
  pick, ``solve`` (a closed loop's or a finite batch's rate, from the plans) sits on both,
  and ``analysis`` (boundaries, sweeps, the figure's data) on everything — no arrow back up;
* dataclasses with :data:`KW_ONLY_FIELDS` fields or more are keyword-only (a call that
  names its fields cannot swap two of them);
* no module over :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "advisor"
MAX_LINES = 700
"""The ceiling on a module's length (one concept per module)."""

LAYERS: dict[str, tuple[str, ...]] = {
    "core": ("core",),
    "loading": ("core", "loading"),
    "render": ("core", "render"),
    "usecases": ("core", "loading", "render", "usecases"),
    "cli": ("core", "loading", "render", "usecases", "cli"),
}
"""Which layers of ``advisor`` each layer may import (the top-level helper modules,
``advisor``, ``advisor.escaping`` and ``advisor.schema_files``, any layer may)."""

CORE_LAYERS: dict[str, tuple[str, ...]] = {
    "": ("",),
    "plan": ("", "plan"),
    "verdict": ("", "verdict"),
    "simulate": ("", "plan", "simulate"),
    "solve": ("", "plan", "simulate", "solve"),
    "analysis": ("", "plan", "verdict", "simulate", "solve", "analysis"),
}
"""Which parts of ``advisor.core`` each part may import ("": the flat modules of ``core``)."""
KW_ONLY_FIELDS = 5
"""Dataclasses with this many fields or more are ``kw_only``."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, imported name or None) of every ``advisor`` import, relative ones
    resolved, at any depth of the module."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base == "advisor" or base.startswith("advisor."):
                out += [(node.lineno, base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, None) for alias in node.names
                    if alias.name.startswith("advisor")]
    return out


def _targets(module: str, name: str | None) -> list[str]:
    """The modules of ``advisor`` an import statement makes this module depend on."""
    if name is not None and f"{module}.{name}" in MODULES:
        return [f"{module}.{name}"]
    return [module] if module in MODULES else []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_scan_sees_the_package() -> None:
    assert len(MODULES) > 60 and "advisor.core.plan.evaluate" in MODULES


@pytest.mark.parametrize("name", sorted(MODULES))
def test_layers(name: str) -> None:
    layer = name.split(".")[1] if name.count(".") >= 1 else ""
    allowed = LAYERS.get(layer)
    if allowed is None:  # advisor/__init__, __main__, schema_files
        return
    bad = [f"line {line}: {module}" for line, module, _ in _imports(name, MODULES[name])
           if module.count(".") >= 1 and module.split(".")[1] in LAYERS
           and module.split(".")[1] not in allowed]
    assert not bad, f"{name} ({layer}) imports outside {allowed}: " + "; ".join(bad)


def _core_part(module: str) -> str | None:
    """The part of ``advisor.core`` a module belongs to ("" for the flat modules), None
    outside ``core``."""
    parts = module.split(".")
    if parts[:2] != ["advisor", "core"]:
        return None
    if len(parts) == 2:
        return ""
    return parts[2] if f"advisor.core.{parts[2]}" in MODULES and (
        PACKAGE / "core" / parts[2]).is_dir() else ""


def test_the_core_parts_are_known() -> None:
    parts = {p.name for p in (PACKAGE / "core").iterdir()
             if p.is_dir() and (p / "__init__.py").exists()}
    assert parts == set(CORE_LAYERS) - {""}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _core_part(m) is not None))
def test_core_sub_layers(name: str) -> None:
    part = _core_part(name)
    assert part is not None
    allowed = CORE_LAYERS[part]
    bad = []
    for line, module, alias in _imports(name, MODULES[name]):
        for target in _targets(module, alias) or [module]:
            where = _core_part(target)
            if where is not None and where not in allowed:
                bad.append(f"line {line}: {target} ({where or 'core'})")
    assert not bad, (f"{name} ({part or 'core'}) imports outside "
                     f"{[a or 'core' for a in allowed]}: " + "; ".join(bad))


def _dataclass_decorator(node: ast.ClassDef) -> ast.expr | None:
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if ast.unparse(target) in ("dataclass", "dataclasses.dataclass"):
            return dec
    return None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_many_field_dataclasses_are_keyword_only(name: str) -> None:
    bad = []
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        dec = _dataclass_decorator(node)
        if dec is None:
            continue
        fields = [s for s in node.body if isinstance(s, ast.AnnAssign)
                  and "ClassVar" not in ast.unparse(s.annotation)]
        kw_only = isinstance(dec, ast.Call) and any(
            k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in dec.keywords)
        if len(fields) >= KW_ONLY_FIELDS and not kw_only:
            bad.append(f"line {node.lineno}: {node.name} ({len(fields)} fields)")
    assert not bad, f"{name}: dataclasses to make kw_only=True: " + "; ".join(bad)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_names_of_other_modules(name: str) -> None:
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    imported: dict[str, str] = {}  # local name → where it comes from
    for line, module, alias_name in _imports(name, path):
        if alias_name is not None and _private(alias_name):
            bad.append(f"line {line}: from {module} import {alias_name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("advisor"):
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("advisor"):
                    imported[alias.asname or alias.name.split(".")[0]] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in imported and _private(node.attr)):
            bad.append(f"line {node.lineno}: {node.value.id}.{node.attr} "
                       f"({imported[node.value.id]})")
    assert not bad, f"{name} uses private names of other modules: " + "; ".join(bad)


def test_no_import_cycles() -> None:
    graph = {name: {t for _, module, alias in _imports(name, path)
                    for t in _targets(module, alias) if t != name}
             for name, path in MODULES.items()}
    # a package's __init__ importing its own submodules is not a cycle worth forbidding,
    # but none of ours does; every edge counts
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles: " + "; ".join(" → ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_length(name: str) -> None:
    lines = MODULES[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines (at most {MAX_LINES})"
