"""``jaxgt evaluate LOG --policy P.npz``: a strategy's value from logged episodes.

Importance-sampling estimators of Bowling et al. 2008 and AIVAT
(:mod:`jaxgt.evaluation.importance`): the value of playing ``--policy``
against the opponents in the log, where ``--logged-policy`` played the
evaluated seat (default: ``--policy`` itself, on-policy). The seat is
``--player P`` in every line, or, for a log written by ``jaxgt match --log``
(lines with the optional ``"seats"`` field), ``--agent K``: match agent K's seat
in each line (``--agent K --player P``: only the lines where agent K played P).
A ``--player`` request on a log whose seats field puts both agents in that seat
is refused as ambiguous. Where the log records the agents' specs (``"agents"``), the policy
that played the evaluated seat (``--logged-policy``, else ``--policy``) must be the
evaluated agent's: a tabular agent (``policy(path=...)``, ``random``) with the same
probabilities; anything else is refused before estimating (a log without specs gets a
warning).
"""

from __future__ import annotations

import sys

from jaxgt.cli.common import PAYOFF, print_json

TABULAR_KINDS = ("policy", "random")
"""Agent kinds that play a fixed tabular policy (:class:`jaxgt.agents.base.PolicyAgent`)."""


def add_parser(sub) -> None:
  from jaxgt.evaluation.importance import BASELINES, ESTIMATORS
  p = sub.add_parser("evaluate", help="estimate a policy's value from a log of played episodes")
  p.add_argument("log", help="JSON Lines log: {game, history, returns[, seats]} per line")
  p.add_argument("--policy", required=True, metavar="P.npz", help="the evaluated policy")
  p.add_argument("--logged-policy", metavar="Q.npz",
                 help="the policy that played the evaluated seat in the log (default: --policy)")
  p.add_argument("--player", type=int, default=None, choices=[0, 1],
                 help="the evaluated seat, the same in every line (default 0); with --agent: "
                      "only the lines where that agent played this seat")
  p.add_argument("--agent", type=int, default=None, choices=[0, 1],
                 help="evaluate match agent K (AGENT0/AGENT1 of jaxgt match --log) in the seat "
                      "its 'seats' field records in each line")
  p.add_argument("--estimator", default="basic", choices=list(ESTIMATORS))
  p.add_argument("--baseline", default=None, choices=list(BASELINES),
                 help="value-function baseline: bet-call values (bc) or exact values of "
                      "--baseline-policy (default: none; exact for aivat)")
  p.add_argument("--baseline-policy", metavar="B.npz",
                 help="profile whose exact values the 'exact' baseline uses (default: --policy)")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object: the estimate, its standard error and 95%% "
                      "interval, the number of episodes (docs/CLI.md)")


def select_seats(episodes, agent, player):
  """``(episodes, seats [B], description)``: the lines evaluated and the seat of each.

  ``agent`` (0, 1 or None) reads each line's ``"seats"`` field; ``player`` alone
  applies to every line and is refused when that field shows both agents in
  that seat (a log of ``jaxgt match``, which alternates them).
  """
  import numpy as np
  if agent is None:
    player = 0 if player is None else player
    sat = {e.seats[player] for e in episodes if e.seats is not None}
    if len(sat) > 1:
      raise ValueError(f"the log's 'seats' field shows both agents as player {player} (jaxgt "
                       f"match alternates seats): say whose policy --policy is with --agent 0|1 "
                       f"(every line, in that agent's seat), or --agent K --player {player} (the "
                       f"lines where agent K was player {player})")
    return episodes, np.full(len(episodes), player), f"player {player}"
  missing = next((e for e in episodes if e.seats is None), None)
  if missing is not None:
    raise ValueError(f"line {missing.line}: no 'seats' field, so --agent cannot tell which seat "
                     f"agent {agent} played (logs of jaxgt match --log carry it); use --player "
                     f"for a log whose evaluated seat is the same in every line")
  seats = np.array([e.seats[agent] for e in episodes])
  if player is None:
    counts = ", ".join(f"{int((seats == p).sum())} as player {p}" for p in (0, 1))
    return episodes, seats, f"agent {agent} ({counts})"
  keep = np.flatnonzero(seats == player)
  if keep.size == 0:
    raise ValueError(f"agent {agent} never played player {player} in this log")
  return ([episodes[b] for b in keep], seats[keep],
          f"agent {agent} as player {player} ({keep.size} of {len(episodes)} lines)")


def check_played_policy(episodes, agent, seats, flag, path, policy, game) -> None:
  """Raises ``ValueError`` unless ``policy`` (``flag path``) is the tabular policy match
  ``agent`` played in ``episodes`` (in seats ``seats [B]``) as their ``"agents"`` field
  records; warns on stderr for lines without that field."""
  import numpy as np
  from jaxgt.agents.specs import parse_spec
  from jaxgt.core.checks import PROB_ATOL
  if agent is not None and any(e.agents is None for e in episodes):
    print(f"WARNING: the log does not record which agent played (no 'agents' field; jaxgt "
          f"match --log writes it): nothing checks that {flag} {path} is what agent {agent} "
          f"played; the estimate holds only if it is", file=sys.stderr)
  for text in sorted({e.agents[agent] for e in episodes if e.agents} if agent is not None else ()):
    if text.split("(")[0].strip() not in TABULAR_KINDS:
      raise ValueError(f"agent {agent} of this log is {text!r}, not a tabular policy: {flag} "
                       f"{path} did not play its lines, and no policy file describes its moves")
    try:
      played = parse_spec(text).build(game).policy
    except ValueError as e:
      print(f"WARNING: cannot check {flag} {path} against agent {agent}'s {text!r}: {e}",
            file=sys.stderr)
      continue
    if not all(np.allclose(np.asarray(played[p], np.float64), np.asarray(policy[p], np.float64),
                           rtol=0.0, atol=PROB_ATOL) for p in set(seats.tolist())):
      raise ValueError(f"{flag} {path} is not the policy agent {agent} played in this log "
                       f"({text!r}); pass that agent's policy, or --agent for the other agent")


def run(args) -> int:
  import jax
  jax.config.update("jax_enable_x64", True)  # products of many probabilities
  from jaxgt import policy as pol_lib
  from jaxgt.evaluation import importance
  from jaxgt.evaluation.episode_log import read_episodes
  episodes = read_episodes(args.log)
  episodes, seats, who = select_seats(episodes, args.agent, args.player)
  pol, game = pol_lib.load_policy(args.policy)
  importance.check_log_game(game, episodes)
  logged = pol_lib.load_policy(args.logged_policy, game)[0] if args.logged_policy else None
  flag, path, played = (("--policy", args.policy, pol) if logged is None else
                        ("--logged-policy", args.logged_policy, logged))
  agent = args.agent if args.agent is not None else next(  # unique: select_seats checked
      (e.seats[args.player or 0] for e in episodes if e.seats is not None), None)
  check_played_policy(episodes, agent, seats, flag, path, played.probs, game)
  reference = pol_lib.load_policy(args.baseline_policy, game)[0] if args.baseline_policy else None
  baseline = args.baseline or ("exact" if args.estimator == "aivat" else "none")
  out = importance.estimate_episodes(game, episodes, pol, player=seats,
                                     logged_policy=logged, estimator=args.estimator,
                                     baseline=baseline, baseline_policy=reference)
  partial = sum(None in e.history for e in episodes)
  if partial and args.estimator == "aivat":
    print(f"note: {partial} lines hide a chance outcome (null): aivat uses its "
          f"partial-information variant (the evaluated player's own view) on every line",
          file=sys.stderr)
  elif partial and not importance.partial_information_unbiased(args.estimator, baseline,
                                                                logged is None):
    print(f"note: {partial} lines hide a chance outcome (null); the {args.estimator} estimator "
          f"with baseline {baseline}{' off-policy' if logged is not None else ''} is biased with "
          f"partial information (jaxgt's own completion recipe: jaxgt.evaluation.importance); "
          f"unbiased: basic, or on-policy all-cards, without a baseline, and aivat",
          file=sys.stderr)
  setting = "off-policy" if logged is not None else "on-policy"
  if args.json:
    print_json({"game": game.name, **out.as_dict(), "baseline": baseline, "setting": setting,
                "evaluated": who, "units": {"estimate": PAYOFF + " (the evaluated seat)"}})
    return 0
  lo, hi = out.ci95
  print(f"{game.name}, {who}, {out.estimator} estimator, baseline {baseline}, {setting}")
  print(f"estimate {out.estimate:.6f}  stderr {out.stderr:.6f}  95% interval "
        f"[{lo:.6f}, {hi:.6f}]  episodes {out.episodes}")
  return 0
