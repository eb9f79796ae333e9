"""Charts as inline SVG: drawn in Python with no library, no script and no font fetched, so
the report renders the same offline, in a mail client's browser, and in print.

Each chart has a title and a text description for screen readers, lines differ by dash
pattern and marker as well as colour, the legend (below the plot, never over the data) shows
all three, and the report puts the numbers in a table beside it.
"""

from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 28, 36
#: Twelve colours dark enough to read on white, then (``series_colour``) as many more as a chart has
#: series: a job's line is never drawn in another job's colour.
COLOURS = (
    "#1f5fa8", "#c2571a", "#2e8540", "#7b3fa0", "#8a6d00", "#b3003c",
    "#00838f", "#6d4c41", "#c71585", "#455a64", "#332288", "#5c6b00",
)  # fmt: skip
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4")
#: The golden angle in degrees: consecutive hues past the palette land far apart.
_GOLDEN_ANGLE = 137.508
#: The legend, under the x axis's labels: rows of this many entries, each row this high.
LEGEND_COLUMNS, LEGEND_ROW = 2, 14
LEGEND_TOP = HEIGHT - BOTTOM + 22


def _frame(title: str, description: str, body: str, height: int = HEIGHT) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" class="chart">'
        f"<title>{escape(title)}</title><desc>{escape(description)}</desc>"
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>'
        f'<text x="{LEFT}" y="18" font-size="13" font-family="sans-serif">{escape(title)}</text>'
        f"{body}</svg>"
    )


def _axes(labels: Sequence[str], y_max: float, unit: str) -> str:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
        f'y2="{HEIGHT - BOTTOM}" stroke="#555"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end" '
            f'font-family="sans-serif">{y_max * fraction:,.0f}{escape(unit)}</text>'
        )
    step = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    for i, label in enumerate(labels):
        x = LEFT + step * (i + 0.5)
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" font-size="10" text-anchor="middle" '
            f'font-family="sans-serif">{escape(label)}</text>'
        )
    return "".join(parts)


def series_colour(n: int) -> str:
    """Series ``n``'s colour: the palette's, then hues a golden angle apart at two lightnesses
    (``hsl()``, which SVG and every browser read), none repeated."""
    if n < len(COLOURS):
        return COLOURS[n]
    extra = n - len(COLOURS)
    return f"hsl({extra * _GOLDEN_ANGLE % 360:.1f},70%,{32 + 10 * (extra % 2)}%)"


def _marker(n: int, x: float, y: float, colour: str) -> str:
    """Series alternate circle and square markers, so points differ by shape too."""
    if n % 2 == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>'
    return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="{colour}"/>'


def _legend(names: Sequence[str]) -> tuple[str, int]:
    """The legend below the plot area, each sample drawn as its series is (colour, dash,
    marker); and the chart's height with it."""
    if not names:
        return "", HEIGHT
    rows = -(-len(names) // LEGEND_COLUMNS)
    column = (WIDTH - LEFT - RIGHT) / LEGEND_COLUMNS
    bottom = LEGEND_TOP + LEGEND_ROW * rows + 4
    parts = [
        f'<g class="legend"><rect class="legend-box" x="{LEFT}" y="{LEGEND_TOP}" '
        f'width="{WIDTH - LEFT - RIGHT}" height="{bottom - LEGEND_TOP}" fill="none" '
        'stroke="#ddd"/>'
    ]
    for n, name in enumerate(names):
        colour, dash = series_colour(n), DASHES[n % len(DASHES)]
        x = LEFT + 6 + column * (n % LEGEND_COLUMNS)
        y = LEGEND_TOP + 2 + LEGEND_ROW * (n // LEGEND_COLUMNS) + LEGEND_ROW / 2
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 24:.1f}" y2="{y:.1f}" stroke="{colour}" '
            f'stroke-width="2" stroke-dasharray="{dash}"/>{_marker(n, x + 12, y, colour)}'
            f'<text x="{x + 28:.1f}" y="{y + 4:.1f}" font-size="10" '
            f'font-family="sans-serif">{escape(name)}</text>'
        )
    parts.append("</g>")
    return "".join(parts), bottom + 4


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    unit: str = "",
    y_max: float | None = None,
) -> str:
    values = [v for s in series.values() for v in s if v is not None]
    top = y_max if y_max is not None else (max(values) * 1.1 if values else 1.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(1, len(labels))
    parts = [_axes(labels, top, unit)]
    for n, points in enumerate(series.values()):
        coordinates = [
            (LEFT + step * (i + 0.5), TOP + plot_h * (1 - min(v, top) / top))
            for i, v in enumerate(points)
            if v is not None
        ]
        colour, dash = series_colour(n), DASHES[n % len(DASHES)]
        # A marker at each point: a single day still shows, and points differ by shape too.
        parts += [_marker(n, x, y, colour) for x, y in coordinates]
        if coordinates:
            points_attr = " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates)
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                f'stroke-dasharray="{dash}" points="{points_attr}"/>'
            )
    legend, height = _legend(list(series))
    parts.append(legend)
    description = "; ".join(
        f"{name}: " + ", ".join("no data" if v is None else f"{v:,.1f}{unit}" for v in points)
        for name, points in series.items()
    )
    return _frame(title, description or "no data", "".join(parts), height)


def bar_chart(title: str, labels: Sequence[str], values: Sequence[float], *, unit: str = "") -> str:
    top = (max(values) * 1.1 if values else 1.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(1, len(labels))
    parts = [_axes(labels, top, unit)]
    for i, value in enumerate(values):
        h = plot_h * value / top
        parts.append(
            f'<rect x="{LEFT + step * i + step * 0.2:.1f}" y="{TOP + plot_h - h:.1f}" '
            f'width="{step * 0.6:.1f}" height="{h:.1f}" fill="{COLOURS[0]}"/>'
            f'<text x="{LEFT + step * (i + 0.5):.1f}" y="{TOP + plot_h - h - 3:.1f}" '
            f'font-size="10" text-anchor="middle" font-family="sans-serif">{value:,.0f}</text>'
        )
    description = ", ".join(
        f"{label}: {value:,.1f}{unit}" for label, value in zip(labels, values, strict=True)
    )
    return _frame(title, description or "no data", "".join(parts))
