"""Student of Games: train by sound self-play, then the exact exploitability of SoG(s, 1) for
several s over seeds, from the run's checkpoints (Schmid et al. 2023, Fig. 3 style).

  python examples/train_sog.py --game kuhn_poker --preset tiny --steps 20 --out /tmp/sog
  python examples/train_sog.py --game leduc_poker --out runs/leduc0 --evaluate-only \\
      --simulations 10,100 --seeds 3 --plot docs/figures/sog_leduc.png
  python examples/train_sog.py --game "liars_dice(numdice=1)" --rules --out runs/ld11_rules \\
      --evaluate-only --simulations 10 --seeds 3     # a run through the rules, exactly

Training is :func:`jaxgt.training.loop.train` (what ``jaxgt train`` runs); evaluation
restores each checkpoint of the run (``--every``-th) and constructs the policy of
:func:`jaxgt.training.agent.sog_agent` (``jaxgt.evaluation.construct``), printing
min/avg/max exploitability over seeds (game units, and mbb/h where the game has a blind).
"""

import argparse
import json
import pathlib
import time

import numpy as np

import jaxgt
from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
from jaxgt.core.compiler import compile_game
from jaxgt.evaluation import construct
from jaxgt.games import make_from_string
from jaxgt.games.device import DeviceGame
from jaxgt.search.gtcfr_config import VALUE_AVERAGES
from jaxgt.training import config as config_lib
from jaxgt.training import loop
from jaxgt.training.agent import ParamsHolder, params_evaluator, sog_agent
from jaxgt.training.selfplay import DTYPE


def _agent_factory(game, trainer, params, simulations, value_average, root_anchored, agents):
  """A SoG(simulations, 1) agent with the run's network at ``params``, continual re-solving
  with the run's gadget alpha unless ``root_anchored``: on a run through the rules the agent
  grown from them (one per simulation count, kept in ``agents``, reading ``params`` through
  its holder, so every checkpoint shares its compiled search), else a fresh agent of the
  compiled game."""
  if isinstance(trainer, loop.DeviceTrainer):
    if simulations not in agents:
      holder = ParamsHolder()
      src = trainer.actors.source
      agents[simulations] = holder, DeviceGTCFRAgent(
          game, simulations=simulations, evaluator=params_evaluator(src, trainer.model, holder),
          evaluator_source=src, value_average=value_average, resolve=not root_anchored,
          alpha=trainer.config.alpha, dtype=DTYPE)
    holder, agent = agents[simulations]
    holder.params = params
    return agent
  return lambda: sog_agent(game, trainer.model, params, simulations=simulations,
                           value_average=value_average, resolve=not root_anchored,
                           alpha=trainer.config.alpha)


def evaluate_run(game, out: pathlib.Path, simulations, seeds: int, every: int = 1,
                 steps=None, log=None, first_seed: int = 0, value_average=None,
                 root_anchored: bool = False):
  """``{s: [(step, [exploitability per seed])]}`` over the run's checkpoints (``steps``:
  these learner steps only; step 0 is the run's initial network), seeds ``first_seed``
  to ``first_seed + seeds - 1``; ``log``: a file the results are appended to as JSON
  lines while they come (the plot merges lines of the same step and s, so seeds can be
  split over processes). Node values are averaged as in the run (``TrainConfig.value_average``,
  as ``sog(checkpoint=...)`` does) unless ``value_average`` says otherwise. ``game``: a
  compiled game, or a device game for a run through its rules (grown from them);
  ``root_anchored`` evaluates the network with root-anchored searches instead of continual
  re-solving."""
  _, cfg = loop.read_config(out)
  trainer = loop.trainer_for(game, cfg)
  enumerated = getattr(trainer, "enumerated", None)
  if isinstance(trainer, loop.DeviceTrainer) and enumerated is None:
    enumerated = compile_game(game)
  saved = sorted(int(p.name) for p in (out / loop.CHECKPOINTS).iterdir() if p.name.isdigit())
  if steps is None:
    steps = [0] + saved[::every] + ([saved[-1]] if saved and saved[-1] not in saved[::every]
                                    else [])
  curves = {s: [] for s in simulations}
  agents = {}  # a run through the rules: one agent per simulation count (_agent_factory)
  for step in steps:
    if step == 0:
      params = trainer.init(0).learner.params
    else:
      params = loop.restore(trainer, out, 0, step).learner.params
    for s in simulations:
      agent = _agent_factory(game, trainer, params, s, value_average or cfg.value_average,
                             root_anchored, agents)
      t0 = time.perf_counter()
      res = construct.evaluate(agent, seeds=range(first_seed, first_seed + seeds),
                               game=enumerated)
      curves[s].append((step, res.exploitability.tolist()))
      print(f"step {step:6d}  SoG({s}, 1): exploitability min {res.min:.4f}  avg {res.avg:.4f}"
            f"  max {res.max:.4f}  ({time.perf_counter() - t0:.0f}s)", flush=True)
      if log is not None:
        with open(log, "a") as f:
          f.write(json.dumps({"step": step, "simulations": s, "first_seed": first_seed,
                              "exploitability": res.exploitability.tolist()}) + "\n")
  return curves


def plot(curves, path, title, *, scale: float = 1.0, unit: str = "chips", references=None):
  """Exploitability (times ``scale``, in ``unit``) against learner steps, mean and min-max
  ribbon over seeds per SoG(s, 1); ``references``: ``{s: value}`` drawn as dashed lines in
  the curve's colour (e.g. SoG(s, 1) with exact leaf values, a bound no network reaches)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  references = references or {}
  for s, rows in curves.items():
    x = [r[0] for r in rows]
    ys = [scale * np.asarray(r[1]) for r in rows]  # seeds may differ between points
    line, = ax.plot(x, [y.mean() for y in ys], marker="o", label=f"SoG({s}, 1)")
    ax.fill_between(x, [y.min() for y in ys], [y.max() for y in ys], alpha=0.2,
                    color=line.get_color())
    if s in references:
      ax.axhline(scale * references[s], ls="--", lw=1, color=line.get_color(),
                 label=f"SoG({s}, 1), exact leaves")
  ax.set_xlabel("learner steps")
  ax.set_ylabel(f"exploitability ({unit})")
  ax.set_yscale("log")
  ax.set_title(title)
  ax.grid(True, alpha=0.3)
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=120)


def _plot(game, curves, args):
  bb = getattr(getattr(game, "game", game), "big_blind", None)
  scale, unit = (1.0, "game units") if bb is None else (1000.0 / bb, "mbb/h")
  refs = {}
  for item in (args.reference or "").split(","):
    if item:
      k, v = item.split("=")
      refs[int(k)] = float(v)
  plot(curves, args.plot, f"Student of Games on {loop.game_label(game)}", scale=scale, unit=unit,
       references=refs)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--game", default="kuhn_poker")
  ap.add_argument("--preset", default="tiny", choices=sorted(config_lib.PRESETS))
  ap.add_argument("--steps", type=int, default=20)
  ap.add_argument("--out", default="/tmp/sog_run")
  ap.add_argument("--evaluate-only", action="store_true", help="evaluate an existing run")
  ap.add_argument("--simulations", default="2,10")
  ap.add_argument("--seeds", type=int, default=2)
  ap.add_argument("--first-seed", type=int, default=0, help="evaluate seeds from this one")
  ap.add_argument("--value-average", choices=VALUE_AVERAGES,
                  help="the searches' node-value normaliser (default: the run's)")
  ap.add_argument("--every", type=int, default=1, help="evaluate every k-th checkpoint")
  ap.add_argument("--steps-list", help="evaluate these learner steps (comma-separated)")
  ap.add_argument("--log", help="append results as JSON lines to this file")
  ap.add_argument("--plot-log", help="only plot the JSON lines of earlier --log files "
                  "(comma-separated; a step's seeds from several files are merged)")
  ap.add_argument("--plot")
  ap.add_argument("--reference", help="S=VALUE,...: exploitability of SoG(S, 1) with exact leaf "
                  "values (game units), drawn as dashed lines")
  ap.add_argument("--json", help="write the curves as JSON")
  ap.add_argument("--rules", action="store_true",
                  help="train (or evaluate a run) through the game's rules, as `jaxgt train "
                       "--rules`: re-solving searches grown from the rules, evaluated on the "
                       "enumerated game")
  ap.add_argument("--root-anchored", action="store_true",
                  help="evaluate the run's network with the root-anchored agent (no "
                       "continual re-solving)")
  args = ap.parse_args(argv)
  game = make_from_string(args.game) if args.rules else jaxgt.load(args.game)
  if args.rules and not isinstance(game, DeviceGame):
    raise SystemExit(f"--rules: {args.game} has no rules to play through (not a device game)")
  if args.plot_log:
    curves = {}
    for path in args.plot_log.split(","):
      for line in pathlib.Path(path).read_text().splitlines():
        r = json.loads(line)
        rows = curves.setdefault(r["simulations"], {})
        rows[r["step"]] = rows.get(r["step"], []) + r["exploitability"]
    curves = {k: sorted(v.items()) for k, v in sorted(curves.items())}
    _plot(game, curves, args)
    return
  out = pathlib.Path(args.out)
  if not args.evaluate_only:
    loop.train(game, config_lib.from_dict({"eval_every": 0}, config_lib.preset(args.preset)),
               out, steps=args.steps, resume=True,
               on_metrics=lambda m: print(f"step {m['step']} loss {m['loss']:.4f}", flush=True))
  sims = [int(s) for s in args.simulations.split(",")]
  only = None if not args.steps_list else [int(x) for x in args.steps_list.split(",")]
  curves = evaluate_run(game, out, sims, args.seeds, args.every, only, args.log, args.first_seed,
                        args.value_average, args.root_anchored)
  if args.json:
    pathlib.Path(args.json).write_text(json.dumps({str(k): v for k, v in curves.items()}))
  if args.plot:
    _plot(game, curves, args)


if __name__ == "__main__":
  main()
