"""Minimal Jinja chat templates that enforce what real ones enforce (written for these tests).

* ``gemma``: Gemma 3's rules: one optional leading system message, folded into the first
  user turn; then strict user/assistant alternation, raising otherwise; the text parts of
  a message each trimmed and joined with nothing.
* ``mistral``: Mistral's: one optional leading system message (put before the last user
  message), strict alternation, any other role raises.
* ``drops_system``: llama.cpp's built-in ``gemma`` format: system messages vanish, nothing
  raises.
* ``chatml``: ChatML, which takes any sequence (the permissive case).

Each renders ``messages`` as a Chat Completions request carries them (content a string or
a list of ``{"type": "text", ...}`` parts) and raises :class:`TemplateError` where a real
server answers 500.
"""

from __future__ import annotations

from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."

# The text of a message: a string, or its text parts (each trimmed), joined with a newline;
# Gemma's joins them with nothing (``glued``).
_TEXT = """
{%- macro text(content, glued=false) -%}
  {%- if content is none -%}
  {%- elif content is string -%}{{ content | trim }}
  {%- else -%}
    {%- for part in content if part['type'] == 'text' -%}{{ part['text'] | trim }}
    {%- if not loop.last and not glued %}{{ '\n' }}{% endif -%}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro -%}
"""

SOURCES = {
    "gemma": _TEXT
    + """
{{- bos_token -}}
{%- if messages[0]['role'] == 'system' -%}
  {%- set first_user_prefix = text(messages[0]['content'], true) + '\n\n' -%}
  {%- set loop_messages = messages[1:] -%}
{%- else -%}
  {%- set first_user_prefix = '' -%}
  {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception(alternate) -}}
  {%- endif -%}
  {{- '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) -}}
  {{- '\n' + (first_user_prefix if loop.first else '') + text(message['content'], true) -}}
  {{- '<end_of_turn>\n' -}}
{%- endfor -%}
{{- '<start_of_turn>model\n' -}}
""",
    "mistral": _TEXT
    + """
{%- if messages[0]['role'] == 'system' -%}
  {%- set system_message = text(messages[0]['content']) -%}
  {%- set loop_messages = messages[1:] -%}
{%- else -%}
  {%- set loop_messages = messages -%}
{%- endif -%}
{{- bos_token -}}
{%- for message in loop_messages -%}
  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception(alternate) -}}
  {%- endif -%}
  {%- if message['role'] == 'user' -%}
    {%- if loop.last and system_message is defined -%}
      {{- '[INST] ' + system_message + '\n\n' + text(message['content']) + '[/INST]' -}}
    {%- else -%}
      {{- '[INST] ' + text(message['content']) + '[/INST]' -}}
    {%- endif -%}
  {%- elif message['role'] == 'assistant' -%}
    {{- ' ' + text(message['content']) + eos_token -}}
  {%- else -%}
    {{- raise_exception('Only user and assistant roles are supported, with the exception '
                        'of an initial optional system message!') -}}
  {%- endif -%}
{%- endfor -%}
""",
    "drops_system": _TEXT
    + """
{{- bos_token -}}
{%- for message in messages if message['role'] != 'system' -%}
  {{- '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) -}}
  {{- '\n' + text(message['content']) + '<end_of_turn>\n' -}}
{%- endfor -%}
{{- '<start_of_turn>model\n' -}}
""",
    "chatml": _TEXT
    + """
{%- for message in messages -%}
  {{- '<|im_start|>' + message['role'] + '\n' + text(message['content']) + '<|im_end|>\n' -}}
{%- endfor -%}
{{- '<|im_start|>assistant\n' -}}
""",
}
STRICT = ("gemma", "mistral", "drops_system")


def _raise(message: str) -> None:
    raise TemplateError(message)


_ENV = ImmutableSandboxedEnvironment()
_ENV.globals["raise_exception"] = _raise
_TEMPLATES = {name: _ENV.from_string(source) for name, source in SOURCES.items()}


def render(template: str, messages: list[dict[str, Any]]) -> str:
    """The prompt ``template`` makes of ``messages`` (raises TemplateError where it would)."""
    return _TEMPLATES[template].render(
        messages=messages,
        bos_token="<bos>",
        eos_token="</s>",
        alternate=ALTERNATE,
        add_generation_prompt=True,
    )
