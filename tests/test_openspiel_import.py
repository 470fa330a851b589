"""Importing pyspiel games: sizes, strings, exploitability, public states, errors."""

import types

import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.games import check, from_openspiel, make_from_string
from jaxgt.core import sequence_form as sf

from openspiel_reference import cfr_plus_policy, exported_exploitability, walk_lockstep

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize("name", [
    "kuhn_poker",
    "leduc_poker",
    "liars_dice(dice_sides=3)",
    "goofspiel(imp_info=True,num_cards=3,points_order=ascending)",
    "oshi_zumo(coins=3,size=1,horizon=3)",
    "matrix_rps",
])
def test_import_mirrors_openspiel(name):
  ours = from_openspiel(name)
  reference = pyspiel.load_game(ours.openspiel_game_string())
  if ours.simultaneous:   # our turn-based conversion equals OpenSpiel's
    assert str(reference) == str(pyspiel.convert_to_turn_based(pyspiel.load_game(name)))
  counts, infos = walk_lockstep(ours, reference)
  g = compile_game(ours)
  assert g.sizes()["histories"] == counts["histories"] == ours.num_histories
  assert g.sizes()["terminals"] == counts["terminals"]
  for p in (0, 1):
    assert set(g.infostate_keys[p]) == infos[p]
  assert check(g)["passed"]


@pytest.mark.parametrize("name", [
    "kuhn_poker",
    "goofspiel(imp_info=True,num_cards=4,points_order=ascending)",
])
def test_cfr_plus_exploitability_equals_openspiel(name):
  g = jaxgt.load("openspiel:" + name)
  tree, pol = cfr_plus_policy(g, 50)
  ours = float(sf.exploitability(tree, pol))
  assert ours == pytest.approx(exported_exploitability(g, pol), abs=1e-6)
  _, pol0 = cfr_plus_policy(g, 1)
  assert ours < float(sf.exploitability(tree, pol0))


def test_native_games_equal_imported():
  for native, imported in [
      ("kuhn_poker", "openspiel:kuhn_poker"),
      ("liars_dice(dice_sides=3)", "openspiel:liars_dice(dice_sides=3)"),
      ("goofspiel(num_cards=4)",
       "openspiel:goofspiel(imp_info=True,num_cards=4,points_order=ascending)"),
  ]:
    a, b = jaxgt.load(native), jaxgt.load(imported)
    sa, sb = a.sizes(), b.sizes()
    assert a.infostate_keys == b.infostate_keys
    # Same public partition size for Liar's Dice (common knowledge) and
    # Goofspiel (public observer); Kuhn's observer yields the same 11.
    assert sa == sb
    pol = tuple(np.asarray(x) / np.asarray(x).sum(-1, keepdims=True)
                for x in (a.tree.players[0].legal, a.tree.players[1].legal))
    assert float(sf.exploitability(a.device_tree("float64"), pol)) == pytest.approx(
        float(sf.exploitability(b.device_tree("float64"), pol)), abs=1e-12)


def test_load_and_make_from_string():
  g = jaxgt.load("openspiel:goofspiel(imp_info=True,num_cards=4,points_order=ascending)")
  assert g.name.startswith("openspiel:goofspiel(")
  assert g.game.openspiel_game_string().startswith("turn_based_simultaneous_game(game=goofspiel(")
  assert make_from_string("openspiel:kuhn_poker").openspiel_game_string() == "kuhn_poker()"
  assert jaxgt.load(g.name).fingerprint == g.fingerprint


def test_constant_sum_is_shifted_to_zero_sum():
  game = pyspiel.create_matrix_game("cs_pennies", "constant-sum pennies", ["a", "b"], ["x", "y"],
                                    [[1, 0], [0, 1]], [[0, 1], [1, 0]])
  g = compile_game(from_openspiel(game))
  assert sorted(g.tree.terminal_payoff.tolist()) == [-0.5, -0.5, 0.5, 0.5]
  assert g.game.openspiel_game_string() is None   # not loadable by name
  half = np.full((1, 2), 0.5)
  assert float(sf.expected_value(g.device_tree("float64"), (half, half))) == pytest.approx(0.0)


def test_common_knowledge_public_states():
  # liars_dice has no public observer: the common-knowledge partition groups
  # histories by (dice rolled, bids), one public state per bid sequence.
  g = jaxgt.load("openspiel:liars_dice(dice_sides=3)")
  assert g.game._observer is None
  native = jaxgt.load("liars_dice(dice_sides=3)")
  key_of = {}
  for h in range(g.tree.num_histories):
    key_of.setdefault(int(g.tree.history_public[h]), set()).add(
        int(native.tree.history_public[h]))
  assert all(len(v) == 1 for v in key_of.values())


@pytest.mark.parametrize("name, match", [
    ("kuhn_poker(players=3)", "two-player"),
    ("matrix_pd", "GENERAL_SUM"),
    ("tiny_hanabi", "IDENTICAL"),
    ("no_such_game_xyz", "cannot load"),
])
def test_rejected_games(name, match):
  with pytest.raises(ValueError, match=match):
    from_openspiel(name)


def test_imperfect_recall_is_rejected_by_the_compiler():
  with pytest.raises(ValueError, match=r"openspiel:liars_dice_ir.*imperfect recall"):
    jaxgt.load("openspiel:liars_dice_ir(dice_sides=3,recall_length=1)")


def test_size_guard():
  with pytest.raises(ValueError, match=r"max_histories=1000 .*counted 1001"):
    from_openspiel("leduc_poker", max_histories=1000)
  with pytest.raises(ValueError, match="max_histories=1000"):
    jaxgt.load("openspiel:leduc_poker", max_histories=1000)
  assert from_openspiel("leduc_poker", max_histories=9457).num_histories == 9457


def test_no_information_state_strings():
  real = pyspiel.load_game("kuhn_poker")
  gtype = types.SimpleNamespace(
      utility=real.get_type().utility, dynamics=real.get_type().dynamics,
      provides_information_state_string=False, short_name="fake")
  fake = types.SimpleNamespace(get_type=lambda: gtype, num_players=lambda: 2,
                               __str__=lambda: "fake")
  with pytest.raises(ValueError, match="information-state strings"):
    from_openspiel(fake)
