"""Liar's Dice LD(D1, D2) mirrors OpenSpiel's liars_dice; the device game equals its Python
oracle; sizes, timing, CFR+, sampled lockstep on LD(2,2), private states and features."""

import itertools
import math
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
from jaxgt.games.liars_dice import multiset_index, multisets

from oracle_games import assert_same_compiled
from oracle_games.liars_dice import LiarsDice as OracleLiarsDice

pyspiel = pytest.importorskip("pyspiel")

from openspiel_reference import cfr_plus_policy, exported_exploitability, walk_lockstep  # noqa: E402

# Every Liar's Dice game string compiled in tests, examples and benchmarks (the benchmarks'
# liars_dice(numdice=1,dice_sides=8) is over the default limit and is refused).
COMPILED = ["liars_dice", "liars_dice(dice_sides=3)", "liars_dice(dice_sides=4)",
            "liars_dice(bidding_rule=reset-quantity,dice_sides=4)",
            "liars_dice(dice_sides=2,numdice=2)", "liars_dice(dice_sides=2,numdice1=2,numdice2=1)",
            "liars_dice(dice_sides=3,numdice1=1,numdice2=1)",
            pytest.param("liars_dice(dice_sides=4,numdice=2,numdice2=1)", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", COMPILED)
def test_device_game_compiles_equal_to_the_oracle(name):
  _, params = parse_game_string(name)
  assert_same_compiled(compile_game(make_from_string(name)),
                       compile_game(OracleLiarsDice(**params)))


@pytest.mark.parametrize("params", [
    {"dice_sides": 3},
    {"dice_sides": 4, "bidding_rule": "reset-quantity"},
    {"numdice": 2, "dice_sides": 2},
])
def test_rules_sizes_and_strings_equal_openspiel(params):
  ours = make("liars_dice", **params)
  os_game = pyspiel.load_game(ours.openspiel_game_string())
  assert os_game.num_distinct_actions() == ours.num_actions
  g = compile_game(ours)
  counts, infos = walk_lockstep(g, os_game)
  assert (g.tree.num_histories, g.tree.num_terminals) == (counts["histories"], counts["terminals"])
  for p in (0, 1):
    assert set(g.infostate_keys[p]) == infos[p]


def test_ld11_sizes_and_enumeration_time():
  t0 = time.perf_counter()
  g = compile_game(make("liars_dice"))
  seconds = time.perf_counter() - t0
  assert seconds <= 5.0, f"LD(1,1) enumeration took {seconds:.2f}s"
  # OpenSpiel's liars_dice(numdice=1): 6*6 rolls, 12 bids and Liar.
  assert g.sizes()["histories"] == 294883
  assert g.sizes()["terminals"] == 147420
  assert g.tree.num_infostates == (12288, 12288)
  assert (g.game.openspiel_game_string()
          == "liars_dice(bidding_rule=reset-face,dice_sides=6,numdice=1)")


@pytest.mark.slow
def test_ld11_lockstep_and_exploitability_equal_openspiel():
  g = jaxgt.load("liars_dice")
  counts, infos = walk_lockstep(g, pyspiel.load_game("liars_dice"))
  assert g.sizes()["histories"] == counts["histories"]
  assert all(set(g.infostate_keys[p]) == infos[p] for p in (0, 1))
  tree, pol = cfr_plus_policy(g, 20)
  assert float(sf.exploitability(tree, pol)) == pytest.approx(
      exported_exploitability(g, pol), abs=1e-6)


def test_cfr_plus_exploitability_equals_openspiel_and_decreases():
  g = jaxgt.load("liars_dice(dice_sides=4)")
  tree, pol5 = cfr_plus_policy(g, 5)
  _, pol200 = cfr_plus_policy(g, 200)
  e5, e200 = float(sf.exploitability(tree, pol5)), float(sf.exploitability(tree, pol200))
  assert e200 == pytest.approx(exported_exploitability(g, pol200), abs=1e-6)
  assert e5 == pytest.approx(exported_exploitability(g, pol5), abs=1e-6)
  assert e200 < 0.02 < e5


@pytest.mark.slow  # over the default run's time budget
def test_unequal_dice():
  g = compile_game(make("liars_dice", numdice1=2, numdice2=1, dice_sides=2))
  assert g.game.openspiel_game_string() is None
  assert g.game.num_actions == 3 * 2 + 1
  # Player 0 holds two dice, player 1 one: its strings show one digit.
  assert {len(k.split(" ")[0]) for k in g.infostate_keys[0]} == {2}
  assert {len(k.split(" ")[0]) for k in g.infostate_keys[1]} == {1}
  assert check(OracleLiarsDice(numdice1=2, numdice2=1, dice_sides=2))["passed"][-1] == \
      "deterministic"
  tree, pol = cfr_plus_policy(g, 300)
  assert float(sf.exploitability(tree, pol)) < 0.01
  # numdice1 = numdice2 = 1 is the same game as numdice=1.
  a = compile_game(make("liars_dice", numdice1=1, numdice2=1, dice_sides=3))
  b = compile_game(make("liars_dice", dice_sides=3))
  assert a.sizes() == b.sizes() and a.infostate_keys == b.infostate_keys


@pytest.mark.parametrize("params, match", [
    ({"numdice": 0}, "positive"),
    ({"numdice1": -1}, "positive"),
    ({"dice_sides": 1}, "dice_sides"),
    ({"bidding_rule": "reset-all"}, "bidding_rule"),
    ({"sides": 6}, "no parameter"),
    ({"numdice": 12}, "do not fit"),
])
def test_bad_parameters(params, match):
  with pytest.raises(ValueError, match=match):
    make("liars_dice", **params)


@pytest.mark.parametrize("name", ["liars_dice(numdice=2)",
                                  "liars_dice(bidding_rule=reset-quantity,dice_sides=4,numdice=2)"])
def test_sampled_trajectories_equal_openspiel_without_enumerating(name):
  """LD(2,2) is far too large to enumerate: 2,000 random trajectories replayed in OpenSpiel."""
  game = make_from_string(name)
  report = lockstep(game, game.openspiel_game_string(), trajectories=2000, seed=0)
  assert report["mismatches"] == 0, report["examples"]
  assert report["trajectories"] == 2000 and report["states"] > 2000 * 6


def test_sizes_of_keys_and_max_length_are_exact():
  game = make("liars_dice", numdice=2)
  # bids: 4 dice x 6 faces = 24 bits, one word; keys: dice, rolled + Liar, bids
  assert (game.num_actions, game.info_key_width, game.public_key_width) == (25, 3, 2)
  assert game.max_length == 4 + 24 + 1
  s = game.init()
  for a in [5, 0, 3, 2] + list(range(24)) + [24]:  # roll, every bid in turn, Liar
    assert game.legal_mask(s)[a] or game.chance_probs(s)[a] > 0
    s = game.step(s, a)
  assert int(game.current_player(s)) == TERMINAL
  assert game.info_string(game.info_key(s, 0), 0).endswith(" 4-6 Liar")
  big = make("liars_dice", numdice=2, numdice2=3, dice_sides=13)  # 65 bids: 3 words
  assert (big.info_key_width, big.public_key_width) == (5, 4)


def _rolled(game, tuples):
  """States after rolling each of ``tuples`` (``[N, D1 + D2]`` faces), vmapped."""
  def roll(dice):
    s = game.init()
    for i in range(dice.shape[0]):
      s = game.step(s, dice[i])
    return s
  return jax.jit(jax.vmap(roll))(jnp.asarray(tuples, jnp.int32))


@pytest.mark.parametrize("params", [{"numdice": 2}, {"numdice1": 2, "numdice2": 1,
                                                     "dice_sides": 3}])
def test_private_states_are_the_sorted_rolls_and_their_chance_is_exact(params):
  game = make("liars_dice", **params)
  d1, d2 = game.num_dice
  sides = game.sides
  tuples = np.array(list(itertools.product(range(sides), repeat=d1 + d2)))
  states = _rolled(game, tuples)
  counts = np.zeros(game.num_private)
  idx = [np.asarray(jax.jit(jax.vmap(lambda s, p=p: game.private_index(s, p)))(states))
         for p in (0, 1)]
  np.add.at(counts, (idx[0], idx[1]), 1)
  with jax.enable_x64(True):
    np.testing.assert_array_equal(np.asarray(game.private_chance(game.init())),
                                  counts / sides ** (d1 + d2))
  assert game.num_private == (math.comb(sides + d1 - 1, d1), math.comb(sides + d2 - 1, d2))
  # The index names the sorted dice the information state shows.
  for p, d in ((0, d1), (1, d2)):
    rolls = multisets(d, sides)
    keys = np.asarray(jax.jit(jax.vmap(lambda s, p=p: game.info_key(s, p)))(states))
    for k, i in zip(keys[::7], idx[p][::7]):
      assert game.info_string(k, p) == "".join(str(f + 1) for f in rolls[i])
    assert [int(multiset_index(jnp.asarray(r), sides)) for r in rolls] == list(range(len(rolls)))
  # Not dealt before the player's own dice are rolled.
  s = game.step(game.init(), 0)
  assert int(game.private_index(s, 1)) == -1
  assert int(game.private_index(game.init(), 0)) == -1


def test_features_are_one_to_one_with_keys():
  game = make("liars_dice", numdice=2)
  _, acts, _ = trajectories(game, jax.random.PRNGKey(1), 256)

  def states(acts):
    def body(s, a):
      nxt = game.step(s, jnp.maximum(a, 0))
      return jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt), s
    return jax.lax.scan(body, game.init(), acts)[1]

  @jax.jit
  def read(acts):
    ss = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), jax.vmap(states)(acts))
    out = [(jax.vmap(lambda s, p=p: game.info_key(s, p))(ss),
            jax.vmap(lambda s, p=p: game.info_features(s, p))(ss)) for p in (0, 1)]
    return out + [(jax.vmap(game.public_key)(ss), jax.vmap(game.public_features)(ss))]

  pairs = read(acts)
  sizes = [game.info_feature_size] * 2 + [game.public_feature_size]
  for (keys, feats), size in zip(pairs, sizes):
    keys, feats = np.asarray(keys), np.asarray(feats)
    assert feats.shape[1] == size and feats.dtype == np.float32
    assert len(np.unique(keys, axis=0)) == len(np.unique(np.concatenate([keys, feats], 1),
                                                         axis=0)) == len(np.unique(feats, axis=0))
