import os
import shutil
import tempfile
import uuid

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import pytest  # noqa: E402

# Tests compare against OpenSpiel to 1e-6 relative: run in 64-bit.
jax.config.update("jax_enable_x64", True)


def _run_id(config):
  """The run's id, shared by the controller and its xdist workers (xdist's ``testrunuid``)."""
  if hasattr(config, "workerinput"):
    return config.workerinput["testrunuid"]
  if getattr(config.option, "testrunuid", None) is None:
    config.option.testrunuid = uuid.uuid4().hex  # xdist's workers get this one
  return config.option.testrunuid


def pytest_configure(config):
  """Many tests compile the same programs (a solver built anew per test traces to the same XLA
  program): a persistent compilation cache, fresh for each run (never a warm one from an
  earlier run) and shared by its workers, compiles each once per run."""
  path = os.path.join(tempfile.gettempdir(), f"jaxgt-tests-xla-{_run_id(config)}")
  jax.config.update("jax_compilation_cache_dir", path)
  os.environ["JAX_COMPILATION_CACHE_DIR"] = path  # the command line in subprocesses: not ~/.cache
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.3)


def pytest_unconfigure(config):
  if not hasattr(config, "workerinput"):  # the controller (or a run without xdist): clean up
    shutil.rmtree(os.path.join(tempfile.gettempdir(), f"jaxgt-tests-xla-{_run_id(config)}"),
                  ignore_errors=True)


def pytest_runtest_teardown(item, nextitem):
  """Drops the in-memory executables when a worker moves to another test file: a worker runs
  many files in turn and their compiled programs would otherwise pile up (several GB by the
  end of a run); programs a later file needs again load from the run's persistent cache."""
  if nextitem is None or nextitem.fspath != item.fspath:
    jax.clear_caches()


@pytest.fixture
def no_work(monkeypatch):
  """Any game load, policy read or training run fails the test: a command refusing its arguments
  must stop before any work."""
  def refuse(*args, **kwargs):
    raise AssertionError("work started before the arguments were checked")
  from jaxgt import policy
  from jaxgt.core import compiler
  from jaxgt.training import loop
  monkeypatch.setattr(compiler, "load", refuse)
  monkeypatch.setattr(policy, "load_policy", refuse)
  monkeypatch.setattr(loop, "train", refuse)
  monkeypatch.setattr(loop, "Trainer", refuse)
