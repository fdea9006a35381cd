"""summary.md: the summary's blocks (see ``summary``) rendered as Markdown."""

from __future__ import annotations


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(sections: list, title: str = "catbench summary") -> str:
    lines = [f"# {title}", ""]
    for block in sections:
        kind = block[0]
        if kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "h3":
            lines += [f"### {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in block[1]] + [""]
        elif kind == "table":
            _, caption, header, rows = block
            lines += [caption, "", "| " + " | ".join(map(_md_cell, header)) + " |",
                      "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in rows] + [""]
    return "\n".join(lines)
