"""Progress on the command line: the rate and time left of ``solve`` and ``train``, the
compiling lines and the persistent compilation cache."""

import json
import re

from jaxgt.cli import main
from jaxgt.cli.common import format_duration, rate_and_eta


def test_rate_and_eta_arithmetic():
  assert rate_and_eta(30, 10.0, "it", remaining=70) == "  3 it/s  ETA 23s"
  assert rate_and_eta(30, 10.0, "steps") == "  3 steps/s"
  # a time budget ends sooner than the remaining steps would
  assert rate_and_eta(1, 4.0, "steps", remaining=100, remaining_seconds=65) == \
      "  0.25 steps/s  ETA 1m05s"
  assert rate_and_eta(0, 4.0, "it", remaining=5) == ""
  assert [format_duration(s) for s in (0.4, 59.6, 61, 3725)] == ["0s", "1m00s", "1m01s",
                                                                 "1h02m"]


def test_solve_progress_lines_carry_the_rate_and_the_time_left(capsys):
  assert main(["solve", "kuhn_poker", "--iterations", "40", "--eval-every", "20"]) == 0
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("iter")]
  assert len(lines) == 2
  for line in lines:
    assert re.search(r"  [\d,.e+]+ it/s  ETA \d+s$", line), line
  assert lines[-1].endswith("ETA 0s")  # nothing left after the last iteration
  assert main(["solve", "kuhn_poker", "--iterations", "40", "--eval-every", "20", "--target",
               "1e-9"]) == 0
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("iter")]
  assert lines and all(re.search(r" it/s$", ln) for ln in lines)  # a target: no known end


def test_train_progress_lines_carry_steps_per_second_and_eta(tmp_path, monkeypatch, capsys):
  """A clock that advances 2 s per reading: steps 1..4 reported at 2, 4, 6, 8 s, so from the
  first line 1 step per 2 s, and with --steps 9 the time left is (9 - step) x 2 s."""
  from jaxgt.cli import train as train_cli
  from jaxgt.training import loop

  class Clock:
    t = 0.0

    @classmethod
    def perf_counter(cls):
      cls.t += 2.0
      return cls.t

  class State:
    learner_steps = 4

  def fake_train(game, cfg, out, *, on_metrics, **kw):
    out.mkdir(parents=True, exist_ok=True)
    for step in range(1, 5):
      on_metrics({"step": step, "loss": 1.0, "value_loss": 0.5, "policy_loss": 0.5,
                  "replay_size": 1, "query_size": 0, "searches_per_s": 1.0,
                  "queries_per_s": 0.0})
    (out / loop.METRICS_FILE).write_text(json.dumps({"step": 4}) + "\n")
    return State()

  monkeypatch.setattr(loop, "train", fake_train)
  monkeypatch.setattr(train_cli, "time", Clock)
  assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "9", "--out",
               str(tmp_path / "run")]) == 0
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step")]
  assert len(lines) == 4
  assert not re.search(r"steps/s", lines[0])  # one line: no interval to measure yet
  for step, line in enumerate(lines[1:], start=2):
    assert line.endswith(f"  0.5 steps/s  ETA {format_duration(2 * (9 - step))}"), line


def test_train_progress_lines_show_the_drawable_examples_when_fewer_than_held(tmp_path,
                                                                               monkeypatch,
                                                                               capsys):
  from jaxgt.training import loop

  class State:
    learner_steps = 2

  def fake_train(game, cfg, out, *, on_metrics, **kw):
    out.mkdir(parents=True, exist_ok=True)
    for step, drawable in ((1, 40), (2, 25)):
      on_metrics({"step": step, "loss": 1.0, "value_loss": 0.5, "policy_loss": 0.5,
                  "replay_size": 40, "replay_drawable": drawable, "query_size": 0,
                  "searches_per_s": 1.0, "queries_per_s": 0.0})
    (out / loop.METRICS_FILE).write_text(json.dumps({"step": 2}) + "\n")
    return State()

  monkeypatch.setattr(loop, "train", fake_train)
  assert main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "2", "--out",
               str(tmp_path / "run")]) == 0
  lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step")]
  assert "replay 40  queries" in lines[0]
  assert "replay 40 (25 drawable)  queries" in lines[1]


# ------------------------------------------------------------------ compiling lines and the cache
def test_compiling_lines_stay_off_json_stdout(capsys):
  assert main(["solve", "kuhn_poker", "--iterations", "20", "--json"]) == 0
  cap = capsys.readouterr()
  json.loads(cap.out)
  assert "compiling" not in cap.out
  assert re.search(r"^compiling dcfr and the exact evaluation for kuhn_poker \.\.\.$", cap.err,
                   re.M)
  assert re.search(r"^compiled dcfr .* in \d+\.\ds \(\d+ XLA programs?", cap.err, re.M)


def _jaxgt(*argv, env):
  import os
  import subprocess
  import sys
  full = {k: v for k, v in os.environ.items()
          if k not in ("JAXGT_COMPILATION_CACHE", "JAX_COMPILATION_CACHE_DIR")}
  full.update(env)
  proc = subprocess.run([sys.executable, "-m", "jaxgt", *argv], capture_output=True, text=True,
                        env=full, timeout=300)
  assert proc.returncode == 0, proc.stderr
  return proc.stdout + proc.stderr


def test_compilation_cache_on_by_default_with_its_opt_outs(tmp_path):
  """Fresh processes with their own $XDG_CACHE_HOME: the first solve writes the programs under
  jaxgt/xla, the second loads them from there; JAXGT_COMPILATION_CACHE=0 and
  --no-compilation-cache write nothing; JAXGT_COMPILATION_CACHE=DIR names the folder."""
  solve = ["solve", "kuhn_poker", "--iterations", "20", "--eval-every", "0"]
  xdg = tmp_path / "xdg"
  def loaded(out):  # programs loaded from the cache (one program may repeat within a run)
    m = re.search(r"\((\d+) XLA programs?(?:, (\d+) from the compilation cache)?\)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2) or 0)

  programs, first = loaded(_jaxgt(*solve, env={"XDG_CACHE_HOME": str(xdg)}))
  assert list((xdg / "jaxgt" / "xla").iterdir())
  assert loaded(_jaxgt(*solve, env={"XDG_CACHE_HOME": str(xdg)})) == (programs, programs)
  assert first < programs
  for env, flags in (({"JAXGT_COMPILATION_CACHE": "0"}, []), ({}, ["--no-compilation-cache"])):
    other = tmp_path / f"xdg{len(flags)}"
    out = _jaxgt(*solve, *flags, env={**env, "XDG_CACHE_HOME": str(other)})
    assert not other.exists() and loaded(out)[1] == 0


def test_cache_folder_resolution(tmp_path, monkeypatch):
  """$JAXGT_COMPILATION_CACHE names the folder, else one configured for JAX (kept with its
  settings), else $XDG_CACHE_HOME/jaxgt/xla; "off" turns the cache off (jax.config calls
  recorded, not made)."""
  import jax
  from jaxgt.cli import compiling
  calls = {}
  monkeypatch.setattr(jax.config, "update", lambda k, v: calls.__setitem__(k, v))
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  monkeypatch.setenv("JAXGT_COMPILATION_CACHE", str(tmp_path / "named"))
  assert compiling.setup_cache() == str(tmp_path / "named") and (tmp_path / "named").is_dir()
  assert calls["jax_compilation_cache_dir"] == str(tmp_path / "named")
  assert calls["jax_persistent_cache_min_compile_time_secs"] == compiling.MIN_COMPILE_SECONDS
  monkeypatch.delenv("JAXGT_COMPILATION_CACHE")
  monkeypatch.setattr(compiling, "configured_dir", lambda: str(tmp_path / "users"))
  calls.clear()
  assert compiling.setup_cache() == str(tmp_path / "users") and calls == {}
  monkeypatch.setattr(compiling, "configured_dir", lambda: None)
  assert compiling.setup_cache() == str(tmp_path / "xdg" / "jaxgt" / "xla")
  monkeypatch.setenv("JAXGT_COMPILATION_CACHE", "off")
  calls.clear()
  assert compiling.setup_cache() is None
  assert calls == {"jax_enable_compilation_cache": False}


def test_no_compilation_cache_flag_before_or_after_the_command():
  from jaxgt.cli import _parser
  parser = _parser()
  for argv, off in ((["--no-compilation-cache", "solve", "kuhn_poker"], True),
                    (["solve", "kuhn_poker", "--no-compilation-cache"], True),
                    (["solve", "kuhn_poker"], False)):
    assert parser.parse_args(argv).no_compilation_cache is off


def test_match_says_it_compiles_on_stderr(capsys):
  assert main(["match", "kuhn_poker", "random", "random", "--matches", "4", "--json"]) == 0
  cap = capsys.readouterr()
  json.loads(cap.out)
  lines = cap.err.splitlines()
  i = lines.index("compiling the match program (with the first 1 match) ...")
  assert re.match(r"compiled the match program .* in \d+\.\ds \(\d+ XLA programs?",
                  lines[i + 1])
  assert lines[i + 2] == "  1/4 matches"
