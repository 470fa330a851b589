"""Shared references for tests: OpenSpiel lockstep walks, exported exploitability, CFR+ policies."""

import pytest

from jaxgt import policy as pol_lib
from jaxgt.games import CHANCE, TERMINAL
from jaxgt.solvers import cfr

pyspiel = pytest.importorskip("pyspiel")


def walk_lockstep(ours, os_game):
  """Walks our game and OpenSpiel's together; asserts every rule and string agrees."""
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


def exported_exploitability(g, probs):
  """OpenSpiel's (C++) exploitability of our policy exported by information-state string."""
  d = pol_lib.to_openspiel_dict(pol_lib.Policy.from_arrays(g, probs), g)
  tab = pyspiel.TabularPolicy({k: [tuple(x) for x in v] for k, v in d.items()})
  return pyspiel.exploitability(pyspiel.load_game(g.game.openspiel_game_string()), tab)


def cfr_plus_policy(g, iters):
  tree = g.device_tree("float64")
  s = cfr.cfr_plus(dtype="float64")
  return tree, s.average_policy(tree, s.run(tree, s.init(tree), iters))
