"""``jaxgt train``: bad input is refused before any compilation; a tiny run's agent plays
(slow)."""

import json

import pytest

from jaxgt.cli import main


def _err(capsys):
  return capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["train", "kuhn_poker", "--preset", "chess", "--steps", "1"], "unknown preset"),
    (["train", "no_such_game", "--steps", "1"], "no_such_game"),
    (["train", "kuhn_poker", "--steps", "0"], "--steps must be positive"),
    (["train", "kuhn_poker"], "give --steps N or --minutes M"),
    (["train", "kuhn_poker", "--minutes", "-1"], "--minutes must be positive"),
    (["train", "kuhn_poker", "--steps", "1", "--devices", "0"], "--devices must be between 1"),
    (["train", "kuhn_poker", "--steps", "1", "--devices", "9"], "--devices must be between 1"),
])
def test_bad_arguments_refused(tmp_path, capsys, argv, message):
  assert main(argv + ["--out", str(tmp_path / "run")]) == 2
  assert message in _err(capsys)


def test_bad_directories_and_configs_refused(tmp_path, capsys):
  f = tmp_path / "file"
  f.write_text("x")
  assert main(["train", "kuhn_poker", "--steps", "1", "--out", str(f / "run")]) == 2
  assert "not a writable directory" in _err(capsys)
  cfg = tmp_path / "c.json"
  cfg.write_text(json.dumps({"num_actorz": 1}))
  assert main(["train", "kuhn_poker", "--steps", "1", "--config", str(cfg), "--out",
               str(tmp_path / "r")]) == 2
  assert "unknown training config keys" in _err(capsys)
  # A run directory of another game: refused on --resume, and without it (no overwrite).
  run = tmp_path / "kuhn_run"
  run.mkdir()
  (run / "config.json").write_text(json.dumps({"game": "kuhn_poker", "config": {}}))
  assert main(["train", "leduc_poker", "--steps", "1", "--resume", "--preset", "tiny", "--out",
               str(run)]) == 2
  assert "holds a run of kuhn_poker" in _err(capsys)
  assert main(["train", "kuhn_poker", "--steps", "1", "--out", str(run)]) == 2
  assert "already holds a run" in _err(capsys)
  assert main(["train", "kuhn_poker", "--steps", "1", "--out", str(tmp_path / "x"), "--plot",
               str(tmp_path / "no" / "p.png")]) == 2
  assert "does not exist" in _err(capsys)


@pytest.mark.parametrize("p_td1", [-0.5, 1.01])
def test_p_td1_outside_the_unit_interval_refused_before_compiling(tmp_path, capsys, monkeypatch,
                                                                  p_td1):
  from jaxgt.training import loop

  def no_trainer(*args, **kwargs):
    raise AssertionError("a Trainer was built (compilation would follow)")

  monkeypatch.setattr(loop, "Trainer", no_trainer)
  cfg = tmp_path / "c.json"
  cfg.write_text(json.dumps({"p_td1": p_td1}))
  assert main(["train", "kuhn_poker", "--steps", "1", "--config", str(cfg), "--out",
               str(tmp_path / "r")]) == 2
  assert f"p_td1 must be in [0, 1], got {p_td1}" in _err(capsys)
  assert not (tmp_path / "r").exists()


def test_training_through_the_rules_refuses_bad_input_before_compiling(tmp_path, capsys):
  """--rules: a game whose public states do not factor, a capacity too small for a decision's
  branch and an exploitability plot are refused, and no run directory is made."""
  out = str(tmp_path / "r")
  assert main(["train", "goofspiel(num_cards=3)", "--rules", "--steps", "1", "--out", out]) == 2
  assert "factorisation" in _err(capsys)
  cfg = tmp_path / "c.json"
  cfg.write_text(json.dumps({"capacity": 3}))
  assert main(["train", "kuhn_poker", "--rules", "--steps", "1", "--config", str(cfg), "--out",
               out]) == 2
  assert "use at least" in _err(capsys)
  assert main(["train", "kuhn_poker", "--rules", "--steps", "1", "--preset", "tiny", "--out", out,
               "--plot", str(tmp_path / "p.png")]) == 2
  assert "has none" in _err(capsys)
  assert not (tmp_path / "r").exists()


def test_sog_spec_needs_a_run_directory(tmp_path, capsys):
  assert main(["construct", "kuhn_poker", f"sog(checkpoint={tmp_path / 'none'})"]) == 2
  assert "no training run directory" in _err(capsys)
  # the gadget's alpha is checked before the run is read
  assert main(["construct", "kuhn_poker", f"sog(checkpoint={tmp_path},alpha=-0.5)"]) == 2
  assert "alpha" in _err(capsys)


@pytest.mark.slow
def test_train_then_play_and_construct(tmp_path, capsys):
  out = tmp_path / "run"
  assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "2", "--out", str(out),
               "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)  # one object; the progress lines went to stderr
  assert doc["steps"] == 2 and doc["metrics"]["step"] == 2 and doc["game"] == "kuhn_poker"
  assert [r["step"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())] == [
      1, 2]
  spec = f"sog(checkpoint={out},simulations=2)"
  assert main(["construct", "kuhn_poker", spec, "--json"]) == 0
  res = json.loads(capsys.readouterr().out)
  assert 0 < res["exploitability"]["avg"] < 1
  assert main(["match", "kuhn_poker", spec, "random", "--matches", "4"]) == 0
  # the run's gadget alpha unless the spec gives one
  import jaxgt
  from jaxgt.agents.specs import make_agent
  from jaxgt.training.config import PRESETS
  game = jaxgt.load("kuhn_poker")
  assert make_agent(game, spec).alpha == PRESETS["tiny"].alpha
  assert make_agent(game, f"sog(checkpoint={out},simulations=2,alpha=0.125)").alpha == 0.125
