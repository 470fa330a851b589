"""II-Goofspiel II-GS(N) mirrors OpenSpiel's turn-based imperfect-information goofspiel (both
point orders); the device game equals its Python oracle; sampled lockstep on II-GS(13)."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form as sf
from jaxgt.core.compiler import compile_game
from jaxgt.core.lockstep import lockstep
from jaxgt.core.playout import trajectories
from jaxgt.games import check, make, make_from_string, parse_game_string
from jaxgt.games.base import TERMINAL

from oracle_games import assert_same_compiled
from oracle_games.goofspiel import Goofspiel as OracleGoofspiel
from oracle_games.goofspiel import IIGoofspiel as OracleIIGoofspiel
from openspiel_reference import cfr_plus_policy, exported_exploitability, walk_lockstep

pyspiel = pytest.importorskip("pyspiel")

ORACLES = {"goofspiel": OracleGoofspiel, "ii_goofspiel": OracleIIGoofspiel}
# Every goofspiel game string compiled in tests, examples and benchmarks (goofspiel(num_cards=7)
# of the scaling benchmark is over the default limit and is refused), and descending orders.
_SLOW = pytest.mark.slow
COMPILED = (
    [f"goofspiel(num_cards={n})" for n in (1, 2, 3, 4, 5)]
    + [f"goofspiel(num_cards={n},returns_type=point_difference)" for n in (1, 2, 3, 4)]
    + ["goofspiel(num_cards=3,points_base=0)", "ii_goofspiel(num_cards=3)",
       "ii_goofspiel(num_cards=4)", "goofspiel(num_cards=4,points_order=descending)",
       "goofspiel(num_cards=5,points_order=descending,returns_type=point_difference)",
       "ii_goofspiel(num_cards=4,points_order=descending)",
       pytest.param("goofspiel(num_cards=6)", marks=_SLOW),
       pytest.param("ii_goofspiel(num_cards=6)", marks=_SLOW)])


@pytest.mark.parametrize("name", COMPILED)
def test_device_game_compiles_equal_to_the_oracle(name):
  game_name, params = parse_game_string(name)
  assert_same_compiled(compile_game(make_from_string(name)),
                       compile_game(ORACLES[game_name](**params)))


def os_goofspiel(n, returns_type="win_loss", points_order="ascending"):
  sim = pyspiel.load_game(f"goofspiel(imp_info=True,points_order={points_order},num_cards={n},"
                          f"returns_type={returns_type})")
  return pyspiel.convert_to_turn_based(sim)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("returns_type", ["win_loss", "point_difference"])
@pytest.mark.parametrize("points_order", ["ascending", "descending"])
def test_rules_sizes_and_strings_equal_openspiel(n, returns_type, points_order):
  ours = make("goofspiel", num_cards=n, returns_type=returns_type, points_order=points_order)
  g = compile_game(ours)
  counts, infos = walk_lockstep(g, os_goofspiel(n, returns_type, points_order))
  assert (g.tree.num_histories, g.tree.num_terminals) == (counts["histories"], counts["terminals"])
  for p in (0, 1):
    assert set(g.infostate_keys[p]) == infos[p]
  # The exported game string loads the same OpenSpiel game.
  assert str(pyspiel.load_game(ours.openspiel_game_string())) == \
      str(os_goofspiel(n, returns_type, points_order))


@pytest.mark.parametrize("name, count", [
    ("goofspiel(num_cards=13)", 2000), ("goofspiel(num_cards=13,points_order=descending)", 2000),
    ("goofspiel(num_cards=13,returns_type=point_difference)", 500)])
def test_sampled_trajectories_equal_openspiel_without_enumerating(name, count):
  """II-GS(13) is far too large to enumerate: random trajectories replayed in OpenSpiel's
  turn-based imperfect-information goofspiel."""
  game = make_from_string(name)
  report = lockstep(game, game.openspiel_game_string(), trajectories=count, seed=0)
  assert report["mismatches"] == 0, report["examples"]
  # every trajectory is max_length long: its states and the terminal are compared
  assert report["trajectories"] == count and report["states"] == count * (game.max_length + 1)


def test_second_bid_does_not_see_the_first():
  g = make("goofspiel", num_cards=3)
  after = jax.jit(jax.vmap(g.step, (None, 0)))(g.init(), jnp.arange(3))
  keys = [np.asarray(jax.vmap(lambda s, p=p: g.info_key(s, p))(after)) for p in (0, 1)]
  assert len({tuple(k) for k in keys[1]}) == 1 and len({tuple(k) for k in keys[0]}) == 3
  assert (np.asarray(jax.vmap(g.current_player)(after)) == 1).all()


def test_keys_and_max_length():
  """II-GS(13): own bids in two words (4 bits a bid, 7 a word), winners in one, the turn in one;
  every trajectory is 2 x 12 bids long (the last round is played automatically)."""
  game = make("ii_goofspiel", num_cards=13)
  assert (game.info_key_width, game.public_key_width, game.max_length) == (4, 2, 24)
  _, acts, last = trajectories(game, jax.random.PRNGKey(0), 64)
  assert (np.asarray(acts) >= 0).all() and (np.asarray(last) == TERMINAL).all()
  # Distinct bid sequences of one player are distinct keys (no two rounds share bits).
  s, step = game.init(), jax.jit(game.step)
  for a0, a1 in zip(range(12, 0, -1), range(12)):
    s = step(step(s, a0), a1)
  assert int(game.current_player(s)) == TERMINAL
  text = game.info_string(game.info_key(s, 0), 0)
  assert "P0 action sequence: 12 11 10 9 8 7 6 5 4 3 2 1 0 \n" in text
  assert "Win sequence: 0 0 0 0 0 0 -3 1 1 1 1 1 1 \n" in text


def test_features_are_one_to_one_with_keys():
  game = make("goofspiel", num_cards=6, points_order="descending")
  _, acts, _ = trajectories(game, jax.random.PRNGKey(1), 128)

  def states(acts):
    def body(s, a):
      return game.step(s, a), s
    return jax.lax.scan(body, game.init(), acts)[1]

  @jax.jit
  def read(acts):
    ss = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), jax.vmap(states)(acts))
    out = [(jax.vmap(lambda s, p=p: game.info_key(s, p))(ss),
            jax.vmap(lambda s, p=p: game.info_features(s, p))(ss)) for p in (0, 1)]
    return out + [(jax.vmap(game.public_key)(ss), jax.vmap(game.public_features)(ss))]

  sizes = [game.info_feature_size] * 2 + [game.public_feature_size]
  for (keys, feats), size in zip(read(acts), sizes):
    keys, feats = np.asarray(keys), np.asarray(feats)
    assert feats.shape[1] == size and feats.dtype == np.float32
    assert len(np.unique(keys, axis=0)) == len(np.unique(np.concatenate([keys, feats], 1),
                                                         axis=0)) == len(np.unique(feats, axis=0))


def test_sizes_and_enumeration_time():
  t0 = time.perf_counter()
  g4 = compile_game(make("goofspiel", num_cards=4))
  g5 = compile_game(make("goofspiel", num_cards=5))
  seconds = time.perf_counter() - t0
  assert seconds <= 2.0, f"II-GS(4) + II-GS(5) enumeration took {seconds:.2f}s"
  assert (g4.sizes()["histories"], g4.sizes()["terminals"]) == (1077, 576)
  # II-GS(5): 5*5*4*4*3*3*2*2 terminal bid sequences (the last round is forced).
  assert g5.sizes()["terminals"] == 14400
  assert g5.sizes()["histories"] == 26931


@pytest.mark.parametrize("returns_type", ["win_loss", "point_difference"])
def test_cfr_plus_exploitability_equals_openspiel_and_decreases(returns_type):
  g = jaxgt.load(f"goofspiel(num_cards=4,returns_type={returns_type})")
  tree, pol5 = cfr_plus_policy(g, 5)
  _, pol300 = cfr_plus_policy(g, 300)
  e5, e300 = float(sf.exploitability(tree, pol5)), float(sf.exploitability(tree, pol300))
  assert e5 == pytest.approx(exported_exploitability(g, pol5), abs=1e-6)
  assert e300 == pytest.approx(exported_exploitability(g, pol300), abs=1e-6)
  assert e300 < 0.1 * e5


def test_points_base_and_errors():
  g = make("goofspiel", num_cards=3, points_base=0)
  assert g.openspiel_game_string() is None
  assert compile_game(g).sizes()["histories"] == 67
  assert check(OracleGoofspiel(num_cards=3, points_base=0))["sizes"]["histories"] == 67
  with pytest.raises(ValueError, match="num_cards"):
    make("goofspiel", num_cards=0)
  with pytest.raises(ValueError, match="returns_type"):
    make("goofspiel", returns_type="total_points")
  with pytest.raises(ValueError, match="points_order"):
    make("ii_goofspiel", points_order="random")


def test_paper_preset_is_goofspiel_with_points_from_zero():
  """Lisy et al.'s II-GS(N) (point cards 0..N-1) is registered as ii_goofspiel: the same tree as
  goofspiel(points_base=0), payoffs different from OpenSpiel's 1..N where the zero card decides."""
  paper = make("ii_goofspiel", num_cards=3)
  assert paper.game_string() == "ii_goofspiel(num_cards=3)" and paper.openspiel_game_string() is None
  assert make("ii_goofspiel").params["num_cards"] == 6
  a = compile_game(paper)
  b = compile_game(make("goofspiel", num_cards=3, points_base=0, returns_type="win_loss"))
  c = compile_game(make("goofspiel", num_cards=3))
  assert a.infostate_keys == b.infostate_keys
  assert (a.tree.terminal_payoff == b.tree.terminal_payoff).all()
  assert (a.tree.terminal_payoff != c.tree.terminal_payoff).any()
  assert jaxgt.load("ii_goofspiel(num_cards=3)").tree.num_histories == a.tree.num_histories
  with pytest.raises(ValueError, match="points_base"):
    make("ii_goofspiel", points_base=1)
