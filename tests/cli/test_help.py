"""Help that reads well (issue #18, item 4), checked on the rendered help pages.

* Rich markup does not eat help text: every option's help and every command's description
  appears in its help page as written (``pip install 'pd-advisor[plot]'`` keeps ``[plot]``).
* A flag (an option that takes no value) shows no type: the row reads ``--version  Print the
  version and exit.``, not ``--version <bool> ...``.
* ``pd-advisor --help`` lists the commands in the order a user meets them.

The pages are rendered by the real app through ``CliRunner`` (no colour, as in conftest.py)
and parsed from their text; the parameters each page must show come from the Click command
tree Typer builds, so a new command or option is covered without editing this file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from advisor.cli import app as app_module
from advisor.cli import commands

HELP_ORDER = ["recommend", "check", "sweep", "simulate", "fit", "init", "validate", "calibrate",
              "profiles", "schema"]
"""The order a user meets the commands: decide, gate, explore, verify (and fit the simulator);
start a file, validate it, calibrate it; the reference commands last. A new command must be
placed here (and in ``commands.MODULES``) deliberately."""

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}
BOX = re.compile(r"[\s│╭╮╰╯─]+")


def _command_tree() -> Iterator[tuple[tuple[str, ...], Any]]:
    """(argv path, Click command) of the root and of every command and subcommand."""
    root = typer.main.get_command(app_module.make_app())

    def walk(path: tuple[str, ...], command: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk((*path, name), sub)

    yield from walk((), root)


PAGES = [path for path, _ in _command_tree()]


def _help(path: tuple[str, ...]) -> str:
    """The help page, wide enough that no table cell wraps (a wrapped type column would
    interleave with the help column)."""
    result = CliRunner().invoke(app_module.make_app(), [*path, "--help"], env=WIDE,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _squash(text: str) -> str:
    """Text without whitespace and panel borders, so wrapped help compares with its source."""
    return BOX.sub("", text)


def _panel_rows(page: str, title: str) -> list[str]:
    """The inner text of each line of the panels called ``title`` (e.g. Options)."""
    rows: list[str] = []
    inside = False
    for line in page.splitlines():
        if line.startswith(f"╭─ {title} "):
            inside = True
        elif line.startswith("╰"):
            inside = False
        elif inside and line.startswith("│"):
            rows.append(line[1:].rstrip().removesuffix("│"))
    return rows


@pytest.fixture(scope="module")
def pages() -> dict[tuple[str, ...], str]:
    return {path: _help(path) for path in PAGES}


def test_every_page_is_checked() -> None:
    """The tree holds the root, every command of ``commands.MODULES`` and the profiles
    subcommands, so the tests below cover each help page."""
    top = {path[0] for path in PAGES if len(path) == 1}
    assert top == set(commands.NAMES)
    assert ("profiles", "list") in PAGES and () in PAGES


def test_commands_listed_in_the_order_a_user_meets_them(
        pages: dict[tuple[str, ...], str]) -> None:
    rows = _panel_rows(pages[()], "Commands")
    listed = [row.split()[0] for row in rows if row[:2].strip() and not row.startswith("  ")]
    assert set(commands.NAMES) <= set(HELP_ORDER), (
        f"place {sorted(set(commands.NAMES) - set(HELP_ORDER))} in HELP_ORDER")
    assert listed == [name for name in HELP_ORDER if name in commands.NAMES]
    # `pd-advisor` alone prints the same list
    bare = CliRunner().invoke(app_module.make_app(), [], env=WIDE)
    assert _panel_rows(bare.stdout, "Commands") == rows


@pytest.mark.parametrize("path", PAGES, ids=lambda p: " ".join(p) or "(root)")
def test_flags_show_no_type(path: tuple[str, ...], pages: dict[tuple[str, ...], str]) -> None:
    """Each flag's row is its names followed directly by its help, no ``<bool>`` between."""
    page = pages[path]
    assert "<bool>" not in page
    command = dict(_command_tree())[path]
    ctx = command.make_context("pd-advisor", ["--help"], resilient_parsing=True)
    rows = _panel_rows(page, "Options")
    flags = [p for p in command.get_params(ctx) if getattr(p, "is_flag", False) and not p.hidden]
    assert any("--help" in flag.opts for flag in flags)
    for flag in flags:
        names = ([o for o in flag.opts if o.startswith("--")]
                 + [o for o in flag.opts if not o.startswith("--")]
                 + [o for o in flag.secondary_opts if o.startswith("--")]
                 + [o for o in flag.secondary_opts if not o.startswith("--")])
        first_word = (flag.help or "").split()[0]
        pattern = (r"^\s*\*?\s*" + r"\s+".join(map(re.escape, names)) + r"\s+"
                   + re.escape(first_word) + r"(\s|$)")
        assert any(re.match(pattern, row) for row in rows), (
            f"{' '.join(path)}: no row '{' '.join(names)}  {first_word} ...' in\n"
            + "\n".join(rows))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: " ".join(p) or "(root)")
def test_markup_does_not_eat_help_text(path: tuple[str, ...],
                                       pages: dict[tuple[str, ...], str]) -> None:
    """Every parameter's help, and the command's own description, appear as written; help
    text escapes a literal ``[`` as ``\\[`` for Rich, which prints ``[``."""
    page = _squash(pages[path])
    command = dict(_command_tree())[path]
    texts = [p.help for p in command.params if getattr(p, "help", None) and not p.hidden]
    if command.help:
        texts.append(command.help)
    assert texts
    for text in texts:
        literal = text.replace("\\[", "[")
        assert _squash(literal) in page, f"{' '.join(path)}: {literal!r} not shown as written"


def test_plot_extra_is_visible(pages: dict[tuple[str, ...], str]) -> None:
    """The one help text with brackets today (rich used to print ``'pd-advisor'``)."""
    assert _squash("pip install 'pd-advisor[plot]'") in _squash(pages[("sweep",)])
