"""II-Goofspiel II-GS(N) mirrors OpenSpiel's turn-based imperfect-information goofspiel."""

import time

import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.games import check, make
from jaxgt.core import sequence_form as sf

from openspiel_reference import cfr_plus_policy, exported_exploitability, walk_lockstep

pyspiel = pytest.importorskip("pyspiel")


def os_goofspiel(n, returns_type="win_loss"):
  sim = pyspiel.load_game(f"goofspiel(imp_info=True,points_order=ascending,num_cards={n},"
                          f"returns_type={returns_type})")
  return pyspiel.convert_to_turn_based(sim)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("returns_type", ["win_loss", "point_difference"])
def test_rules_sizes_and_strings_equal_openspiel(n, returns_type):
  ours = make("goofspiel", num_cards=n, returns_type=returns_type)
  counts, infos = walk_lockstep(ours, os_goofspiel(n, returns_type))
  g = compile_game(ours)
  assert (g.tree.num_histories, g.tree.num_terminals) == (counts["histories"], counts["terminals"])
  for p in (0, 1):
    assert set(g.infostate_keys[p]) == infos[p]
  # The exported game string loads the same OpenSpiel game.
  assert str(pyspiel.load_game(ours.openspiel_game_string())) == str(os_goofspiel(n, returns_type))


def test_second_bid_does_not_see_the_first():
  g = make("goofspiel", num_cards=3)
  s0 = g.initial_state()
  keys = {g.information_state(g.next_state(s0, a), 1) for a in range(3)}
  assert len(keys) == 1 and g.current_player(g.next_state(s0, 0)) == 1


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
  assert check(g)["sizes"]["histories"] == 67
  with pytest.raises(ValueError, match="num_cards"):
    make("goofspiel", num_cards=0)
  with pytest.raises(ValueError, match="returns_type"):
    make("goofspiel", returns_type="total_points")


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
