"""Sampled trajectories of device rules replayed in OpenSpiel (jaxgt.core.lockstep)."""

import numpy as np
import pytest

import jaxgt
from jaxgt.core.lockstep import lockstep, replay
from jaxgt.games import make, make_from_string
from jaxgt.games.device import DeviceGame
from jaxgt.games.kuhn import KuhnPoker
from oracle_games import kuhn as oracle  # noqa: E402

pytest.importorskip("pyspiel")


def rules(text):
  """The device rules of a game string (a device game, or a compiled game's ``rules()``)."""
  game = make_from_string(text)
  return game if isinstance(game, DeviceGame) else jaxgt.load(text).rules()


@pytest.mark.parametrize("text", ["kuhn_poker", "leduc_poker", "liars_dice(numdice=1)",
                                  "goofspiel(num_cards=4)"])
def test_zoo_games_agree_with_openspiel_on_every_sampled_state(text):
  game = rules(text)
  report = lockstep(game, game.openspiel_game_string(), trajectories=1000, seed=0)
  assert report["mismatches"] == 0, report["examples"]
  assert report["mismatched_trajectories"] == 0 and report["trajectories"] == 1000
  assert report["states"] > 1000 * 4  # every state of every trajectory was compared


def test_compiled_game_is_read_through_its_rules():
  report = lockstep(jaxgt.load("kuhn_poker"), "kuhn_poker", trajectories=200, seed=1)
  assert report["mismatches"] == 0


def test_wrong_openspiel_game_is_found():
  report = lockstep(make("kuhn_poker"), "leduc_poker", trajectories=50, seed=0)
  assert report["mismatches"] == 50 and report["mismatched_trajectories"] == 50
  first = report["examples"][0]
  assert first == {"trajectory": 0, "step": 0, "actions": [], "what": "chance_outcomes",
                   "ours": [0, 1, 2], "theirs": [0, 1, 2, 3, 4, 5]}
  assert len(report["examples"]) == 10


class _SwappedStrings(KuhnPoker):
  """Kuhn poker naming each information state with the other player's string."""

  def info_string(self, key, player):
    return super().info_string(key, player) + ("p" if player == 1 else "")


class _DoubleReturns(KuhnPoker):
  def returns(self, s):
    return 2.0 * super().returns(s)


def test_wrong_information_state_string_is_found():
  report = lockstep(_SwappedStrings(), "kuhn_poker", trajectories=100, seed=0)
  whats = {m["what"] for m in report["examples"]}
  assert whats == {"info_string_p1"}
  m = report["examples"][0]
  assert m["ours"] == m["theirs"] + "p"
  assert report["mismatched_trajectories"] == 100


def test_wrong_returns_are_found():
  report = lockstep(_DoubleReturns(), "kuhn_poker", trajectories=100, seed=0)
  assert report["mismatches"] == 100
  m = report["examples"][0]
  assert m["what"] == "returns" and m["ours"] == [2 * x for x in m["theirs"]]


def test_simultaneous_openspiel_game_is_refused_with_the_turn_based_form():
  with pytest.raises(ValueError, match=r"turn_based_simultaneous_game\(game=goofspiel"):
    lockstep(rules("goofspiel(num_cards=4)"), "goofspiel(imp_info=True,num_cards=4)",
             trajectories=10, seed=0)


def test_bad_input():
  with pytest.raises(ValueError, match="OpenSpiel cannot load 'no_such_game'"):
    lockstep(make("kuhn_poker"), "no_such_game", trajectories=10, seed=0)
  with pytest.raises(ValueError, match="trajectories"):
    lockstep(make("kuhn_poker"), "kuhn_poker", trajectories=0, seed=0)
  with pytest.raises(TypeError, match="compile a Python game first"):
    lockstep(oracle.KuhnPoker(), "kuhn_poker", trajectories=10, seed=0)


def test_replay_of_given_trajectories():
  game = make("kuhn_poker")
  # deal 2 and 0, then pass-bet-bet (a showdown for 2), and a trajectory stopped after the deal
  report = replay(game, "kuhn_poker", np.array([[2, 0, 0, 1, 1], [1, 2, -1, -1, -1]]))
  assert report["mismatches"] == 0 and report["trajectories"] == 2
  assert report["states"] == 6 + 3
  with pytest.raises(ValueError, match=r"action 2 at step 1 \(after \[2\]\) is not among"):
    replay(game, "kuhn_poker", np.array([[2, 2, 0]]))
  with pytest.raises(ValueError, match="max_length=5"):
    replay(game, "kuhn_poker", np.zeros((1, 6), np.int32))
  report = replay(game, "leduc_poker", [[0, 1, 0, 0]])
  assert report["examples"][0]["what"] == "chance_outcomes"
