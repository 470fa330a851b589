"""Shared references for tests: OpenSpiel lockstep walks, exported exploitability, CFR+ policies."""

import numpy as np
import pytest

from jaxgt import policy as pol_lib
from jaxgt.games import CHANCE, TERMINAL
from jaxgt.solvers import cfr

pyspiel = pytest.importorskip("pyspiel")


def walk_lockstep(ours, os_game):
  """Walks a game and OpenSpiel's together; asserts every rule and string agrees.

  ``ours`` is a compiled game (read through its arrays and names, so device games are
  checked as compiled) or a Python :class:`~jaxgt.games.base.Game` (an oracle).
  """
  if hasattr(ours, "tree"):
    ours = _CompiledWalk(ours)
  counts = {"histories": 0, "terminals": 0}
  infos = [set(), set()]
  stack = [(ours.initial_state(), os_game.new_initial_state())]
  while stack:
    s, o = stack.pop()
    counts["histories"] += 1
    p = ours.current_player(s)
    if o.is_terminal():
      assert p == TERMINAL
      assert ours.returns(s) == pytest.approx(tuple(o.returns()))
      counts["terminals"] += 1
      continue
    if o.is_chance_node():
      assert p == CHANCE
      mine, theirs = ours.chance_outcomes(s), o.chance_outcomes()
      assert [a for a, _ in mine] == [a for a, _ in theirs]
      assert [q for _, q in mine] == pytest.approx([q for _, q in theirs])
      actions = [a for a, _ in o.chance_outcomes()]
    else:
      assert p == o.current_player()
      assert list(ours.legal_actions(s)) == o.legal_actions()
      infos[p].add(o.information_state_string(p))
      actions = o.legal_actions()
    for q in (0, 1):
      assert ours.information_state(s, q) == o.information_state_string(q)
    for a in actions:
      stack.append((ours.next_state(s, a), o.child(a)))
  return counts, infos


class _CompiledWalk:
  """A compiled game's arrays and names answering the walk's questions (state: history)."""

  def __init__(self, g):
    self.g, self.t = g, g.tree

  def initial_state(self):
    return 0

  def current_player(self, h):
    return int(self.t.player[h])

  def returns(self, h):
    u = float(self.t.terminal_payoff[self.t.history_terminal[h]])
    return (u, -u)

  def chance_outcomes(self, h):
    return [(int(a), float(self.t.chance_probs[h, a]))
            for a in np.flatnonzero(self.t.chance_probs[h] > 0)]

  def legal_actions(self, h):
    return [int(a) for a in np.flatnonzero(self.t.children[h, :self.t.num_actions] >= 0)]

  def information_state(self, h, q):
    return self.g.aug_keys[q][self.g.aug[q, h]]

  def next_state(self, h, a):
    return int(self.t.children[h, a])


def exported_exploitability(g, probs):
  """OpenSpiel's (C++) exploitability of our policy exported by information-state string."""
  d = pol_lib.to_openspiel_dict(pol_lib.Policy.from_arrays(g, probs), g)
  tab = pyspiel.TabularPolicy({k: [tuple(x) for x in v] for k, v in d.items()})
  return pyspiel.exploitability(pyspiel.load_game(g.game.openspiel_game_string()), tab)


def exported_file_exploitability(doc):
  """OpenSpiel's (C++) exploitability of a policy file written by ``jaxgt export --openspiel``
  (``{"game": ..., "policy": {information-state string: [[action, probability], ...]}}``)."""
  tab = pyspiel.TabularPolicy({k: [tuple(x) for x in v] for k, v in doc["policy"].items()})
  return pyspiel.exploitability(pyspiel.load_game(doc["game"]), tab)


def cfr_plus_policy(g, iters):
  tree = g.device_tree("float64")
  s = cfr.cfr_plus(dtype="float64")
  return tree, s.average_policy(tree, s.run(tree, s.init(tree), iters))
