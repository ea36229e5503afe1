"""The bench's targets, and its report as a few lines of text: the runs of each part, then every target."""

from __future__ import annotations

TARGETS = {
    "ratio": 0.98,
    "ratio_up_to_rps": 2000,
    "overhead_s": 2.0,
    "batch_s": 360,
    "measuring": 0.70,
    "spread": 0.05,
    "live_cost_pct": 0.5,  # the live view's median cost to the busy run, % of its throughput
    "frame_ms": 50,  # median CPU to draw a live frame: one a second, at most 5% of a core
    "scaleout_shift": 0.01,  # measured / predicted with joined workers, against forked ones: within 1%
    "layer_cost_pct": 1.0,  # the ASGI layer's median cost to each route of the example that computes, % of throughput
}

Target = tuple[str, float, str, bool]  # what, measured, target, met


def targets(report: dict) -> list[Target]:
    """Each of the bench's targets as (what, measured, target, met), for the parts that were measured."""
    out = []
    for part in (_harness_targets, _overhead_targets, _batch_targets, _repeatability_targets):
        out += part(report)
    return out + _scaleout_targets(report) + _live_targets(report) + _layer_targets(report)


def _at_most(what: str, value: float, key: str) -> Target:
    return (what, value, f"≤ {TARGETS[key]}", value <= TARGETS[key])


def _harness_targets(report: dict) -> list[Target]:
    if not report.get("harness"):
        return []
    near = [r for r in report["harness"] if r["predicted_rps"] <= TARGETS["ratio_up_to_rps"]]
    worst = min(r["ratio"] for r in near)
    what = f"worst measured/predicted, runs ≤ {TARGETS['ratio_up_to_rps']:,} req/s"
    return [(what, worst, f"≥ {TARGETS['ratio']}", worst >= TARGETS["ratio"])]


def _overhead_targets(report: dict) -> list[Target]:
    items = (report.get("overhead_s") or {}).items()
    return [_at_most(f"overhead: {name.replace('_', ' ')} (s)", value, "overhead_s") for name, value in items]


def _batch_targets(report: dict) -> list[Target]:
    if not report.get("batch"):
        return []
    b = report["batch"]
    share = b["measuring_s"] / b["wall_s"] if b["wall_s"] else float("nan")
    return [
        _at_most("batch (quick) wall time (s)", b["wall_s"], "batch_s"),
        ("batch: share inside measurement windows", share, f"≥ {TARGETS['measuring']}", share >= TARGETS["measuring"]),
    ]


def _repeatability_targets(report: dict) -> list[Target]:
    if not report.get("repeatability"):
        return []
    return [_at_most("repeatability: spread of the headline ratio", report["repeatability"]["spread"], "spread")]


def _scaleout_targets(report: dict) -> list[Target]:
    if not report.get("scaleout"):
        return []
    shift, most = report["scaleout"]["largest_shift"], TARGETS["scaleout_shift"]
    return [("scale-out: largest joined − forked measured/predicted", shift, f"within ±{most}", abs(shift) <= most)]


def _live_targets(report: dict) -> list[Target]:
    if not report.get("live"):
        return []
    v = report["live"]
    return [
        _at_most("live view: median cost (% of throughput)", v["cost"] * 100, "live_cost_pct"),
        _at_most("live view: median CPU per frame (ms)", v["frame_ms"], "frame_ms"),
    ]


def _layer_targets(report: dict) -> list[Target]:
    if not report.get("layer"):
        return []
    layer = report["layer"]
    # the layer's own time per request, in process, as a share of the busiest route's time per request
    share = max(layer["per_request_us"] / (1e6 / rps) * 100 for rps in layer["median_rps"].values())
    return [
        _at_most("ASGI layer: largest median cost (% of throughput)", layer["cost"] * 100, "layer_cost_pct"),
        _at_most("ASGI layer: its time per request in process (% of the route's)", share, "layer_cost_pct"),
    ]


def table(report: dict) -> str:
    """The report as a few lines of text: each part's runs, then the targets."""
    lines = []
    for part in (_harness_lines, _batch_lines, _live_lines, _telemetry_lines, _layer_lines, _scaleout_lines):
        lines += part(report)
    for what, value, target, met in targets(report):
        lines.append(f"{'MET ' if met else 'MISS'}  {what:<52} {value:8.3f}  (target {target})")
    return "\n".join(lines)


def _harness_lines(report: dict) -> list[str]:
    if not report.get("harness"):
        return []
    lines = [
        "procs users predicted measured ratio  with-CPU ratio  server(ms/req) locust(ms/req) "
        "cores: server locust other  valid"
    ]
    for r in report["harness"]:
        lines.append(
            f"{r['processes']:5d} {r['users']:5d} {r['predicted_rps']:9.0f} {r['measured_rps']:8.0f} "
            f"{r['ratio']:5.3f} {r['predicted_cpu_rps']:9.0f} {r['ratio_cpu']:5.3f} "
            f"{r['server_ms']:14.3f} {r['locust_ms']:14.3f} {r['server_cpu']:13.2f} "
            f"{r['locust_cpu']:6.2f} {r['other_cpu']:5.2f}  {'yes' if r['valid'] else 'NO'}"
        )
    if report.get("alone"):
        a = report["alone"]
        lines.append(
            f"one user alone: {a['rps']:.2f} req/s, mean {a['mean_ms']:.1f} ms: {a['ratio']:.3f} of Little's law "
            "with no queue at all"
        )
    return [*lines, ""]


def _batch_lines(report: dict) -> list[str]:
    b = report.get("batch") or {}
    lines = []
    for lesson in b.get("lessons", []):
        share = lesson["measuring_s"] / lesson["wall_s"] if lesson["wall_s"] else float("nan")
        lines.append(
            f"batch  {lesson['lesson']:<26} {lesson['wall_s']:6.1f} s, {lesson['runs']:3d} runs, "
            f"{lesson['measuring_s']:6.1f} s measuring ({share:.0%})"
        )
    if lines:
        lines.append("")
    for f in b.get("fidelity", []):
        lines.append(
            f"model  {f['lesson']:<3} {f['runs']:3d} valid runs, {f['within_10']:4.0%} within ±10%, "
            f"I/O {f['io_within_3']:4.0%} within ±3%; worst {f['worst_ratio']:.3f}: {f['worst_run']}"
        )
    return lines


def _live_lines(report: dict) -> list[str]:
    if not report.get("live"):
        return []
    v = report["live"]
    lines = [
        f"live view round {r['round']}: off {r['off_rps']:6.0f} req/s, on {r['on_rps']:6.0f} req/s, "
        f"cost {r['cost']:+.2%}"
        for r in v["rounds"]
    ]
    lines.append(
        f"live view: cost median {v['cost']:+.2%}, range {v['cost_min']:+.2%} to {v['cost_max']:+.2%} "
        f"of throughput over {len(v['rounds'])} rounds"
    )
    for mode in ("off", "on"):
        ratios = " ".join(f"{r:.3f}" for r in v[f"{mode}_ratios"])
        lines.append(
            f"live view {mode:<3}  measured/predicted {ratios}  Locust {v[f'{mode}_locust_ms']:.3f} ms/req"
            f"  other CPU {v[f'{mode}_other_cpu']:.2f}"
        )
    frames = f"median {v['frame_ms']:.1f} ms, max {v['frame_ms_max']:.1f} ms"
    return [*lines, f"live view: {v['frames']} frames, CPU to draw one: {frames}", ""]


def _telemetry_lines(report: dict) -> list[str]:
    if not report.get("telemetry"):
        return []
    t = report["telemetry"]
    lines = []
    for mode in ("on", "off"):
        ratios = " ".join(f"{r:.3f}" for r in t[f"{mode}_ratios"])
        lines.append(f"telemetry {mode:<3}  measured/predicted {ratios}  (runs: {', '.join(t['runs'])})")
    return [*lines, f"telemetry: largest difference on − off, same run: {t['largest_shift']:+.3f}", ""]


def _layer_lines(report: dict) -> list[str]:
    if not report.get("layer"):
        return []
    lines = ["ASGI layer  route          users  bare req/s  cost, median (rounds)"]
    for r in report["layer"]["routes"]:
        rps = report["layer"]["median_rps"][r["route"]]
        lines.append(
            f"            {r['route']:<14} {r['users']:5d} {rps:11.1f}  {r['cost']:+.2%} "
            f"({r['cost_min']:+.2%} to {r['cost_max']:+.2%})"
        )
    lines.append(f"ASGI layer  in process: {report['layer']['per_request_us']:+.2f} µs a request over the bare app's")
    return [*lines, ""]


def _scaleout_lines(report: dict) -> list[str]:
    if not report.get("scaleout"):
        return []
    lines = ["scale-out  users predicted  forked: measured ratio  joined: measured ratio  joined − forked"]
    for r in report["scaleout"]["runs"]:
        lines.append(
            f"           {r['users']:5d} {r['predicted_rps']:9.0f} {r['forked_rps']:16.0f} {r['forked_ratio']:5.3f}"
            f" {r['joined_rps']:16.0f} {r['joined_ratio']:5.3f} {r['shift']:+15.4f}"
        )
    return [*lines, ""]


def plain(value):
    """`value` with NaN turned into None, so that latest.json is strict JSON."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars from pandas: plain Python numbers
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
