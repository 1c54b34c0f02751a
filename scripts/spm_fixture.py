#!/usr/bin/env python3
"""Writes tests/fixtures/spm_botchan/: a real SentencePiece model file read as
DeBERTa-v3's `spm.model` is, and what transformers makes of it.

The model is sentencepiece's own test model `botchan_en_unigram_1000.model`
(a unigram model with the nmt_nfkc precompiled character map, from the
sentencepiece sdist on PyPI, Apache-2.0). The reference is what
`AutoTokenizer.from_pretrained` (transformers' DebertaV2Tokenizer) gives for
a folder holding it as `spm.model`: token ids without special tokens, for
sentences that reach the character map (full-width letters, accents),
repeated and trailing spaces, and lower-casing; and the ids it gives the
special tokens it adds.

  python3 -m venv /tmp/spmvenv && /tmp/spmvenv/bin/pip install transformers sentencepiece protobuf tokenizers
  /tmp/spmvenv/bin/python scripts/spm_fixture.py SENTENCEPIECE_SDIST_DIR
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import sentencepiece
import transformers
from transformers import AutoTokenizer

SENTENCES = [
    "I saw a girl with a telescope.",
    "  Hello   World!  ",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and café naïve ①",
    "don't stop-believing 1234",
    "Botchan was a mischievous boy\twho\nlived in Tokyo",
    "ＴＨＥ ＭＡＴＨＥＭＡＴＩＣＳ ＴＥＡＣＨＥＲ",
]


def main(sdist):
    source = Path(sdist) / "test" / "botchan_en_unigram_1000.model"
    out = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "spm_botchan"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, out / "spm.model")
    shutil.copy(Path(sdist) / "sentencepiece" / "LICENSE", out / "LICENSE")
    reference = {"transformers": transformers.__version__, "sentencepiece": sentencepiece.__version__}
    for lower in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(source, Path(tmp) / "spm.model")
            (Path(tmp) / "tokenizer_config.json").write_text(
                json.dumps({"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": lower})
            )
            tokenizer = AutoTokenizer.from_pretrained(tmp)
            key = "lowercase" if lower else "cased"
            reference[key] = {
                "ids": [tokenizer.encode(s, add_special_tokens=False) for s in SENTENCES],
                "specials": {t: tokenizer.convert_tokens_to_ids(t) for t in ["[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]"]},
            }
    processor = sentencepiece.SentencePieceProcessor(model_file=str(source))
    reference["sentencepiece_ids"] = [processor.encode(s) for s in SENTENCES]
    reference["sentences"] = SENTENCES
    (out / "reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False}) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])
