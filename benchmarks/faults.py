"""Benchmark: how the xArm driver stops the arm on each link or controller fault, idle and loaded.

The real vendor SDK, driven by :class:`~sim2real.hardware.XArmDriver` (default budgets) at
100 Hz (a joint-state read and a 0.4 rad/s velocity command per cycle, nominal servo), against
the loopback emulator with one injected fault per run. After the fault the caller keeps
calling ``send_velocity`` (20 more times), as a careless control loop would.

The emulator runs in a process of its own pinned to a CPU of its own (the last one; with one
CPU it shares), as a real controller is a computer of its own that this machine's load does not
slow down; the driver runs on the other CPUs. Each fault is run in two columns:

* ``idle``: nothing else running;
* ``loaded``: beside ``--load`` (default 4) CPU-bound processes (busy loops started with
  :mod:`multiprocessing` on the driver's CPUs, terminated afterwards).

Per fault and column, over ``--repeats`` runs (ranges are [min, max]; times are ms from the
fault's onset as the emulator saw it: stall: the stalled request arrived; drop: connections
closed; error: raised; latency: the first delayed reply, which for the ``_at_connection`` rows is
the driver's first request, the firmware probe of ``connect()``):

* ``detected``: runs in which the driver latched the expected fault kind; ``kinds``: what it
  reported; ``false_faults``: runs faulted before the fault was injected (a healthy link faulted);
* ``detect_ms``: the driver latched its fault; ``stop_sent_ms``: its stop frames left;
* ``zero_command_ms``: the controller's commanded velocity became zero and stayed so (as the
  emulator's command hook saw it); ``still_ms``: every joint below 1e-3 rad/s from then on;
* ``sent_after_detection``: motion commands whose bytes left the driver at or after its fault's
  timestamp (summed over runs; must be 0);
* ``stale_moving_ms``: how long the controller commanded a nonzero velocity after the detection
  (a command sent before it, still on its way, or already running); ``motion_started_after_detection``:
  runs in which a nonzero command took effect after the detection (one sent before it, on a slow link);
* ``reaccelerated``: runs in which the commanded velocity became nonzero again after it had
  been zero after the detection (a stale or queued command resumed motion; must be 0);
* ``motion_commands``: motion commands the driver sent in the run (before its fault: after it none
  leave); ``never_commanded``: runs in which it sent none (a link slow at connection faults in
  ``start()``, before the first); ``first_motion_to_zero_ms``: from the first motion command's bytes
  leaving the driver to the controller's commanded velocity zero for good (runs that sent one);
* ``final_mode_state``: the controller after the driver's ``stop()``;
* ``cpu_wait_ms``: how long the driver's own threads waited runnable for a CPU per run.

``healthy_idle`` and ``healthy_under_load``: ``--healthy-runs`` runs of ``--healthy-seconds``
each on a healthy link (no fault injected), idle and loaded: runs that faulted (goal: none),
cycles, the cycle time p99 and maximum. And the watchdog: ms from the last fresh command's send to
the zero velocity (goal <= 50 ms).

``signals_idle`` and ``signals_under_load``: ``--signal-runs`` processes, each streaming 0.4 rad/s at 100 Hz
through the driver (as a node does, nothing of its own around signals), sent SIGINT or SIGTERM (alternately)
at a random moment 0.1-0.4 s into the stream: runs whose arm the driver stopped (the controller's commanded
velocity zero and never nonzero again, and the controller left in mode 0, state 4), runs whose commanded
velocity was zero within 100 ms of the signal, ``zero_command_ms`` from the signal, the final mode/state,
runs that exited within 5 s, the exit times (s: min, median, max), exit statuses, and ``reaccelerated``
(must be 0).

Run: ``python -m benchmarks.faults --json [--repeats 3] [--load 4] [--healthy-runs 50] [--signal-runs 50]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from benchmarks.xarm import watchdog_reaction
from sim2real.hardware import DriverConfig, EmulatorConfig, FaultConfig, HardwareError, XArmDriver, XArmEmulator
from sim2real.hardware import protocol as wire
from sim2real.params import ParameterSet
from sim2real.sim.servo import ServoParams

HOST, PORT = "127.0.0.71", 5025
SPEED = 0.4
#: Calls of ``send_velocity`` after the fault (each must be refused).
KEEP_SENDING = 20

FAULTS: dict[str, FaultConfig] = {
    "controller_error_c31": FaultConfig(error_at=0.3, error_code=31),
    "stall_190ms_command": FaultConfig(stall_at=0.3, stall_duration=0.19, stall_register=wire.Register.VC_SET_JOINTV),
    "stall_190ms_read": FaultConfig(stall_at=0.3, stall_duration=0.19, stall_register=wire.Register.GET_JOINT_STATES),
    "stall_500ms": FaultConfig(stall_at=0.3, stall_duration=0.5),
    "stall_1000ms": FaultConfig(stall_at=0.3, stall_duration=1.0),
    "dropped_link": FaultConfig(drop_at=0.3),
    "latency_15ms": FaultConfig(latency=0.015, latency_at=0.3),
    "latency_60ms": FaultConfig(latency=0.06, latency_at=0.3),
    # A link already slow at connection (every request delayed from the first on): the driver faults in
    # start(), from its start-up exchanges, and the arm is never commanded to move.
    "latency_15ms_at_connection": FaultConfig(latency=0.015),
    "latency_30ms_at_connection": FaultConfig(latency=0.03),
}
#: Fault kinds each injected fault may be reported as (a 60 ms latency is a stall at 35 ms).
EXPECTED = {"controller": {"controller_error"}, "stall": {"stall"}, "dropped": {"disconnected"},
            "latency": {"latency", "stall"}}
ONSET_KEY = {"controller": "error", "stall": "stall", "dropped": "drop", "latency": "latency"}


# --- the controller: an emulator in a process of its own ----------------------------------------
@dataclass
class Recording:
    """What the emulator saw in one run (times ``time.monotonic``, s; system-wide on Linux)."""

    commands: list[tuple[float, float]]  # commanded velocity changes: (t, largest joint speed)
    ticks: list[tuple[float, float]]  # (t, largest true joint speed)
    onsets: dict[str, float]
    mode: int
    state: int


def _controller_main(conn: Connection, cpus: set[int]) -> None:
    """Serve one emulator per ``("run", FaultConfig)`` until ``("stop",)``, then send its
    :class:`Recording`; end at ``("exit",)``."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    logging.disable(logging.CRITICAL)
    servo = ServoParams.from_params(ParameterSet.nominal())
    while (message := conn.recv())[0] == "run":
        conn.send(_serve_one(conn, EmulatorConfig(host=HOST, command_port=PORT, servo=servo, faults=message[1])))


def _serve_one(conn: Connection, config: EmulatorConfig) -> Recording:
    commands: list[tuple[float, float]] = []
    ticks: list[tuple[float, float]] = []
    with XArmEmulator(config, on_tick=lambda t, q, v: ticks.append((t, float(np.max(np.abs(v))))),
                      on_command=lambda t, c: commands.append((t, float(np.max(np.abs(c)))))) as emu:
        conn.send("ready")
        conn.recv()  # ("stop",)
        snap = emu.snapshot()
        onsets = emu.fault_onsets
    return Recording(commands, ticks, onsets, snap.mode, snap.state)


class Controller:
    """The emulator process (see :func:`_controller_main`)."""

    def __init__(self, cpus: set[int]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_controller_main, args=(child, cpus), daemon=True)
        self._process.start()

    @contextlib.contextmanager
    def emulating(self, faults: FaultConfig) -> Iterator[list[Recording]]:
        """An emulator with ``faults`` for the ``with`` block; its recording is in the list after it."""
        out: list[Recording] = []
        self._conn.send(("run", faults))
        if not self._conn.poll(60.0) or self._conn.recv() != "ready":
            raise RuntimeError("the emulator process did not start an emulator")
        try:
            yield out
        finally:
            self._conn.send(("stop",))
            out.append(self._conn.recv())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.send(("exit",))
        self._process.join(10.0)
        if self._process.is_alive():
            self._process.terminate()


# --- load ---------------------------------------------------------------------------------
def _burn(cpus: set[int]) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)
    x = 0.0
    while True:
        x = math.sin(x + 1.0)


@contextlib.contextmanager
def cpu_load(processes: int, cpus: set[int]) -> Iterator[None]:
    """``processes`` busy loops on ``cpus`` for the ``with`` block, terminated after it."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_burn, args=(cpus,), daemon=True) for _ in range(processes)]
    for proc in procs:
        proc.start()
    try:
        time.sleep(1.0)  # started (spawned interpreters import for a while)
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(10.0)


# --- one run ------------------------------------------------------------------------------
def _stream_until_fault(driver: XArmDriver, cycles: int) -> int:
    """Read and command at 100 Hz until the driver raises; then keep sending. Returns the calls refused."""
    velocity = np.full(6, SPEED) * np.array([1, 1, -1, 1, 1, 1])
    next_at = time.monotonic()
    with contextlib.suppress(HardwareError):
        for _ in range(cycles):
            driver.read_joint_states()
            driver.send_velocity(velocity, stamp=time.monotonic())
            next_at += 0.01
            time.sleep(max(next_at - time.monotonic(), 0.0))
    refused = 0
    if driver.fault is not None:
        for _ in range(KEEP_SENDING):
            with contextlib.suppress(HardwareError):
                driver.send_velocity(velocity, stamp=time.monotonic())
                continue
            refused += 1
            time.sleep(0.005)
    return refused


def one_fault(controller: Controller, name: str, faults: FaultConfig) -> dict[str, Any]:
    """Run one injected fault; the figures of :func:`_figures`."""
    with controller.emulating(faults) as recording:
        driver = XArmDriver(DriverConfig(ip=HOST, command_port=PORT))
        with driver:
            driver.start()
            refused = _stream_until_fault(driver, 500)
            time.sleep(max(faults.stall_duration, 1.0) + 0.2)  # let a stale command (if any) run out
            cpu_wait = driver.status().cpu_wait
        time.sleep(0.05)
    kind = name.split("_")[0]
    return _figures(driver, recording[0], recording[0].onsets.get(ONSET_KEY[kind]), EXPECTED[kind], refused,
                    cpu_wait)


def _figures(driver: XArmDriver, rec: Recording, onset: float | None, expected: set[str], refused: int,
             cpu_wait: float | None) -> dict[str, Any]:
    fault = driver.fault
    out: dict[str, Any] = {"kind": fault.kind if fault else None, "final_mode": rec.mode, "final_state": rec.state,
                           "false_fault": fault is not None and (onset is None or fault.at < onset),
                           "refused_after_fault": refused,
                           "cpu_wait_ms": None if cpu_wait is None else round(cpu_wait * 1e3, 1)}
    out["detected"] = fault is not None and fault.kind in expected and not out["false_fault"]
    if fault is None:
        return out
    out["sent_after_detection"] = sum(1 for r in driver.sent_commands()
                                      if r.moves and (r.wire_at is None or r.wire_at >= fault.at))
    stretches = _moving_stretches(rec.commands)
    out["stale_moving_ms"] = round(sum(max(end - max(start, fault.at), 0.0) for start, end in stretches) * 1e3, 2)
    zero_after = next((t for t, speed in rec.commands if t >= fault.at and speed == 0.0), None)
    out["reaccelerated"] = zero_after is not None and any(start > zero_after for start, _ in stretches)
    out["motion_started_after_detection"] = any(start >= fault.at for start, _ in stretches)
    moving = [r for r in driver.sent_commands() if r.moves]
    out["motion_commands"] = len(moving)
    first_at = moving[0].wire_at if moving else None
    zero_at = max((end for _, end in stretches), default=None)
    if first_at is not None and zero_at is not None and math.isfinite(zero_at):
        out["first_motion_to_zero_ms"] = round((max(zero_at, first_at) - first_at) * 1e3, 1)
    if onset is None:
        return out
    ms = lambda t: None if t is None else round((t - onset) * 1e3, 1)  # noqa: E731
    out["detect_ms"] = ms(fault.at)
    out["stop_sent_ms"] = ms(driver.stop_sent_at)
    out["zero_command_ms"] = ms(max(max((end for _, end in stretches), default=onset), onset))
    out["still_ms"] = ms(_still_from(rec.ticks, onset))
    return out


def _moving_stretches(commands: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(start, end) of each stretch the commanded velocity was nonzero."""
    return [(t, commands[i + 1][0] if i + 1 < len(commands) else math.inf)
            for i, (t, speed) in enumerate(commands) if speed > 0.0]


def _still_from(ticks: list[tuple[float, float]], onset: float) -> float | None:
    still_at = None
    for t, speed in ticks:
        if t >= onset and speed >= 1e-3:
            still_at = None
        elif t >= onset and still_at is None:
            still_at = t
    return still_at


def healthy_run(controller: Controller, seconds: float) -> dict[str, Any]:
    """Stream on a healthy link for ``seconds``: the fault (if any), cycles, cycle times (s)."""
    trips: list[float] = []
    with controller.emulating(FaultConfig()), XArmDriver(DriverConfig(ip=HOST, command_port=PORT)) as driver:
        driver.start()
        end = time.monotonic() + seconds
        with contextlib.suppress(HardwareError):
            while (started := time.monotonic()) < end:
                driver.read_joint_states()
                driver.send_velocity(np.full(6, 0.2 * math.sin(math.pi * (end - started))), stamp=started)
                trips.append(time.monotonic() - started)
                time.sleep(0.01)
        fault, cpu_wait = driver.fault, driver.status().cpu_wait
    return {"fault": f"{fault.kind}: {fault.message}" if fault else None, "trips": trips, "cpu_wait": cpu_wait}


#: A streaming process as a node is one: the driver's own signal handling, nothing around it.
SIGNAL_CHILD = """
import logging, sys, time
import numpy as np
from sim2real.hardware import DriverConfig, XArmDriver
logging.disable(logging.CRITICAL)
with XArmDriver(DriverConfig(ip=sys.argv[1], command_port=int(sys.argv[2]))) as driver:
    driver.start()
    velocity = np.full(6, float(sys.argv[3])) * np.array([1, 1, -1, 1, 1, 1])
    print("streaming", flush=True)
    while True:
        driver.read_joint_states()
        driver.send_velocity(velocity, stamp=time.monotonic())
        time.sleep(0.01)
"""
#: The longest a signalled process may take to exit (s).
EXIT_WITHIN = 5.0


def signal_run(controller: Controller, signum: int, delay: float) -> dict[str, Any]:
    """One streaming process sent ``signum`` ``delay`` s after it began streaming: did the arm stop, and when
    did the process exit (s after the signal)."""
    with controller.emulating(FaultConfig()) as recording:
        # SIGINT as a terminal delivers it: a benchmark started in the background of a shell (``cmd &``)
        # ignores SIGINT, its children inherit that, and an ignored signal stays ignored (the driver's rule).
        child = subprocess.Popen([sys.executable, "-c", SIGNAL_CHILD, HOST, str(PORT), str(SPEED)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert child.stdout is not None
        ready = any(line.strip() == "streaming" for line in iter(child.stdout.readline, ""))  # SDK banners first
        time.sleep(delay)
        sent_at = time.monotonic()
        child.send_signal(signum)
        try:
            status: int | None = child.wait(timeout=EXIT_WITHIN)
            exit_s: float | None = time.monotonic() - sent_at
        except subprocess.TimeoutExpired:
            status, exit_s = None, None
            child.kill()
            child.wait()
        time.sleep(0.5)  # a stale command, if any, would run now
    stretches = _moving_stretches(recording[0].commands)
    zero_after = max((end for _, end in stretches), default=sent_at)
    return {"ready": ready, "status": status, "exit_s": exit_s,
            "final_mode_state": f"{recording[0].mode}/{recording[0].state}",
            "stopped": recording[0].commands[-1][1] == 0.0 if recording[0].commands else False,
            "zero_command_ms": None if math.isinf(zero_after) else round((max(zero_after, sent_at) - sent_at) * 1e3, 1),
            "reaccelerated": any(start > sent_at and start >= zero_after for start, _ in stretches)}


def signal_runs(controller: Controller, runs: int, seed: int = 34) -> list[dict[str, Any]]:
    """``runs`` of :func:`signal_run`, SIGINT and SIGTERM alternately, at random moments 0.1-0.4 s in."""
    rng = np.random.default_rng(seed)
    return [signal_run(controller, signal.SIGINT if k % 2 == 0 else signal.SIGTERM, float(rng.uniform(0.1, 0.4)))
            for k in range(runs)]


def summarise_signals(runs: list[dict[str, Any]], hogs: int) -> dict[str, Any]:
    exits = [r["exit_s"] for r in runs if r["exit_s"] is not None]
    zeros = [r["zero_command_ms"] for r in runs if r["zero_command_ms"] is not None]
    return {"load_processes": hogs, "runs": len(runs), "streamed": sum(r["ready"] for r in runs),
            "arm_stopped": sum(bool(r["stopped"]) and r["final_mode_state"] == "0/4" for r in runs),
            "zero_within_100ms": sum(r["zero_command_ms"] is not None and r["zero_command_ms"] <= 100.0
                                     for r in runs),
            "exited_within_5s": sum(e <= EXIT_WITHIN for e in exits),
            "exit_s_min_median_max": [round(v, 2) for v in (min(exits), float(np.median(exits)), max(exits))]
            if exits else None,
            "final_mode_state": sorted({r["final_mode_state"] for r in runs}),
            "exit_statuses": sorted({str(r["status"]) for r in runs}),
            "zero_command_ms": _span(zeros), "reaccelerated": sum(bool(r["reaccelerated"]) for r in runs)}


# --- summaries ----------------------------------------------------------------------------
def _span(values: list[float]) -> list[float] | None:
    return [min(values), max(values)] if values else None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-fault figures over its runs (see the module docstring)."""
    def values(name: str) -> list[Any]:
        return [r[name] for r in runs if r.get(name) is not None]

    summary: dict[str, Any] = {
        "runs": len(runs), "detected": sum(bool(r["detected"]) for r in runs),
        "kinds": sorted({str(r["kind"]) for r in runs}), "false_faults": sum(bool(r["false_fault"]) for r in runs),
        "final_mode_state": sorted({f"{r['final_mode']}/{r['final_state']}" for r in runs}),
        "sent_after_detection": sum(values("sent_after_detection")),
        "reaccelerated": sum(bool(v) for v in values("reaccelerated")),
        "motion_started_after_detection": sum(bool(v) for v in values("motion_started_after_detection")),
        "never_commanded": sum(r.get("motion_commands") == 0 for r in runs),
        "motion_commands": _span(values("motion_commands")),
        "refused_after_fault": _span(values("refused_after_fault"))}
    for name in ("detect_ms", "stop_sent_ms", "zero_command_ms", "still_ms", "stale_moving_ms", "cpu_wait_ms",
                 "first_motion_to_zero_ms"):
        summary[name] = _span(values(name))
    return summary


def summarise_healthy(runs: list[dict[str, Any]], hogs: int, driver_cpus: set[int],
                      controller_cpus: set[int]) -> dict[str, Any]:
    trips = [t for r in runs for t in r["trips"]]
    waits = [r["cpu_wait"] * 1e3 for r in runs if r["cpu_wait"] is not None]
    return {"load_processes": hogs, "driver_cpus": sorted(driver_cpus), "controller_cpus": sorted(controller_cpus),
            "runs": len(runs), "faulted_runs": sum(r["fault"] is not None for r in runs),
            "faults": [r["fault"] for r in runs if r["fault"]], "cycles": len(trips),
            "fault": next((r["fault"] for r in runs if r["fault"]), None),
            "cycle_p99_ms": round(float(np.percentile(trips, 99)) * 1e3, 2) if trips else None,
            "cycle_max_ms": round(float(np.max(trips)) * 1e3, 2) if trips else None,
            "cpu_wait_ms": [round(min(waits), 1), round(max(waits), 1)] if waits else None}


def run_column(controller: Controller, faults: dict[str, FaultConfig], repeats: int, healthy_runs: int,
               healthy_seconds: float, signal_count: int
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The fault matrix, the healthy runs and the signal runs, in the current load."""
    matrix = {name: summarise([one_fault(controller, name, config) for _ in range(repeats)])
              for name, config in faults.items()}
    healthy = [healthy_run(controller, healthy_seconds) for _ in range(healthy_runs)]
    return matrix, healthy, signal_runs(controller, signal_count)


def placement() -> tuple[set[int], set[int]]:
    """(controller CPUs, driver CPUs): the last CPU for the emulator, the others for the driver."""
    cpus = sorted(os.sched_getaffinity(0))
    controller = {cpus[-1]} if len(cpus) > 1 else set()
    return controller, set(cpus) - controller


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the only mode)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per fault and column")
    parser.add_argument("--load", type=int, default=4, help="busy processes beside the driver in the loaded column")
    parser.add_argument("--healthy-runs", type=int, default=50, help="healthy-link runs per column")
    parser.add_argument("--signal-runs", type=int, default=50, help="signalled streaming processes per column")
    parser.add_argument("--healthy-seconds", type=float, default=3.0)
    parser.add_argument("--only", action="append", choices=[*FAULTS, "watchdog", "healthy", "signals"],
                        help="run only this part (repeatable)")
    parser.add_argument("--columns", default="idle,loaded", help="comma-separated: idle, loaded")
    args = parser.parse_args()
    wanted = set(args.only or [*FAULTS, "watchdog", "healthy", "signals"])
    faults = {name: config for name, config in FAULTS.items() if name in wanted}
    healthy_runs = args.healthy_runs if "healthy" in wanted else 0
    signal_count = args.signal_runs if "signals" in wanted else 0
    logging.disable(logging.CRITICAL)
    controller_cpus, driver_cpus = placement()
    figures: dict[str, Any] = {"load_average_before": os.getloadavg()[0]}
    saved_affinity = os.sched_getaffinity(0)
    columns: dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]] = {}
    with contextlib.redirect_stdout(sys.stderr):  # the vendor SDK prints its banners on stdout
        controller = Controller(controller_cpus)
        try:
            os.sched_setaffinity(0, driver_cpus)
            for column in args.columns.split(","):
                load = cpu_load(args.load, driver_cpus) if column == "loaded" else contextlib.nullcontext()
                with load:
                    columns[column] = run_column(controller, faults, args.repeats, healthy_runs,
                                                 args.healthy_seconds, signal_count)
        finally:
            os.sched_setaffinity(0, saved_affinity)
            controller.close()
        if "watchdog" in wanted:
            reactions = [1e3 * r for r in watchdog_reaction(max(args.repeats, 1), HOST, PORT)]  # ms
            figures["watchdog_zero_after_last_command_ms"] = ([round(min(reactions), 1), round(max(reactions), 1)]
                                                               if reactions else None)
    for name in faults:  # the idle figures under the fault's name, the loaded ones beside them
        figures[name] = {**columns.get("idle", ({}, [], []))[0].get(name, {}),
                         "loaded": columns.get("loaded", ({}, [], []))[0].get(name)}
    for column, key, hogs in (("idle", "healthy_idle", 0), ("loaded", "healthy_under_load", args.load)):
        if column in columns and healthy_runs:
            figures[key] = summarise_healthy(columns[column][1], hogs, driver_cpus, controller_cpus)
    for column, key, hogs in (("idle", "signals_idle", 0), ("loaded", "signals_under_load", args.load)):
        if column in columns and signal_count:
            figures[key] = summarise_signals(columns[column][2], hogs)
    figures["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
