"""Matches played under a device game's own rules (no enumeration)."""

import jax
import numpy as np
import pytest
from cdf_leduc import CdfLeduc

import jaxgt
from jaxgt.agents.base import PolicyAgent, RandomAgent
from jaxgt.core.sequence_form import uniform
from jaxgt.evaluation import match


def test_matches_under_device_rules_equal_matches_under_compiled_rules():
  """Same keys, same uniform play: the device game and its compiled tree give the same
  payoffs match by match."""
  device = jaxgt.games.make("kuhn_poker")
  compiled = jaxgt.load("kuhn_poker")
  key = jax.random.key(7)
  on_rules = match.play(device, RandomAgent(device), RandomAgent(device), 200, key)
  table = tuple(uniform(np.asarray(pt.legal), np.float64) for pt in compiled.tree.players)
  on_tree = match.play(compiled, PolicyAgent(compiled, table), PolicyAgent(compiled, table),
                       200, key)
  np.testing.assert_array_equal(on_rules.payoffs, on_tree.payoffs)
  assert on_rules.histories.cards.shape == (200, 2)  # final states of the device game


def test_random_play_on_a_device_game_matches_the_exact_value_of_uniform_play():
  """Uniform against uniform on Kuhn: the mean payoff of many matches is within its
  confidence interval of the exact expectation over the compiled tree."""
  device = jaxgt.games.make("kuhn_poker")
  res = match.play(device, RandomAgent(device), RandomAgent(device), 4000, jax.random.key(1),
                   swap_seats=False)
  t = jaxgt.load("kuhn_poker").tree
  # exact value of uniform play: chance reach times 1/|legal| along each path
  legal = np.asarray(t.children[:, :t.num_actions] >= 0).sum(1)
  reach = np.ones(t.num_histories)
  for lo, hi in t.depth_levels[1:]:
    par = np.asarray(t.parent[lo:hi])
    edge = np.where(np.asarray(t.player)[par] == jaxgt.games.CHANCE,
                    np.asarray(t.chance_probs)[par, np.asarray(t.action[lo:hi])],
                    1.0 / np.maximum(legal[par], 1))
    reach[lo:hi] = reach[par] * edge
  exact = float(np.sum(reach[np.asarray(t.terminal_history)] * np.asarray(t.terminal_payoff)))
  assert abs(res.mean - exact) < res.ci95 + 1e-9


def test_an_agent_of_another_game_is_refused():
  device = jaxgt.games.make("kuhn_poker")
  with pytest.raises(ValueError, match="plays"):
    match.play(device, RandomAgent(device), RandomAgent(jaxgt.load("kuhn_poker")), 4,
               jax.random.key(0))


def test_recorded_episodes_are_the_paths_to_the_terminal_histories():
  from jaxgt.evaluation.referee import action_paths
  compiled = jaxgt.load("leduc_poker")
  table = tuple(uniform(np.asarray(pt.legal), np.float64) for pt in compiled.tree.players)
  a = PolicyAgent(compiled, table)
  res = match.play(compiled, a, a, 64, jax.random.key(5))
  assert res.episodes() == action_paths(compiled.tree, res.histories)


def test_a_chance_sampler_drawing_as_the_cdf_leaves_the_matches_unchanged():
  plain, sampled = jaxgt.games.make("leduc_poker"), CdfLeduc()
  key = jax.random.key(4)
  a = match.play(plain, RandomAgent(plain), RandomAgent(plain), 64, key)
  b = match.play(sampled, RandomAgent(sampled), RandomAgent(sampled), 64, key)
  np.testing.assert_array_equal(a.payoffs, b.payoffs)
  assert a.episodes() == b.episodes()


def test_holdem_matches_deal_with_the_game_sampler():
  """A sampler that always deals the highest card left: every match's cards come out 51, 50, ...
  in deal order (drawn from ``chance_probs`` they would be uniform)."""
  from jaxgt.games.holdem import DECK, LimitHoldem, kth_free_card

  class HighestFirst(LimitHoldem):
    def sample_chance(self, s, u):
      return kth_free_card(s.deck, DECK - 1 - s.dealt)

  game = HighestFirst()
  res = match.play(game, RandomAgent(game), RandomAgent(game), 8, jax.random.key(0))
  cards, dealt = np.asarray(res.histories.cards), np.asarray(res.histories.dealt)
  assert dealt.min() >= 4  # the hole cards at least
  for row, n in zip(cards, dealt):
    np.testing.assert_array_equal(row[:n], DECK - 1 - np.arange(n))
