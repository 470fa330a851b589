"""Compiler + sequence form on random perfect-recall games against brute force.

Random trees mix chance, both players and terminals at uneven depths; the
information-state partition is random (merging only histories with the same
own history, so recall is perfect). The references walk the Python tree
directly: expected value by recursion, best-response value by enumerating
every pure strategy of the responder.
"""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.games.base import CHANCE, TERMINAL, Game
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.core import sequence_form as sf


class RandomGame(Game):
  name = "random_game"
  num_actions = 3

  def __init__(self, seed):
    super().__init__(seed=seed)
    rng = np.random.default_rng(seed)
    self.nodes = {}
    self._grow(rng, (), 0, ((), ()))

  def _grow(self, rng, h, depth, own):
    kind = rng.choice(["chance", "p0", "p1", "end"],
                      p=[0.2, 0.35, 0.35, 0.1] if depth < 4 else [0, 0, 0, 1])
    if depth == 0:
      kind = "chance"
    if kind == "end":
      self.nodes[h] = ("end", float(rng.integers(-5, 6)))
      return
    if kind == "chance":
      k = int(rng.integers(2, 4))
      p = rng.dirichlet(np.ones(k))
      self.nodes[h] = ("chance", [(a, float(q)) for a, q in enumerate(p)])
      for a in range(k):
        self._grow(rng, h + (a,), depth + 1, own)
      return
    p = int(kind[1])
    # observation: one of two labels, so some histories with equal own history merge
    key = (own[p], int(rng.integers(0, 2)))
    legal = self._legal.setdefault((p, key), sorted(rng.choice(3, size=int(rng.integers(2, 4)),
                                                                replace=False).tolist()))
    self.nodes[h] = (p, repr(key), legal)
    for a in legal:
      nxt = list(own)
      nxt[p] = own[p] + (repr(key), a)
      self._grow(rng, h + (a,), depth + 1, tuple(nxt))

  _legal: dict

  def __new__(cls, *a, **k):
    obj = super().__new__(cls)
    obj._legal = {}
    return obj

  def initial_state(self):
    return ()

  def current_player(self, h):
    n = self.nodes[h]
    return TERMINAL if n[0] == "end" else CHANCE if n[0] == "chance" else n[0]

  def legal_actions(self, h):
    return self.nodes[h][2]

  def chance_outcomes(self, h):
    return self.nodes[h][1]

  def next_state(self, h, a):
    return h + (a,)

  def returns(self, h):
    return (self.nodes[h][1], -self.nodes[h][1])

  def information_state(self, h, p):
    n = self.nodes[h]
    return "chance" if n[0] == "chance" else n[1]  # both players see the acting player's label

  def public_state(self, h):
    return 0  # the trivial (coarsest) public partition


def _value(game, h, strat):
  """Player 0's expected utility; strat[p][key] -> {action: prob}."""
  n = game.nodes[h]
  if n[0] == "end":
    return n[1]
  if n[0] == "chance":
    return sum(q * _value(game, h + (a,), strat) for a, q in n[1])
  p, key, legal = n
  return sum(strat[p][key].get(a, 0.0) * _value(game, h + (a,), strat) for a in legal)


def _as_dict(g, pol):
  out = []
  for p in (0, 1):
    legal = np.asarray(g.tree.players[p].legal)
    out.append({k: {int(a): float(pol[p][i][a]) for a in np.flatnonzero(legal[i])}
                for i, k in enumerate(g.infostate_keys[p])})
  return out


def _brute_force_best_response(game, g, strat, p):
  keys = g.infostate_keys[p]
  legal = [np.flatnonzero(np.asarray(g.tree.players[p].legal)[i]).tolist() for i in range(len(keys))]
  best = -np.inf
  for choice in itertools.product(*legal):
    s = list(strat)
    s[p] = {k: {a: 1.0} for k, a in zip(keys, choice)}
    v = _value(game, (), s)
    best = max(best, v if p == 0 else -v)
  return best


@pytest.mark.parametrize("seed", range(12))
def test_values_and_best_responses_match_brute_force(seed):
  game = RandomGame(seed)
  g = jaxgt.compile_game(game)
  if max(g.tree.num_infostates) > 9:
    pytest.skip("too many information states for brute force")
  tree = g.device_tree("float64")
  rng = np.random.default_rng(100 + seed)
  pol = []
  for p in (0, 1):
    legal = np.asarray(g.tree.players[p].legal)
    x = rng.dirichlet(np.ones(3), size=legal.shape[0]) * legal
    pol.append(jnp.asarray(x / x.sum(-1, keepdims=True)))
  strat = _as_dict(g, pol)
  assert float(sf.expected_value(tree, tuple(pol))) == pytest.approx(_value(game, (), strat), abs=1e-10)
  for p in (0, 1):
    assert float(sf.best_response_value(tree, tuple(pol), p)) == pytest.approx(
        _brute_force_best_response(game, g, strat, p), abs=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_cfr_plus_converges_on_random_games(seed):
  g = jaxgt.compile_game(RandomGame(seed))
  tree = g.device_tree("float64")
  solver = cfr_lib.cfr_plus(dtype="float64")
  state = solver.run(tree, solver.init(tree), 2000)
  assert float(sf.exploitability(tree, solver.average_policy(tree, state))) < 2e-3
