"""The jinja2 environment of `ren.viz`: templates are files in ``ren/viz/templates/`` (shipped
as package data), autoescaped; trusted markup (SVG made here) goes in through ``|safe``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parent / "templates"


def _json(value: Any) -> str:
    """JSON safe inside a <script> element (no "</" can end it early)."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["tojson_script"] = _json
    return env


def render(name: str, **context: Any) -> str:
    """Render the template file `name` with `context`."""
    return environment().get_template(name).render(**context)


def read(name: str) -> str:
    """The raw text of a template file (CSS and scripts inlined into the report)."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


__all__ = ["TEMPLATES", "environment", "read", "render"]


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring, whole even when it wraps over several lines (a first
    line alone cut "mark BUFFERIZE(x) where a value must sit in a" mid-sentence)."""
    text = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    for i, ch in enumerate(text):
        if ch == "." and (i + 1 == len(text) or text[i + 1] == " "):
            return text[: i + 1]
    return text
