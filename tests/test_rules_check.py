"""jaxgt.games.rules_check: device games pass; a device game breaking one property fails that
check."""

import jax.numpy as jnp
import pytest

from jaxgt.games import TERMINAL, check, make_from_string
from jaxgt.games.device import uniform_grid_index
from jaxgt.games.kuhn import KuhnPoker
from jaxgt.games.rps_plus import RockPaperScissorsPlus
from jaxgt.games.rules_check import CHECKS, MAX_REPORTED, check_rules
from oracle_games.kuhn import KuhnPoker as OracleKuhnPoker


class BadChance(KuhnPoker):
  def chance_probs(self, s):
    return 0.9 * super().chance_probs(s)


class ChanceOutsideChance(KuhnPoker):
  def chance_probs(self, s):
    free = jnp.all(jnp.arange(3)[:, None] != s.cards[None, :], axis=1)
    return free / jnp.sum(free)  # not zero at decisions


class NotZeroSum(KuhnPoker):
  def returns(self, s):
    r = super().returns(s)
    return jnp.where(self.current_player(s) == TERMINAL, jnp.abs(r), r)


class EmptyLegal(KuhnPoker):
  def legal_mask(self, s):
    return super().legal_mask(s) & (s.num_bets != 1)


class LegalAtChance(KuhnPoker):
  def legal_mask(self, s):
    return jnp.ones(2, bool)


class ForgetsOwnBet(KuhnPoker):
  """Player 0's key drops the betting: its first decision and its decision after ``pb``
  (two own sequences) merge."""

  def info_key(self, s, player):
    key = super().info_key(s, player)
    return key.at[1].set(0) if player == 0 else key


class MergesLegalSets(RockPaperScissorsPlus):
  """Player 1 may not repeat player 0's move, yet its key does not say which that was."""

  def legal_mask(self, s):
    return super().legal_mask(s) & ((s.num_moves != 1) | (jnp.arange(3) != s.moves[0]))


class PrivatePublicState(KuhnPoker):
  """The public key shows player 0's card, which player 1 does not see."""

  def public_key(self, s):
    return super().public_key(s).at[0].add(10 * (s.cards[0] + 1))


class ShortMaxLength(KuhnPoker):
  max_length = 3


class BadPlayer(KuhnPoker):
  def current_player(self, s):
    p = super().current_player(s)
    return jnp.where((p == 1) & (s.num_bets == 1), 7, p).astype(jnp.int32)


class TerminalMoves(KuhnPoker):
  def step(self, s, action):
    nxt = super().step(s, action)
    over = self.current_player(s) == TERMINAL
    return nxt.replace(num_bets=jnp.where(over, s.num_bets + 1, nxt.num_bets))


class BadPrivateChance(KuhnPoker):
  def private_chance(self, s):
    return 2.0 * super().private_chance(s)


class PrivateIndexOutOfRange(KuhnPoker):
  def private_index(self, s, player):
    return jnp.where(s.cards[player] == 2, 3, s.cards[player])


class LeakyWithPrivate(KuhnPoker):
  """with_private also changes the betting (what both players see)."""

  def with_private(self, s, player, k):
    out = super().with_private(s, player, k)
    return out.replace(bets=out.bets.at[0].set(1 - out.bets[0]))


class SampledKuhn(KuhnPoker):
  """Kuhn with a chance sampler: the k-th card not yet dealt, k uniform over those left."""

  def sample_chance(self, s, u):
    free = jnp.all(jnp.arange(3)[:, None] != s.cards[None, :], axis=1)
    k = uniform_grid_index(u, jnp.sum(free))
    return jnp.argmax(jnp.cumsum(free) > k).astype(jnp.int32)


class SamplerIgnoresDeal(KuhnPoker):
  """Deals any of the three cards, the one already dealt included."""

  def sample_chance(self, s, u):
    return uniform_grid_index(u, 3)


class BiasedSampler(SampledKuhn):
  """The first card left with probability 3/4 (its support is right, its weights are not)."""

  def sample_chance(self, s, u):
    return super().sample_chance(s, jnp.minimum(1.5 * u, 0.99))


class WideKey(KuhnPoker):
  def info_key(self, s, player):
    return jnp.concatenate([super().info_key(s, player), jnp.zeros(1, jnp.int32)])


class FloatPlayer(KuhnPoker):
  def current_player(self, s):
    return super().current_player(s).astype(jnp.float32)


@pytest.mark.parametrize("name", ["kuhn_poker", "rps_plus", "nonlocality",
                                  "scotland_yard(rounds=4)", "liars_dice(numdice=2)",
                                  "leduc_poker"])
def test_device_games_pass(name):
  game = make_from_string(name)
  report = check_rules(game, trajectories=300, seed=1)
  assert report["game"] == game.game_string() and report["trajectories"] == 300
  assert report["checks"] == [c for c in CHECKS if (c != "private_states" or game.num_private)
                              and c != "chance_sampler"]
  assert report["failures"] == [] and not any(report["counts"].values())


def test_a_chance_sampler_that_agrees_with_chance_probs_passes():
  report = check_rules(SampledKuhn(), trajectories=100)
  assert "chance_sampler" in report["checks"] and report["failures"] == []
  report = check_rules(make_from_string("limit_holdem"), trajectories=100, seed=2)
  assert "chance_sampler" in report["checks"] and report["failures"] == []


_SLOW = {ChanceOutsideChance, LegalAtChance, PrivateIndexOutOfRange}  # over the run's budget


@pytest.mark.parametrize("cls, name", [
    pytest.param(cls, name, marks=[pytest.mark.slow] if cls in _SLOW else [])
    for cls, name in [
        (BadChance, "chance_probabilities"), (ChanceOutsideChance, "chance_probabilities"),
        (NotZeroSum, "zero_sum"), (EmptyLegal, "legal_actions"),
        (LegalAtChance, "legal_actions"), (ForgetsOwnBet, "perfect_recall"),
        (MergesLegalSets, "perfect_recall"), (PrivatePublicState, "public_states"),
        (ShortMaxLength, "max_length"), (BadPlayer, "players"), (TerminalMoves, "terminal_step"),
        (BadPrivateChance, "private_states"), (PrivateIndexOutOfRange, "private_states"),
        (LeakyWithPrivate, "private_states"), (SamplerIgnoresDeal, "chance_sampler"),
        (BiasedSampler, "chance_sampler"), (WideKey, "shapes"), (FloatPlayer, "shapes")]])
def test_each_check_fails_on_a_broken_game(cls, name):
  game = cls()
  report = check_rules(game, trajectories=200)
  assert report["counts"][name] > 0
  failing = [f for f in report["failures"] if f["check"] == name]
  assert 0 < len(failing) <= MAX_REPORTED
  f = failing[0]
  assert isinstance(f["message"], str) and isinstance(f["actions"], list)
  assert f["trajectory"] == -1 if name == "shapes" else 0 <= f["trajectory"] < 200
  with pytest.raises(ValueError, match=f"check '{name}' failed"):
    check(game, trajectories=200)  # the same game and batch: no second compile
  if name == "legal_actions" and cls is EmptyLegal:
    assert len(f["actions"]) == 3 and f["actions"][2] in (0, 1)  # two cards, one bet
    assert report["counts"]["legal_actions"] == 200  # every trajectory reaches a second bet
  if cls is ForgetsOwnBet:
    assert f["actions"][2:] == [0, 1]  # player 0 again after pass, bet


def test_same_seed_same_report():
  game = MergesLegalSets()
  a = check_rules(game, trajectories=64, seed=3)
  assert a == check_rules(game, trajectories=64, seed=3)
  assert a != check_rules(game, trajectories=64, seed=4)


def test_bad_arguments():
  with pytest.raises(ValueError, match="DeviceGame"):
    check_rules(OracleKuhnPoker())  # a Python game
  for bad in (0, -1, 1.5, True):
    with pytest.raises(ValueError, match="trajectories must be a positive integer"):
      check_rules(KuhnPoker(), trajectories=bad)


def test_private_chance_of_large_private_spaces_is_checked_on_a_sample(monkeypatch):
  """Past the private-pair limit private_chance is read on a sample of the visited states,
  outside the scan: a correct game still passes, a wrong one still fails."""
  from jaxgt.games import rules_check
  monkeypatch.setattr(rules_check, "_PRIVATE_CELLS", 1)
  monkeypatch.setattr(rules_check, "_PRIVATE_BUDGET", 9 * 50)  # 50 sampled states of Kuhn
  rules_check._sampler.cache_clear()
  try:
    assert check_rules(KuhnPoker(), trajectories=64)["failures"] == []
    report = check_rules(BadPrivateChance(), trajectories=64)
    assert {f["check"] for f in report["failures"]} == {"private_states"}
  finally:
    rules_check._sampler.cache_clear()


def test_an_illegal_action_is_refused_by_the_checked_step():
  from jaxgt.games.device import checked_step
  game = KuhnPoker()
  s = checked_step(game, game.init(), 2)  # deal card 2 to player 0
  with pytest.raises(ValueError, match="not a legal chance outcome.*legal: 0, 1"):
    checked_step(game, s, 2)  # card 2 is gone
  for a in (0, 0, 1):  # player 1 gets card 0; pass, bet
    s = checked_step(game, s, a)
  with pytest.raises(ValueError, match="not a legal action of player 0.*Pass"):
    checked_step(game, s, 5)
  s = checked_step(game, s, 0)  # player 0 folds: terminal
  with pytest.raises(ValueError, match="terminal"):
    checked_step(game, s, 0)
