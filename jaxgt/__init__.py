"""jaxgt: two-player zero-sum imperfect-information games solved with JAX."""

from jaxgt import games
from jaxgt.compiler import CompiledGame, GameTree, PlayerTree, compile_game
from jaxgt.games import load, make

__version__ = "0.1.0"
