"""JUnit XML for a check run: one test suite per file, one test case per file × check.

The checks are :data:`~advisor.render.report_json.GATE_CHECKS`; a check with findings is a
``<failure>``, a file that could not be evaluated has one ``<error>`` case instead, and a
check that does not apply (the split of a colocated deployment) is ``<skipped>``. Built with
:mod:`xml.etree.ElementTree`, so every attribute and text is escaped; characters XML 1.0
cannot hold at all (control characters that input problems may quote from a workload file)
are written as Python-style escapes (``\\x08``) first. Pure: returns a string.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from advisor.render.report_json import GATE_CHECK_TITLES, GATE_CHECKS, as_check

if TYPE_CHECKING:
    from advisor.render.document import CheckRun, Document, FileEntry

_DISAGG_ONLY = ("preconditions", "split")

_NOT_XML_RE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character outside XML 1.0's ``Char`` production."""


def xml_safe(value: Any) -> Any:
    """``value`` (a document or any part of it) with every string made XML 1.0 clean."""
    if isinstance(value, str):
        return _NOT_XML_RE.sub(lambda m: repr(m.group(0))[1:-1], value)
    if isinstance(value, Mapping):
        return {key: xml_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [xml_safe(item) for item in value]
    return value


def _suite(f: FileEntry) -> ET.Element:
    suite = ET.Element("testsuite", name=f["path"])
    cases = failures = errors = skipped = 0
    report = f["report"]
    deployed = report.get("deployed") if report is not None else None
    if deployed is None:
        case = ET.SubElement(suite, "testcase", classname=f["path"], name="evaluate")
        message = "; ".join(
            f"{p['path']}:{p['line']}:{p['col']}: {p['key'] + ': ' if p['key'] else ''}"
            f"{p['message']}" for p in f["problems"])
        error = ET.SubElement(case, "error", message=message, type="input-error")
        error.text = message
        cases, errors = 1, 1
    else:
        mode = deployed["mode"]
        for check in GATE_CHECKS:
            case = ET.SubElement(suite, "testcase", classname=f["path"], name=check)
            cases += 1
            found = [x for x in f["findings"] if x["check"] == check]
            if found:
                message = "; ".join(x["message"] for x in found)
                failure = ET.SubElement(case, "failure", message=message, type=found[0]["id"])
                failure.text = "\n".join(
                    f"{x.get('path', f['path'])}:{x['line']}:{x['col']}: {x['key']}: "
                    f"[{x['id']}] {x['message']}"
                    for x in found)
                failures += 1
            elif check in _DISAGG_ONLY and mode != "disaggregated":
                ET.SubElement(case, "skipped", message="applies to disaggregated deployments")
                skipped += 1
            else:
                out = ET.SubElement(case, "system-out")
                out.text = f"passed: {GATE_CHECK_TITLES[check]}"
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return suite


def render_junit(report: Document) -> str:
    """The JUnit XML document."""
    doc: CheckRun = xml_safe(report if report["kind"] == "check" else as_check(report))
    root = ET.Element("testsuites", name="pd-advisor check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for f in doc["files"]:
        suite = _suite(f)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
