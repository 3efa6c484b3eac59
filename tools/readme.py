"""Regenerate the generated blocks of README.md (never edit them by hand).

    python tools/readme.py            # rewrite the blocks in place
    python tools/readme.py --check    # exit 1 (and say which) when a block is stale

A generated block sits between ``<!-- generated: NAME … -->`` and ``<!-- end: NAME -->``.
One today, ``profiles``: the built-in GPU, interconnect, model and engine profiles, the ones
``pd-advisor profiles list`` lists (without ``--profiles`` or ``$PD_ADVISOR_PROFILES``).
``tests/ecosystem/test_readme.py`` runs :func:`stale` on the committed README.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

README = ROOT / "README.md"
WIDTH = 100
"""Lines of a generated block wrap at this width (as the README's prose does)."""
KINDS = (("gpus", "GPUs", ""), ("interconnects", "Interconnects", "; bandwidths per direction, "
         "per GPU or NIC"), ("models", "Models", ""), ("engines", "Engines", "; engine, versions"))


def profiles_block() -> str:
    """The built-in profiles by kind, as ``pd-advisor profiles list`` enumerates them."""
    from advisor.loading.catalog import ProfileCatalog

    catalog = ProfileCatalog(env={})  # the built-in profiles only
    lines = []
    for kind, title, note in KINDS:
        ids = catalog.ids(kind)
        if kind == "engines":
            shown = []
            for ref in ids:
                profile, _ = catalog.raw(kind, ref)
                spec = f"{getattr(profile, 'engine', ref)}{getattr(profile, 'versions', '')}"
                shown.append(f"`{ref}` (`{spec}`)")
        else:
            shown = [f"`{ref}`" for ref in ids]
        lines.append(textwrap.fill(f"- {title} ({len(ids)}{note}): " + ", ".join(shown) + ".",
                                   WIDTH, subsequent_indent="  ", break_long_words=False,
                                   break_on_hyphens=False))
    return "\n".join(lines)


BLOCKS: dict[str, Callable[[], str]] = {"profiles": profiles_block}
"""Name → the text between the block's markers."""


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name}\b[^>]*-->\n)(.*?)(<!-- end: {name} -->)",
                      re.DOTALL)


def _fresh(name: str) -> str:
    return BLOCKS[name]().rstrip("\n") + "\n"


def _body(text: str, name: str) -> re.Match[str]:
    found = _pattern(name).search(text)
    if found is None:
        raise ValueError(f"README.md has no generated block {name!r}")
    return found


def regenerate(text: str) -> str:
    """``text`` (the README) with every generated block rewritten."""
    for name in BLOCKS:
        found = _body(text, name)
        text = text[:found.start(2)] + _fresh(name) + text[found.end(2):]
    return text


def stale(text: str) -> list[str]:
    """Names of the generated blocks of ``text`` that differ from what they should be."""
    return [name for name in BLOCKS if _body(text, name).group(2) != _fresh(name)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only say whether a block is stale (exit 1 if one is)")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if args.check:
        names = stale(text)
        for name in names:
            print(f"README.md: generated block {name!r} is stale: run python tools/readme.py")
        return 1 if names else 0
    fresh = regenerate(text)
    if fresh != text:
        README.write_text(fresh, encoding="utf-8")
        print("README.md: generated blocks rewritten")
    else:
        print("README.md: generated blocks are current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
