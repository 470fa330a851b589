"""jaxgt.games.check: passes on every registered game, names each failure on a broken toy game
(broken device games: test_rules_check.py)."""

import re

import pytest

import jaxgt
from jaxgt.games import CHANCE, TERMINAL, Game, check, make, registry
from jaxgt.games import rules_check
from jaxgt.games.conformance import CHECKS
from jaxgt.games.device import DeviceGame


class Toy(Game):
  """Chance deals 0/1 to player 0; player 0 bets (0/1); player 1 guesses blind."""

  name = "toy"
  num_actions = 2

  # state: tuple of actions so far
  def initial_state(self):
    return ()

  def current_player(self, s):
    return (CHANCE, 0, 1, TERMINAL)[len(s)]

  def legal_actions(self, s):
    return [0, 1]

  def chance_outcomes(self, s):
    return [(0, 0.5), (1, 0.5)]

  def next_state(self, s, a):
    return s + (a,)

  def returns(self, s):
    u0 = 1.0 if s[1] != s[2] else -1.0
    return (u0, -u0)

  def information_state(self, s, player):
    if player == 0:
      return f"card {s[0]}" + (f" bet {s[1]}" if len(s) > 1 else "")
    return "p1" + (" after bet" if len(s) > 1 else "")

  def public_state(self, s):
    return len(s)


class BadPlayer(Toy):
  def current_player(self, s):
    return 7 if len(s) == 2 else super().current_player(s)


class BadChance(Toy):
  def chance_outcomes(self, s):
    return [(0, 0.5), (1, 0.4)]


class EmptyLegal(Toy):
  def legal_actions(self, s):
    return [] if s == (1, 0) else [0, 1]


class NotZeroSum(Toy):
  def returns(self, s):
    return (1.0, 1.0) if s == (0, 1, 1) else super().returns(s)


class ImperfectRecall(Toy):
  """Player 0 acts twice and forgets its first bet."""

  def current_player(self, s):
    return (CHANCE, 0, 0, TERMINAL)[len(s)]

  def information_state(self, s, player):
    return f"card {s[0]} turn {len(s)}"


class ForgetfulWhileWaiting(Toy):
  """Player 0's key at player 1's decision forgets its own bet (as nonlocality's once did)."""

  def information_state(self, s, player):
    if player == 0 and len(s) == 2:
      return f"card {s[0]} waiting"
    return super().information_state(s, player)


class PrivatePublicState(Toy):
  """The public state reveals player 0's bet, which player 1 does not see."""

  def public_state(self, s):
    return s[1:]


class PublicStateAcrossDepths(Toy):
  def public_state(self, s):
    return min(len(s), 1)


class Nondeterministic(Toy):
  runs = 0

  def initial_state(self):
    type(self).runs += 1
    return ()

  def returns(self, s):
    u0 = float(type(self).runs) * (1.0 if s[1] != s[2] else -1.0)
    return (u0, -u0)


def test_toy_passes():
  report = check(Toy())
  assert report["passed"] == list(CHECKS)
  assert report["sizes"] == {"histories": 15, "terminals": 8, "infostates_p0": 2,
                             "infostates_p1": 1, "public_states": 4}


@pytest.mark.parametrize("cls, name, history", [
    (BadPlayer, "players", "(0, 0)"),
    (BadChance, "chance_probabilities", "()"),
    (EmptyLegal, "legal_actions", "(1, 0)"),
    (NotZeroSum, "zero_sum", "(0, 1, 1)"),
    (ImperfectRecall, "perfect_recall", "(0, 1)"),
    (ForgetfulWhileWaiting, "perfect_recall", "(0, 1)"),
    (PrivatePublicState, "public_states", "(0, 1)"),
    (PublicStateAcrossDepths, "public_states", "(0, 0)"),
    (Nondeterministic, "deterministic", "(0, 0, 0)"),
])
def test_each_check_fails_on_a_broken_game(cls, name, history):
  with pytest.raises(ValueError, match=re.escape(f"check '{name}' failed at history {history}")):
    check(cls())


_SLOW_CONFORMANCE = {"ii_goofspiel"}  # over the default run's time budget (goofspiel is checked too)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_CONFORMANCE
                                  else n for n in sorted(registry())])
def test_registered_games_pass(name):
  game = make(name)
  # a device game is checked on sampled trajectories (test_rules_check.py), a Python one enumerated
  want = rules_check.checks_of(game) if isinstance(game, DeviceGame) else CHECKS
  assert check(game)["passed"] == list(want)


def test_compiled_game_and_imported_game():
  g = jaxgt.load("leduc_poker")
  assert check(g)["sizes"]["histories"] == g.tree.num_histories
  assert check(jaxgt.load("openspiel:liars_dice(dice_sides=3)"))["passed"] == list(CHECKS)
  with pytest.raises(ValueError, match="Game or a compiled game"):
    check("kuhn_poker")
  kuhn = jaxgt.load("kuhn_poker")  # compiled from a device game: its rules are checked
  report = check(kuhn, trajectories=100)
  assert report["passed"] == rules_check.checks_of(make("kuhn_poker"))
  assert report["sizes"]["histories"] == 58
  assert "private_states" not in check(jaxgt.games.make("rps_plus"), trajectories=100)["passed"]
