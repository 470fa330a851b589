"""The command line as scripts rely on it (docs/CLI.md): bad input refused before any work,
one JSON object per command, results within their ranges, and the small courtesies (version,
suggestions, pipes, Ctrl-C)."""

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import jaxgt
from jaxgt.policy import Policy
from jaxgt.cli import _parser, main

pyspiel = pytest.importorskip("pyspiel")


def _one_error_line(capsys_or_capfd) -> str:
  """The one error line on stderr (after any enumeration progress of a game that was loaded,
  which a slow machine shows)."""
  lines = [line for line in capsys_or_capfd.readouterr().err.strip().splitlines()
           if not line.startswith("enumerating: ")]
  assert len(lines) == 1 and lines[0].startswith("jaxgt: error: "), lines
  return lines[0]


# ------------------------------------------------------------------ output paths, checked first
@pytest.mark.parametrize("argv, flag", [
    (["match", "kuhn_poker", "random", "random", "--matches", "2", "--log", "{bad}/x.jsonl"],
     "--log"),
    (["match", "kuhn_poker", "random", "random", "--matches", "2", "--plot", "{bad}/x.png"],
     "--plot"),
    (["construct", "kuhn_poker", "random", "--export-openspiel", "{bad}/o.json"],
     "--export-openspiel"),
    (["export", "{policy}", "--openspiel", "{bad}/o.json"], "--openspiel"),
    (["solve", "kuhn_poker", "--save", "{bad}/p.npz"], "--save"),
    (["solve", "kuhn_poker", "--plot", "{bad}/p.png"], "--plot"),
    (["train", "kuhn_poker", "--steps", "1", "--out", "{file}/run"], "--out"),
    (["train", "kuhn_poker", "--steps", "1", "--out", "{bad}/run"], "--out"),
    (["train", "kuhn_poker", "--steps", "1", "--out", "{tmp}/run", "--plot", "{bad}/p.png"],
     "--plot"),
    (["bench", "--out", "{file}/results"], "--out"),
])
def test_every_output_path_is_checked_before_any_work(argv, flag, tmp_path, no_work, capsys):
  """A path in a missing folder, or under a file, is refused at once: exit 2, one line naming
  the flag, and nothing loaded, compiled, read or played."""
  afile = tmp_path / "a_file"
  afile.write_text("x")
  names = {"bad": str(tmp_path / "missing"), "file": str(afile), "tmp": str(tmp_path),
           "policy": str(afile)}
  t0 = time.perf_counter()
  assert main([a.format(**names) for a in argv]) == 2
  assert time.perf_counter() - t0 < 5.0
  assert flag in _one_error_line(capsys)
  assert not (tmp_path / "missing").exists() and not (tmp_path / "run").exists()


# ------------------------------------------------------------------ train --resume
def test_resume_refuses_a_directory_without_a_run(tmp_path, no_work, capsys):
  """A mistyped --resume directory (missing, or empty) is refused instead of starting afresh."""
  for out in (tmp_path / "typo", tmp_path):
    assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "1", "--resume",
                 "--out", str(out)]) == 2
    assert "holds no run" in _one_error_line(capsys)
  assert not (tmp_path / "typo").exists() and list(tmp_path.iterdir()) == []


def test_resume_refuses_a_run_without_a_checkpoint(tmp_path, monkeypatch, capsys):
  """A run that stopped before its first checkpoint has nothing to resume from."""
  from jaxgt.training import config as config_lib
  from jaxgt.training import loop
  monkeypatch.setattr(loop, "train", lambda *a, **k: pytest.fail("training started"))
  (tmp_path / loop.CONFIG_FILE).write_text(json.dumps(
      {"game": "kuhn_poker", "config": config_lib.preset("tiny").to_json()}))
  assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "1", "--resume", "--out",
               str(tmp_path)]) == 2
  assert "holds no checkpoint" in _one_error_line(capsys)


# ------------------------------------------------------------------ --json, one object each
def _json(capsys, *argv):
  assert main(list(argv)) == 0
  out = capsys.readouterr().out
  assert len(out.strip().splitlines()) == 1, out
  return json.loads(out)


def test_games_and_agents_json(capsys):
  from jaxgt.agents.specs import parse_spec
  from jaxgt.games import registry
  doc = _json(capsys, "games", "--json")
  by_name = {g["name"]: g for g in doc["games"]}
  assert set(by_name) == set(registry())
  assert by_name["leduc_poker"]["parameters"] == {"players": 2, "suit_isomorphism": False}
  assert "openspiel:" in doc["openspiel"]
  doc = _json(capsys, "agents", "--json")
  oos = {a["name"]: a for a in doc["agents"]}["oos"]
  defaults = {p["name"]: p["default"] for p in oos["parameters"]}
  assert defaults == dict(parse_spec("oos").params)
  assert {p["name"]: p["choices"] for p in oos["parameters"]}["targeting"] == ["ist", "pst"]


def test_solve_and_export_json(tmp_path, capsys):
  """``solve --json``: one object whose exploitability OpenSpiel confirms on the exported
  policy; the progress lines go to stderr. ``export --json`` counts Kuhn's 6 + 6 information
  states."""
  pol = tmp_path / "k.npz"
  assert main(["solve", "kuhn_poker", "--iterations", "40", "--eval-every", "20", "--save",
               str(pol), "--json"]) == 0
  cap = capsys.readouterr()
  doc = json.loads(cap.out)
  assert "iter       20" in cap.err and "iter       40" in cap.err
  assert doc["game"] == "kuhn_poker" and doc["solver"] == "dcfr" and doc["iterations"] == 40
  assert [e["iteration"] for e in doc["evaluations"]] == [20, 40]
  assert doc["evaluations"][-1]["exploitability"] == doc["exploitability"]
  assert doc["policy"] == str(pol) and set(doc["units"]) >= {"exploitability", "value"}
  out = _json(capsys, "export", str(pol), "--openspiel", str(tmp_path / "k.json"), "--json")
  exported = json.loads((tmp_path / "k.json").read_text())
  from openspiel_reference import exported_file_exploitability
  assert exported_file_exploitability(exported) == pytest.approx(doc["exploitability"], rel=1e-4)
  assert set(out) == {"game", "openspiel", "path", "infostates"}
  assert out["game"] == "kuhn_poker" and out["path"] == str(tmp_path / "k.json")
  assert out["infostates"] == 12
  assert pyspiel.load_game(out["openspiel"]).get_type().short_name == "kuhn_poker"


def test_result_objects_share_key_names(tmp_path, capsys):
  """``match`` and ``evaluate`` count ``episodes`` alike and name the game and the units."""
  log = tmp_path / "m.jsonl"
  m = _json(capsys, "match", "kuhn_poker", "random", "random", "--matches", "6", "--json",
            "--log", str(log))
  uniform = tmp_path / "u.npz"
  g = jaxgt.load("kuhn_poker")
  Policy.from_arrays(g, tuple(np.asarray(p.legal, np.float64)
                                    / np.asarray(p.legal).sum(-1, keepdims=True)
                                    for p in g.tree.players)).save(uniform)
  e = _json(capsys, "evaluate", str(log), "--policy", str(uniform), "--agent", "0", "--json")
  for doc in (m, e):
    assert doc["game"] == "kuhn_poker" and doc["episodes"] == 6 and "units" in doc
  assert e["estimate"] == pytest.approx(m["mean"], abs=1e-9)  # on-policy basic = match mean


def test_construct_json_names_the_game_and_its_interval(capsys):
  """The uniform policy of Kuhn poker is exploitable by 11/24 (OpenSpiel's exploitability of
  its uniform random policy), whatever the seed: an interval of zero width."""
  doc = _json(capsys, "construct", "kuhn_poker", "random", "--seeds", "2", "--seed", "5", "--json")
  assert doc["game"] == "kuhn_poker" and doc["agent"] == "random" and doc["seeds"] == 2
  assert [r["seed"] for r in doc["per_seed"]] == [5, 6]
  for r in doc["per_seed"]:
    assert r["exploitability"] == pytest.approx(11 / 24, abs=1e-6)
  assert doc["ci95"] == pytest.approx([11 / 24, 11 / 24], abs=1e-6)
  assert doc["units"]["exploitability"] == "game payoff per episode"
  assert main(["construct", "kuhn_poker", "random"]) == 0
  out = capsys.readouterr().out
  assert "for 1 seed\n" in out and "exploitability over 1 seed:" in out


def test_train_json_is_one_final_object_and_log_every(tmp_path, monkeypatch, capsys):
  """``train --json``: the progress lines on stderr (one every ``--log-every`` learner steps and
  at every evaluation), one object on stdout at the end."""
  from jaxgt.training import loop

  class State:
    learner_steps = 8

  def fake_train(game, cfg, out, *, on_metrics, **kw):
    out.mkdir(parents=True, exist_ok=True)
    with open(out / loop.METRICS_FILE, "w") as f:
      for step in range(1, 9):
        line = {"step": step, "loss": 1.0, "value_loss": 0.5, "policy_loss": 0.5,
                "replay_size": 1, "query_size": 0, "searches_per_s": 1.0, "queries_per_s": 0.0}
        if step == 5:
          line["exploitability"] = 0.25
        f.write(json.dumps(line) + "\n")
        on_metrics(line)
    return State()

  monkeypatch.setattr(loop, "train", fake_train)
  out = tmp_path / "run"
  assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "8", "--out", str(out),
               "--log-every", "3", "--json"]) == 0
  cap = capsys.readouterr()
  doc = json.loads(cap.out)
  assert len(cap.out.strip().splitlines()) == 1
  assert doc["game"] == "kuhn_poker" and doc["steps"] == 8 and doc["out"] == str(out)
  assert doc["exploitability"] == 0.25 and doc["exploitability_step"] == 5
  assert doc["metrics"]["step"] == 8 and "units" in doc
  shown = [int(m) for m in re.findall(r"^step (\d+)", cap.err, re.M)]
  assert shown == [1, 3, 5, 6]  # every 3 learner steps from the first, and the evaluation at 5
  assert main(["train", "kuhn_poker", "--steps", "1", "--out", str(tmp_path / "r2"),
               "--log-every", "0"]) == 2
  assert "--log-every must be positive" in _one_error_line(capsys)


# ------------------------------------------------------------------ results in their ranges
def test_win_rate_interval_is_clipped_and_counts_agree_in_number(capsys):
  """3 wins of 4: the normal interval 0.75 +- 0.49 ends at 1, and the text says "1 loss"."""
  doc = _json(capsys, "match", "kuhn_poker", "random", "random", "--matches", "4", "--seed", "2",
              "--json")
  assert (doc["wins"], doc["draws"], doc["losses"]) == (3, 0, 1)
  lo, hi = doc["win_ci95"]
  scores = np.array([1, 1, 1, 0])
  half = 1.96 * scores.std(ddof=1) / np.sqrt(4)
  assert 0.75 + half > 1 and hi == 1.0 and lo == pytest.approx(0.75 - half)
  assert main(["match", "kuhn_poker", "random", "random", "--matches", "4", "--seed", "2"]) == 0
  out = capsys.readouterr().out
  assert f"95% CI [{0.75 - half:.4f}, 1.0000]" in out
  assert "(3 wins, 0 draws, 1 loss;" in out


# ------------------------------------------------------------------ refusals before any work
@pytest.mark.parametrize("argv, message", [
    (["solve", "kuhn_poker", "--seed", "3"], "--seed applies to the sampling solvers only"),
    (["solve", "kuhn_poker", "--solver", "cfr+", "--batch", "8"], "--batch applies to the"),
    (["solve", "kuhn_poker", "--target", "0"], "--target must be positive"),
    (["solve", "kuhn_poker", "--target", "-1"], "--target must be positive"),
    (["solve", "kuhn_poker", "--target", "0.1", "--eval-every", "0"], "--eval-every > 0"),
    (["solve", "kuhn_poker", "--max-histories", "0"], "--max-histories must be positive"),
    (["match", "kuhn_poker", "random", "random", "--max-histories", "-5"],
     "--max-histories must be positive"),
])
def test_bad_numbers_and_inapplicable_flags_refused_before_loading(argv, message, no_work,
                                                                   capsys):
  assert main(argv) == 2
  assert message in _one_error_line(capsys)


def test_size_limit_advice_names_the_flag(capsys):
  """The command line words the library's size error from its fields (the count or estimate
  and the limit), naming the flag; the library's own advice names its argument."""
  from jaxgt.cli.common import size_message
  from jaxgt.games.size import GameTooLargeError
  assert main(["solve", "leduc_poker", "--max-histories", "100"]) == 2
  err = _one_error_line(capsys)
  assert "leduc_poker: not enumerable within 100 histories" in err
  assert "pass --max-histories N to raise the limit" in err and "max_histories" not in err
  assert size_message(GameTooLargeError("x", game="g", limit=1000, counted=1001)) == (
      "g: not enumerable within 1,000 histories (counted 1,001 before stopping); pass "
      "--max-histories N to raise the limit")
  said = size_message(GameTooLargeError("x", game="g", limit=200_000, log10_histories=6.301,
                                        detail="estimated from 8 paths"))
  assert said.startswith("g: not enumerable within 200,000 histories: about 1,999,862 "
                         "histories (estimated from 8 paths), 10.0 times the limit")
  said = size_message(GameTooLargeError("x", game="g", limit=10, log10_histories=9.0,
                                        memory_bytes=2**33, available_bytes=2**30))
  assert "8.0 GiB against 1.0 GiB available" in said and "--max-histories" not in said
  said = size_message(GameTooLargeError("x", game="g", limit=10**9, counted=123_456,
                                        memory_bytes=2**33, available_bytes=2**30))
  assert said.startswith("g: not enumerable on this machine: at least 123,456 histories "
                         "(counted before stopping) would need more than 8.0 GiB against 1.0 GiB")


def test_info_on_an_openspiel_game_over_the_limit_says_so(capsys):
  """pyspiel's Leduc has 9,457 histories: counting stops past --max-histories 100, and info
  reports that (exit 0) instead of failing."""
  assert main(["info", "openspiel:leduc_poker", "--max-histories", "100", "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["enumerable"] is False and doc["over_limit"] is True
  assert doc["reason"].startswith("openspiel:leduc_poker(): not enumerable within 100 "
                                  "histories (counted 101 before stopping)")
  assert doc["estimate"]["histories"] == 101 and doc["estimate"]["at_least"] is True
  assert main(["info", "openspiel:leduc_poker", "--max-histories", "9457", "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["enumerable"] is True and doc["over_limit"] is False
  assert doc["sizes"]["histories"] == 9457
  assert main(["info", "openspiel:leduc_poker", "--max-histories", "100"]) == 0
  out = capsys.readouterr().out
  assert "enumerable      no: openspiel:leduc_poker(): not enumerable within 100" in out
  assert "histories       more than 100 (counting stopped at the limit)" in out


def test_corrupt_policy_file_does_not_advise_unpickling(tmp_path, capsys):
  bad = tmp_path / "bad.npz"
  bad.write_bytes(b"not a policy at all")
  assert main(["export", str(bad), "--openspiel", str(tmp_path / "o.json")]) == 2
  err = _one_error_line(capsys)
  assert "not a jaxgt policy file" in err and "pickle" not in err


# ------------------------------------------------------------------ help, version, suggestions
def _helps():
  ap = _parser()
  yield ap.format_help()
  sub = next(a for a in ap._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
  for p in sub.choices.values():
    yield p.format_help()


def test_help_texts_are_plain_text_and_cite_authors():
  for text in _helps():
    assert not re.search(r"``|:(mod|func|class|data|meth|attr):", text), text[:200]
    assert not re.search(r"\(\d{3},|paper \d{3}", text), text[:200]


def test_version(capsys):
  with pytest.raises(SystemExit) as stop:
    main(["--version"])
  assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"jaxgt {jaxgt.__version__}"


def test_games_lists_parameters_and_the_openspiel_prefix(capsys):
  assert main(["games"]) == 0
  out = capsys.readouterr().out
  assert "suit_isomorphism=false" in out and re.search(r"^openspiel:GAME\s", out, re.M)


@pytest.mark.parametrize("argv, suggestion", [
    (["solve", "kuhn_pokr"], "did you mean 'kuhn_poker'?"),
    (["solve", "kuhn_poker(playrs=2)"], "did you mean 'players'?"),
    (["match", "kuhn_poker", "randm", "random"], "did you mean 'random'?"),
    (["match", "kuhn_poker", "oos(iteratons=5)", "random"], "did you mean 'iterations'?"),
    (["info", "openspiel:kuhn_pokr"], "did you mean 'kuhn_poker'?"),
])
def test_did_you_mean(argv, suggestion, capfd):
  assert main(argv) == 2
  assert suggestion in _one_error_line(capfd)


def test_unknown_openspiel_game_is_one_line(capfd):
  """pyspiel's own list of every game (on the C++ stderr) stays off the terminal."""
  for game in ("openspiel:no_such_game", "openspiel:kuhn_poker(foo=1)"):
    assert main(["info", game]) == 2
    assert "OpenSpiel cannot load" in _one_error_line(capfd)


def test_interrupt_exits_130_without_a_traceback(monkeypatch, capsys):
  from jaxgt import cli

  def interrupted(args):
    raise KeyboardInterrupt

  monkeypatch.setitem(cli.COMMANDS, "games", interrupted)
  assert main(["games"]) == 130
  assert capsys.readouterr().err.strip() == "jaxgt: interrupted"


def test_closed_pipe_ends_quietly():
  """``jaxgt agents | head -3``: the reader is gone before the listing is written."""
  read, write = os.pipe()
  os.close(read)
  proc = subprocess.run([sys.executable, "-m", "jaxgt", "agents"], stdout=write,
                        stderr=subprocess.PIPE, text=True, timeout=120)
  os.close(write)
  assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
  assert proc.returncode == 141
