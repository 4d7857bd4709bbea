#!/usr/bin/env python3
"""Telemetry cost benchmark: one stdio tool call without OpenTelemetry, with the API and no provider,
and with an SDK provider, side by side in one run.

Every mode is measured in its own fresh child process (a "worker": this same file run with
``--worker MODE``), so one mode's imports never reach another: "none" must not have
``opentelemetry`` in ``sys.modules`` at all. All modes call ``echo`` on the stdlib echo server
(``echo_server.py``), which runs in a grandchild process whose CPU is not counted. The modes run
--rounds times, interleaved in rotating order, and every figure is the median across rounds.

Modes:
  none      OpenTelemetry never imported (the default for an application that does not use it)
  api       ``opentelemetry.trace`` and ``opentelemetry.metrics`` imported, no provider set
  sdk       SDK TracerProvider (SimpleSpanProcessor into an exporter that drops spans) and
            MeterProvider (InMemoryMetricReader), set as the global providers: a span and a
            histogram point per call
  sdk-off   the same providers, the client built with ``telemetry=False``

The report gives each mode's median latency and CPU per call, and both as ratios to "none".
The script only reports; it never asserts. Run ``--help`` for options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "echo_server.py")

RESULT_MARK = "@@BENCH-RESULT@@ "
MODES = ("none", "api", "sdk", "sdk-off")
ECHO_ARGS = {"text": "hi"}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Worker (a fresh child process per mode and round)
# --------------------------------------------------------------------------


def _set_up(mode: str) -> dict:
    """Load OpenTelemetry as the mode says; returns the client options."""
    if mode == "none":
        return {}
    from opentelemetry import metrics, trace

    if mode == "api":
        return {}
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        """Takes every span and keeps none: the cost of making spans, not of shipping them."""

        def export(self, spans):  # type: ignore[no-untyped-def]
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Drop()))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return {"telemetry": False} if mode == "sdk-off" else {}


def _worker(mode: str, calls: int, warmup: int) -> dict:
    options = _set_up(mode)
    import mcpsync

    with mcpsync.connect([sys.executable, SERVER], **options) as client:
        call_tool = client.call_tool
        for _ in range(warmup):
            call_tool("echo", ECHO_ARGS)
        samples = []
        perf = time.perf_counter_ns
        cpu0 = time.process_time_ns()
        for _ in range(calls):
            started = perf()
            if call_tool("echo", ECHO_ARGS).text != "hi":
                raise RuntimeError("bad echo result")
            samples.append(perf() - started)
        cpu = time.process_time_ns() - cpu0
    loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
    return {"mode": mode, "median_us": statistics.median(samples) / 1000.0, "cpu_per_call_us": cpu / calls / 1000.0,
            "opentelemetry_modules": len(loaded)}


# --------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------


def _run_worker(mode: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--calls", str(args.calls),
               "--warmup", str(args.warmup)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return {"mode": mode, "ok": False, "error": "timed out after %.0fs" % args.timeout}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
            result["ok"] = True
            return result
    tail = " | ".join(line for line in done.stderr.strip().splitlines()[-4:])
    return {"mode": mode, "ok": False, "error": tail or "exit status %s" % done.returncode}


def _available() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import opentelemetry.sdk.trace, opentelemetry.sdk.metrics"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def _report(results: dict) -> None:
    meta = results["meta"]
    print("telemetry cost: one stdio tools/call, %d calls per round, %d rounds (Python %s, %s, %s CPUs)"
          % (meta["calls"], meta["rounds"], meta["python"], meta["platform"], meta["cpus"]))
    print()
    base = results["modes"].get("none") or {}
    header = "%-10s %14s %14s %12s %12s %10s" % ("mode", "median (us)", "CPU/call (us)", "latency x", "CPU x",
                                                 "otel mods")
    print(header)
    print("-" * len(header))
    for mode in MODES:
        found = results["modes"].get(mode)
        if found is None:
            continue
        if not found.get("ok"):
            print("%-10s %s" % (mode, found.get("error")))
            continue
        ratio = (lambda key: found[key] / base[key] if base.get("ok") and base.get(key) else float("nan"))
        print("%-10s %14.1f %14.1f %12.2f %12.2f %10d" % (mode, found["median_us"], found["cpu_per_call_us"],
                                                         ratio("median_us"), ratio("cpu_per_call_us"),
                                                         found["opentelemetry_modules"]))
    print()
    for mode in MODES:
        found = results["modes"].get(mode)
        if found and found.get("ok") and len(found.get("cpu_by_round", [])) > 1:
            print("  %-8s per-round median %s us; CPU/call %s us" % (
                mode, "/".join("%.0f" % v for v in found["median_by_round"]),
                "/".join("%.0f" % v for v in found["cpu_by_round"])))


def _parent(args: argparse.Namespace) -> int:
    modes = list(MODES) if _available() else ["none"]
    if modes == ["none"]:
        _log("opentelemetry-sdk is not importable: only the 'none' mode is measured")
    runs: dict = {mode: [] for mode in modes}
    failed: dict = {}
    for round_ in range(args.rounds):
        order = modes[round_ % len(modes):] + modes[:round_ % len(modes)]
        for mode in order:
            if mode in failed:
                continue
            _log("[%s] round %d/%d: %d calls ..." % (mode, round_ + 1, args.rounds, args.calls))
            found = _run_worker(mode, args)
            if found.get("ok"):
                runs[mode].append(found)
            else:
                failed[mode] = found
                _log("[%s] FAILED: %s" % (mode, found.get("error")))
    results: dict = {"meta": {"python": platform.python_version(), "platform": platform.platform(terse=True),
                              "cpus": os.cpu_count(), "calls": args.calls, "rounds": args.rounds},
                     "modes": dict(failed)}
    for mode, found in runs.items():
        if not found:
            continue
        results["modes"][mode] = {
            "ok": True, "median_us": statistics.median(r["median_us"] for r in found),
            "cpu_per_call_us": statistics.median(r["cpu_per_call_us"] for r in found),
            "opentelemetry_modules": found[0]["opentelemetry_modules"],
            "median_by_round": [r["median_us"] for r in found], "cpu_by_round": [r["cpu_per_call_us"] for r in found]}
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        _report(results)
    return 0


def main(argv: "list | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per worker; default 2000")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first; default 200")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions per mode; default 3")
    parser.add_argument("--timeout", type=float, default=120.0, help="kill a worker after this many seconds")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of the table")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.calls, args.rounds = max(1, args.calls), max(1, args.rounds)
    if args.worker:
        print(RESULT_MARK + json.dumps(_worker(args.worker, args.calls, args.warmup)), flush=True)
        return 0
    return _parent(args)


if __name__ == "__main__":
    sys.exit(main())
