"""Leduc with a chance sampler that draws as the CDF over ``chance_probs`` does (the walks'
and the referee's draw), so runs through the sampler must equal runs without it."""

from jaxgt.core.sampling import sample_index
from jaxgt.games.leduc import LeducPoker


class CdfLeduc(LeducPoker):
  """Leduc whose ``sample_chance`` is the inverse CDF of its ``chance_probs``."""

  def sample_chance(self, s, u):
    return sample_index(self.chance_probs(s), u)
