"""Math as MathML, converted at build time by docutils: no JavaScript, no CDN, works offline.

Browsers render MathML natively. A formula docutils cannot convert is a build warning (so an
error under ``-W``), naming the page.
"""

from docutils import nodes
from docutils.utils.math.latex2mathml import tex2mathml
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _mathml(self, node, latex, block):
    try:
        return tex2mathml(latex, as_block=block)
    except Exception as e:  # docutils raises SyntaxError and friends for unsupported LaTeX
        logger.warning(f"cannot convert math {latex!r} to MathML: {e}", location=node)
        return f"<code>{self.encode(latex)}</code>"


def visit_inline(self, node):
    self.body.append(_mathml(self, node, node.astext(), block=False))
    raise nodes.SkipNode


def visit_block(self, node):
    latex = node.astext()
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number") and node.get("label"):
        self.body.append(f'<span class="eqno">({node["number"]})</span>')
    self.body.append(_mathml(self, node, latex, block=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_inline, None), (visit_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
