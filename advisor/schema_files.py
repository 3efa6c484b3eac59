"""The print / ``--write`` / ``--check`` command shared by the committed JSON Schemas."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def schema_file_main(argv: Sequence[str] | None, prog: str, description: str, path: Path,
                     text: str, source: str) -> int:
    """Print ``text``, write it to ``path`` or check that ``path`` holds it; the exit code.

    ``source`` names what the schema is generated from (shown in ``--check`` help).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"write {path.name}")
    group.add_argument("--check", action="store_true",
                       help=f"exit 1 if the committed schema differs from {source}")
    args = parser.parse_args(argv)
    if args.write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            print(f"{path} is out of date; run `python -m {prog.split()[-1]} --write`",
                  file=sys.stderr)
            return 1
        print(f"{path} is up to date", file=sys.stderr)
        return 0
    sys.stdout.write(text)
    return 0
