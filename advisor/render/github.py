"""GitHub Actions workflow commands (annotations) for a check run.

Each file is wrapped in ``::group::`` … ``::endgroup::``; every finding and input problem
becomes ``::error file=…,line=…,col=…,title=…::message`` at the offending key of the YAML (for
a deployment read from Kubernetes manifests, the manifest line the key was read from);
warnings about a disaggregated deployment become ``::warning``; a summary line closes the
output. An annotation does not fail the job — the exit code does. Pure: returns a string.

Escaping follows the runner's rules: property values escape ``%``, CR, LF, ``:`` and ``,``;
message data escapes ``%``, CR and LF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.render import numbers as n
from advisor.render.report_json import as_check

if TYPE_CHECKING:
    from advisor.render.document import Document, FileEntry


def escape_data(value: str) -> str:
    """Escape message data (after ``::``): ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a property value: as data, plus ``:`` → ``%3A`` and ``,`` → ``%2C``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: object) -> str:
    """One workflow command line, e.g. ``::error file=a.yaml,line=3,col=5::message``."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{level}{' ' + props if props else ''}::{escape_data(message)}"


def _file_lines(f: FileEntry) -> list[str]:
    path = f["path"]
    lines = [command("group", f"pd-advisor check {path}: {f['status']}")]
    for finding in f["findings"]:
        lines.append(command("error", finding["message"], file=finding.get("path", path),
                             line=finding["line"], col=finding["col"],
                             title=f"pd-advisor {finding['id']}"))
    for p in f["problems"]:
        key = f"{p['key']}: " if p["key"] else ""
        lines.append(command("error", key + p["message"], file=p["path"], line=p["line"],
                             col=p["col"], title="pd-advisor could not evaluate"))
    for w in f["warnings"]:
        lines.append(command("warning", w["message"], file=w.get("path", path), line=w["line"],
                             col=w["col"],
                             title=f"pd-advisor {w['id']}"))
    report = f["report"]
    deployed = report.get("deployed") if report is not None else None
    if f["status"] == "pass" and report is not None and deployed is not None:
        lines.append(f"pd-advisor: {path} passes (verdict {report['verdict']}, deployed "
                     f"{deployed['mode']})")
    lines.append("::endgroup::")
    return lines


def render_github(report: Document) -> str:
    """Annotations for a check run (a recommendation is treated as a one-file run)."""
    doc = report if report["kind"] == "check" else as_check(report)
    lines: list[str] = []
    for f in doc["files"]:
        lines += _file_lines(f)
    counts = doc["counts"]
    lines.append(f"pd-advisor: {n.counted(counts['files'], 'file')}, "
                 f"{n.count(counts['passed'])} passed, {n.count(counts['failed'])} failed, "
                 f"{n.count(counts['errors'])} could not be evaluated")
    return "\n".join(lines) + "\n"
