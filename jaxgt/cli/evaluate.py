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

Without ``--policy``, the plain mean of the logged returns of the evaluated seat with its
normal 95% interval (estimator ``mean``): what a log of a game too large to enumerate (played
through its rules) supports; its lines are replayed through the rules to check them. The
estimators need the enumerated tree: ``--policy`` on such a log is refused before any work.
"""

from __future__ import annotations

import sys

from jaxgt.cli.common import PAYOFF, add_max_histories, check_positive, print_json

TABULAR_KINDS = ("policy", "random")
"""Agent kinds that play a fixed tabular policy (:class:`jaxgt.agents.base.PolicyAgent`)."""


def add_parser(sub) -> None:
  from jaxgt.evaluation.baselines import BASELINES
  from jaxgt.evaluation.estimators import ESTIMATORS
  p = sub.add_parser("evaluate", help="estimate a policy's value from a log of played episodes")
  p.add_argument("log", help="JSON Lines log: {game, history, returns[, seats]} per line")
  p.add_argument("--policy", metavar="P.npz",
                 help="the evaluated policy (omitted: the mean of the logged returns of the "
                      "evaluated seat, the one choice for a game too large to enumerate)")
  p.add_argument("--logged-policy", metavar="Q.npz",
                 help="the policy that played the evaluated seat in the log (default: --policy)")
  p.add_argument("--player", type=int, default=None, choices=[0, 1],
                 help="the evaluated seat, the same in every line (default 0); with --agent: "
                      "only the lines where that agent played this seat")
  p.add_argument("--agent", type=int, default=None, choices=[0, 1],
                 help="evaluate match agent K (AGENT0/AGENT1 of jaxgt match --log) in the seat "
                      "its 'seats' field records in each line")
  p.add_argument("--estimator", default=None, choices=list(ESTIMATORS),
                 help="importance-sampling estimator, with --policy (default basic)")
  p.add_argument("--baseline", default=None, choices=list(BASELINES),
                 help="value-function baseline: bet-call values (bc) or exact values of "
                      "--baseline-policy (default: none; exact for aivat)")
  p.add_argument("--baseline-policy", metavar="B.npz",
                 help="profile whose exact values the 'exact' baseline uses (default: --policy)")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object: the estimate, its standard error and 95%% "
                      "interval, the number of episodes (docs/CLI.md)")
  add_max_histories(p)


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
                       f"match alternates seats): say which agent is evaluated (and whose "
                       f"policy --policy is) with --agent 0|1 (every line, in that agent's "
                       f"seat), or --agent K --player {player} (the "
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


POLICY_ONLY = ("logged_policy", "estimator", "baseline", "baseline_policy")
"""Options that only mean something for an estimator of ``--policy``."""


def load_log_game(text: str, max_histories: int):
  """The log's game as matches play it: compiled when it can be enumerated within
  ``max_histories``, else (a device game) its rules; ``ValueError`` for a game string jaxgt
  cannot load."""
  from jaxgt.cli.common import load_playable
  from jaxgt.games.size import GameTooLargeError
  try:
    return load_playable(text, max_histories)
  except GameTooLargeError:
    raise
  except Exception as e:  # an unknown or malformed game string
    raise ValueError(f"log is for game {text!r}, which jaxgt cannot load ({e})") from None


def logged_mean(episodes, seats, game):
  """The mean of the logged returns of seat ``seats[b]`` in line ``b``, after checking the
  lines against ``game`` (located in its tree, or replayed through a device game's rules):
  ``(Estimate, lines not checked)``."""
  import numpy as np
  from jaxgt.evaluation import episode_rules
  from jaxgt.evaluation.episode_paths import locate_episodes
  from jaxgt.evaluation.importance import summarize
  from jaxgt.games.device import DeviceGame
  if isinstance(game, DeviceGame):
    unchecked = episode_rules.check_episodes(game, episodes)
  else:
    locate_episodes(game, [e.history for e in episodes], [e.returns for e in episodes],
                    episodes=episodes)
    unchecked = 0
  returns = np.array([e.returns for e in episodes], np.float64)
  return summarize(returns[np.arange(len(episodes)), seats], "mean"), unchecked


def run(args) -> int:
  import jax
  jax.config.update("jax_enable_x64", True)  # products of many probabilities
  from jaxgt import policy as pol_lib
  from jaxgt.evaluation import importance
  from jaxgt.evaluation.episode_log import read_episodes
  from jaxgt.evaluation.referee import game_name
  from jaxgt.games.device import DeviceGame
  check_positive(args, "max_histories")
  if args.policy is None:
    given = [o for o in POLICY_ONLY if getattr(args, o) is not None]
    if given:
      raise ValueError(f"--{given[0].replace('_', '-')} needs --policy (without it: the mean "
                       f"of the logged returns)")
  episodes = read_episodes(args.log)
  episodes, seats, who = select_seats(episodes, args.agent, args.player)
  log_game = load_log_game(episodes[0].game, args.max_histories)
  if args.policy is None:
    out, unchecked = logged_mean(episodes, seats, log_game)
    if unchecked:
      print(f"note: {unchecked} lines hide a chance outcome (null) and were not replayed "
            f"through the rules; their returns are taken as logged", file=sys.stderr)
    return _report(args, game_name(log_game), who, out, "none", "logged returns")
  if isinstance(log_game, DeviceGame):
    raise ValueError(f"{log_game.game_string()} is played through its rules (too large to "
                     f"enumerate within --max-histories {args.max_histories:,}): the "
                     f"estimators of --policy need its enumerated tree; omit --policy for the "
                     f"mean of the logged returns")
  args.estimator = args.estimator or "basic"
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
  return _report(args, game.name, who, out, baseline, setting)


def _report(args, name: str, who: str, out, baseline: str, setting: str) -> int:
  """Prints estimate ``out`` of seat ``who`` (text, or the ``--json`` object)."""
  if args.json:
    print_json({"game": name, **out.as_dict(), "baseline": baseline, "setting": setting,
                "evaluated": who, "units": {"estimate": PAYOFF + " (the evaluated seat)"}})
    return 0
  lo, hi = out.ci95
  what = ("mean of the logged returns" if out.estimator == "mean" else
          f"{out.estimator} estimator, baseline {baseline}, {setting}")
  print(f"{name}, {who}, {what}")
  print(f"estimate {out.estimate:.6f}  stderr {out.stderr:.6f}  95% interval "
        f"[{lo:.6f}, {hi:.6f}]  episodes {out.episodes}")
  return 0
