"""Student of Games' training loop: self-play searches/s, queries solved/s, learner steps/s
and the share of time in each part (Schmid et al. 2023, Algorithm 2; :mod:`jaxgt.training.loop`).

Runs the loop's three compiled programs (actors, query solver, learner) for a few
iterations after one warm-up iteration (compilation), each part timed on its own. Peer:
OpenSpiel C++ CFR+ (``pyspiel``) on the same game in the same run, compared on tree
history visits per second (ours: live search-tree histories summed over the self-play
searches' CFR iterations; OpenSpiel: one traversal of the game tree per player per
iteration). It is the nearest C++ figure, not a like-for-like training loop: OpenSpiel has
no sound self-play trainer.

  python benchmarks/selfplay_speed.py --quick                    # Kuhn, tiny preset
  python benchmarks/selfplay_speed.py --game leduc_poker --preset leduc --iterations 20
  python benchmarks/selfplay_speed.py --config my_config.json    # any TrainConfig as JSON
"""

import argparse
import pathlib
import time

import jax
import numpy as np

import jaxgt
from jaxgt.bench_report import figure, missing_peer
from jaxgt.policy import openspiel_game_string
from jaxgt.training import config as config_lib
from jaxgt.training import loop

BENCH_QUICK = ["--game", "kuhn_poker", "--preset", "tiny", "--iterations", "5"]


def _openspiel_visits(game, seconds: float = 1.0):
  """History visits/s of OpenSpiel C++ CFR+ (None without pyspiel or an OpenSpiel twin)."""
  try:
    import pyspiel
  except ImportError:
    return None
  try:
    spiel = pyspiel.load_game(openspiel_game_string(game))
  except ValueError:  # no OpenSpiel equivalent
    return None
  solver = pyspiel.CFRPlusSolver(spiel)
  solver.evaluate_and_update_policy()
  n, t0 = 0, time.perf_counter()
  while time.perf_counter() - t0 < seconds:
    solver.evaluate_and_update_policy()
    n += 1
  return 2 * n * game.tree.num_histories / (time.perf_counter() - t0)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--preset", default="leduc", choices=sorted(config_lib.PRESETS))
  ap.add_argument("--config", metavar="FILE",
                  help="a JSON training config instead of --preset (TrainConfig's fields)")
  ap.add_argument("--iterations", type=int, default=10)
  ap.add_argument("--quick", action="store_true", help="Kuhn with the tiny preset")
  args = ap.parse_args(argv)
  if args.quick:
    args.game, args.preset, args.iterations = "kuhn_poker", "tiny", 5
  g = jaxgt.load(args.game)
  base = config_lib.load_config(args.config) if args.config else config_lib.preset(args.preset)
  cfg = config_lib.from_dict({"eval_every": 0}, base)
  if args.config:
    args.preset = pathlib.Path(args.config).name
  trainer = loop.trainer_for(g, cfg)
  state = trainer.init(0)
  t0 = time.perf_counter()
  state, _ = trainer.iterate(state)  # compiles the three programs
  print(f"{g.name}: preset {args.preset} (G={cfg.num_actors} actors, SoG({cfg.simulations}, "
        f"{cfg.expansions_per_update:g}), solver batch {cfg.solver_batch}, learner batch "
        f"{cfg.batch_size}); compile + first iteration {time.perf_counter() - t0:.1f}s, device "
        f"{jax.devices()[0].platform}")
  times = np.zeros(3)
  for _ in range(args.iterations):
    state, m = trainer.iterate(state)
    times += [m["time_actors"], m["time_solver"], m["time_learner"]]
  # history visits of one actor step (the same program, timed above)
  _, _, _, am = trainer.actors.step(state.learner.params, state.actors, state.replay,
                                    state.queries, jax.random.PRNGKey(0))
  visits = int(am["history_visits"]) * cfg.actor_steps * args.iterations
  total = times.sum()
  searches = args.iterations * cfg.actor_steps * cfg.num_actors / times[0]
  solved = args.iterations * cfg.solver_steps * cfg.solver_batch / max(times[1], 1e-9)
  steps = args.iterations * cfg.learner_steps / times[2]
  params = {"game": g.name, "preset": args.preset}
  print(f"  self-play: {searches:,.1f} searches/s   query solver: {solved:,.1f} queries/s   "
        f"learner: {steps:,.1f} steps/s")
  print("  share of time: " + ", ".join(f"{n} {100 * t / total:.0f}%" for n, t in
                                        zip(("actors", "solver", "learner"), times)))
  figure("self-play searches", searches, "searches/s", **params)
  figure("queries solved", solved, "queries/s", **params)
  figure("learner steps", steps, "steps/s", **params)
  for name, t in zip(("actors", "solver", "learner"), times):
    figure(f"time share {name}", 100 * t / total, "%", higher_is_better=False, **params)
  ours = visits / times[0]
  peer = _openspiel_visits(g)
  if peer is None:
    missing_peer("OpenSpiel C++ CFR+", "pyspiel not installed or no OpenSpiel game", **params)
  print(f"  self-play history visits/s {ours:,.0f}" + ("" if peer is None else
                                                       f"; OpenSpiel C++ CFR+ {peer:,.0f}"))
  figure("self-play history visits", ours, "visits/s", peer=None if peer is None else
         "OpenSpiel C++ CFR+", peer_value=peer, **params)


if __name__ == "__main__":
  main()
