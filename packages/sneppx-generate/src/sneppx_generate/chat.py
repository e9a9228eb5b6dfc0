"""Special tokens and chat templates of Hugging Face tokenizer folders (``tokenizer_config.json``).

Chat templates are Jinja2 programs; Jinja2 is an optional dependency (``pip install jinja2``).
"""

from __future__ import annotations

import datetime
import json
import os

ROLES = ("pad", "bos", "eos", "unk")


def _content(token):
    """A special token given as a string or as an AddedToken dict ({"content": ...})."""
    if isinstance(token, dict):
        return token.get("content")
    return token if isinstance(token, str) else None


def read_tokenizer_config(folder: str) -> dict:
    """``tokenizer_config.json`` of ``folder`` ({} when absent), with the chat template from
    ``chat_template.jinja`` or ``chat_template.json`` when the config has none."""
    path = os.path.join(folder, "tokenizer_config.json")
    cfg = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    if not cfg.get("chat_template"):
        jinja, js = os.path.join(folder, "chat_template.jinja"), os.path.join(folder, "chat_template.json")
        if os.path.isfile(jinja):
            with open(jinja, encoding="utf-8") as fh:
                cfg["chat_template"] = fh.read()
        elif os.path.isfile(js):
            with open(js, encoding="utf-8") as fh:
                cfg["chat_template"] = json.load(fh).get("chat_template")
    return cfg


def special_tokens(cfg: dict) -> dict:
    """Map role ('pad', 'bos', 'eos', 'unk') to the token string named by the config (roles it names only)."""
    out = {}
    for role in ROLES:
        tok = _content(cfg.get(f"{role}_token"))
        if tok:
            out[role] = tok
    return out


def pick_template(template, name=None):
    """The template string: ``template`` itself, or from a list of {"name", "template"} the one called
    ``name`` (default "default")."""
    if isinstance(template, list):
        named = {t["name"]: t["template"] for t in template}
        key = name or "default"
        if key not in named:
            raise ValueError(f"apply_chat_template: no chat template named {key!r}; have {sorted(named)}")
        return named[key]
    return template


def render(template: str, messages, add_generation_prompt: bool, variables: dict) -> str:
    """Render a chat template with Jinja2 in a sandbox, as Hugging Face tokenizers do:
    ``messages``, ``add_generation_prompt``, the special-token strings, ``raise_exception`` and
    ``strftime_now`` are visible to the template."""
    try:
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise ImportError("apply_chat_template needs Jinja2: pip install jinja2") from None

    def raise_exception(message):
        raise TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    return env.from_string(template).render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                                            **variables)
