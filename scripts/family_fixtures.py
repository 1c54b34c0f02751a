"""RoBERTa, DistilBERT, ELECTRA, ModernBERT, DeBERTa-v3 and MPNet folders exactly as transformers writes them, with the
outputs transformers computes, for the model-family equivalence tests
(tests/families.rs).

For each family this builds a small randomly initialised
`*ForSequenceClassification` (fixed seed, LayerNorms moved off their initial
values so one that failed to load would show), a tokenizer of the family's kind
trained on a few sentences (byte-level BPE for RoBERTa, WordPiece for
DistilBERT and ELECTRA), and saves both with `save_pretrained`. Beside them,
`reference.safetensors` holds the ids the tokenizer gives a padded batch of
sentences (the sentences are in its metadata), the last hidden states and the
classification logits.

Regenerate (needs torch, transformers and tokenizers; a CPU is enough), all
families or the ones named:

    python scripts/family_fixtures.py tests/fixtures [roberta] [distilbert] [electra] [modernbert] [deberta] [mpnet]
"""

import json
import pathlib
import sys

import tokenizers
import torch
import transformers
from safetensors.torch import save_file
from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer, SentencePieceUnigramTokenizer
from transformers import (
    DebertaV2Config,
    DebertaV2ForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
    DistilBertTokenizerFast,
    ElectraConfig,
    ElectraForSequenceClassification,
    ElectraTokenizerFast,
    ModernBertConfig,
    ModernBertForSequenceClassification,
    MPNetConfig,
    MPNetForSequenceClassification,
    MPNetTokenizerFast,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForSequenceClassification,
    RobertaTokenizerFast,
)

CORPUS = [
    "the film was a great film , and the acting was not bad",
    "an awful plot ; the actors were unaffable and the music was loud",
    "I loved it . It is the best movie of the year !",
    "Nothing works here : boring , slow and far too long",
    "a moving , funny and clever story about two brothers",
] * 4

SENTENCES = [
    "the film was great , honestly",
    "An awful, boring plot",
    "I loved the music !",
]


def roberta(out_dir: pathlib.Path) -> None:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    tokenizer = RobertaTokenizerFast(tokenizer_object=bpe._tokenizer)
    config = RobertaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=40,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        layer_norm_eps=1e-5,
        num_labels=3,
    )
    model = RobertaForSequenceClassification(config).eval()
    write(out_dir / "roberta_transformers", model, tokenizer, lambda m, **kw: m.roberta(**kw))


def distilbert(out_dir: pathlib.Path) -> None:
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    tokenizer = DistilBertTokenizerFast(tokenizer_object=wordpiece._tokenizer)
    config = DistilBertConfig(
        vocab_size=tokenizer.vocab_size,
        dim=32,
        n_layers=2,
        n_heads=4,
        hidden_dim=64,
        max_position_embeddings=40,
        num_labels=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = DistilBertForSequenceClassification(config).eval()
    write(out_dir / "distilbert_transformers", model, tokenizer, lambda m, **kw: m.distilbert(**kw))


def electra(out_dir: pathlib.Path) -> None:
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    tokenizer = ElectraTokenizerFast(tokenizer_object=wordpiece._tokenizer)
    # Embeddings narrower than the encoder, as in ELECTRA-small (128 under 256),
    # so `embeddings_project` is exercised.
    config = ElectraConfig(
        vocab_size=tokenizer.vocab_size,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=40,
        num_labels=3,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = ElectraForSequenceClassification(config).eval()
    write(out_dir / "electra_transformers", model, tokenizer, lambda m, **kw: m.electra(**kw))


def modernbert(out_dir: pathlib.Path) -> None:
    # ModernBERT's tokenizer is a byte-level BPE with BERT's special tokens
    # around each sequence ("[CLS] … [SEP]").
    bpe = ByteLevelBPETokenizer()
    special = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=special)
    bpe._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", bpe.token_to_id("[CLS]")), ("[SEP]", bpe.token_to_id("[SEP]"))],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )
    # Three layers, the first global and the next two local with a window of
    # four tokens (two each side), shorter than the sentences, so both kinds of
    # attention and both rotary bases are exercised; mean pooling, as
    # ModernBERT-base's classification config has it.
    config = ModernBertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        global_attn_every_n_layers=3,
        local_attention=4,
        max_position_embeddings=64,
        classifier_pooling="mean",
        num_labels=3,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id,
    )
    model = ModernBertForSequenceClassification(config).eval()
    write(out_dir / "modernbert_transformers", model, tokenizer, lambda m, **kw: m.model(**kw))


def deberta(out_dir: pathlib.Path) -> None:
    # DeBERTa-v3's tokenizer is a SentencePiece unigram model ("▁" before a
    # word) with "[CLS] … [SEP]" around each sequence.
    unigram = SentencePieceUnigramTokenizer()
    special = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    unigram.train_from_iterator(CORPUS, vocab_size=120, special_tokens=special, unk_token="[UNK]")
    unigram._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", unigram.token_to_id("[CLS]")), ("[SEP]", unigram.token_to_id("[SEP]"))],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=unigram._tokenizer,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )
    # deberta-v3-base's settings (relative attention both ways through shared
    # key/query projections, log buckets, a LayerNorm on the relative
    # embeddings, no absolute positions, no segments) at a small size, with
    # 4 position buckets and 8 relative positions so that sentences of 10
    # tokens reach the log buckets.
    config = DebertaV2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
        relative_attention=True,
        position_buckets=4,
        max_relative_positions=8,
        pos_att_type="p2c|c2p",
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        position_biased_input=False,
        type_vocab_size=0,
        layer_norm_eps=1e-7,
        num_labels=3,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = DebertaV2ForSequenceClassification(config).eval()
    write(out_dir / "deberta_transformers", model, tokenizer, lambda m, **kw: m.deberta(**kw))


# Long enough for keys 30 positions from their query: MPNet's relative
# positions past 8 fall into logarithmic buckets (9, 10, 11 here).
LONG_SENTENCES = SENTENCES + [
    "a moving , funny and clever story about two brothers ; the film was great , honestly , and I loved the "
    "music , the acting was not bad and the plot was not boring"
]


def mpnet(out_dir: pathlib.Path) -> None:
    # MPNet's tokenizer is BERT's WordPiece with RoBERTa's specials around a
    # sequence ("<s> … </s>", `<pad>` at 1) and BERT's `[UNK]` for unknown pieces.
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    special = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"]
    wordpiece.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1, special_tokens=special)
    wordpiece._tokenizer.model.unk_token = "[UNK]"
    wordpiece._tokenizer.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", wordpiece.token_to_id("</s>")), ("<s>", wordpiece.token_to_id("<s>"))
    )
    tokenizer = MPNetTokenizerFast(
        tokenizer_object=wordpiece._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="[UNK]",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    config = MPNetConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        relative_attention_num_buckets=32,
        layer_norm_eps=1e-5,
        num_labels=2,
    )
    model = MPNetForSequenceClassification(config).eval()
    write(out_dir / "mpnet_transformers", model, tokenizer, lambda m, **kw: m.mpnet(**kw), LONG_SENTENCES)


def write(out_dir, model, tokenizer, encoder, sentences=SENTENCES) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name or "norm" in name.split(".")[-2]:
                parameter.add_(0.2 * torch.randn_like(parameter))
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with torch.no_grad():
        hidden = encoder(model, input_ids=ids, attention_mask=mask).last_hidden_state
        logits = model(input_ids=ids, attention_mask=mask).logits
    save_file(
        {
            "input_ids": ids.to(torch.int64).contiguous(),
            "attention_mask": mask.to(torch.int64).contiguous(),
            "last_hidden_state": hidden.to(torch.float32).contiguous(),
            "logits": logits.to(torch.float32).contiguous(),
        },
        str(out_dir / "reference.safetensors"),
        metadata={
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "sentences": json.dumps(sentences),
        },
    )
    print(f"wrote {out_dir} (transformers {transformers.__version__}, torch {torch.__version__})")


FAMILIES = {
    "roberta": roberta,
    "distilbert": distilbert,
    "electra": electra,
    "modernbert": modernbert,
    "deberta": deberta,
    "mpnet": mpnet,
}


def main(out: str, names: list[str]) -> None:
    out_dir = pathlib.Path(out)
    # RoBERTa then DistilBERT draw from one stream seeded 20 (regenerate the
    # two together); ELECTRA, added later, from its own.
    torch.manual_seed(20)
    for name in names or list(FAMILIES):
        if name == "electra":
            torch.manual_seed(21)
        if name == "modernbert":
            torch.manual_seed(22)
        if name == "deberta":
            torch.manual_seed(23)
        if name == "mpnet":
            torch.manual_seed(24)
        FAMILIES[name](out_dir)


if __name__ == "__main__":
    if len(sys.argv) < 2 or any(n not in FAMILIES for n in sys.argv[2:]):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
