"""A BERT folder exactly as a current transformers writes it, for the strict
checkpoint-loading test (tests/bert_equivalence.rs, `transformers_save_pretrained_loads_whole`).

NOTES-gpu.md saw a BERT saved by transformers 5.x load with every LayerNorm
tensor listed as unused. This writes a small randomly initialised
BertForSequenceClassification with `save_pretrained` (the library's own tensor
names, dtype and metadata), and beside it the hidden states and pooled output
transformers computes for a padded batch of ids, so the test checks that every
tensor loads and is used, not only that loading succeeds.

Regenerate (needs torch and transformers; a CPU is enough):

    python scripts/bert_transformers_fixture.py tests/fixtures/bert_transformers

Written: DIR/config.json and DIR/model.safetensors (from save_pretrained), and
DIR/reference.safetensors (input_ids, attention_mask, last_hidden_state,
pooler_output, with library versions in the metadata).
"""

import json
import pathlib
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import BertConfig, BertForSequenceClassification


def main(out: str) -> None:
    out_dir = pathlib.Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(20)
    config = BertConfig(
        vocab_size=96,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=40,
        type_vocab_size=2,
        num_labels=2,
    )
    model = BertForSequenceClassification(config).eval()
    # Initial LayerNorm scales are all 1 and biases 0: a LayerNorm that failed
    # to load would go unnoticed. Move every parameter off its initial value.
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name:
                parameter.add_(0.2 * torch.randn_like(parameter))
    model.save_pretrained(out_dir, safe_serialization=True)

    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(4, config.vocab_size, (3, 12), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    mask[2, 5:] = 0
    ids = ids.masked_fill(mask == 0, 0)
    with torch.no_grad():
        output = model.bert(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids))
    save_file(
        {
            "input_ids": ids.to(torch.int64).contiguous(),
            "attention_mask": mask.to(torch.int64).contiguous(),
            "last_hidden_state": output.last_hidden_state.to(torch.float32).contiguous(),
            "pooler_output": output.pooler_output.to(torch.float32).contiguous(),
        },
        str(out_dir / "reference.safetensors"),
        metadata={"torch": torch.__version__, "transformers": transformers.__version__},
    )
    names = json.loads((out_dir / "config.json").read_text()).get("transformers_version")
    print(f"wrote {out_dir} (transformers {names}, torch {torch.__version__})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
