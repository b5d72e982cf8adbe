"""Tables of the camera benchmark (issue 60): tag poses on synthetic views, time per frame, the stand-in camera."""

from __future__ import annotations

from benchmarks.tables.format import md_table, num, with_provenance
from benchmarks.tables.store import load


def _cell(stats: dict | None, unit: str) -> str:
    return "—" if not stats else f"{num(stats['median'], 2)} / {num(stats['p95'], 2)} {unit}"


def vision_table() -> str | None:
    """benchmarks.vision: accuracy and detection over tag size, distance and tilt; time per frame; the stand-in."""
    record = load("vision")
    if record is None:
        return None
    out = record["output"]
    rows = []
    for row in out["grid"]:
        edges, subpix = row["edges"], row["subpix"]
        rows.append((f"{num(1000 * row['size_m'], 2)} mm", f"{num(row['distance_m'], 2)} m",
                     f"{row['tilt_deg'][0]}-{row['tilt_deg'][1]}°", f"{100 * edges['detected']:.0f} %",
                     f"{100 * edges['ambiguous']:.0f} %", num(edges["position_mm"], 2), num(edges["angle_deg"], 2),
                     num(subpix["position_mm"], 2)))
    grid = md_table(("tag", "distance", "tilt", "detected", "refused as ambiguous", "position error (mm)",
                     "angle error (°)", "position error, OpenCV subpix (mm)"), rows)
    timing = out["timing"]
    latency = out.get("graph_latency") or {}
    speed = md_table(("per 640 × 480 frame, one core", "median / p95"), [
        ("render (the stand-in camera)", _cell(timing["render_ms"], "ms")),
        ("detect (OpenCV, edge-fitted corners)", _cell(timing["detect_ms"], "ms")),
        ("estimate (detect, PnP, base frame)", _cell(timing["estimate_ms"], "ms")),
        ("capture stamp to recorded pose, stand-in run", _cell(latency.get("capture_to_recorded_ms"), "ms")),
        (f"of which after the camera's {num(latency.get('camera_latency_ms'), 2)} ms",
         _cell(latency.get("pipeline_ms"), "ms"))])
    pushes = md_table(("stand-in push", "images with a pose", "position error median / p95 (mm)",
                       "orientation error median / p95 (°)"),
                      [(f"{num(p['distance_m'], 2)} m", f"{p['tally']['poses']} of {p['tally']['images']}",
                        _cell(p["position_error_mm"], ""), _cell(p["orientation_error_deg"], ""))
                       for p in out["standin_push"]])
    small = md_table(("3 cm tag", "frame", "tag width", "views", "detected"),
                     [(f"{num(r['distance_m'], 2)} m",
                       f"{r['frame_px'][0]} × {r['frame_px'][1]}, f {num(r['focal_px'], 3)} px",
                       f"{num(r['tag_px'], 2)} px", r["views"], f"{100 * r['detected']:.0f} %")
                      for r in out.get("small_tags", [])])
    views = record.get("command", "")
    text = (f"{grid}\n\nMedians over the accepted poses of the views of each cell ({views}); the box pose from "
            f"several tags is more accurate than one tag's.\n\n{small}\n\n{speed}\n\n{pushes}")
    return with_provenance(text, "vision")
