"""Compilation on the command line: JAX's persistent compilation cache, on by default, and the
"compiling ..." lines that say what is compiled and how long it took.

The cache keeps each compiled XLA program on disk keyed by the program, the compiler options
and the JAX version, so a second run of the same command loads its programs instead of
compiling them. The folder is, in order: ``$JAXGT_COMPILATION_CACHE`` (a path; ``0``, ``off``
or ``false`` turn the cache off), a folder already configured for JAX
(``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), ``$XDG_CACHE_HOME/jaxgt/xla``,
``~/.cache/jaxgt/xla``. ``--no-compilation-cache`` turns it off for one command. Deleting
the folder is always safe.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import sys
import time

CACHE_ENV = "JAXGT_COMPILATION_CACHE"
"""The environment variable: a cache folder, or ``0``/``off``/``false`` for no cache."""
OFF = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.0
"""Programs that compile faster than this are not written. Every program is: a command
compiles tens of small ones besides its main programs (game enumeration, evaluation, the
solver's state), together seconds on a busy 2-core machine, and loading one costs less than
compiling it."""
MAX_CACHE_BYTES = 2 ** 30
"""The cache folder's size limit where the ``filelock`` package is installed (JAX needs it to
enforce one): past it the least recently used programs are deleted."""


def default_cache_dir() -> pathlib.Path:
  """``$XDG_CACHE_HOME/jaxgt/xla``, else ``~/.cache/jaxgt/xla``."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return pathlib.Path(base) / "jaxgt" / "xla"


def setup_cache(disabled: bool = False) -> str | None:
  """Turns JAX's persistent compilation cache on for this process (module doc) unless
  ``disabled`` or ``$JAXGT_COMPILATION_CACHE`` says off; returns the folder in use, or
  ``None``. A cache already configured for JAX is used with its own settings; otherwise every
  program is kept (:data:`MIN_COMPILE_SECONDS`). A folder that cannot be made leaves the
  cache off (the command still runs)."""
  import jax
  setting = os.environ.get(CACHE_ENV, "").strip()
  if disabled or setting.lower() in OFF:
    jax.config.update("jax_enable_compilation_cache", False)
    return None
  if not setting and configured_dir():  # the user's own JAX configuration, kept as it is
    return configured_dir()
  folder = setting or str(default_cache_dir())
  try:
    pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
  except OSError:
    return None
  jax.config.update("jax_enable_compilation_cache", True)
  jax.config.update("jax_compilation_cache_dir", str(folder))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
  if importlib.util.find_spec("filelock") is not None:  # JAX's size limit needs it
    jax.config.update("jax_compilation_cache_max_size", MAX_CACHE_BYTES)
  return str(folder)


def configured_dir() -> str | None:
  """The compilation cache folder already configured for JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config``), or ``None``."""
  import jax
  return jax.config.jax_compilation_cache_dir


class _Counts:
  """Process-wide counts of JAX's compilation events (listeners registered once)."""

  programs = 0  # XLA compilations or cache loads
  seconds = 0.0  # their time, loads included
  hits = 0  # programs loaded from the persistent cache
  registered = False

  @classmethod
  def register(cls) -> None:
    if cls.registered:
      return
    from jax import monitoring

    def duration(event, seconds, **kwargs):
      if event == "/jax/core/compile/backend_compile_duration":
        cls.programs += 1
        cls.seconds += seconds

    def count(event, **kwargs):
      if event == "/jax/compilation_cache/cache_hits":
        cls.hits += 1

    monitoring.register_event_duration_secs_listener(duration)
    monitoring.register_event_listener(count)
    cls.registered = True

  @classmethod
  def snapshot(cls) -> tuple:
    return cls.programs, cls.seconds, cls.hits


class Compiling:
  """Says ``compiling WHAT ...`` on ``out`` and, at :meth:`done`, ``compiled WHAT in S s``
  with the XLA programs compiled since (and how many came from the persistent cache)."""

  def __init__(self, what: str, out=None):
    _Counts.register()
    self.what, self.out = what, out or sys.stderr
    self.start = time.perf_counter()
    self.before = _Counts.snapshot()
    self.finished = False
    print(f"compiling {what} ...", file=self.out, flush=True)

  def done(self, seconds: float | None = None, note: str = "") -> None:
    """The closing line (once): ``seconds`` (default: the time since the opening line)."""
    if self.finished:
      return
    self.finished = True
    seconds = time.perf_counter() - self.start if seconds is None else seconds
    n, s, h = (a - b for a, b in zip(_Counts.snapshot(), self.before))
    detail = f"{n} XLA program{'s' if n != 1 else ''}"
    if h:
      detail += f", {h} from the compilation cache"
    print(f"compiled {self.what} in {seconds:.1f}s ({detail}{note})", file=self.out, flush=True)


@contextlib.contextmanager
def compiling(what: str, out=None):
  """:class:`Compiling` around a block whose work is compiling."""
  c = Compiling(what, out)
  yield c
  c.done()
