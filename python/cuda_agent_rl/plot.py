"""The reward curve of a GRPO run as a self-contained SVG (no plotting library): the mean reward
of each step over all tasks, a moving average, and one thin line per task.

    python -m cuda_agent_rl.plot RUN/steps.jsonl docs/toy_rl_reward.svg --title "..."
"""

from __future__ import annotations

import argparse
import html
import json
from pathlib import Path

WIDTH, HEIGHT = 720, 360
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 40, 50
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def moving_average(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for index, value in enumerate(values):
        total += value
        if index >= window:
            total -= values[index - window]
        out.append(total / min(index + 1, window))
    return out


def render(steps: list[dict], title: str, window: int = 10) -> str:
    """The SVG text of the steps' rewards (steps without a mean reward are left out)."""
    rows = [row for row in steps if row.get("mean_reward") is not None]
    if not rows:
        raise ValueError("no step has a mean reward to plot")
    xs = [row["step"] for row in rows]
    series = {"mean (all tasks)": [row["mean_reward"] for row in rows]}
    for task in rows[0].get("per_task", {}):
        series[task] = [row["per_task"].get(task) if row["per_task"].get(task) is not None else row["mean_reward"]
                        for row in rows]
    values = [v for line in series.values() for v in line]
    low, high = min(values + [0.0]), max(values + [0.0])
    if high - low < 1e-9:
        high = low + 1.0
    x_low, x_high = min(xs), max(max(xs), min(xs) + 1)

    def px(x: float) -> float:
        return LEFT + (x - x_low) / (x_high - x_low) * (WIDTH - LEFT - RIGHT)

    def py(y: float) -> float:
        return TOP + (high - y) / (high - low) * (HEIGHT - TOP - BOTTOM)

    def path(points: list[float]) -> str:
        return " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, points, strict=False))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{LEFT}" y="22" font-size="14">{_escape(title)}</text>']
    for tick in range(5):
        y = low + (high - low) * tick / 4
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    for tick in range(6):
        x = x_low + (x_high - x_low) * tick / 5
        parts.append(f'<text x="{px(x):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{x:.0f}</text>')
    parts.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 12}" text-anchor="middle">GRPO step</text>')
    middle = (TOP + HEIGHT - BOTTOM) / 2
    parts.append(f'<text x="16" y="{middle}" transform="rotate(-90 16 {middle})" '
                 'text-anchor="middle">reward</text>')
    legend_y = TOP
    for index, (name, line) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        if index == 0:
            parts.append(f'<polyline fill="none" stroke="#aaa" stroke-width="1" points="{path(line)}"/>')
            smooth = moving_average(line, window)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2.5" points="{path(smooth)}"/>')
            label = f"{name}, {window}-step mean"
        else:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" opacity="0.8" '
                         f'points="{path(moving_average(line, window))}"/>')
            label = name
        parts.append(f'<rect x="{WIDTH - RIGHT + 10}" y="{legend_y - 9}" width="12" height="3" fill="{colour}"/>')
        parts.append(f'<text x="{WIDTH - RIGHT + 26}" y="{legend_y - 4}">{_escape(label)}</text>')
        legend_y += 18
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _escape(text: str) -> str:
    return html.escape(text, quote=True)  # & < > " ' as the C++ pages' HtmlEscape (common/text.h)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="reward curve of a GRPO run as SVG")
    parser.add_argument("steps", help="steps.jsonl of a run")
    parser.add_argument("svg", help="where to write the SVG")
    parser.add_argument("--title", default="GRPO on the real judge")
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args(argv)
    steps = [json.loads(line) for line in Path(args.steps).read_text().splitlines() if line.strip()]
    Path(args.svg).write_text(render(steps, args.title, args.window))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
