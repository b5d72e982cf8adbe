"""Report figures rendered with matplotlib (Agg) into PNG bytes.

Every function returns the PNG of one figure, or None when the data for it is absent
(the caller says so in the text). Frames: box and pusher positions are in the arm base
frame (x away from the arm, y to its left), m; plotted in cm.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim2real.trials import JOINT_NAMES, TrialRecord, tilt_deg

#: File name prefix of every figure a report writes.
FIGURE_PREFIX = "fig_"


def safe_name(name: str) -> str:
    """``name`` with every character but letters, digits, ``-``, ``_`` and ``.`` replaced by ``_`` (for file names)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

PLATFORM_STYLE: dict[str, dict[str, Any]] = {
    "real": {"color": "#1f77b4", "label": "real"},
    "sim": {"color": "#d62728", "label": "sim"},
}
REFERENCE_STYLE: dict[str, Any] = {"color": "#444444", "linestyle": "--", "label": "reference"}
DPI = 90
#: Fixed layouts of the per-trial figures (see :func:`_png`).
JOINT_GRID_MARGINS = {"left": 0.08, "right": 0.99, "bottom": 0.1, "top": 0.87, "wspace": 0.28, "hspace": 0.28}
BOX_MARGINS = {"left": 0.07, "right": 0.99, "bottom": 0.15, "top": 0.84, "wspace": 0.2}
#: Smallest y span of a joint panel (rad or rad/s): a joint that stays put (or moves by rounding
#: noise, 1e-17 rad) is drawn as the flat line it is, not stretched to fill the panel.
MIN_JOINT_SPAN = 0.02


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any, margins: dict[str, float] | None = None) -> bytes:
    """The figure as PNG bytes, closed afterwards.

    ``margins`` (``Figure.subplots_adjust`` fractions) fix the layout of a figure drawn once per trial;
    without them the saved image is cropped to its content (``bbox_inches="tight"``), which draws the
    figure twice: about 40 % more time per figure, most of a report's time (measured 2026-11-29:
    0.37-0.53 s against 0.59-0.87 s for the 2 x 3 joint grid).
    """
    plt = _pyplot()
    buffer = io.BytesIO()
    if margins is None:
        fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    else:
        fig.subplots_adjust(**margins)
        fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#888888")


def box_motion_figure(trial: TrialRecord, label: str = "") -> bytes | None:
    """Top view of the box paths (real vs sim, cm) and box tilt against time (deg).

    Returns None when no platform recorded box poses.
    """
    poses = {ns: p.box_pose for ns, p in trial.platforms.items() if p.box_pose is not None and len(p.box_pose)}
    if not poses:
        return None
    plt = _pyplot()
    fig, (ax_top, ax_tilt) = plt.subplots(1, 2, figsize=(10, 3.6))
    for ns, series in poses.items():
        style = PLATFORM_STYLE[ns]
        ax_top.plot(100 * series.position[:, 0], 100 * series.position[:, 1], color=style["color"],
                    label=f"{style['label']} box")
        ax_top.plot(100 * series.position[0, 0], 100 * series.position[0, 1], "o", color=style["color"], ms=5)
        ax_top.plot(100 * series.position[-1, 0], 100 * series.position[-1, 1], "s", color=style["color"], ms=6)
        ax_tilt.plot(series.t, tilt_deg(series), color=style["color"], label=style["label"])
    for ns, platform in trial.platforms.items():
        if platform.pusher_pose is not None and len(platform.pusher_pose):
            ax_top.plot(100 * platform.pusher_pose.position[:, 0], 100 * platform.pusher_pose.position[:, 1],
                        ":", color=PLATFORM_STYLE[ns]["color"], alpha=0.7, label=f"{ns} pusher")
    ax_top.set_xlabel("x from arm base (cm)")
    ax_top.set_ylabel("y (cm)")
    ax_top.set_title("top view (o start, □ end)")
    ax_top.set_aspect("equal", adjustable="datalim")
    ax_top.grid(alpha=0.3)
    ax_top.legend(fontsize=8)
    ax_tilt.set_xlabel("time since trial start (s)")
    ax_tilt.set_ylabel("tilt of the initially-up axis (deg)")
    ax_tilt.set_title("box tilt")
    ax_tilt.grid(alpha=0.3)
    ax_tilt.legend(fontsize=8)
    fig.suptitle(f"{label} {trial.name}: box".strip())
    return _png(fig, BOX_MARGINS)


def _joint_grid(title: str) -> tuple[Any, Sequence[Any]]:
    plt = _pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(11, 5), sharex=True)
    fig.suptitle(title)
    return fig, axes.ravel()


def joint_tracking_figure(trial: TrialRecord, label: str = "") -> bytes | None:
    """Per joint: reference vs real vs sim joint positions (rad) against time.

    Returns None when no platform recorded joint states (a reference alone is not drawn).
    """
    states = {ns: p.joint_states for ns, p in trial.platforms.items()
              if p.joint_states is not None and len(p.joint_states)}
    if not states:
        return None
    fig, axes = _joint_grid(f"{label} {trial.name}: joint positions".strip())
    for j, ax in enumerate(axes):
        if trial.reference is not None:
            ax.plot(trial.reference.t, trial.reference.position[:, j], **REFERENCE_STYLE)
        for ns, series in states.items():
            ax.plot(series.t, series.position[:, j], color=PLATFORM_STYLE[ns]["color"], label=ns, alpha=0.85)
    _label_joint_axes(axes, "rad")
    return _png(fig, JOINT_GRID_MARGINS)


def _label_joint_axes(axes: Sequence[Any], unit: str) -> None:
    """Titles (joint names), grid, y unit on the left column, time on the bottom row, legend; a panel
    whose data span less than :data:`MIN_JOINT_SPAN` is widened to it around their middle."""
    for j, ax in enumerate(axes):
        low, high = float(ax.dataLim.y0), float(ax.dataLim.y1)
        if np.isfinite(low) and np.isfinite(high) and high - low < MIN_JOINT_SPAN:
            middle = 0.5 * (low + high)
            ax.set_ylim(middle - 0.5 * MIN_JOINT_SPAN, middle + 0.5 * MIN_JOINT_SPAN)
        ax.set_title(JOINT_NAMES[j], fontsize=9)
        ax.grid(alpha=0.3)
        if j % 3 == 0:
            ax.set_ylabel(unit)
        if j >= 3:
            ax.set_xlabel("time (s)")
    axes[0].legend(fontsize=7)


def command_figure(trial: TrialRecord, label: str = "") -> bytes | None:
    """Per joint: the PD joint-velocity command streams (rad/s) of each platform against time.

    Returns None when no platform recorded commands.
    """
    commands = {ns: p.joint_command for ns, p in trial.platforms.items()
                if p.joint_command is not None and len(p.joint_command)}
    if not commands:
        return None
    fig, axes = _joint_grid(f"{label} {trial.name}: PD velocity commands".strip())
    for j, ax in enumerate(axes):
        for ns, series in commands.items():
            ax.step(series.t, series.velocity[:, j], where="post", color=PLATFORM_STYLE[ns]["color"],
                    label=ns, alpha=0.8, linewidth=1.0)
    _label_joint_axes(axes, "rad/s")
    return _png(fig, JOINT_GRID_MARGINS)


def final_distance_figure(tables: Sequence[Any]) -> bytes | None:
    """Final distance against start distance along base x for real and each run's sim (cm).

    ``tables`` are :class:`~sim2real.report.tables.ExperimentTable`; only their standard pushes
    along x are drawn (elsewhere x says little), in order of start distance. None if no such row
    has a start.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    plotted = False
    markers = ["s", "^", "D", "v", "P"]
    real_done = False
    for k, table in enumerate(tables):
        rows = sorted((r for r in table.rows if r.start_m is not None and r.standard_push), key=lambda r: r.start_m)
        real = [(r.start_m, r.real_final_m, r.real_flip) for r in rows if r.real_final_m is not None]
        sim = [(r.start_m, r.sim_final_m, r.sim_flip) for r in rows if r.sim_final_m is not None]
        if real and not real_done:
            ax.plot([100 * a for a, _, _ in real], [100 * b for _, b, _ in real], "o-",
                    color=PLATFORM_STYLE["real"]["color"], label="real")
            real_done = True
            plotted = True
        if sim:
            name = "sim" if len(tables) == 1 else f"sim ({table.label})"
            ax.plot([100 * a for a, _, _ in sim], [100 * b for _, b, _ in sim], markers[k % len(markers)] + "--",
                    label=name, color=PLATFORM_STYLE["sim"]["color"] if k == 0 else None)
            plotted = True
    if not plotted:
        plt.close(fig)
        return None
    lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
    hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
    ax.plot([lo, hi], [lo, hi], color="#bbbbbb", linewidth=0.8, label="final = start (no motion)")
    ax.set_xlabel("start distance (cm)")
    ax.set_ylabel("final distance (cm)")
    ax.set_title("final box distance from the arm base")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def fit_trace_figure(trace: Sequence[dict[str, Any]]) -> bytes | None:
    """Cost against iteration (log scale when positive); None for an empty trace."""
    if not trace:
        return None
    plt = _pyplot()
    iterations = np.array([float(item.get("iteration", k)) for k, item in enumerate(trace)])
    cost = np.array([float(item["cost"]) for item in trace])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(iterations, cost, "o-", color="#2ca02c")
    if np.all(cost > 0):
        ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("cost")
    ax.set_title("fit trace")
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def correlation_figure(names: Sequence[str], matrix: np.ndarray) -> bytes | None:
    """Heat map of the parameter correlation matrix (P, P); None when empty."""
    if len(names) == 0:
        return None
    plt = _pyplot()
    size = 2.5 + 0.6 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="coolwarm")
    ax.set_xticks(range(len(names)), labels=names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), labels=names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, fraction=0.046)
    ax.set_title("parameter correlation")
    return _png(fig)


#: Most trials drawn in one residual figure.
MAX_RESIDUAL_TRIALS = 12
#: Residual-series units (fit.json ``data.residual_series.unit``) → (plotted unit, factor).
_SERIES_UNITS: dict[str, tuple[str, float]] = {"m": ("mm", 1000.0), "rad": ("deg", 180.0 / np.pi)}


def _series(values: Any) -> np.ndarray:
    """A JSON list of numbers and nulls as floats (nulls and non-numbers: NaN, gaps in the line)."""
    if not isinstance(values, list):
        return np.zeros(0)
    return np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                     for v in values])


def residual_figure(series: Mapping[str, Any], title: str = "",
                    max_trials: int = MAX_RESIDUAL_TRIALS) -> bytes | None:
    """Per trial, the residual norm against time: the start values dashed, the fitted values solid.

    ``series`` is fit.json ``data.residual_series`` (``group``, ``unit``, ``trials``: each with
    ``name``, ``t``, ``start``, ``final``); the first ``max_trials`` trials are drawn, one colour
    each. None when no trial has a usable series.
    """
    trials = [t for t in series.get("trials") or [] if isinstance(t, Mapping)]
    drawn = []
    for trial in trials:
        t = _series(trial.get("t"))
        start, final = _series(trial.get("start")), _series(trial.get("final"))
        if t.size and start.shape == t.shape and final.shape == t.shape and (
                np.isfinite(start).any() or np.isfinite(final).any()):
            drawn.append((str(trial.get("name", "?")), t, start, final))
    drawn = drawn[:max_trials]
    if not drawn:
        return None
    unit, factor = _SERIES_UNITS.get(str(series.get("unit")), (str(series.get("unit", "?")), 1.0))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    colors = plt.get_cmap("tab20" if len(drawn) > 10 else "tab10")
    for k, (name, t, start, final) in enumerate(drawn):
        color = colors(k % colors.N)
        ax.plot(t, factor * start, "--", color=color, linewidth=1.0, alpha=0.8)
        ax.plot(t, factor * final, "-", color=color, linewidth=1.3, label=name)
    ax.plot([], [], "--", color="#444444", label="start values")
    ax.plot([], [], "-", color="#444444", label="fitted values")
    group = str(series.get("group", "residual")).replace("_", " ")
    ax.set_xlabel("time since trial start (s)")
    ax.set_ylabel(f"|{group} residual| ({unit})")
    ax.set_title(f"{title}: {group} residual per trial".strip(": "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(drawn) > 6 else 1, loc="best")
    return _png(fig)


def spread_figure(distances: Sequence[float], finals: Sequence[np.ndarray], ranges: Sequence[tuple[float, float]],
                  real: Sequence[Sequence[float]],
                  bands: Sequence[Sequence[tuple[float, float]]] | None = None) -> bytes:
    """Final box x per start distance: a sweep's rows (grey) with their central 95 % range (bar), the
    calibrated band (orange bars, when given) and the real trials (blue diamonds); all in m, plotted in cm.

    Parameters
    ----------
    distances : sequence of float
        Start distances, m.
    finals : sequence of ndarray
        Per distance, the final x of the sweep's rows, shape (rows,), m.
    ranges : sequence of (float, float)
        Per distance, the 2.5 and 97.5 % quantiles of ``finals``, m (NaN: none).
    real : sequence of sequence of float
        Per distance, the real trials' final x, m.
    bands : sequence of sequence of (float, float), optional
        Per distance, the intervals of the calibrated band of final x, m (one per separate mode).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    rng = np.random.default_rng(0)  # horizontal jitter of the points only
    labelled: set[str] = set()

    def label(text: str) -> str | None:  # each legend entry once
        if text in labelled:
            return None
        labelled.add(text)
        return text

    per_distance = bands if bands is not None else [()] * len(distances)
    for distance, rows, (low, high), reals, band in zip(distances, finals, ranges, real, per_distance, strict=True):
        x = 100 * distance
        ax.scatter(x + rng.uniform(-0.4, 0.4, len(rows)), 100 * np.asarray(rows), s=6, color="#999999", alpha=0.5,
                   label=label("sweep rows"))
        if np.isfinite(low) and np.isfinite(high):
            ax.plot([x, x], [100 * low, 100 * high], color="#333333", linewidth=3, label=label("sweep 95 % range"))
        for low_band, high_band in band:
            ax.plot([x - 0.9, x - 0.9], [100 * low_band, 100 * high_band], color="#dd8452", linewidth=3,
                    label=label("calibrated band"))
        if len(reals):
            ax.scatter([x + 0.9] * len(reals), [100 * v for v in reals], s=30, marker="D",
                       color=PLATFORM_STYLE["real"]["color"], label=label("real"))
    ax.set_xlabel("start distance (cm)")
    ax.set_ylabel("final box x (cm)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return _png(fig)


def prediction_spread_figure(trials: Sequence[Mapping[str, Any]], max_trials: int = 12) -> bytes | None:
    """Predicted outcomes of each trial under parameter sets drawn from a fit, against the real one.

    One panel per trial: every draw's final box centre (grey points, x and y in cm, base frame), the
    band of each mode (a rectangle each; without modes, the band's hull) and the real final centre (blue diamond,
    filled when the whole outcome, yaw included, lies inside); the title gives the yaw band and the
    real yaw (deg).

    Parameters
    ----------
    trials : sequence of mapping
        ``spread.json`` ``trials`` entries (``replay --spread``).
    max_trials : int
        Panels at most (the first trials).
    """
    shown = [t for t in trials if t.get("predicted")][:max_trials]
    if not shown:
        return None
    plt = _pyplot()
    cols = min(4, len(shown))
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(shown):]:
        ax.axis("off")
    for ax, trial in zip(axes.flat, shown, strict=False):
        points = 100 * np.asarray(trial["predicted"], dtype=float)
        outcome = trial["outcome"]
        ax.scatter(points[:, 0], points[:, 1], s=8, color="#999999", alpha=0.6)
        boxes = [(m["x_m"]["band"], m["y_m"]["band"]) for m in trial.get("modes") or [] if m["x_m"].get("band")]
        for (x0, x1), (y0, y1) in boxes or [(outcome["x_m"]["band"], outcome["y_m"]["band"])]:
            if None not in (x0, x1, y0, y1):
                ax.add_patch(plt.Rectangle((100 * x0, 100 * y0), 100 * (x1 - x0), 100 * (y1 - y0), fill=False,
                                           edgecolor="#333333"))
        inside = bool(trial.get("inside"))
        ax.scatter([100 * outcome["x_m"]["real"]], [100 * outcome["y_m"]["real"]], s=40, marker="D",
                   color=PLATFORM_STYLE["real"]["color"], facecolors=None if inside else "none")
        yaw = outcome["yaw_deg"]
        band = yaw["band"]
        yaw_text = f"[{band[0]:.0f}, {band[1]:.0f}]" if None not in band else "n/a"
        ax.set_title(f"{trial['trial']}\nyaw {yaw_text} deg, real {yaw['real']:.0f}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    fig.supxlabel("final box x (cm)", fontsize=9)
    fig.supylabel("final box y (cm)", fontsize=9)
    return _png(fig)


def engine_comparison_figure(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Held-out errors per engine at the start and fitted values, and each fit's wall time; PNG.

    ``rows``: :meth:`sim2real.sysid.prediction.compare.EngineFit.row` of each engine (``engine``, ``fit_wall_s``,
    ``held_out_start`` and ``held_out_final`` with ``final_position_m``, ``yaw_deg``, ``trajectory_rms_m``).
    """
    plt = _pyplot()
    panels = (("final_position_m", "final position error, mm", 1000.0), ("yaw_deg", "yaw error, deg", 1.0),
              ("trajectory_rms_m", "trajectory RMS, mm", 1000.0))
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(13, 3.4))
    names = [str(row["engine"]) for row in rows]
    positions = np.arange(len(rows))
    width = 0.38
    for ax, (key, label, scale) in zip(axes, panels, strict=False):
        for offset, when, color, legend in ((-width / 2, "held_out_start", "#bbbbbb", "start values"),
                                            (width / 2, "held_out_final", "#1f77b4", "fitted")):
            values = [row[when].get(key) for row in rows]
            heights = [scale * float(v) if isinstance(v, (int, float)) else np.nan for v in values]
            ax.bar(positions + offset, heights, width, color=color, label=legend)
        ax.set_xticks(positions, names)
        ax.set_title(f"held-out {label}", fontsize=9)
    axes[0].legend(fontsize=8)
    axes[-1].bar(positions, [float(row["fit_wall_s"]) for row in rows], 0.5, color="#ff7f0e")
    axes[-1].set_xticks(positions, names)
    axes[-1].set_title("fit wall time, s", fontsize=9)
    return _png(fig)
