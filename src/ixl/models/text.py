"""Text a tokenizer can take: valid Unicode, which UTF-8 encodes. Bytes that are not UTF-8
reach Python as lone surrogates (on a command line, through surrogateescape), and a lone
surrogate can come in as it is (from Python code, from JSON); the tokenizers would fail on
either deep inside, with a TypeError that names neither the text nor the character."""

from __future__ import annotations

from ..hixl import BadInput


def check_texts(texts: list[str], option: str = "--text") -> None:
    """Every text is valid Unicode, or BadInput names the text (`option`, numbered when there
    are several), the character and where it is."""
    for i, text in enumerate(texts, 1):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            which = f"{option} number {i}" if len(texts) > 1 else option
            char = text[e.start]
            if "\udc80" <= char <= "\udcff":        # a byte that did not decode
                raw = text[e.start:e.end].encode("utf-8", "surrogateescape")
                raise BadInput(f"{which} is not valid UTF-8: byte(s) {raw.hex(' ')} at "
                               f"character {e.start} (give the text in UTF-8)") from None
            raise BadInput(f"{which} holds a lone surrogate, U+{ord(char):04X}, at character "
                           f"{e.start}, which UTF-8 cannot encode (give the text as characters, "
                           f"not as UTF-16 code units)") from None
