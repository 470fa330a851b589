"""Policy construction for exact evaluation of any agent (Schmid et al. 2023, supplement)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt import policy as pol_lib
from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.evaluation import construct as cs
from jaxgt.core import sequence_form as sf


def _equilibrium(name, iterations=500):
  g = jaxgt.load(name)
  tree = g.device_tree("float64")
  solver = jaxgt.cfr_plus(dtype="float64")
  st = solver.run(tree, solver.init(tree), iterations)
  return g, tree, solver.average_policy(tree, st)


def test_policy_agent_round_trip():
  """A fixed-policy agent constructs back to its own policy and its exploitability."""
  g, tree, pol = _equilibrium("leduc_poker", 200)
  seen, states = [], []
  res = cs.evaluate(PolicyAgent(g, pol), seeds=(0, 1), progress=lambda *x: seen.append(x),
                    on_state=lambda *x: states.append(x))
  for p in (0, 1):
    np.testing.assert_allclose(res.policies[0][p], np.asarray(pol[p]), atol=1e-12)
  want = float(sf.exploitability(tree, pol))
  assert res.min == pytest.approx(want, abs=1e-12) and res.max == pytest.approx(want, abs=1e-12)
  assert [(i, s) for i, s, _ in seen] == [(0, 0), (1, 1)]
  np.testing.assert_allclose([e for *_, e in seen], res.exploitability)
  n = sum(g.tree.num_infostates)
  assert states == [(k, n) for k in range(1, n + 1)] * 2


@dataclasses.dataclass
class _PathAgent(Agent):
  """Uniform play; its state is the path of its own information states and keys."""

  game: object
  calls: list = dataclasses.field(default_factory=list)

  def init(self, key):
    return ("root", int(jax.random.key_data(key)[-1]))

  def act(self, key, state, history):
    tree = self.game.tree
    p = int(tree.player[history])
    I = int(tree.infostate[history])
    self.calls.append((p, I, state, int(jax.random.key_data(key)[-1])))
    legal = np.asarray(tree.players[p].legal[I], np.float64)
    return jnp.asarray(legal / legal.sum()), state + (I,)


def test_state_comes_from_own_parent_information_state():
  g = jaxgt.load("leduc_poker")
  agent = _PathAgent(g)
  pol = cs.construct_policy(agent, jax.random.PRNGKey(3))
  tree = g.tree
  A = tree.num_actions
  assert len(agent.calls) == sum(tree.num_infostates)
  seen = {}
  for p, I, state, key in agent.calls:
    par = int(tree.players[p].parent_seq[I])
    if par == tree.num_infostates[p] * A:
      assert state[0] == "root" and len(state) == 2
    else:
      assert (p, par // A) in seen, "parent information state acted on before its children"
      assert state == seen[(p, par // A)] + (par // A,)
    seen[(p, I)] = state
  assert len({key for *_, key in agent.calls}) > len(agent.calls) // 2  # keys differ
  want = sf.uniform_policy(g.device_tree("float64"), jnp.float64)
  for p in (0, 1):
    np.testing.assert_allclose(pol[p], np.asarray(want[p]), atol=1e-12)


@dataclasses.dataclass
class _RandomAgent(Agent):
  """A random policy drawn from the key at every information state."""

  game: object

  def act(self, key, state, history):
    tree = self.game.tree
    p = int(tree.player[history])
    legal = np.asarray(tree.players[p].legal[int(tree.infostate[history])])
    x = np.asarray(jax.random.uniform(key, (tree.num_actions,)), np.float64) * legal
    return jnp.asarray(x / x.sum()), state


def test_seeds_min_avg_max_and_openspiel():
  g = jaxgt.load("kuhn_poker")
  res = cs.evaluate(lambda: _RandomAgent(g), seeds=(0, 1, 2))
  e = res.exploitability
  assert len(set(np.round(e, 12))) == 3
  assert res.min == e.min() and res.max == e.max() and res.avg == pytest.approx(e.mean())
  pyspiel = pytest.importorskip("pyspiel")
  from open_spiel.python.algorithms import exploitability
  os_game = pyspiel.load_game(pol_lib.openspiel_game_string(g))
  for s in range(3):
    p = pol_lib.Policy.from_arrays(g, res.policies[s])
    ref = exploitability.exploitability(os_game, pol_lib.to_openspiel(p, g, os_game))
    assert ref == pytest.approx(e[s], abs=1e-9)


@dataclasses.dataclass
class _BadAgent(Agent):
  game: object
  probs: object

  def act(self, key, state, history):
    return jnp.asarray(self.probs), state


def test_bad_agent_outputs():
  g = jaxgt.load("kuhn_poker")
  key = jax.random.PRNGKey(0)
  with pytest.raises(ValueError, match="shape"):
    cs.construct_policy(_BadAgent(g, [1.0]), key)
  with pytest.raises(ValueError, match="negative"):
    cs.construct_policy(_BadAgent(g, [1.5, -0.5]), key)
  with pytest.raises(ValueError, match="non-finite"):
    cs.construct_policy(_BadAgent(g, [np.nan, 1.0]), key)
  with pytest.raises(ValueError, match="sum to"):
    cs.construct_policy(_BadAgent(g, [0.2, 0.2]), key)
  with pytest.raises(ValueError, match="seed"):
    cs.evaluate(_BadAgent(g, [0.5, 0.5]), seeds=())
