"""The tokenizer and chat template a GGUF file carries in its metadata, as a `tokenizers`
Tokenizer and a rendered template.

A GGUF file of a byte-level BPE model (`tokenizer.ggml.model` = "gpt2") holds the vocabulary,
the merges, the token types (control tokens are the special ones) and the name of llama.cpp's
pre-tokenizer (`tokenizer.ggml.pre`), which says how text is split before BPE. Building the
Tokenizer from these at load time keeps a 2 MB tokenizer.json out of the repository.

The chat template is the Jinja text of `tokenizer.chat_template`, rendered as transformers
renders it (a sandboxed environment, trim_blocks and lstrip_blocks).
"""

from __future__ import annotations

from gguf import TokenType
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from .gguf_file import GGUFFile


def _smollm():
    """llama.cpp's "smollm" split: every digit alone, then GPT-2's byte-level regex."""
    return pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])


PRE_TOKENIZERS = {"smollm": _smollm}


def tokenizer_from_gguf(gguf: GGUFFile) -> Tokenizer:
    """The byte-level BPE tokenizer described by `gguf`'s metadata."""
    kind, pre = gguf.field("tokenizer.ggml.model"), gguf.field("tokenizer.ggml.pre")
    if kind != "gpt2" or pre not in PRE_TOKENIZERS:
        raise ValueError(f"{gguf.path.name}: tokenizer {kind!r} with pre-tokenizer {pre!r} is "
                         f"not supported (supported: 'gpt2' with "
                         f"{', '.join(map(repr, PRE_TOKENIZERS))})")
    if gguf.field("tokenizer.ggml.add_bos_token", False):
        raise ValueError(f"{gguf.path.name}: a tokenizer that adds a BOS token is not supported")
    tokens = gguf.field("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in gguf.field("tokenizer.ggml.merges")]
    tokenizer = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    tokenizer.pre_tokenizer = PRE_TOKENIZERS[pre]()
    tokenizer.decoder = decoders.ByteLevel()
    special = {TokenType.CONTROL, TokenType.USER_DEFINED}
    tokenizer.add_special_tokens([
        AddedToken(t, special=True, normalized=False)
        for t, kind in zip(tokens, gguf.field("tokenizer.ggml.token_type"))
        if kind in special])
    return tokenizer


class ChatTemplate:
    """`tokenizer.chat_template` of a GGUF file, rendered for a list of chat messages."""

    def __init__(self, source: str, bos_token: str, eos_token: str) -> None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self.source = source
        self.template = env.from_string(source)
        self.bos_token, self.eos_token = bos_token, eos_token

    @classmethod
    def from_gguf(cls, gguf: GGUFFile) -> ChatTemplate:
        source = gguf.field("tokenizer.chat_template")
        if source is None:
            raise ValueError(f"{gguf.path.name} has no chat template")
        tokens = gguf.field("tokenizer.ggml.tokens")
        return cls(source, tokens[gguf.field("tokenizer.ggml.bos_token_id")],
                   tokens[gguf.field("tokenizer.ggml.eos_token_id")])

    def render(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The prompt text for `messages` ([{"role": "user", "content": "..."}, ...])."""
        return self.template.render(messages=messages, bos_token=self.bos_token,
                                    eos_token=self.eos_token,
                                    add_generation_prompt=add_generation_prompt)
