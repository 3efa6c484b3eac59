"""The errors of profile lookup and validation (the catalog's, and the Hugging Face
config reader's, which the catalog calls)."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.escaping import visible

KIND_SINGULAR = {"gpus": "GPU", "interconnects": "interconnect", "models": "model",
                 "engines": "engine"}
"""How error messages name one profile of each kind."""

YAML_SUFFIXES = (".yaml", ".yml")
"""File suffixes of YAML profiles."""


def looks_like_path(ref: str) -> bool:
    """Whether a reference names a file rather than an id."""
    return (ref.lower().endswith((*YAML_SUFFIXES, ".json")) or "/" in ref or os.sep in ref
            or (os.altsep is not None and os.altsep in ref))


class ProfileNotFoundError(LookupError):
    """No profile of ``kind`` has the id (or no file exists at the path) ``ref``."""

    def __init__(self, kind: str | None, ref: str, suggestions: list[str]) -> None:
        self.kind = kind
        self.ref = ref
        self.suggestions = list(suggestions)
        what = f"{KIND_SINGULAR[kind]} profile" if kind in KIND_SINGULAR else "profile"
        shown = visible(ref)  # one line, whatever the ref holds
        if looks_like_path(ref):
            message = f"no {what} file at '{shown}'"
        elif self.suggestions:
            message = f"unknown {what} '{shown}'; did you mean: {', '.join(self.suggestions)}?"
        else:
            listing = f" {kind}" if kind in KIND_SINGULAR else ""
            message = (f"unknown {what} '{shown}' "
                       f"(see `pd-advisor profiles list{listing}`)")
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class EngineVersionError(LookupError):
    """No engine profile of an engine covers the requested version."""

    def __init__(self, engine: str, version: str, families: list[tuple[str, str]]) -> None:
        self.engine = engine
        self.version = version
        self.families = list(families)
        listing = "; ".join(f"{pid} {versions}" for pid, versions in families) or "none"
        super().__init__(f"no {engine} engine profile covers version '{version}' "
                         f"(families: {listing})")

    def __str__(self) -> str:
        return str(self.args[0])


class ProfileInvalidError(ValueError):
    """A profile file could not be read or failed validation.

    ``problems`` holds one line per error, each ``LINE:COL: dotted.key: message`` (or
    ``dotted.key: message`` when no position is known); ``str()`` prefixes every line with
    the file path.
    """

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = Path(path)
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        """One line per problem, each escaped (:func:`advisor.escaping.visible`): a line break
        in the path or a problem stays on its line."""
        path = visible(str(self.path))
        lines = [f"invalid profile {path}:"]
        lines += [f"  {path}:{visible(p)}" if p[:1].isdigit() else f"  {path}: {visible(p)}"
                  for p in self.problems]
        return "\n".join(lines)
