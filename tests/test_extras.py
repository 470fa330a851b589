"""Optional dependencies (jaxgt.extras): without an extra, ``import jaxgt`` and the commands that
do not need it work; a path that needs it stops before its work with one error naming
``pip install 'jaxgt[EXTRA]'``. A missing package is simulated by a ``None`` entry in
``sys.modules``, which makes its import fail."""

import os
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

from jaxgt import cli, extras

ORBAX = ("orbax", "orbax.checkpoint")
MATPLOTLIB = ("matplotlib", "matplotlib.pyplot")
PYSPIEL = ("pyspiel", "open_spiel", "open_spiel.python")


def _block(monkeypatch, names):
  for name in names:
    monkeypatch.setitem(sys.modules, name, None)


def _no_game(monkeypatch, *modules):
  """Loading a game is the commands' first work: here it fails the test."""
  def refuse(*args, **kwargs):
    raise AssertionError("the command loaded its game before checking its extras")
  for module, name in modules:
    monkeypatch.setattr(module, name, refuse)


def _error_line(capsys, rc, extra):
  err = capsys.readouterr().err
  assert rc == 2
  assert err.count("\n") == 1 and err.startswith("jaxgt: error: "), err
  assert f"pip install 'jaxgt[{extra}]'" in err, err
  return err


def test_require_returns_the_module_or_names_the_extra(monkeypatch):
  assert extras.require("plot", "plotting").__name__ == "matplotlib"
  _block(monkeypatch, ORBAX)
  with pytest.raises(ImportError, match=r"checkpoints needs orbax-checkpoint, which is not "
                     r"installed: pip install 'jaxgt\[train\]'"):
    extras.require("train", "checkpoints")
  with pytest.raises(ValueError, match="unknown extra 'gpu'"):
    extras.require("gpu", "x")


def test_train_without_orbax_refuses_before_the_run(monkeypatch, capsys, tmp_path):
  from jaxgt.cli import train
  _block(monkeypatch, ORBAX)
  _no_game(monkeypatch, (train, "load_playable"))
  out = tmp_path / "run"
  rc = cli.main(["train", "kuhn_poker", "--preset", "tiny", "--steps", "1", "--out", str(out)])
  assert "jaxgt train needs orbax-checkpoint" in _error_line(capsys, rc, "train")
  assert not out.exists()


@pytest.mark.parametrize("command", ["solve", "match", "train"])
def test_plot_without_matplotlib_refuses_before_the_work(monkeypatch, capsys, tmp_path, command):
  from jaxgt.cli import match, solve, train
  _block(monkeypatch, MATPLOTLIB)
  _no_game(monkeypatch, (solve, "load_game"), (match, "load_playable"), (train, "load_playable"))
  png = tmp_path / "p.png"
  argv = {"solve": ["solve", "kuhn_poker"],
          "match": ["match", "kuhn_poker", "random", "random", "--matches", "2"],
          "train": ["train", "kuhn_poker", "--preset", "tiny", "--steps", "1", "--out",
                    str(tmp_path / "run")]}[command]
  rc = cli.main(argv + ["--plot", str(png)])
  assert "--plot needs matplotlib" in _error_line(capsys, rc, "plot")
  assert not png.exists() and not (tmp_path / "run").exists()


def test_sog_agent_without_orbax_refuses_before_the_game(monkeypatch, capsys, tmp_path):
  from jaxgt.cli import match
  _block(monkeypatch, ORBAX)
  _no_game(monkeypatch, (match, "load_playable"))
  rc = cli.main(["match", "kuhn_poker", f"sog(checkpoint={tmp_path})", "random", "--matches",
                 "2"])
  _error_line(capsys, rc, "train")


def test_openspiel_game_without_open_spiel(monkeypatch, capsys):
  _block(monkeypatch, PYSPIEL)
  rc = cli.main(["info", "openspiel:kuhn_poker"])
  assert "OpenSpiel interop needs open_spiel" in _error_line(capsys, rc, "openspiel")


def test_library_paths_name_their_extra(monkeypatch, tmp_path):
  from jaxgt.solving import plot_curve
  from jaxgt.training import checkpoint
  _block(monkeypatch, ORBAX + MATPLOTLIB)
  with pytest.raises(ImportError, match=r"jaxgt\[train\]"):
    checkpoint.save(tmp_path / "ck", 0, {"x": jnp.zeros(2)}, {"game": "kuhn_poker"})
  assert not (tmp_path / "ck").exists()
  with pytest.raises(ImportError, match=r"jaxgt\[plot\]"):
    plot_curve([], str(tmp_path / "c.png"))
  assert not (tmp_path / "c.png").exists()


def test_import_and_plain_commands_without_any_extra(tmp_path):
  """Every module of jaxgt (but ``__main__``) imports, and solve/games/agents run, with orbax, matplotlib and
  OpenSpiel all missing (a fresh interpreter: the test process has imported them)."""
  blocked = ORBAX + MATPLOTLIB + PYSPIEL
  script = textwrap.dedent(f"""
      import importlib, pkgutil, sys
      for name in {blocked!r}:
        sys.modules[name] = None
      import jaxgt
      for m in pkgutil.walk_packages(jaxgt.__path__, "jaxgt."):
        if not m.name.endswith("__main__"):  # python -m jaxgt: runs the command line
          importlib.import_module(m.name)
      from jaxgt import cli
      for argv in (["games"], ["agents"], ["solve", "kuhn_poker", "--iterations", "20"],
                   ["match", "kuhn_poker", "random", "random", "--matches", "2"]):
        assert cli.main(argv) == 0, argv
      loaded = [n for n in {blocked!r} if sys.modules.get(n) is not None]
      assert not loaded, loaded
      print("plain commands ran")
  """)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [os.path.dirname(os.path.dirname(os.path.abspath(extras.__file__))),
       os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  assert "plain commands ran" in out.stdout
