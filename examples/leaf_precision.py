"""How precise a trained network's leaf values must be: the exact exploitability of SoG(s, 1)
when its leaves are valued by exact values plus a fraction of the network's error.

  python examples/leaf_precision.py --out runs/leduc0 --simulations 100 --weights 0,0.5,1
  python examples/leaf_precision.py --out /tmp/sog --simulations 10 --seeds 2 --json

For a run of ``jaxgt train`` on a game that can be enumerated, each leaf query of the search
is answered by :func:`jaxgt.search.evaluator.blend` of the exact evaluator (the rest of the
game solved for the query's ranges) and the run's network: values ``exact + w (network -
exact)`` with the network's policy prior, so the leaf error is ``w`` times the network's.
``w = 1`` is ``sog(checkpoint=...)`` itself, ``w = 0`` exact values with the network's prior;
the ``exact`` row is the same search with the exact evaluator alone (its own prior), the
figure a perfect network would give. The agent is the trained one (continual re-solving with
the run's gadget alpha, node values averaged as in the run); its policy is constructed over
every public state and its exploitability computed exactly, min / avg / max over seeds (game
units, and mbb/h where the game has a blind). Where exploitability falls with ``w`` says how
much of the gap to exact leaves the network's error explains, and how much smaller the error
must be for a target.
"""

import argparse
import json
import pathlib
import sys
import time

import numpy as np

from jaxgt.core.checks import check_positive_int
from jaxgt.core.compiler import compile_game
from jaxgt.evaluation import construct
from jaxgt.games import make_from_string
from jaxgt.search import device_tree
from jaxgt.search import evaluator as evaluator_lib
from jaxgt import solving
from jaxgt.cli.common import check_writable
from jaxgt.search.gtcfr_config import VALUE_AVERAGES
from jaxgt.training import loop
from jaxgt.training.agent import ParamsHolder, params_evaluator, sog_agent

EXACT = "exact"
"""The row of the exact evaluator alone (values and prior)."""


def measure(game, out: pathlib.Path, simulations: int, weights, seeds: int, *, first_seed: int = 0,
            step=None, value_average=None, reference: bool = True, on_row=None) -> dict:
  """``{"learner_steps", "simulations", "rows": [{"weight", "exploitability": [per seed]}]}``:
  SoG(``simulations``, 1) with leaves valued ``exact + w (network - exact)`` for each weight
  ``w``, then (``reference``) the exact evaluator alone (``"weight": "exact"``); ``on_row(row)``
  is called as each row is done."""
  _, cfg = loop.read_config(out)
  trainer = loop.trainer_for(game, cfg)
  state = loop.restore(trainer, out, 0, step)
  steps, params = int(state.learner_steps), state.learner.params
  source = device_tree.source_from_game(game, "float32")
  exact = evaluator_lib.exact(source)
  network = params_evaluator(source, trainer.model, ParamsHolder(params))
  kinds = [float(w) for w in weights] + ([EXACT] if reference else [])
  rows = []
  for w in kinds:
    ev = exact if w == EXACT else evaluator_lib.blend(exact, network, w)
    t0 = time.perf_counter()
    res = construct.evaluate(
        lambda ev=ev: sog_agent(game, trainer.model, params, simulations=simulations,
                                evaluator=ev, value_average=value_average or cfg.value_average,
                                alpha=cfg.alpha),
        seeds=range(first_seed, first_seed + seeds))
    row = {"weight": w, "exploitability": res.exploitability.tolist(),
           "seconds": round(time.perf_counter() - t0, 1), "learner_steps": steps}
    rows.append(row)
    if on_row is not None:
      on_row(row)
  return {"learner_steps": steps, "simulations": simulations, "first_seed": first_seed,
          "rows": rows}


def _scale(game):
  """``(factor, unit)``: game units to mbb/h where the game has a big blind."""
  per_unit = solving.mbb(game, 1.0)
  return (1.0, "game units") if per_unit is None else (per_unit, "mbb/h")


def plot(rows, path, title, *, scale=1.0, unit="game units"):
  """Exploitability (avg, min-max bars) against the weight of the network's error; the exact
  evaluator's average as a dashed line."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  pts = sorted((r["weight"], np.asarray(r["exploitability"]) * scale) for r in rows
               if r["weight"] != EXACT)
  if pts:
    w = [p[0] for p in pts]
    avg = np.array([p[1].mean() for p in pts])
    lo = avg - np.array([p[1].min() for p in pts])
    hi = np.array([p[1].max() for p in pts]) - avg
    ax.errorbar(w, avg, yerr=[lo, hi], marker="o", capsize=3, label="exact + w (network - exact)")
  for r in rows:
    if r["weight"] == EXACT:
      ax.axhline(np.mean(r["exploitability"]) * scale, ls="--", color="gray",
                 label="exact leaf values")
      break
  ax.set_xlabel("w, the share of the network's leaf error")
  ax.set_ylabel(f"exploitability ({unit})")
  ax.set_title(title)
  ax.set_ylim(bottom=0)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def _merge(paths):
  """``(rows, scale, unit, title)`` of earlier ``--log`` files, a weight's seeds merged across
  files."""
  merged, head = {}, None
  for path in paths:
    for line in pathlib.Path(path).read_text().splitlines():
      try:
        r = json.loads(line)
        merged.setdefault(r["weight"], []).extend(r["exploitability"])
        this = (r["scale"], r["unit"], f"SoG({r['simulations']}, 1) on {r['game']}")
      except (ValueError, KeyError, TypeError):
        raise ValueError(f"--plot-log: {path} is not a log of this example") from None
      if head is not None and this != head:
        raise ValueError(f"--plot-log: the logs mix {head[2]} and {this[2]}; plot one at a time")
      head = this
  if head is None:
    raise ValueError("--plot-log: the logs are empty")
  return [{"weight": w, "exploitability": e} for w, e in merged.items()], *head


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--out", help="the run directory of jaxgt train")
  ap.add_argument("--step", type=int, help="the checkpoint's learner steps (default: the newest)")
  ap.add_argument("--simulations", type=int, default=100, help="s of SoG(s, 1) (default 100)")
  ap.add_argument("--weights", default="0,0.25,0.5,1",
                  help="comma-separated shares w in [0, 1] of the network's error (default "
                       "0,0.25,0.5,1)")
  ap.add_argument("--no-reference", action="store_true",
                  help="skip the exact evaluator's own row")
  ap.add_argument("--seeds", type=int, default=10)
  ap.add_argument("--first-seed", type=int, default=0, help="evaluate seeds from this one")
  ap.add_argument("--value-average", choices=VALUE_AVERAGES,
                  help="the searches' node-value normaliser (default: the run's)")
  ap.add_argument("--log", help="append each row as a JSON line to this file")
  ap.add_argument("--json", action="store_true", help="print one JSON object")
  ap.add_argument("--plot", help="draw exploitability against w to this image")
  ap.add_argument("--plot-log", help="only plot the rows of earlier --log files "
                  "(comma-separated; a weight's seeds from several files are merged)")
  args = ap.parse_args(argv)
  try:
    if args.plot_log:
      if not args.plot:
        raise ValueError("--plot-log needs --plot")
      check_writable({"--plot": args.plot})
      paths = args.plot_log.split(",")
      for p in paths:
        if not pathlib.Path(p).is_file():
          raise ValueError(f"--plot-log: no file {p}")
      rows, scale, unit, title = _merge(paths)
      plot(rows, args.plot, title, scale=scale, unit=unit)
      return 0
    if args.out is None:
      raise ValueError("--out is required (the run directory of jaxgt train)")
    check_positive_int("--simulations", args.simulations)
    check_positive_int("--seeds", args.seeds)
    try:
      weights = [float(w) for w in args.weights.split(",") if w.strip()]
    except ValueError:
      raise ValueError(f"--weights must be comma-separated numbers, got {args.weights!r}") from None
    bad = [w for w in weights if not 0.0 <= w <= 1.0]
    if bad or not (weights or not args.no_reference):
      raise ValueError(f"--weights must be in [0, 1] (and at least one row asked for), got "
                       f"{args.weights!r}")
    out = pathlib.Path(args.out)
    name, _ = loop.read_config(out)
    if args.step is not None:
      check_positive_int("--step", args.step)
      if not (out / loop.CHECKPOINTS / str(args.step)).is_dir():
        raise ValueError(f"{out} has no checkpoint at learner step {args.step}")
    check_writable({"--log": args.log, "--plot": args.plot})
    game = compile_game(make_from_string(name))
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  scale, unit = _scale(game)

  def on_row(row):
    e = np.asarray(row["exploitability"]) * scale
    label = "exact leaf values" if row["weight"] == EXACT else f"w = {row['weight']:g}"
    if not args.json:
      print(f"  {label:>18}: {e.min():8.4g} / {e.mean():8.4g} / {e.max():8.4g} {unit}"
            f"  ({row['seconds']:.0f}s)", flush=True)
    if args.log:
      with open(args.log, "a") as f:
        f.write(json.dumps({"game": name, "weight": row["weight"],
                            "simulations": args.simulations, "step": row["learner_steps"],
                            "first_seed": args.first_seed, "scale": scale, "unit": unit,
                            "exploitability": row["exploitability"]}) + "\n")

  if not args.json:
    print(f"{name}: SoG({args.simulations}, 1), leaves exact + w (network - exact); "
          f"min / avg / max over seeds {args.first_seed}-{args.first_seed + args.seeds - 1}")
  res = measure(game, out, args.simulations, weights, args.seeds, first_seed=args.first_seed,
                step=args.step, value_average=args.value_average,
                reference=not args.no_reference, on_row=on_row)
  if args.json:
    print(json.dumps(res))
  if args.plot:
    plot(res["rows"], args.plot, f"SoG({args.simulations}, 1) on {name}, "
         f"{res['learner_steps']} learner steps", scale=scale, unit=unit)
  return 0


if __name__ == "__main__":
  sys.exit(main())
