"""A griffe extension for the API reference: Sphinx cross-reference roles become links.

jaxgt's docstrings cite code with Sphinx roles (``:func:`make_config```,
``:class:`~jaxgt.agents.base.Agent```), which mkdocstrings would print as plain text. This
extension rewrites each role, once the package is loaded, into an optional mkdocs-autorefs
reference around a code span: a link where the target is documented in the API reference,
plain code where it is not (a private module, a name outside jaxgt), so a build with warnings
as errors never fails on a role. Names resolve as Python does from the docstring's object
(its members, its module's names and imports, then its parents); ``~`` shows the last
component and ``title <target>`` a title, as in Sphinx. A paragraph that ends in ``::`` (the
literal block that follows is indented, so Markdown already shows it as code) ends in ``:``.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|meth|attr|obj|exc|const):`([^`]+)`")
TITLED = re.compile(r"(.*?)\s*<([^<>]+)>\s*$", re.S)
LITERAL = re.compile(r"(?<=\S)::(?=\n\s*\n)")


def resolve(obj: griffe.Object, target: str) -> str | None:
  """The full path of ``target`` as seen from ``obj``, or ``None`` when it is not found."""
  head, _, rest = target.partition(".")
  try:
    path = obj.resolve(head)
  except griffe.NameResolutionError:
    return target if head == obj.package.name else None
  return f"{path}.{rest}" if rest else path


def rewrite(obj: griffe.Object, text: str) -> str:
  """``text`` with every Sphinx role replaced by an optional autoref around a code span."""

  def one(match: re.Match) -> str:
    body = match[1]
    titled = TITLED.match(body)
    title, target = (titled[1], titled[2]) if titled else (None, body)
    target = re.sub(r"\s+", "", target)
    short = target.startswith("~")
    target = target.lstrip("~.")
    if title is None:
      title = target.rsplit(".", 1)[-1] if short else target
    path = resolve(obj, target)
    code = f"`{title}`"
    if path is None:
      return code
    return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

  return LITERAL.sub(":", ROLE.sub(one, text))


class SphinxRoles(griffe.Extension):
  """Rewrites the Sphinx roles of every docstring in a loaded package."""

  def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
    seen = set()
    stack = [pkg]
    while stack:
      obj = stack.pop()
      if obj.path in seen:
        continue
      seen.add(obj.path)
      if obj.docstring is not None:
        obj.docstring.value = rewrite(obj, obj.docstring.value)
      stack.extend(member for member in obj.members.values() if not member.is_alias)
