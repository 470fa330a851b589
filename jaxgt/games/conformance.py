"""The conformance check every game must pass: ``jaxgt.games.check(game)``.

Independent of the compiler, :func:`check` enumerates a :class:`Game` and
verifies, in this order (a failure raises ``ValueError`` naming the check and
the history's action path): ``players`` (``current_player`` is 0, 1,
``CHANCE`` or ``TERMINAL``; information states are strings, public states
hashable); ``chance_probabilities`` (distinct non-negative outcome ids,
positive probabilities summing to one); ``legal_actions`` (non-empty, sorted,
unique, inside ``[0, num_actions)``); ``zero_sum`` (finite ``u0 + u1 == 0``);
``perfect_recall`` (one own action sequence and one legal set per
information state, and one own sequence per *augmented* information state);
``public_states`` (an information state lies in one public state; a public
state's histories share depth and parents' public state, so public states
form a tree); ``deterministic`` (a second enumeration, and a compiled tree,
agree).

A :class:`~jaxgt.games.device.DeviceGame` (or a game compiled from one) is
checked on sampled trajectories instead: :func:`jaxgt.games.rules_check.check_rules`,
whose check names are :data:`jaxgt.games.rules_check.CHECKS`.
"""

from __future__ import annotations

import math
from typing import Any

from jaxgt.games import rules_check
from jaxgt.games.base import CHANCE, PROB_ATOL, TERMINAL, Game
from jaxgt.games.device import DeviceGame
from jaxgt.games.size import GameTooLargeError

CHECKS = ("players", "chance_probabilities", "legal_actions", "zero_sum",
          "perfect_recall", "public_states", "deterministic")


class _Fail(ValueError):
  pass


def _enumerate(game: Game, max_histories: int, tol: float):
  """One breadth-first pass; returns per-history arrays and the records to compare."""
  name = game.game_string()
  states = [game.initial_state()]
  parent, action, depth = [-1], [-1], [0]
  records = []
  info_ids = ({}, {})
  public_ids = {}
  augmented = {}  # decision history -> the non-acting player's information state key

  def path(h):
    acts = []
    while h > 0:
      acts.append(action[h])
      h = parent[h]
    return tuple(reversed(acts))

  def fail(check, h, what):
    raise _Fail(f"{name}: check '{check}' failed at history {path(h)}: {what}")

  h = 0
  while h < len(states):
    if len(states) > max_histories:
      raise GameTooLargeError(f"{name}: more than max_histories={max_histories} histories; "
                              "pass max_histories=... to check a larger game", game=name,
                              limit=int(max_histories), counted=len(states))
    s = states[h]
    states[h] = None
    p = game.current_player(s)
    try:
      pub = public_ids.setdefault(game.public_state(s), len(public_ids))
    except TypeError:
      fail("players", h, "public_state is not hashable")
    if p == TERMINAL:
      r = tuple(float(x) for x in game.returns(s))
      if len(r) != 2 or not all(math.isfinite(x) for x in r) or abs(r[0] + r[1]) > tol:
        fail("zero_sum", h, f"returns {r} are not finite and zero-sum")
      records.append((p, pub, -1, r))
      kids = ()
    elif p == CHANCE:
      outcomes = [(int(a), float(q)) for a, q in game.chance_outcomes(s)]
      ids = [a for a, _ in outcomes]
      if not outcomes:
        fail("chance_probabilities", h, "no chance outcomes")
      if len(set(ids)) != len(ids) or min(ids) < 0:
        fail("chance_probabilities", h, f"outcome ids {ids} repeat or are negative")
      if not all(q > 0 for _, q in outcomes):
        fail("chance_probabilities", h, f"non-positive probability in {outcomes}")
      total = sum(q for _, q in outcomes)
      if abs(total - 1.0) > tol:
        fail("chance_probabilities", h, f"probabilities sum to {total!r}, not 1")
      records.append((p, pub, -1, tuple(outcomes)))
      kids = ids
    elif p in (0, 1):
      legal = [int(a) for a in game.legal_actions(s)]
      if not legal:
        fail("legal_actions", h, "empty legal set")
      if legal != sorted(set(legal)) or legal[0] < 0 or legal[-1] >= game.num_actions:
        fail("legal_actions", h, f"legal set {legal} is not sorted, unique and "
             f"inside [0, {game.num_actions})")
      key = game.information_state(s, p)
      if not isinstance(key, str):
        fail("players", h, f"information state {key!r} is not a string")
      iid = info_ids[p].setdefault(key, len(info_ids[p]))
      records.append((p, pub, iid, tuple(legal)))
      other = game.information_state(s, 1 - p)
      if not isinstance(other, str):
        fail("players", h, f"information state {other!r} of player {1 - p} is not a string")
      augmented[h] = other
      kids = legal
    else:
      fail("players", h, f"current_player is {p!r}")
    for a in kids:
      states.append(game.next_state(s, a))
      parent.append(h)
      action.append(a)
      depth.append(depth[h] + 1)
    h += 1
  return dict(parent=parent, action=action, depth=depth, records=records, augmented=augmented,
              info_keys=(list(info_ids[0]), list(info_ids[1])), num_public=len(public_ids),
              path=path, fail=fail)


def _check_structure(e):
  """``perfect_recall`` and ``public_states`` over one enumeration."""
  parent, action, depth, records, fail = (e["parent"], e["action"], e["depth"],
                                          e["records"], e["fail"])
  H = len(records)
  last = [[None] * H, [None] * H]   # each player's last own (infostate, action)
  first_of_info = ({}, {})
  for h in range(H):
    p, pub, iid, legal = records[h]
    if h:
      q = parent[h]
      pq = records[q][0]
      for i in (0, 1):
        last[i][h] = (records[q][2], action[h]) if pq == i else last[i][q]
    if p in (0, 1):
      g = first_of_info[p].setdefault(iid, h)
      if g != h:
        key = e["info_keys"][p][iid]
        if last[p][g] != last[p][h]:
          fail("perfect_recall", h, f"information state {key!r} of player {p} is also "
               f"reached by a different own sequence at history {e['path'](g)}")
        if records[g][3] != legal:
          fail("perfect_recall", h, f"information state {key!r} of player {p} has legal "
               f"actions {list(legal)} here and {list(records[g][3])} at {e['path'](g)}")
        if records[g][1] != pub:
          fail("public_states", h, f"information state {key!r} of player {p} spans two "
               f"public states (also at history {e['path'](g)})")
  first_of_aug = ({}, {})
  for h, key in e["augmented"].items():
    i = 1 - records[h][0]
    g = first_of_aug[i].setdefault(key, h)
    if g != h and last[i][g] != last[i][h]:
      fail("perfect_recall", h, f"information state {key!r} of player {i} (not acting here) is "
           f"also reached by a different own sequence at history {e['path'](g)}")
    if g != h and records[g][1] != records[h][1]:
      fail("public_states", h, f"information state {key!r} of player {i} (not acting here) "
           f"spans two public states (also at history {e['path'](g)})")
  first_of_pub = {}
  for h in range(H):
    pub = records[h][1]
    g = first_of_pub.setdefault(pub, h)
    if g == h:
      continue
    if depth[g] != depth[h]:
      fail("public_states", h, f"its public state also holds history {e['path'](g)} "
           f"of depth {depth[g]} (this one has depth {depth[h]})")
    if g and h and records[parent[g]][1] != records[parent[h]][1]:
      fail("public_states", h, f"its public state also holds history {e['path'](g)} "
           "whose parent is in a different public state")


def check(game: Any, *, max_histories: int = 5_000_000, tol: float = PROB_ATOL,
          trajectories: int = 1000, seed: int = 0) -> dict:
  """Runs the checks of the module docstring on a :class:`Game`, a device game or a compiled
  game; raises ``ValueError`` naming the first failed check.

  A Python game is enumerated (a compiled one's tree is also compared with a
  fresh enumeration; ``tol`` is the tolerance of the probability and zero-sum
  checks). A device game is checked on ``trajectories`` random trajectories
  drawn from ``seed`` (:func:`~jaxgt.games.rules_check.check_rules`). Returns
  ``{"game": str, "passed": [check names], ...}`` with ``"sizes"`` for a Python or
  compiled game and ``"trajectories"`` for a device game.
  """
  compiled = None
  inner = getattr(game, "game", None)
  if isinstance(game, DeviceGame) or isinstance(inner, DeviceGame):
    report = rules_check.check_rules(inner if isinstance(inner, DeviceGame) else game,
                                     trajectories=trajectories, seed=seed)
    message = rules_check.first_failure(report)
    if message is not None:
      raise ValueError(message)
    out = {"game": report["game"], "passed": report["checks"],
           "trajectories": report["trajectories"]}
    if isinstance(inner, DeviceGame):
      out["sizes"] = {k: v for k, v in game.sizes().items() if k != "actions"}
    return out
  if not isinstance(game, Game):
    if not isinstance(inner, Game):
      raise ValueError(f"check() takes a Game, a DeviceGame or a compiled game, got "
                       f"{type(game).__name__}")
    compiled, game = game, inner
  e = _enumerate(game, max_histories, tol)
  _check_structure(e)
  again = _enumerate(game, max_histories, tol)
  name = game.game_string()
  if again["records"] != e["records"] or again["info_keys"] != e["info_keys"]:
    n = next((h for h, (a, b) in enumerate(zip(e["records"], again["records"])) if a != b),
             min(len(e["records"]), len(again["records"])))
    where = e["path"](n) if n < len(e["records"]) else again["path"](n)
    raise ValueError(f"{name}: check 'deterministic' failed at history {where}: a second "
                     "enumeration differs there")
  sizes = {"histories": len(e["records"]),
           "terminals": sum(r[0] == TERMINAL for r in e["records"]),
           "infostates_p0": len(e["info_keys"][0]), "infostates_p1": len(e["info_keys"][1]),
           "public_states": e["num_public"]}
  if compiled is not None:
    theirs = {k: v for k, v in compiled.sizes().items() if k in sizes}
    if theirs != sizes or any(set(compiled.infostate_keys[p]) != set(e["info_keys"][p])
                              for p in (0, 1)):
      raise ValueError(f"{name}: check 'deterministic' failed at history (): the compiled "
                       f"tree {theirs} differs from a fresh enumeration {sizes}")
  return {"game": name, "passed": list(CHECKS), "sizes": sizes}
