"""One colour per plan in a drawn figure (#28): a check shared by the report's figure and the
sweep's."""

from __future__ import annotations

from typing import Any


def colors_of(artist: Any) -> set[str]:
    """Every colour an artist paints with (lines, markers, faces, edges, text), as hex."""
    from matplotlib.collections import Collection
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    raw: list[Any] = []
    if isinstance(artist, Line2D):
        raw = [artist.get_color(), artist.get_markeredgecolor(), artist.get_markerfacecolor()]
    elif isinstance(artist, Patch):
        raw = [artist.get_facecolor(), artist.get_edgecolor()]
    elif isinstance(artist, Collection):
        raw = [*artist.get_facecolors(), *artist.get_edgecolors()]
    elif isinstance(artist, Text) and artist.get_text():
        raw = [artist.get_color()]
    out = set()
    for c in raw:
        if isinstance(c, str) and c.lower() in ("none", "auto"):
            continue
        if not isinstance(c, str) and len(c) == 4 and c[3] == 0:  # fully transparent
            continue
        out.add(to_hex(c))
    return out


def plan_panels(fig: Any) -> dict[str, set[int]]:
    """Check that every artist drawn for a plan (gid ``plan:KEY``) has that plan's colour and
    no other plan's, and that nothing else uses a plan's colour; return, per plan, the panels
    (axes, or the figure for its legend) it is drawn in."""
    from matplotlib.colors import to_hex

    from advisor.render.figure_style import PLAN_COLORS, PLAN_STYLE

    plan_of = {to_hex(color): plan for plan, color in PLAN_COLORS.items()}
    tints = {to_hex(style.tint): plan for plan, style in PLAN_STYLE.items()}
    seen: dict[str, set[int]] = {plan: set() for plan in PLAN_COLORS}
    for artist in fig.findobj():
        gid = artist.get_gid() or ""
        colors = colors_of(artist)
        used = {plan_of[c] for c in colors if c in plan_of} | {
            tints[c] for c in colors if c in tints}
        if gid.startswith("plan:"):
            plan = gid.removeprefix("plan:")
            mine = {to_hex(PLAN_COLORS[plan]), to_hex(PLAN_STYLE[plan].tint)}
            assert colors & mine, (gid, colors)
            assert used == {plan}, (gid, colors)
            seen[plan].add(id(artist.axes if artist.axes is not None else artist.figure))
        else:
            assert not used, (type(artist).__name__, gid, colors)
    return seen
