"""``jaxgt bench [--quick] [--out DIR] [--only NAMES]`` and ``jaxgt bench --compare A.json B.json``.

Runs every benchmark of ``benchmarks/`` (the protocol is in
:mod:`jaxgt.bench_report`), each in its own process with its peers timed in
that process, and writes ``results.json``, ``results.md`` and a plot of the
same-run ratios under ``--out``. A benchmark runs in the folder ``--out/NAME/``, so
what it writes to relative paths (its own tables and plots) lands there too; its
output is in ``--out/logs/NAME.log``.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

from jaxgt.cli.common import check_writable, check_writable_dir, print_json


def add_parser(sub) -> None:
  p = sub.add_parser("bench", help="run the benchmark suite (or compare runs)")
  p.add_argument("--quick", action="store_true",
                 help="each benchmark's BENCH_QUICK settings (about 5 minutes on 2 CPU cores)")
  p.add_argument("--out", default="bench_results", help="output folder: results.json, "
                 "results.md, logs/NAME.log and each benchmark's own files in NAME/ "
                 "(default bench_results)")
  p.add_argument("--only", metavar="NAMES", help="comma-separated benchmark names (file stems)")
  p.add_argument("--dir", metavar="DIR", help="benchmarks folder (default: the checkout's)")
  p.add_argument("--timeout", type=float, default=1800.0,
                 help="seconds one benchmark may run before it is stopped")
  p.add_argument("--compare", nargs="+", metavar="RESULTS_JSON",
                 help="merge these results.json files into compare.md/compare.png under --out")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object at the end (the progress lines go to stderr)")


def find_benchmarks(folder: pathlib.Path) -> dict:
  """``{name: path}`` of the benchmark scripts in ``folder`` (``_*.py`` are helpers)."""
  return {p.stem: p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")}


def quick_args(path: pathlib.Path) -> list:
  """The literal ``BENCH_QUICK`` list of a benchmark (``[]`` when it has none)."""
  tree = ast.parse(path.read_text(), filename=str(path))
  for node in tree.body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BENCH_QUICK"
                                            for t in node.targets):
      value = ast.literal_eval(node.value)
      if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{path}: BENCH_QUICK must be a list of strings")
      return value
  return []


def _check_out_dir(out: str) -> pathlib.Path:
  """``out`` as a folder that exists or can be made, checked before any benchmark runs."""
  path = check_writable_dir("--out", out)
  if path.is_dir():  # a results.json there must be writable too
    check_writable({"--out": str(path / "results.json")})
  return path


def _default_dir() -> pathlib.Path:
  return pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _run_one(name: str, path: pathlib.Path, args: list, logs: pathlib.Path,
             timeout: float) -> dict:
  """Run one benchmark in its own process with ``--out/NAME/`` as its working folder (so the
  tables and plots it writes to relative paths land under ``--out``, not in the caller's
  folder), its output in ``logs/NAME.log``; its figures are read back from the file named by
  :data:`~jaxgt.bench_report.FIGURES_ENV`."""
  path = path.resolve()
  root = path.parents[1]
  work = logs.parent / name
  work.mkdir(parents=True, exist_ok=True)
  with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    figures_file = f.name
  env = dict(os.environ, JAXGT_BENCH_FIGURES=figures_file, JAXGT_BENCH_NAME=name,
             PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  log = logs / f"{name}.log"
  cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
  t0 = time.perf_counter()
  with open(log, "w") as out:
    out.write(f"$ {sys.executable} {path} {' '.join(args)}\n")
    out.flush()
    try:
      rc = subprocess.run([sys.executable, str(path), *args], stdout=out, cwd=work,
                          stderr=subprocess.STDOUT, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
      rc = -1
      out.write(f"\n[jaxgt bench] stopped after {timeout:.0f} s\n")
  seconds = time.perf_counter() - t0
  cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
  records = []
  with open(figures_file) as f:
    for line in f:
      if line.strip():
        records.append(json.loads(line))
  os.unlink(figures_file)
  tail = log.read_text().splitlines()[-15:] if rc else []
  return {"name": name, "args": args, "seconds": seconds, "cpu_seconds": cpu, "returncode": rc,
          "log": str(log), "log_tail": tail,
          "figures": [r for r in records if "missing_peer" not in r],
          "missing_peers": [r for r in records if "missing_peer" in r]}


def run(args) -> int:
  from jaxgt import bench_report
  info = sys.stderr if args.json else sys.stdout
  if args.compare:
    _check_out_dir(args.out)
    written = bench_report.compare(args.compare, args.out)
    print(pathlib.Path(written["markdown"]).read_text(), file=info)
    print(f"wrote {written['markdown']}" + "".join(f", {p}" for p in written["plots"]),
          file=info)
    if args.json:
      print_json({"compare": list(args.compare), "out": str(args.out),
                  "markdown": str(written["markdown"]),
                  "plots": [str(p) for p in written["plots"]]})
    return 0
  folder = pathlib.Path(args.dir) if args.dir else _default_dir()
  if not folder.is_dir():
    raise ValueError(f"no benchmarks folder at {folder} (run from a jaxgt checkout or pass --dir)")
  found = find_benchmarks(folder)
  names = list(found)
  if args.only:
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if unknown := [n for n in names if n not in found]:
      raise ValueError(f"--only: unknown benchmarks {unknown}; choose from {', '.join(found)}")
  if args.timeout <= 0:
    raise ValueError(f"--timeout must be positive, got {args.timeout}")
  out = _check_out_dir(args.out)
  logs = out / "logs"
  logs.mkdir(parents=True, exist_ok=True)
  env = bench_report.environment(folder.parent)
  print(f"jaxgt bench{' --quick' if args.quick else ''}: {len(names)} benchmark(s) on "
        f"{env['device']} ({env['backend']} x{env['device_count']}); peers: " +
        ", ".join(f"{k} {v or 'MISSING'}" for k, v in env["peers"].items()), flush=True,
        file=info)
  results = {"environment": env, "quick": bool(args.quick), "benchmarks": []}
  t0 = time.perf_counter()
  for i, name in enumerate(names, 1):
    extra = quick_args(found[name]) if args.quick else []
    if args.quick and not extra:
      print(f"[{i}/{len(names)}] {name}: skipped (no BENCH_QUICK: it has not adopted the "
            "protocol of jaxgt.bench_report)", flush=True, file=info)
      results["benchmarks"].append({
          "name": name, "args": None, "seconds": 0.0, "returncode": 0, "log": None,
          "log_tail": [], "figures": [], "missing_peers": [], "skipped": "no BENCH_QUICK"})
      continue
    print(f"[{i}/{len(names)}] {name} {' '.join(extra)}", flush=True, file=info)
    b = _run_one(name, found[name], extra, logs, args.timeout)
    results["benchmarks"].append(b)
    status = "ok" if b["returncode"] == 0 else f"FAILED (exit {b['returncode']}, see {b['log']})"
    print(f"      {b['seconds']:.1f} s ({b['cpu_seconds']:.1f} s CPU), "
          f"{len(b['figures'])} figures, "
          f"{len(b['missing_peers'])} missing peers: {status}", flush=True, file=info)
  results["seconds"] = time.perf_counter() - t0
  results["cpu_seconds"] = sum(b.get("cpu_seconds", 0.0) for b in results["benchmarks"])
  results["load_average"] = os.getloadavg() if hasattr(os, "getloadavg") else None
  results["missing_peers"] = [label for label, v in env["peers"].items() if v is None]
  written = bench_report.write_results(out, results)
  print(f"total {results['seconds']:.0f} s ({results['cpu_seconds']:.0f} s CPU); wrote "
        f"{written['json']}, {written['markdown']}" + "".join(f", {p}" for p in written["plots"]),
        file=info)
  if args.json:
    print_json(bench_document(args, results, written))
  return 0 if all(b["returncode"] == 0 for b in results["benchmarks"]) else 1


def bench_document(args, results: dict, written: dict) -> dict:
  """The ``jaxgt bench --json`` object (docs/CLI.md): where the results went, the machine, and
  one summary per benchmark (its figures are in results.json)."""
  env = results["environment"]
  return {
      "out": str(args.out), "results": str(written["json"]),
      "markdown": str(written["markdown"]), "plots": [str(p) for p in written["plots"]],
      "quick": results["quick"], "backend": env["backend"], "device": env["device"],
      "device_count": env["device_count"], "git": env.get("git"),
      "seconds": results["seconds"], "cpu_seconds": results["cpu_seconds"],
      "load_average": results["load_average"], "missing_peers": results["missing_peers"],
      "benchmarks": [{"name": b["name"], "args": b["args"], "seconds": b["seconds"],
                      "cpu_seconds": b.get("cpu_seconds", 0.0), "returncode": b["returncode"],
                      "figures": len(b["figures"]), "missing_peers": len(b["missing_peers"]),
                      "skipped": b.get("skipped"), "log": b["log"]}
                     for b in results["benchmarks"]],
      "failed": [b["name"] for b in results["benchmarks"] if b["returncode"] != 0],
      "units": {"seconds": "seconds", "cpu_seconds": "seconds",
                "load_average": "processes (1, 5, 15 minutes)"}}
