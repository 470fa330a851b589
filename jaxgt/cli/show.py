"""``jaxgt show P.npz``: the strategy table of a saved policy (information state, action names,
probabilities), optionally filtered by a pattern on the information-state strings."""

from __future__ import annotations

import fnmatch
import re

from jaxgt.cli.common import print_json


def add_parser(sub) -> None:
  p = sub.add_parser("show", help="print the strategy table of a saved policy",
                     description="One row per information state of a policy saved by jaxgt solve "
                     "--save: the player, the information-state string and the probability of "
                     "each legal action, named as the game names its actions.")
  p.add_argument("policy", metavar="P.npz", help="a policy file (jaxgt solve --save)")
  p.add_argument("--infostates", metavar="PATTERN",
                 help="only the information states whose string matches: a regular expression "
                      "found anywhere in the string (with --glob: a shell pattern matching the "
                      "whole string)")
  p.add_argument("--glob", action="store_true",
                 help="PATTERN is a shell pattern (*, ?, [...]) rather than a regular expression")
  p.add_argument("--player", type=int, choices=(0, 1), help="only this player's states")
  p.add_argument("--json", action="store_true", help="print one JSON object")


def matcher(pattern: str | None, glob: bool):
  """The predicate on information-state strings of ``--infostates PATTERN`` (``ValueError``
  for a malformed regular expression, before the policy is read)."""
  if pattern is None:
    return lambda key: True
  if glob:
    return lambda key: fnmatch.fnmatchcase(key, pattern)
  try:
    compiled = re.compile(pattern)
  except re.error as e:
    raise ValueError(f"--infostates {pattern!r}: not a regular expression ({e}); pass --glob "
                     "for a shell pattern") from None
  return lambda key: compiled.search(key) is not None


def strategy_rows(pol, g, keep, player: int | None = None) -> list:
  """``[{"player", "infostate", "actions": [{"action", "name", "probability"}]}]``: the legal
  actions of every information state of policy ``pol`` of compiled game ``g`` that ``keep``
  accepts, player 0's states first, in the game's information-state order."""
  import numpy as np
  rows = []
  for p in (0, 1) if player is None else (player,):
    legal = np.asarray(g.tree.players[p].legal)
    for i, key in enumerate(g.infostate_keys[p]):
      if not keep(key):
        continue
      rows.append({"player": p, "infostate": key, "actions": [
          {"action": int(a), "name": g.game.action_string(int(a)),
           "probability": float(pol.probs[p][i, a])} for a in np.flatnonzero(legal[i])]})
  return rows


def run(args) -> int:
  from jaxgt import policy as policy_lib
  if args.glob and args.infostates is None:
    raise ValueError("--glob needs --infostates PATTERN")
  keep = matcher(args.infostates, args.glob)
  pol, g = policy_lib.load_policy(args.policy)
  rows = strategy_rows(pol, g, keep, args.player)
  if args.json:
    print_json({"game": g.name, "policy": args.policy, "pattern": args.infostates,
                "infostates": rows, "units": {"probability": "probability of the action"}})
    return 0
  if not rows:
    print(f"{g.name}: no information state matches {args.infostates!r}")
    return 0
  width = max(len("information state"), min(max(len(r["infostate"]) for r in rows), 60))
  print(f"{g.name}: {len(rows)} information state{'s' if len(rows) != 1 else ''}")
  print(f"{'player':<7}{'information state':<{width}}  actions")
  for r in rows:
    actions = "  ".join(f"{a['name']}: {a['probability']:.4f}" for a in r["actions"])
    print(f"{r['player']:<7}{r['infostate']:<{width}}  {actions}")
  return 0
