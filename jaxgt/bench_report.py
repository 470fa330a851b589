"""The benchmark protocol: how a benchmark reports figures to ``jaxgt bench``.

A benchmark is a script in ``benchmarks/`` (names starting with ``_`` are
helpers, not benchmarks). To take part in ``jaxgt bench`` it

1. has ``main(argv=None)`` parsing ``argv`` with argparse (so it still runs
   alone: ``python benchmarks/x.py --help``);
2. defines ``BENCH_QUICK = [...]``, a literal list of command-line arguments
   for ``jaxgt bench --quick`` (the whole quick suite must finish in about 5
   minutes on 2 CPU cores, so a benchmark's quick run takes well under one);
3. next to each figure it prints, calls :func:`figure` (a value, its unit,
   whether higher is better, the parameters that identify it, and the same
   run's peer value where a peer exists), and calls :func:`missing_peer`
   where a peer it would compare against is not installed or does not apply.

Outside ``jaxgt bench`` these calls only record in memory (:data:`RECORDED`);
under it (environment variable ``JAXGT_BENCH_FIGURES`` naming a file) each
is appended to that file as one JSON line, which the runner collects.
:func:`write_results` writes ``results.json``, ``results.md`` and the plots;
:func:`compare` merges several ``results.json`` (machines, backends) into one
table and one plot.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
from typing import Any

FIGURES_ENV = "JAXGT_BENCH_FIGURES"
"""Environment variable naming the JSON-Lines file figures are appended to."""
NAME_ENV = "JAXGT_BENCH_NAME"
"""Environment variable with the running benchmark's name (default: the script's name)."""


@dataclasses.dataclass(frozen=True)
class Peer:
  """A peer library the suite looks for."""

  module: str  # imported to find it
  dist: str  # its distribution on PyPI (for its version)
  install: str  # the command that installs it beside jaxgt


PEERS = {"OpenSpiel C++": Peer("pyspiel", "open_spiel", "pip install open_spiel"),
         "LiteEFG": Peer("LiteEFG", "LiteEFG", "pip install --no-deps LiteEFG pandas"),
         "pgx": Peer("pgx", "pgx", "pip install pgx")}
"""Peer label -> :class:`Peer`. LiteEFG 1.0.0 declares jax<0.8 and flax<0.11 and runs with
newer ones: installed with its dependencies, pip would downgrade jaxgt's JAX. pgx 2.6 installs
beside jax 0.10 as it is (it asks for jax>=0.4.6)."""
PEER_INSTALL = {label: peer.install for label, peer in PEERS.items()}
"""Peer label -> how to install it (from :data:`PEERS`)."""
RECORDED: list = []
"""Every record made in this process (figures and missing peers)."""


def _benchmark_name() -> str:
  return os.environ.get(NAME_ENV) or pathlib.Path(sys.argv[0]).stem


def _emit(record: dict) -> dict:
  RECORDED.append(record)
  path = os.environ.get(FIGURES_ENV)
  if path:
    with open(path, "a") as f:
      f.write(json.dumps(record) + "\n")
  return record


def figure(name: str, value: float, unit: str, *, higher_is_better: bool = True,
           peer: str | None = None, peer_value: float | None = None, **params: Any) -> dict:
  """Records one figure (see the module doc); returns the record.

  ``ratio`` is ours over the peer's when higher is better (throughput) and the
  peer's over ours otherwise (time), so a ratio above 1 always means jaxgt is
  ahead.
  """
  value = float(value)
  ratio = None
  if peer_value is not None and peer_value > 0 and value > 0:
    ratio = value / peer_value if higher_is_better else peer_value / value
  return _emit({"benchmark": _benchmark_name(), "name": name, "value": value, "unit": unit,
                "higher_is_better": bool(higher_is_better), "params": params, "peer": peer,
                "peer_value": None if peer_value is None else float(peer_value),
                "ratio": ratio})


def missing_peer(peer: str, reason: str, **params: Any) -> dict:
  """Records that ``peer`` could not be compared against (not installed, no such game...)."""
  return _emit({"benchmark": _benchmark_name(), "missing_peer": peer, "reason": reason,
                "params": params})


def pin_to_core(core: int | None) -> int | None:
  """Pins this process to one CPU core (``None``: leaves it as it is); returns ``core``.

  For like-for-like throughput against a single-threaded peer: jaxgt and the
  peer then run on the same core. Call it before JAX starts its CPU runtime
  (before the first computation): the runtime's worker threads inherit the
  affinity of the thread that creates them. On a shared machine a batch-1
  search otherwise loses up to half its speed when XLA's threads land on a
  core another process is using (Leduc OOS: 0.7-0.9x OpenSpiel unpinned
  against 1.3-1.7x pinned, both measured on the same core).
  """
  if core is None:
    return None
  if not hasattr(os, "sched_setaffinity"):
    raise ValueError("--pin needs os.sched_setaffinity (Linux)")
  available = sorted(os.sched_getaffinity(0))
  if core not in available:
    raise ValueError(f"--pin: core {core} is not available to this process; "
                     f"choose one of {available}")
  os.sched_setaffinity(0, {core})
  return core


def add_pin_option(parser) -> None:
  """Adds ``--pin CORE`` (:func:`pin_to_core`) to a benchmark's argparse ``parser``."""
  parser.add_argument("--pin", type=int, metavar="CORE", default=None,
                      help="run on this one CPU core, jaxgt and the OpenSpiel peer alike (like "
                           "for like against a single-threaded peer; default: unpinned)")


def pin_from_args(parser, args) -> dict:
  """Applies ``args.pin`` (:func:`add_pin_option`; a bad core is ``parser.error``) and returns
  the parameters it adds to each :func:`figure` (``{}`` unpinned, else ``{"core": CORE}``)."""
  try:
    pin_to_core(args.pin)
  except ValueError as e:
    parser.error(str(e))
  return {} if args.pin is None else {"core": args.pin}


# ------------------------------------------------------------------ the run's environment
def _git_revision(root: pathlib.Path) -> str | None:
  try:
    rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, timeout=10)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True, timeout=10)
  except (OSError, subprocess.SubprocessError):
    return None
  if rev.returncode:
    return None
  return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def peer_versions() -> dict:
  """``{peer label: version string or None when it is not installed}``."""
  import importlib
  import importlib.metadata as md
  out = {}
  for label, peer in PEERS.items():
    try:
      importlib.import_module(peer.module)
    except ImportError:
      out[label] = None
      continue
    try:
      out[label] = md.version(peer.dist)
    except md.PackageNotFoundError:
      out[label] = "installed"
  return out


def environment(root: str | os.PathLike | None = None) -> dict:
  """Backend, device name and count, versions, git revision, host of this process."""
  import jax
  import jaxlib
  devices = jax.devices()
  return {
      "backend": jax.default_backend(),
      "device": devices[0].device_kind,
      "device_count": len(devices),
      "jax": jax.__version__,
      "jaxlib": jaxlib.__version__,
      "python": platform.python_version(),
      "platform": platform.platform(),
      "cpu_count": os.cpu_count(),
      "host": platform.node(),
      "git": _git_revision(pathlib.Path(root or pathlib.Path(__file__).parents[1])),
      "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      "peers": peer_versions(),
  }


def run_label(results: dict) -> str:
  """A short name for one run: device, backend, device count and revision."""
  e = results["environment"]
  return f"{e['device']} ({e['backend']} x{e['device_count']}, {e.get('git') or '?'})"


# ------------------------------------------------------------------ tables and plots
def _params_text(params: dict) -> str:
  return ", ".join(f"{k}={v}" for k, v in params.items())


def _num(x) -> str:
  if x is None:
    return ""
  return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def markdown(results: dict) -> str:
  """``results.md``: the environment, one table per benchmark, missing peers, failures."""
  e = results["environment"]
  lines = [f"# jaxgt bench{' --quick' if results.get('quick') else ''}", "",
           f"{e['device']} ({e['backend']}, {e['device_count']} device(s)), jax {e['jax']}, "
           f"jaxlib {e['jaxlib']}, git {e.get('git')}, {e['cpu_count']} CPUs, {e['date']}", "",
           "Peers: " + ", ".join(f"{k} {v}" if v else f"{k} MISSING"
                                 for k, v in e["peers"].items()), "",
           "Ratio > 1: jaxgt ahead of the peer timed in the same run.", ""]
  if "seconds" in results:
    load = results.get("load_average")
    lines += [f"Total {results['seconds']:.0f} s wall, {results.get('cpu_seconds', 0):.0f} s CPU"
              + (f", load average {load[0]:.1f} at the end" if load else "") + ".", ""]
  for b in results["benchmarks"]:
    status = "ok" if b["returncode"] == 0 else f"FAILED (exit {b['returncode']})"
    if b.get("skipped"):
      status = f"skipped: {b['skipped']}"
    cpu = f", {b['cpu_seconds']:.0f} s CPU" if "cpu_seconds" in b else ""
    lines += [f"## {b['name']} ({b['seconds']:.0f} s{cpu}, {status})", ""]
    if b["figures"]:
      lines += ["| figure | parameters | value | unit | peer | peer value | ratio |",
                "|---|---|---:|---|---|---:|---:|"]
      for f in b["figures"]:
        ratio = f"{f['ratio']:.2f}x" if f["ratio"] is not None else ""
        lines.append(f"| {f['name']} | {_params_text(f['params'])} | {_num(f['value'])} | "
                     f"{f['unit']} | {f['peer'] or ''} | {_num(f['peer_value'])} | {ratio} |")
      lines.append("")
    for m in b["missing_peers"]:
      where = f" ({_params_text(m['params'])})" if m["params"] else ""
      lines.append(f"- missing peer **{m['missing_peer']}**{where}: {m['reason']}")
    if b["returncode"] != 0:
      lines.append(f"- log: `{b['log']}` (last lines below)")
      lines += ["", "```", *b.get("log_tail", []), "```"]
    lines.append("")
  return "\n".join(lines)


def _plot_ratios(results: dict, path: pathlib.Path) -> str | None:
  rows = [(f"{b['name']}: {f['name']} {_params_text(f['params'])} vs {f['peer']}", f["ratio"])
          for b in results["benchmarks"] for f in b["figures"] if f["ratio"] is not None]
  if not rows:
    return None
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    return None
  fig, ax = plt.subplots(figsize=(10, 0.28 * len(rows) + 1.5))
  ax.barh(range(len(rows)), [r for _, r in rows],
          color=["tab:green" if r >= 1 else "tab:red" for _, r in rows])
  ax.set_yticks(range(len(rows)), [n for n, _ in rows], fontsize=7)
  ax.invert_yaxis()
  ax.set_xscale("log")
  ax.axvline(1.0, color="k", lw=0.8)
  ax.set_xlabel("same-run ratio to the peer (> 1: jaxgt ahead)")
  ax.set_title(run_label(results), fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=110, bbox_inches="tight")
  plt.close(fig)
  return path.name


def write_results(out: str | os.PathLike, results: dict) -> dict:
  """Writes ``results.json``, ``results.md`` and ``ratios.png`` under ``out``; returns paths."""
  out = pathlib.Path(out)
  out.mkdir(parents=True, exist_ok=True)
  plot = _plot_ratios(results, out / "ratios.png")
  results = dict(results, plots=[plot] if plot else [])
  (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
  (out / "results.md").write_text(markdown(results) + "\n")
  return {"json": out / "results.json", "markdown": out / "results.md",
          "plots": [out / p for p in results["plots"]]}


def _key(f: dict) -> tuple:
  return (f["benchmark"], f["name"], json.dumps(f["params"], sort_keys=True))


def compare(paths, out: str | os.PathLike) -> dict:
  """Merges several ``results.json`` into ``compare.md`` and ``compare.png`` under ``out``.

  One row per figure (benchmark, name, parameters), one value column per
  run, then each run's value relative to the first run's (> 1: better than
  the first run, whichever direction the unit counts).
  """
  runs = []
  for p in paths:
    try:
      runs.append(json.loads(pathlib.Path(p).read_text()))
    except (OSError, json.JSONDecodeError) as e:
      raise ValueError(f"--compare {p}: cannot read a results.json ({e})") from e
    if "environment" not in runs[-1] or "benchmarks" not in runs[-1]:
      raise ValueError(f"--compare {p}: not a jaxgt bench results.json")
  labels = [f"{chr(65 + i)}: {run_label(r)}" for i, r in enumerate(runs)]
  table: dict = {}
  for i, r in enumerate(runs):
    for b in r["benchmarks"]:
      for f in b["figures"]:
        table.setdefault(_key(f), [None] * len(runs))[i] = f
  lines = ["# jaxgt bench --compare", "", *[f"- {l}" for l in labels], "",
           "| benchmark | figure | parameters | unit | " +
           " | ".join(chr(65 + i) for i in range(len(runs))) + " | " +
           " | ".join(f"{chr(65 + i)}/A" for i in range(1, len(runs))) + " |",
           "|---|---|---|---|" + "---:|" * (2 * len(runs) - 1)]
  rel_rows = []
  for (bench, name, params), fs in table.items():
    first = next(f for f in fs if f is not None)
    vals = [_num(f["value"]) if f else "missing" for f in fs]
    rel = []
    for f in fs[1:]:
      if f and fs[0] and f["value"] > 0 and fs[0]["value"] > 0:
        x = f["value"] / fs[0]["value"]
        rel.append(x if first["higher_is_better"] else 1 / x)
      else:
        rel.append(None)
    rel_rows.append((f"{bench}: {name} {_params_text(first['params'])}", rel))
    lines.append(f"| {bench} | {name} | {_params_text(first['params'])} | {first['unit']} | " +
                 " | ".join(vals) + " | " +
                 " | ".join(f"{x:.2f}x" if x is not None else "" for x in rel) + " |")
  out = pathlib.Path(out)
  out.mkdir(parents=True, exist_ok=True)
  (out / "compare.md").write_text("\n".join(lines) + "\n")
  written = {"markdown": out / "compare.md", "plots": []}
  if len(runs) > 1 and any(x is not None for _, rel in rel_rows for x in rel):
    try:
      import matplotlib
      matplotlib.use("Agg")
      import matplotlib.pyplot as plt
    except ImportError:
      return written
    import numpy as np
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(rel_rows) + 1.5))
    height = 0.8 / (len(runs) - 1)
    for j in range(len(runs) - 1):
      xs = [rel[j] if rel[j] is not None else np.nan for _, rel in rel_rows]
      ax.barh(np.arange(len(rel_rows)) + j * height, xs, height=height, label=labels[j + 1])
    ax.set_yticks(np.arange(len(rel_rows)), [n for n, _ in rel_rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel(f"relative to {labels[0]} (> 1: better)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    written["plots"].append(out / "compare.png")
  return written
