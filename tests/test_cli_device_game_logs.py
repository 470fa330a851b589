"""The command line on games played through their rules (too large to enumerate): ``jaxgt match
--log/--plot``, ``jaxgt evaluate`` of such a log, and the commands that need the enumerated tree
refusing them with one line (exit status 2) before any work."""

import contextlib
import io
import json

import numpy as np
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.evaluation.episode_log import read_episodes, write_episodes
from jaxgt.games import make_from_string

LD2 = "liars_dice(numdice=2)"  # about 10^9 histories: always played through its rules


def _run(capsys, *argv):
  """``(exit status, stdout, stderr)`` of ``jaxgt ARGV``."""
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def _refused(capsys, *argv, says):
  rc, out, err = _run(capsys, *argv)
  assert rc == 2 and out == "", (rc, out)
  lines = err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("jaxgt: error: ") and says in lines[0], err
  return lines[0]


def _uniform_kuhn_policy(path):
  """Saves Kuhn poker's uniform policy to ``path``."""
  kuhn = jaxgt.load("kuhn_poker")
  legal = [np.asarray(p.legal, np.float64) for p in kuhn.tree.players]
  jaxgt.Policy.from_arrays(kuhn, [m / m.sum(-1, keepdims=True) for m in legal]).save(path)


def _replay_in_openspiel(game_string, episodes):
  """Every logged history is legal in OpenSpiel's game, ends at a terminal and has its returns."""
  pyspiel = pytest.importorskip("pyspiel")
  game = pyspiel.load_game(game_string)
  for ep in episodes:
    state = game.new_initial_state()
    for a in ep.history:
      legal = ([o for o, _ in state.chance_outcomes()] if state.is_chance_node()
               else state.legal_actions())
      assert a in legal, (ep.history, a)
      state.apply_action(a)
    assert state.is_terminal(), ep.history
    np.testing.assert_allclose(state.returns(), ep.returns, atol=1e-9)


@pytest.fixture(scope="module")
def ld2_match(tmp_path_factory):
  """A 6-match ``jaxgt match --log --plot --json`` of random agents on LD(2, 6)."""
  d = tmp_path_factory.mktemp("device_log")
  log, png = d / "ld2.jsonl", d / "ld2.png"
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(["match", LD2, "random", "random", "--matches", "6", "--seed", "3", "--log",
               str(log), "--plot", str(png), "--json"])
  assert rc == 0, err.getvalue()
  return log, png, json.loads(out.getvalue())


def test_match_log_of_a_device_game_replays_in_openspiel(ld2_match):
  log, png, summary = ld2_match
  episodes = read_episodes(log)
  assert summary["game"] == LD2 and summary["episodes"] == 6 == len(episodes)
  assert {e.game for e in episodes} == {LD2}
  assert [e.seats for e in episodes] == [(0, 1), (1, 0)] * 3
  assert all(e.agents == ("random", "random") for e in episodes)
  _replay_in_openspiel(make_from_string(LD2).openspiel_game_string(), episodes)
  # the logged returns are the ones the match's mean payoff was computed from
  agent0 = [e.returns[e.seats[0]] for e in episodes]
  assert np.mean(agent0) == pytest.approx(summary["mean"], abs=1e-12)
  assert sum(r > 0 for r in agent0) == summary["wins"]
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_a_device_game_log_is_the_mean_of_its_returns(ld2_match, capsys):
  log, _, summary = ld2_match
  rc, out, _ = _run(capsys, "evaluate", str(log), "--agent", "0", "--json")
  assert rc == 0
  doc = json.loads(out)
  assert doc["game"] == LD2 and doc["estimator"] == "mean" and doc["episodes"] == 6
  assert doc["estimate"] == pytest.approx(summary["mean"], abs=1e-12)
  payoffs = [e.returns[e.seats[0]] for e in read_episodes(log)]
  se = np.std(payoffs, ddof=1) / np.sqrt(6)
  assert doc["stderr"] == pytest.approx(se, rel=1e-12)
  assert doc["ci95"] == pytest.approx([summary["mean"] - 1.959964 * se,
                                       summary["mean"] + 1.959964 * se], rel=1e-6)
  rc, out, _ = _run(capsys, "evaluate", str(log), "--agent", "1", "--json")
  assert rc == 0 and json.loads(out)["estimate"] == pytest.approx(-summary["mean"], abs=1e-12)
  rc, out, _ = _run(capsys, "evaluate", str(log), "--agent", "0")
  assert rc == 0 and "mean of the logged returns" in out


def test_estimators_on_a_device_game_log_are_refused(ld2_match, tmp_path, monkeypatch, capsys):
  """Before the policy file is read."""
  log, _, _ = ld2_match
  _uniform_kuhn_policy(tmp_path / "u.npz")
  from jaxgt import policy
  monkeypatch.setattr(policy, "load_policy", lambda *a, **k: pytest.fail("policy read"))
  _refused(capsys, "evaluate", str(log), "--agent", "0", "--policy", str(tmp_path / "u.npz"),
           says="need its enumerated tree; omit --policy")
  _refused(capsys, "evaluate", str(log), "--agent", "0", "--estimator", "aivat",
           says="--estimator needs --policy")


@pytest.mark.parametrize("edit, says", [
    (lambda e: (e.history, (-e.returns[0], -e.returns[1])), "are not the returns"),
    (lambda e: (e.history[:-1], e.returns), "ends before the game does"),
    (lambda e: ((7,) + e.history[1:], e.returns), "step 0: 7 is not a legal"),
])
def test_bad_device_game_log_lines_are_named(ld2_match, tmp_path, capsys, edit, says):
  episodes = read_episodes(ld2_match[0])
  bad = [edit(e) if b == 2 else (e.history, e.returns) for b, e in enumerate(episodes)]
  write_episodes(tmp_path / "bad.jsonl", LD2, [h for h, _ in bad], [r for _, r in bad],
                 [e.seats for e in episodes])
  line = _refused(capsys, "evaluate", str(tmp_path / "bad.jsonl"), "--agent", "0", says=says)
  assert "line 3:" in line


def test_rules_replay_and_tree_agree_on_a_log(tmp_path, capsys):
  """LD(1, 6) forced through its rules (--max-histories 100) logs the episodes that the
  enumerated game evaluates: the mean read through the rules and through the tree agree."""
  log = tmp_path / "ld1.jsonl"
  rc, out, _ = _run(capsys, "match", "liars_dice", "random", "random", "--matches", "8",
                    "--max-histories", "100", "--log", str(log), "--json")
  assert rc == 0
  mean = json.loads(out)["mean"]
  rc, out, _ = _run(capsys, "evaluate", str(log), "--agent", "0", "--json",
                    "--max-histories", "100")
  assert rc == 0
  through_rules = json.loads(out)
  rc, out, _ = _run(capsys, "evaluate", str(log), "--agent", "0", "--json")
  assert rc == 0
  through_tree = json.loads(out)
  assert through_rules["estimate"] == pytest.approx(mean, abs=1e-12)
  assert through_tree["estimate"] == through_rules["estimate"]
  assert through_tree["ci95"] == through_rules["ci95"]


def test_commands_that_need_the_tree_refuse_a_device_game(tmp_path, capsys):
  _refused(capsys, "construct", LD2, "random", says="not enumerable")
  _refused(capsys, "match", LD2, "resolving", "random", "--matches", "2",
           says="needs a compiled game")
  # a policy file names an enumerated game; one naming a device game cannot be read
  path = tmp_path / "k.npz"
  _uniform_kuhn_policy(path)
  with np.load(path) as z:
    arrays = dict(z)
  header = json.loads(bytes(arrays["header"]).decode())
  header["game"] = LD2
  arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
  bad = tmp_path / "ld2.npz"
  np.savez(bad, **arrays)
  for argv in (["show", str(bad)], ["exploitability", str(bad)],
               ["export", str(bad), "--openspiel", str(tmp_path / "o.json")]):
    _refused(capsys, *argv, says="not enumerable")


def test_info_and_check_read_a_device_game_through_its_rules(capsys):
  rc, out, _ = _run(capsys, "info", LD2, "--json")
  doc = json.loads(out)
  assert rc == 0 and doc["rules"] == "device" and not doc["enumerable"]
  assert doc["openspiel"] == make_from_string(LD2).openspiel_game_string()
  pytest.importorskip("pyspiel")
  rc, out, _ = _run(capsys, "check", LD2, "--trajectories", "2", "--openspiel", "auto",
                    "--json")
  doc = json.loads(out)
  assert rc == 0 and doc["failures"] == [] and doc["openspiel_mismatches"] == 0
