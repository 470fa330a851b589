"""benchmarks/game_speed.py at tiny sizes: the printed table, the JSON file and its checks."""

import json

import pytest

from script_modules import load_script


@pytest.fixture(scope="module")
def game_speed():
  return load_script("benchmarks/game_speed.py", "game_speed")


def test_tiny_run_writes_rates_ratios_and_bytes_per_state(game_speed, tmp_path, capsys):
  out = tmp_path / "speed.json"
  game_speed.main(["--games", "kuhn_poker", "--batches", "1,16", "--seconds", "0.01",
                   "--repeats", "1", "--json", str(out)])
  res = json.loads(out.read_text())
  assert res["environment"]["backend"] and res["repeats"] == 1
  (game,) = res["games"]
  assert game["game"] == "kuhn_poker" and game["implementation"] == "device game"
  assert game["bytes_per_state"] > 0 and game["max_length"] == 5
  assert [b["batch"] for b in game["batches"]] == [1, 16]
  for b in game["batches"]:
    assert b["jaxgt"] > 0 and b["compile_s"] > 0
    if game["openspiel"] is not None:
      assert b["openspiel"] > 0 and b["ratio_openspiel"] > 0
    if game["pgx"] is not None:
      assert b["pgx"] > 0 and b["ratio_pgx"] > 0 and game["pgx_bytes_per_state"] > 0
    else:
      assert b["pgx"] is None and b["ratio_pgx"] is None
  table = capsys.readouterr().out
  assert "kuhn_poker (device game" in table and "/OpenSpiel" in table


def test_game_list_splits_game_strings_on_top_level_commas(game_speed):
  assert game_speed.split_games("kuhn_poker, liars_dice(numdice=2,dice_sides=4),goofspiel") == [
      "kuhn_poker", "liars_dice(numdice=2,dice_sides=4)", "goofspiel"]
  assert "kuhn_poker" in game_speed.default_games()


def test_bad_arguments_are_refused_before_any_work(game_speed, tmp_path, capsys):
  for argv, message in [(["--games", "no_such_game"], "unknown game"),
                        (["--batches", "0"], "--batches"),
                        (["--json", str(tmp_path / "missing" / "x.json")], "does not exist")]:
    with pytest.raises(SystemExit):
      game_speed.main(argv)
    assert message in capsys.readouterr().err
