"""One workload file → its recommendation document (``recommend``) or check entry (``check``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.usecases.result_cache import ResultCache, Status, through

if TYPE_CHECKING:
    from advisor.core.analysis.figure_data import FigureData
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.manifests import ManifestDeployment, ManifestRef
    from advisor.loading.yaml_source import YamlDocument
    from advisor.render.document import FileEntry
    from advisor.render.document import Recommendation as Report

Locator = Callable[[str], tuple[int, int]]
"""A dotted workload key (``deployment.mode``) → its 1-based ``(line, col)``."""


def internal_error(exc: BaseException) -> str:
    """One line describing an unexpected exception (the traceback needs ``--debug``)."""
    return (f"internal error: {type(exc).__name__}: {exc} "
            "(run with --debug for the traceback)")


@dataclass(frozen=True)
class Recommendation:
    """One workload's report, its parsed YAML and (when asked) the figure's data."""

    report: Report
    document: YamlDocument
    figure: FigureData | None = None
    manifest: ManifestDeployment | None = None
    """The deployment read from Kubernetes manifests (``deployment.from`` or ``check
    MANIFEST``), with where each key came from."""


def build_file_report(path: Path, catalog: ProfileCatalog, display: str | None = None,
                      boundaries: bool = True) -> tuple[Report, YamlDocument]:
    """Load, evaluate and decide one workload; return its report and parsed YAML.

    ``display`` is the path shown in the report (default: the path as given);
    ``boundaries`` adds the verdict boundaries (``check`` skips them). Raises
    ``InputError`` for anything wrong with the file or the profiles it names.
    """
    rec = build_recommendation(path, catalog, display, boundaries)
    return rec.report, rec.document


def build_recommendation(path: Path, catalog: ProfileCatalog, display: str | None = None,
                         boundaries: bool = True, figure: bool = False,
                         manifests: Sequence[ManifestRef] | None = None) -> Recommendation:
    """:func:`build_file_report`, and with ``figure`` the data of the report's figure
    (``core.analysis.figure_data``; its curves use the phase that binds the recommended
    architecture)."""
    from advisor.core.plan.capacities import Capacities
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.verdict.decision import decide
    from advisor.loading.resolve import load_workload
    from advisor.render.report_json import build_report

    loaded = load_workload(path, catalog, manifests)
    scenario, document = loaded.scenario, loaded.document
    caps = Capacities(scenario)  # one set of capacity tables for the model and the searches
    model = evaluate(scenario, caps)
    decision = decide(scenario, model)
    if boundaries:  # ``check`` skips the searches, and does not load them
        from advisor.core.analysis.boundaries import searched

        decision = searched(scenario, decision, caps)
    shown = str(path) if display is None else display
    report = build_report(scenario, decision, shown, document.sha256)
    fig = None
    if figure:
        from advisor.core.analysis.figure_data import figure_data

        phase = (model.disaggregated_phase if decision.verdict == "disaggregate"
                 else model.colocated_phase)
        fig = figure_data(scenario, model, caps, phase)
    return Recommendation(report, document, fig, loaded.manifest)


def locator(document: YamlDocument) -> Locator:
    """``dotted key -> (line, col)`` in ``document``, pointing at the key itself (1:1 if
    absent)."""

    def locate(key: str) -> tuple[int, int]:
        if not key:
            return (1, 1)
        loc = tuple(int(part) if part.isdigit() else part for part in key.split("."))
        return document.locate(loc, at_key=True)

    return locate


def check_file(path: Path, catalog: ProfileCatalog, reraise: bool = False,
               values_kind: str | None = None) -> tuple[FileEntry, list[Any]]:
    """One file's check entry and its input problems (``InputProblem``; empty when it was
    evaluated). The file is a workload, or a Kubernetes manifest whose
    ``# pd-advisor: workload=`` comment names its workload (``values_kind``: how to read Helm
    values). A file that cannot be evaluated becomes an error entry; an unexpected exception
    too (one broken file must not hide the others), unless ``reraise``."""
    from advisor.loading.errors import InputError, InputProblem
    from advisor.render.report_json import check_entry, check_error_entry
    from advisor.usecases.manifest_check import manifest_findings, pairing

    try:
        workload, refs = pairing(path, values_kind)
        rec = build_recommendation(workload, catalog, boundaries=False, manifests=refs)
    except InputError as exc:
        return check_error_entry(str(path), exc.problems), list(exc.problems)
    except Exception as exc:
        if reraise:
            raise
        problems = [InputProblem(path=str(path), line=1, col=1, key="",
                                 message=internal_error(exc))]
        return check_error_entry(str(path), problems), problems
    if rec.manifest is None:
        entry = check_entry(rec.report, locator(rec.document))
    else:
        entry = manifest_findings(rec.report, rec.document, rec.manifest, str(path),
                                  locator(rec.document))
    return entry, entry_problems(entry)


def entry_problems(entry: FileEntry) -> list[Any]:
    """The ``InputProblem`` of each problem a check entry holds."""
    from advisor.loading.errors import InputProblem

    return [InputProblem(path=p["path"], line=p["line"], col=p["col"], key=p["key"],
                         message=p["message"])
            for p in entry["problems"]]


def cached_check_file(path: Path, catalog: ProfileCatalog, cache: ResultCache,
                      reraise: bool = False, values_kind: str | None = None
                      ) -> tuple[FileEntry, list[Any], Status]:
    """:func:`check_file` through the result cache (``usecases/result_cache.py``); an entry
    that could not be evaluated is never stored. Also says whether it was a hit."""

    def compute() -> tuple[Any, bool]:
        entry, _ = check_file(path, catalog, reraise, values_kind)
        return entry, entry["status"] != "error"

    entry, status = through(cache, "check", path, {"values_kind": values_kind}, compute,
                            keys=("path", "status", "problems"))
    return entry, entry_problems(entry), status


def cached_report(path: Path, catalog: ProfileCatalog, cache: ResultCache,
                  svg: Callable[[Recommendation], tuple[str | None, str | None]] | None = None,
                  boundaries: bool = True) -> tuple[dict[str, Any], Status]:
    """``recommend``'s report through the result cache: ``{"report": …, "svg": …, "note":
    …}``. With ``svg`` (the HTML report) the figure is drawn on a miss, ``svg(rec)`` giving
    the SVG or the note that replaces it; a note (matplotlib missing) is never stored.
    ``boundaries``: search the verdict boundaries (a report without them, for an output that
    shows none, is stored apart)."""

    def compute() -> tuple[Any, bool]:
        rec = build_recommendation(path, catalog, boundaries=boundaries,
                                   figure=svg is not None)
        image, note = svg(rec) if svg is not None else (None, None)
        return {"report": rec.report, "svg": image, "note": note}, note is None

    options = {"html": svg is not None,
               "matplotlib": _matplotlib_version() if svg is not None else "",
               "boundaries": boundaries}
    return through(cache, "recommend", path, options, compute,
                   keys=("report", "svg", "note"))


def _matplotlib_version() -> str:
    """The installed matplotlib's version ("" without it), not importing it: the HTML
    report's figure depends on it."""
    import sys

    loaded: object = sys.modules.get("matplotlib", sys)
    if loaded is None:
        return ""  # imports of it blocked
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("matplotlib")
    except PackageNotFoundError:
        return ""
