"""The charts' SVG read back as coordinates: where the legend sits and what it draws."""

import xml.etree.ElementTree as ET

from lambdas.weekly_report.charts import line_chart

NS = {"svg": "http://www.w3.org/2000/svg"}
DAYS = ["11-23", "11-24", "11-25", "11-26", "11-27", "11-28", "11-29"]
SERIES: dict[str, list[float | None]] = {
    "resnet-healthy": [1200.0, 1210.0, 1190.0, 1205.0, 1200.0, 1198.0, 1202.0],
    "bert-data-bound": [400.0, 380.0, 410.0, 390.0, None, 405.0, 395.0],
    "gpt-regressing": [900.0, 880.0, 850.0, 800.0, 760.0, 700.0, 650.0],
}

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _box(element: ET.Element) -> Box:
    x, y = float(element.get("x", 0)), float(element.get("y", 0))
    return x, y, x + float(element.get("width", 0)), y + float(element.get("height", 0))


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _chart() -> ET.Element:
    return ET.fromstring(line_chart("Training throughput by job", DAYS, SERIES, unit="/s"))


def _plot_area(svg: ET.Element) -> Box:
    """The axes' box: the y axis's x and its span, the x axis's right end."""
    y_axis, x_axis = svg.findall("svg:line", NS)[:2]
    return (
        float(y_axis.get("x1", 0)),
        float(y_axis.get("y1", 0)),
        float(x_axis.get("x2", 0)),
        float(y_axis.get("y2", 0)),
    )


def test_the_legend_is_outside_the_plot_area_and_inside_the_chart() -> None:
    svg = _chart()
    legend = svg.find("svg:g[@class='legend']", NS)
    assert legend is not None
    frame = legend.find("svg:rect[@class='legend-box']", NS)
    assert frame is not None
    box, plot = _box(frame), _plot_area(svg)
    assert plot == (48.0, 28.0, 628.0, 204.0)
    assert not _overlap(box, plot)
    # Every sample and name lies in the legend's box, and the box in the chart.
    for element in legend.iter():
        for axis, (low, high) in (("x", (box[0], box[2])), ("y", (box[1], box[3]))):
            for name in (axis, f"{axis}1", f"{axis}2", f"c{axis}"):
                if element.get(name) is not None:
                    assert low <= float(element.get(name, 0)) <= high, (element.tag, name)
    _, _, width, height = (float(v) for v in svg.get("viewBox", "").split())
    assert box[2] <= width
    assert box[3] <= height
    # The names are all there, under the x axis's labels.
    names = [t.text for t in legend.findall("svg:text", NS)]
    assert names == list(SERIES)


def test_each_legend_sample_draws_its_series_marker() -> None:
    legend = _chart().find("svg:g[@class='legend']", NS)
    assert legend is not None
    # Series alternate circle and square markers on their points; the legend shows which.
    assert len(legend.findall("svg:circle", NS)) == 2  # the first and third series
    squares = [r for r in legend.findall("svg:rect", NS) if r.get("class") != "legend-box"]
    assert len(squares) == 1
    assert squares[0].get("fill") == "#c2571a"  # the second series' colour


def test_every_series_of_a_chart_has_its_own_colour_past_the_palette() -> None:
    names = [f"job-{i}" for i in range(40)]
    svg = ET.fromstring(line_chart("Jobs", DAYS[:2], {n: [1.0, 2.0] for n in names}))
    strokes = [p.get("stroke") for p in svg.findall("svg:polyline", NS)]
    assert len(strokes) == 40
    assert len(set(strokes)) == 40
    # The legend draws each in its line's colour.
    legend = svg.find("svg:g[@class='legend']", NS)
    assert legend is not None
    assert [line.get("stroke") for line in legend.findall("svg:line", NS)] == strokes
