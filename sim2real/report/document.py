"""A small report document model and its two renderings: self-contained HTML and Markdown.

A document is a sequence of blocks (headings, paragraphs, notes, tables, figures). The HTML
embeds every figure as a base64 PNG and references nothing outside the file; the Markdown
links PNG files written next to it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    """Section heading; ``level`` 1..3."""

    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    """Plain text paragraph."""

    text: str


@dataclass(frozen=True)
class Note:
    """A paragraph stating what is missing or unusual (highlighted in HTML)."""

    text: str


@dataclass(frozen=True)
class Alert:
    """A paragraph the reader must not miss (a fit that did not converge, degraded solves); red in HTML."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of preformatted cells; ``css_class`` tags it in the HTML (e.g. ``experiment``)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    css_class: str = ""


@dataclass(frozen=True)
class Figure:
    """A PNG figure; ``file_name`` is its name next to report.md."""

    file_name: str
    png: bytes
    caption: str


Block = Heading | Paragraph | Note | Alert | Table | Figure

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #888; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #eee; }
td:first-child, th:first-child { text-align: left; }
caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: 0.3em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; }
.note { background: #fff6d6; border-left: 4px solid #e0b000; padding: 0.4em 0.8em; }
.alert { background: #fde4e4; border-left: 4px solid #c00; color: #900; font-weight: 600; padding: 0.4em 0.8em; }
#image-check { display: none; background: #fdd; border-left: 4px solid #c00; padding: 0.4em 0.8em; }
"""

# Marks the page with the number of images that decoded, and shows a warning if any failed.
_IMAGE_CHECK_JS = """
window.addEventListener('load', function () {
  var images = Array.prototype.slice.call(document.images);
  var ok = images.filter(function (img) { return img.complete && img.naturalWidth > 0; }).length;
  document.documentElement.setAttribute('data-images-loaded', ok + '/' + images.length);
  if (ok !== images.length) {
    var box = document.getElementById('image-check');
    box.textContent = (images.length - ok) + ' figure(s) failed to load.';
    box.style.display = 'block';
    console.error('sim2real report: ' + (images.length - ok) + ' figure(s) failed to load');
  }
});
"""


def render_html(title: str, blocks: Sequence[Block]) -> str:
    """The whole report as one self-contained HTML page (figures inline as base64 PNG)."""
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title>", f"<style>{_CSS}</style>", f"<script>{_IMAGE_CHECK_JS}</script>",
             "</head>", "<body>", f"<h1>{esc(title)}</h1>", '<p id="image-check"></p>']
    for block in blocks:
        if isinstance(block, Heading):
            level = min(max(block.level, 2), 4)
            parts.append(f"<h{level}>{esc(block.text)}</h{level}>")
        elif isinstance(block, Note):
            parts.append(f'<p class="note">{esc(block.text)}</p>')
        elif isinstance(block, Alert):
            parts.append(f'<p class="alert">{esc(block.text)}</p>')
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{esc(block.text)}</p>")
        elif isinstance(block, Table):
            cls = f' class="{esc(block.css_class)}"' if block.css_class else ""
            parts.append(f"<table{cls}>")
            if block.caption:
                parts.append(f"<caption>{esc(block.caption)}</caption>")
            parts.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in block.header) + "</tr></thead>")
            parts.append("<tbody>")
            for row in block.rows:
                parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
            parts.append("</tbody></table>")
        elif isinstance(block, Figure):
            data = base64.b64encode(block.png).decode("ascii")
            parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{esc(block.caption)}">'
                         f"<figcaption>{esc(block.caption)}</figcaption></figure>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(title: str, blocks: Sequence[Block]) -> str:
    """The report as Markdown; figures are linked by their ``file_name`` (written next to it)."""
    lines = [f"# {title}", ""]
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * min(max(block.level, 2), 4) + " " + block.text, ""]
        elif isinstance(block, Note):
            lines += [f"> **Note:** {block.text}", ""]
        elif isinstance(block, Alert):
            lines += [f"> **Warning:** {block.text}", ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Table):
            if block.caption:
                lines += [f"**{block.caption}**", ""]
            lines.append("| " + " | ".join(_md_cell(h) for h in block.header) + " |")
            lines.append("|" + "|".join("---" for _ in block.header) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Figure):
            lines += [f"![{_md_cell(block.caption)}]({block.file_name})", "", f"*{block.caption}*", ""]
    return "\n".join(lines)


def render_text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A fixed-width plain-text table (for the terminal)."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    lines = ["  ".join(str(h).rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)
