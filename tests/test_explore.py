"""Exploration as an agent wrapper: the mixed and greedy move rules, in matches and alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.agents import PolicyAgent
from jaxgt.agents.explore import Explore
from jaxgt.core import sequence_form
from jaxgt.evaluation import match, referee


@pytest.fixture(scope="module")
def kuhn():
  g = jaxgt.load("kuhn_poker")
  eq = jaxgt.solve(g, "cfr+", iterations=200, eval_every=0).policy.probs
  uni = tuple(np.asarray(p) for p in sequence_form.uniform_policy(g.tree))
  return g, tuple(np.asarray(p, np.float32) for p in eq), uni


def test_act_mixes_with_uniform_then_turns_greedy(kuhn):
  g, eq, _ = kuhn
  agent = Explore(PolicyAgent(g, eq), 0.3, greedy_after=2)
  player, infostate = np.asarray(g.tree.player), np.asarray(g.tree.infostate)
  h = int(np.flatnonzero(player == 1)[0])
  row = eq[1][infostate[h]]
  legal = np.asarray(g.tree.children)[h, :g.tree.num_actions] >= 0
  state = agent.init(jax.random.key(0))
  for move in range(4):
    probs, state = agent.act(jax.random.key(move), state, h)
    want = (0.7 * row + 0.3 * legal / legal.sum() if move < 2
            else np.eye(len(row))[np.argmax(np.where(legal, row, -1))])
    np.testing.assert_allclose(np.asarray(probs), want, rtol=1e-6)
    assert int(state.moves) == move + 1
  assert referee.traceable(agent, g, jax.random.key(0))
  np.testing.assert_array_equal(agent.statistics(state, 1), eq[1])
  for bad in (dict(epsilon=1.5), dict(epsilon=0.1, greedy_after=-1)):
    with pytest.raises(ValueError):
      Explore(PolicyAgent(g, eq), **bad)


def test_matches_of_explore_are_the_mixed_policys(kuhn):
  """With epsilon = 1 the wrapper plays exactly the uniform policy, greedy from decision 0 the
  argmax policy: the same matches, draw for draw, as those tabular agents."""
  g, eq, uni = kuhn
  key = jax.random.key(3)
  opponent = PolicyAgent(g, eq)
  got = match.play(g, Explore(PolicyAgent(g, eq), 1.0), opponent, 200, key)
  want = match.play(g, PolicyAgent(g, uni), opponent, 200, key)
  np.testing.assert_array_equal(got.histories, want.histories)
  greedy = tuple(np.asarray(jax.nn.one_hot(jnp.argmax(jnp.where(pt.legal, p, -1), -1),
                                           p.shape[-1])) for p, pt in zip(eq, g.tree.players))
  got = match.play(g, Explore(PolicyAgent(g, eq), 0.5, greedy_after=0), opponent, 200, key,
                   mode="python")
  want = match.play(g, PolicyAgent(g, greedy), opponent, 200, key)
  np.testing.assert_array_equal(got.histories, want.histories)
