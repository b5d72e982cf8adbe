"""MkDocs hook: Sphinx cross-reference roles in the package's docstrings, shown as plain code in the API pages.

The docstrings are NumPy style and use Sphinx roles (``:class:`World```, ``:func:`~sim2real.trials.read_trial```).
mkdocstrings renders them as the role name followed by code; this hook drops the role name and, as Sphinx does
for a leading ``~``, shows only the last component of the dotted name.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const):(<code>)")
TILDE = re.compile(r"<code>~(?:[\w]+\.)*([\w]+)</code>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """The page's HTML with the roles removed (API pages only)."""
    if not page.file.src_uri.startswith("api/"):
        return html
    return TILDE.sub(r"<code>\1</code>", ROLE.sub(r"\1", html))
