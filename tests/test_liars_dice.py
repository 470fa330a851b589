"""Liar's Dice LD(D1, D2) mirrors OpenSpiel's liars_dice; sizes, timing, CFR+."""

import time

import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.games import check, make
from jaxgt.core import sequence_form as sf

pyspiel = pytest.importorskip("pyspiel")

from openspiel_reference import cfr_plus_policy, exported_exploitability, walk_lockstep  # noqa: E402


@pytest.mark.parametrize("params", [
    {"dice_sides": 3},
    {"dice_sides": 4, "bidding_rule": "reset-quantity"},
    {"numdice": 2, "dice_sides": 2},
])
def test_rules_sizes_and_strings_equal_openspiel(params):
  ours = make("liars_dice", **params)
  os_game = pyspiel.load_game(ours.openspiel_game_string())
  assert os_game.num_distinct_actions() == ours.num_actions
  counts, infos = walk_lockstep(ours, os_game)
  g = compile_game(ours)
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
  ours = make("liars_dice")
  counts, infos = walk_lockstep(ours, pyspiel.load_game("liars_dice"))
  g = jaxgt.load("liars_dice")
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
  assert check(g)["passed"][-1] == "deterministic"
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
])
def test_bad_parameters(params, match):
  with pytest.raises(ValueError, match=match):
    make("liars_dice", **params)
