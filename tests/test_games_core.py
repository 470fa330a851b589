"""Kuhn and Leduc mirror OpenSpiel exactly; RPS+ and non-locality equal their oracles; registry
errors."""

import numpy as np
import pytest

import jaxgt
from jaxgt.games import CHANCE, TERMINAL, make, parse_game_string

pyspiel = pytest.importorskip("pyspiel")

from openspiel_reference import walk_lockstep  # noqa: E402
from device_game_checks import assert_features_tell_keys_apart  # noqa: E402
from oracle_games import assert_same_compiled  # noqa: E402
from oracle_games.nonlocality import NonLocality  # noqa: E402
from oracle_games.rps_plus import RockPaperScissorsPlus  # noqa: E402


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker",
                                  "leduc_poker(suit_isomorphism=true)"])
def test_rules_and_infostate_strings_equal_openspiel(name):
  g = jaxgt.load(name)
  counts, infos = walk_lockstep(g, pyspiel.load_game(name))
  assert g.tree.num_histories == counts["histories"]
  assert g.tree.num_terminals == counts["terminals"]
  for p in (0, 1):
    assert set(g.infostate_keys[p]) == infos[p]
    assert g.tree.num_infostates[p] == len(infos[p])


def test_known_sizes():
  # Independent figures: OpenSpiel's documented tree sizes.
  assert jaxgt.load("kuhn_poker").sizes()["histories"] == 58
  leduc = jaxgt.load("leduc_poker").sizes()
  assert (leduc["histories"], leduc["terminals"]) == (9457, 5520)
  assert leduc["infostates_p0"] + leduc["infostates_p1"] == 936


def test_infostates_never_span_public_states():
  for name in ["kuhn_poker", "leduc_poker", "rps_plus", "nonlocality"]:
    t = jaxgt.load(name).tree
    dec = np.flatnonzero(t.player >= 0)
    for p in (0, 1):
      hs = dec[t.player[dec] == p]
      assert np.array_equal(t.history_public[hs],
                            t.players[p].public_state[t.infostate[hs]])


def test_leduc_public_state_hides_private_cards():
  g = jaxgt.load("leduc_poker")
  # Every public state after the deal holds histories with every private deal
  # consistent with the public card: 6*5 deals before the flop.
  t = g.tree
  first_decision = int(np.flatnonzero(t.player == 0)[0])
  same = np.flatnonzero(t.history_public == t.history_public[first_decision])
  assert len(same) == 30


def _play(g, actions):
  s = g.init()
  for a in actions:
    s = g.step(s, a)
  return s


def test_rps_plus_payoffs():
  g = make("rps_plus")
  r, p, s = 0, 1, 2
  returns = lambda *acts: tuple(float(x) for x in g.returns(_play(g, acts)))
  assert returns(r, s) == (2.0, -2.0)   # rock beats scissors: scissors involved
  assert returns(s, p) == (2.0, -2.0)
  assert returns(r, p) == (-1.0, 1.0)
  assert returns(p, p) == (0.0, 0.0)
  assert returns(s, r) == (-2.0, 2.0)
  assert returns(r) == (0.0, 0.0)  # not over
  key = lambda *acts: np.asarray(g.info_key(_play(g, acts), 1))
  np.testing.assert_array_equal(key(r), key(s))
  assert g.info_string(key(r), 1) == "p1"
  assert g.info_string(np.asarray(g.info_key(_play(g, [s]), 0)), 0) == "p0:2"
  with pytest.raises(ValueError, match="scissors_payoff must be positive"):
    make("rps_plus", scissors_payoff=0.0)


def test_nonlocality_structure():
  g = jaxgt.load("nonlocality")
  assert g.tree.num_infostates == (1, 1)
  assert g.tree.num_terminals == 6
  assert g.public_keys == ("root", "max to move", ("over", 0), "I", ("over",))


@pytest.mark.parametrize("name", ["rps_plus", "rps_plus(scissors_payoff=3.0)", "nonlocality",
                                  "nonlocality(leftmost=2.0)"])
def test_device_game_compiles_to_the_oracle(name):
  game, params = parse_game_string(name)
  oracle = {"rps_plus": RockPaperScissorsPlus, "nonlocality": NonLocality}[game](**params)
  device = make(game, **params)
  compiled = jaxgt.compile_game(device)
  assert_same_compiled(compiled, jaxgt.compile_game(oracle))
  assert_features_tell_keys_apart(device, compiled)


def test_unknown_game_names_valid_choices():
  with pytest.raises(ValueError, match="registered games: .*kuhn_poker"):
    make("kuhn")


def test_invalid_parameter_names_valid_parameters():
  with pytest.raises(ValueError, match="valid parameters: players=2"):
    make("kuhn_poker", cards=4)
  with pytest.raises(ValueError, match="must be of type float"):
    make("nonlocality", leftmost="x")
  with pytest.raises(ValueError, match="players must be 2"):
    jaxgt.load("kuhn_poker(players=3)")


def test_parse_game_string():
  assert parse_game_string("liars_dice(numdice=1)") == ("liars_dice", {"numdice": 1})
  assert parse_game_string("g(a=true,b=1.5,c=x)") == ("g", {"a": True, "b": 1.5, "c": "x"})
  with pytest.raises(ValueError, match="cannot parse"):
    parse_game_string("g(a)")
  with pytest.raises(ValueError, match="cannot parse"):
    parse_game_string("1bad")


def test_compiler_rejects_broken_games():
  from jaxgt.games.base import Game

  class Bad(Game):
    name = "bad"
    num_actions = 2

    def __init__(self, kind):
      super().__init__()
      self.kind = kind

    def initial_state(self):
      return ()

    def current_player(self, s):
      return TERMINAL if len(s) == 2 else (CHANCE if len(s) == 0 else 0)

    def chance_outcomes(self, s):
      return [(0, 0.5), (1, 0.4)] if self.kind == "chance" else [(0, 0.5), (1, 0.5)]

    def legal_actions(self, s):
      return [] if self.kind == "legal" else [0, 1]

    def next_state(self, s, a):
      return s + (a,)

    def returns(self, s):
      return (1.0, 1.0) if self.kind == "sum" else (1.0, -1.0)

    def information_state(self, s, p):
      return "x"

    def public_state(self, s):
      return len(s)

  with pytest.raises(ValueError, match="sum to 0.9"):
    jaxgt.compile_game(Bad("chance"))
  with pytest.raises(ValueError, match=r"no legal actions at history \(0,\)"):
    jaxgt.compile_game(Bad("legal"))
  with pytest.raises(ValueError, match="not zero-sum"):
    jaxgt.compile_game(Bad("sum"))
  with pytest.raises(ValueError, match="more than 3 histories"):
    jaxgt.compile_game(Bad("ok"), max_histories=3)


def test_compiler_rejects_imperfect_recall():
  from jaxgt.games.base import Game

  class Forgetful(Game):
    name = "forgetful"
    num_actions = 2

    def initial_state(self):
      return ()

    def current_player(self, s):
      return TERMINAL if len(s) == 2 else 0

    def legal_actions(self, s):
      return [0, 1]

    def next_state(self, s, a):
      return s + (a,)

    def returns(self, s):
      return (float(s[0] == s[1]), -float(s[0] == s[1]))

    def information_state(self, s, p):
      return "same"

    def public_state(self, s):
      return len(s)

  with pytest.raises(ValueError, match=r"'same' of player 0 is reached by different own sequences"):
    jaxgt.compile_game(Forgetful())


def test_compiler_accepts_a_player_who_never_acts():
  """A one-sided decision problem: P2 never acts, P1 picks the better of two coin bets."""
  from jaxgt.games.base import Game
  from jaxgt.core import sequence_form as sf

  class OneSided(Game):
    name = "one_sided"
    num_actions = 2

    def initial_state(self):
      return ()

    def current_player(self, s):
      return TERMINAL if len(s) == 2 else (CHANCE if len(s) == 0 else 0)

    def chance_outcomes(self, s):
      return [(0, 0.25), (1, 0.75)]

    def legal_actions(self, s):
      return [0, 1]

    def next_state(self, s, a):
      return s + (a,)

    def returns(self, s):
      v = 1.0 if s[0] == s[1] else -1.0
      return (v, -v)

    def information_state(self, s, p):
      return "-" if p == 0 else ""

    def public_state(self, s):
      return len(s)

  cg = jaxgt.compile_game(OneSided())
  assert cg.tree.players[1].num_infostates == 0
  tree = cg.device_tree(np.float64)
  pol = sf.uniform_policy(tree)
  # P1 cannot see the coin: always guessing 1 wins 0.75 - 0.25 = 0.5.
  assert float(sf.best_response_value(tree, pol, 0)) == pytest.approx(0.5)
  assert float(sf.expected_value(tree, pol)) == pytest.approx(0.0)


def test_ancestor_at_depth_matches_walking_parents():
  """The vectorised walk-up equals a per-history parent walk, on histories and public states."""
  from jaxgt.core.game_tree import ancestor_at_depth
  t = jaxgt.load("leduc_poker").tree
  rng = np.random.default_rng(0)
  hs = rng.integers(0, t.num_histories, 300)
  for d in (0, 1, 3, 7):
    want = []
    for h in hs:
      h = int(h)
      while t.depth[h] > d:
        h = int(t.parent[h])
      want.append(h)
    np.testing.assert_array_equal(ancestor_at_depth(t.parent, t.depth, hs, d), want)
  # Per-node targets, on the public tree.
  ps = np.arange(t.num_public_states)
  target = np.minimum(t.public_depth, 2)
  got = ancestor_at_depth(t.public_parent, t.public_depth, ps, target)
  assert np.all(t.public_depth[got] == target)
  for s, a in zip(ps, got):
    u = int(s)
    while u != a:
      u = int(t.public_parent[u])
      assert u >= 0
