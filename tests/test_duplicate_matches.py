"""Duplicate matches: each pair of matches deals the same chance outcomes with the seats
swapped, the mean stays the same estimate and its interval is over the pairs."""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.agents.base import PolicyAgent, RandomAgent
from jaxgt.core.evaluate import evaluate
from jaxgt.core.sequence_form import uniform
from jaxgt.evaluation import match


def _kuhn_policy(game, bet: float):
  """Bets or calls (action 1) with probability ``bet`` at every information state."""
  return tuple(np.where(np.asarray(pt.legal)[:, 1:2] > 0, np.array([[1 - bet, bet]]),
                        uniform(np.asarray(pt.legal), np.float64)) for pt in game.tree.players)


def test_each_pair_deals_the_same_outcomes_from_swapped_seats():
  """Leduc through its rules and LD(1,1): the private deals (the first two chance events)
  of matches 2j and 2j + 1 are the same, the seats swapped; the agents' own draws are not."""
  for game, deals in ((jaxgt.games.make("leduc_poker"), 2),
                      (jaxgt.games.make("liars_dice", numdice=1), 2)):
    res = match.play(game, RandomAgent(game), RandomAgent(game), 40, jax.random.key(2),
                     duplicate=True)
    eps = res.episodes()
    assert res.paired and res.seats.tolist() == [0, 1] * 20
    for a, b in zip(eps[0::2], eps[1::2]):
      assert a[:deals] == b[:deals]
    assert any(a != b for a, b in zip(eps[0::2], eps[1::2]))
    plain = match.play(game, RandomAgent(game), RandomAgent(game), 40, jax.random.key(2))
    assert any(a[:deals] != b[:deals] for a, b in zip(plain.episodes()[0::2],
                                                     plain.episodes()[1::2]))


def test_the_same_deterministic_agent_in_both_seats_ties_every_pair():
  """A deterministic policy against itself: in a pair the agents hold each other's cards and
  play the same moves, so each pair's payoffs cancel and the duplicate interval is 0, where
  the matches alone vary."""
  game = jaxgt.load("kuhn_poker")
  agent = PolicyAgent(game, _kuhn_policy(game, 1.0))
  res = match.play(game, agent, agent, 200, jax.random.key(0), duplicate=True)
  np.testing.assert_array_equal(res.payoffs[0::2], -res.payoffs[1::2])
  assert res.ci95 == 0.0 and res.win_ci95 == 0.0 and res.mean == 0.0
  assert np.std(res.payoffs) > 1.0
  mean, ci = res.running()
  assert mean.shape == ci.shape == (100,)


def test_the_duplicate_mean_estimates_the_exact_value_with_a_narrower_interval():
  """Kuhn, a betting policy against uniform play: the duplicate mean is within its interval
  of the exact value (both seats averaged), and that interval is narrower than the one of as
  many independent matches."""
  game = jaxgt.load("kuhn_poker")
  x, y = _kuhn_policy(game, 0.8), _kuhn_policy(game, 0.5)
  exact = 0.5 * (evaluate(game, (x[0], y[1]), dtype="float64").value
                 - evaluate(game, (y[0], x[1]), dtype="float64").value)
  a, b = PolicyAgent(game, x), PolicyAgent(game, y)
  dup = match.play(game, a, b, 4000, jax.random.key(5), duplicate=True)
  ind = match.play(game, a, b, 4000, jax.random.key(5))
  assert abs(dup.mean - exact) < dup.ci95, (dup.mean, dup.ci95, exact)
  assert abs(ind.mean - exact) < ind.ci95, (ind.mean, ind.ci95, exact)
  assert dup.ci95 < 0.9 * ind.ci95, (dup.ci95, ind.ci95)


def test_duplicate_matches_need_swapped_seats_and_pairs():
  game = jaxgt.games.make("kuhn_poker")
  a = RandomAgent(game)
  with pytest.raises(ValueError, match="even number"):
    match.play(game, a, a, 7, jax.random.key(0), duplicate=True)
  with pytest.raises(ValueError, match="swap_seats"):
    match.play(game, a, a, 8, jax.random.key(0), duplicate=True, swap_seats=False)
  with pytest.raises(ValueError, match="pairs"):
    match.MatchResult.from_payoffs(np.zeros(3), np.zeros(3), paired=True)


class _ReadsPosition(RandomAgent):
  """Uniform play that reads the whole match position, as device-game searches do, and fails
  if it is shown the deal key of a duplicate match."""

  reads_position = True

  def act(self, key, state, position):
    assert position.deal_key is None and position.chance_steps is None
    return super().act(key, state, position.state)


def test_agents_reading_the_position_never_see_the_deal_key():
  game = jaxgt.games.make("liars_dice", numdice=1)
  for mode in ("jit", "python"):
    res = match.play(game, _ReadsPosition(game), RandomAgent(game), 4, jax.random.key(1),
                     duplicate=True, mode=mode)
    assert res.episodes()[0][:2] == res.episodes()[1][:2]


def test_a_duplicate_round_robin_ties_a_deterministic_agent_with_itself():
  game = jaxgt.load("kuhn_poker")
  always = PolicyAgent(game, _kuhn_policy(game, 1.0))
  half = PolicyAgent(game, _kuhn_policy(game, 0.5))
  rr = match.round_robin(game, {"always": always, "half": half}, 40, jax.random.key(0),
                         duplicate=True)
  assert rr.mean[0, 0] == 0.0 and rr.ci95[0, 0] == 0.0
  assert all(r.paired for r in rr.results.values())
  with pytest.raises(ValueError, match="even number"):
    match.round_robin(game, {"always": always}, 5, jax.random.key(0), duplicate=True)
