"""Large games told early: size estimates, fast refusal, enumeration progress, output paths."""

import math
import time

import pytest

import jaxgt
from jaxgt import cli
from jaxgt.core import compiler, playout
from jaxgt.games import make_from_string
from jaxgt.games.device import DeviceGame
from jaxgt.games.size import (GameTooLargeError, estimate_histories, openspiel_bounds,
                              refuse_if_too_large)


def estimate(game, **kw) -> dict:
  """Knuth's estimate through the rules: batched for a device game, a Python walk otherwise."""
  if isinstance(game, DeviceGame):
    return playout.estimate_size(game, **kw)
  est = estimate_histories(game, **kw)
  return {"log10_histories": est.log10_histories, "truncated": est.truncated}


def test_estimate_is_exact_on_a_depth_uniform_tree():
  # Goofspiel's branching depends only on the depth: every random path gives
  # the same sum of products, the exact count the compiler enumerates.
  game = make_from_string("goofspiel(num_cards=5)")
  est = estimate(game, paths=16)
  assert round(10 ** est["log10_histories"]) == \
      jaxgt.load("goofspiel(num_cards=5)").tree.num_histories
  assert not est["truncated"]


@pytest.mark.parametrize("name", ["leduc_poker", "liars_dice(numdice=1)", "generic_poker"])
def test_estimate_of_a_skewed_tree_errs_low_and_within_a_decade(name):
  # The median of group means under-estimates a right-skewed estimator: the
  # safe side for refusing. Checked against the enumerated count.
  count = jaxgt.load(name).tree.num_histories
  est = 10 ** estimate(make_from_string(name))["log10_histories"]
  assert count / 10 < est < 1.5 * count


def test_native_game_over_the_limit_is_refused_before_enumerating():
  t0 = time.perf_counter()
  with pytest.raises(GameTooLargeError, match=r"refused before enumerating.*max_histories"):
    compiler.compile_game(make_from_string("liars_dice(numdice=2)"))
  assert time.perf_counter() - t0 < 10


def test_a_small_limit_is_decided_by_the_exact_count():
  with pytest.raises(GameTooLargeError, match=r"more than 1000 histories \(counted"):
    compiler.compile_game(make_from_string("leduc_poker"), max_histories=1000)
  assert refuse_if_too_large(make_from_string("liars_dice(numdice=2)"), 1000) is None


def test_enumeration_stops_before_the_counted_histories_outgrow_memory(monkeypatch):
  # The random-path estimate can be several times low (it passes the memory check here);
  # the count itself then stops the enumeration, with the memory in the error's fields.
  from jaxgt.core import expand
  game = make_from_string("leduc_poker")
  per = expand.bytes_per_history(game)
  monkeypatch.setattr(expand, "available_memory", lambda: 5_000 * per)
  with pytest.raises(GameTooLargeError, match=r"at least [\d,]+ histories would need") as e:
    compiler.compile_game(game)
  assert 5_000 < e.value.counted <= 9_457 and e.value.available_bytes == 5_000 * per
  assert e.value.memory_bytes == e.value.counted * per
  from jaxgt.cli.games import info
  doc = info("leduc_poker")
  assert not doc["enumerable"] and not doc["over_limit"]
  assert "(counted before stopping) would need more than" in doc["reason"]
  monkeypatch.setattr(expand, "available_memory", lambda: 9_457 * per)
  assert compiler.compile_game(game).tree.num_histories == 9_457  # fits exactly: not refused


def test_progress_reports_while_enumerating_and_changes_nothing():
  reports = []
  game = make_from_string("leduc_poker")
  g = compiler.compile_game(game, progress=reports.append, progress_seconds=0.0)
  assert len(reports) >= 2
  counts = [r.histories for r in reports]
  # a device game reports after each depth's frontier, the last one when all are counted
  assert counts == sorted(counts) and counts[0] < counts[-1] <= g.tree.num_histories
  assert all(r.rss_bytes > 0 and r.rate > 0 and r.discovered >= r.histories for r in reports)
  assert "histories" in reports[-1].line() and "MiB" in reports[-1].line()
  assert g.fingerprint == compiler.compile_game(game).fingerprint


def test_openspiel_bounds_bound_the_count():
  pytest.importorskip("pyspiel")
  import pyspiel
  b = openspiel_bounds(pyspiel.load_game("leduc_poker"))
  assert b["max_game_length"] == 8 and b["num_distinct_actions"] == 3
  assert 10 ** b["log10_max_histories"] >= jaxgt.load("openspiel:leduc_poker").tree.num_histories
  # Bounds within the limit: nothing is walked.
  assert refuse_if_too_large(None, 10 ** 10, bounds=b) is None


def test_info_says_chess_is_not_enumerable_in_seconds(capsys):
  pytest.importorskip("pyspiel")
  t0 = time.perf_counter()
  assert cli.main(["info", "openspiel:chess"]) == 0
  assert time.perf_counter() - t0 < 30
  out = capsys.readouterr().out
  assert "enumerable      no" in out and "not enumerable within 5,000,000 histories" in out
  assert "times the limit" in out and "--max-histories N" in out
  assert "17695 moves" in out  # the game's own bounds are quoted


def test_unwritable_save_path_is_refused_before_the_solve(capsys, monkeypatch):
  def no_load(*a, **k):
    raise AssertionError("the game was loaded before the path check")
  monkeypatch.setattr("jaxgt.cli.solve.load_game", no_load)
  assert cli.main(["solve", "kuhn_poker", "--save", "/nonexistent/dir/p.npz"]) == 2
  err = capsys.readouterr().err
  assert "--save /nonexistent/dir/p.npz" in err and "does not exist" in err
  assert cli.main(["solve", "kuhn_poker", "--plot", "/"]) == 2
  assert "is a directory" in capsys.readouterr().err


def test_format_of_a_refusal_names_how_far_over():
  with pytest.raises(GameTooLargeError) as e:
    compiler.compile_game(make_from_string("liars_dice(numdice=2,numdice2=1)"),
                         max_histories=1_000_000)
  times = float(str(e.value).split(" times the limit")[0].split("), ")[-1].replace(",", ""))
  est = float(str(e.value).split("about ")[1].split(" histories")[0].replace(",", ""))
  assert math.isclose(times, est / 1e6, rel_tol=0.05)


def test_a_python_games_enumeration_stops_before_it_outgrows_memory(monkeypatch):
  # A game written in Python (here OpenSpiel's Leduc through pyspiel) has no per-history
  # estimate of its memory: the resident memory it has taken since it started is checked
  # every 4,096 histories against the memory available then.
  pytest.importorskip("pyspiel")
  game = make_from_string("openspiel:leduc_poker")
  assert not isinstance(game, DeviceGame)
  grown = iter(range(0, 10 ** 9, 2 ** 20))  # 1 MiB more at each reading
  monkeypatch.setattr(compiler, "rss_bytes", lambda: next(grown))
  monkeypatch.setattr(compiler, "available_memory", lambda: 2 ** 20)
  with pytest.raises(GameTooLargeError, match=r"at least [\d,]+ histories would need") as e:
    compiler.compile_game(game)
  assert e.value.counted > 4_096 and e.value.available_bytes == 2 ** 20
  assert e.value.memory_bytes > compiler.MEMORY_SHARE * 2 ** 20
  monkeypatch.setattr(compiler, "available_memory", lambda: 2 ** 40)
  assert compiler.compile_game(game).tree.num_histories == 9_457
