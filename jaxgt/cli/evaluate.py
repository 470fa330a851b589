"""``jaxgt evaluate LOG --policy P.npz``: a strategy's value from logged episodes.

Importance-sampling estimators of Bowling et al. 2008 and AIVAT
(:mod:`jaxgt.evaluation.importance`): the value to ``--player`` of playing
``--policy`` against the opponents in the log, where ``--logged-policy``
played that seat (default: ``--policy`` itself, on-policy).
"""

from __future__ import annotations

import json


def add_parser(sub) -> None:
  from jaxgt.evaluation.importance import BASELINES, ESTIMATORS
  p = sub.add_parser("evaluate", help="estimate a policy's value from a log of played episodes")
  p.add_argument("log", help="JSON Lines log: {game, history, returns} per line")
  p.add_argument("--policy", required=True, metavar="P.npz", help="the evaluated policy")
  p.add_argument("--logged-policy", metavar="Q.npz",
                 help="the policy that played --player's seat in the log (default: --policy)")
  p.add_argument("--player", type=int, default=0, choices=[0, 1], help="the evaluated seat")
  p.add_argument("--estimator", default="basic", choices=list(ESTIMATORS))
  p.add_argument("--baseline", default=None, choices=list(BASELINES),
                 help="value-function baseline: bet-call values (bc) or exact values of "
                      "--baseline-policy (default: none; exact for aivat)")
  p.add_argument("--baseline-policy", metavar="B.npz",
                 help="profile whose exact values the 'exact' baseline uses (default: --policy)")
  p.add_argument("--json", action="store_true",
                 help='print {"estimate", "stderr", "ci95", "episodes", "estimator"}')


def run(args) -> int:
  import jax
  jax.config.update("jax_enable_x64", True)  # products of many probabilities
  from jaxgt import policy as pol_lib
  from jaxgt.evaluation import importance
  from jaxgt.evaluation.episode_log import read_episodes
  episodes = read_episodes(args.log)
  pol, game = pol_lib.load(args.policy)
  importance.check_log_game(game, episodes)
  logged = pol_lib.load(args.logged_policy, game)[0] if args.logged_policy else None
  reference = pol_lib.load(args.baseline_policy, game)[0] if args.baseline_policy else None
  baseline = args.baseline or ("exact" if args.estimator == "aivat" else "none")
  out = importance.estimate_episodes(game, episodes, pol, player=args.player,
                                     logged_policy=logged, estimator=args.estimator,
                                     baseline=baseline, baseline_policy=reference)
  if args.json:
    print(json.dumps(out.as_dict()))
    return 0
  lo, hi = out.ci95
  setting = "off-policy" if logged is not None else "on-policy"
  print(f"{game.name}, player {args.player}, {out.estimator} estimator, baseline {baseline}, "
        f"{setting}")
  print(f"estimate {out.estimate:.6f}  stderr {out.stderr:.6f}  95% interval "
        f"[{lo:.6f}, {hi:.6f}]  episodes {out.episodes}")
  return 0
