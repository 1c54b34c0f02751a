//! SentencePiece's own model file, `spm.model`, read directly: DeBERTa-v3's
//! checkpoints ship it and no `tokenizer.json`. The file is a `ModelProto`
//! protobuf (`sentencepiece_model.proto`); the few fields a unigram model needs
//! are read here with a minimal protobuf reader, and built into the tokenizer
//! `transformers` makes of the same file (`DebertaV2Tokenizer`, 5.x): the
//! pieces and their scores as a unigram model, the precompiled character map
//! (nmt_nfkc) then a right strip and runs of spaces to one as the normalizer,
//! `▁` as the word marker, and the control pieces special. Checked against
//! transformers and sentencepiece on sentencepiece's own test model
//! (`tests/fixtures/spm_botchan`, written by `scripts/spm_fixture.py`).

use std::path::{Path, PathBuf};

use tokenizers::models::unigram::Unigram;
use tokenizers::normalizers::{Lowercase, NormalizerWrapper, Precompiled, Replace, Sequence, Strip};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::punctuation::Punctuation;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

/// The file name checkpoints give it.
pub const SPM_FILE: &str = "spm.model";

/// The kinds of piece (`ModelProto.SentencePiece.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceType {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub piece: String,
    pub score: f32,
    pub kind: PieceType,
}

/// What a unigram tokenizer needs of a `ModelProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpmModel {
    pub pieces: Vec<Piece>,
    /// `TrainerSpec.model_type`: 1 unigram, 2 BPE, 3 word, 4 char.
    pub model_type: u64,
    pub unk_id: usize,
    pub byte_fallback: bool,
    /// `NormalizerSpec.precompiled_charsmap` (empty: no character map).
    pub charsmap: Vec<u8>,
    pub add_dummy_prefix: bool,
}

/// How `tokenizer_config.json` sets up the tokenizer (DebertaV2Tokenizer's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpmOptions {
    pub lowercase: bool,
    pub split_by_punct: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SpmError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not a SentencePiece model (byte {offset}: {problem})", path.display())]
    Malformed { path: PathBuf, offset: usize, problem: String },
    #[error(
        "{}: a SentencePiece {kind} model; grid reads unigram models (DeBERTa-v3's). Convert it to tokenizer.json \
         once with transformers: python3 -c \"from transformers import AutoTokenizer; \
         AutoTokenizer.from_pretrained('{}').save_pretrained('{}')\"",
        path.display(),
        dir.display(),
        dir.display()
    )]
    NotUnigram { path: PathBuf, kind: &'static str, dir: PathBuf },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

impl SpmModel {
    /// Reads `spm.model` at `path`.
    pub fn read(path: &Path) -> Result<SpmModel, SpmError> {
        let bytes = std::fs::read(path).map_err(|source| SpmError::Io { path: path.into(), source })?;
        Self::parse(&bytes).map_err(|(offset, problem)| SpmError::Malformed { path: path.into(), offset, problem })
    }

    fn parse(bytes: &[u8]) -> Result<SpmModel, (usize, String)> {
        let mut model = SpmModel {
            pieces: Vec::new(),
            model_type: 1,
            unk_id: 0,
            byte_fallback: false,
            charsmap: Vec::new(),
            add_dummy_prefix: true,
        };
        for field in Fields::new(bytes, 0) {
            let (offset, number, value) = field?;
            match (number, value) {
                (1, Value::Bytes(piece)) => model.pieces.push(parse_piece(piece, offset)?),
                (2, Value::Bytes(trainer)) => {
                    for field in Fields::new(trainer, offset) {
                        match field? {
                            (_, 3, Value::Varint(kind)) => model.model_type = kind,
                            (_, 35, Value::Varint(on)) => model.byte_fallback = on != 0,
                            (at, 40, Value::Varint(id)) => {
                                model.unk_id = usize::try_from(id as i64).map_err(|_| (at, format!("unk_id {id}")))?
                            }
                            _ => {}
                        }
                    }
                }
                (3, Value::Bytes(normalizer)) => {
                    for field in Fields::new(normalizer, offset) {
                        match field? {
                            (_, 2, Value::Bytes(map)) => model.charsmap = map.to_vec(),
                            (_, 3, Value::Varint(on)) => model.add_dummy_prefix = on != 0,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if model.pieces.is_empty() {
            return Err((0, "no pieces".into()));
        }
        Ok(model)
    }

    /// The tokenizer transformers builds from this model.
    pub fn tokenizer(&self, options: SpmOptions, path: &Path) -> Result<Tokenizer, SpmError> {
        let invalid = |message: String| SpmError::Invalid { path: path.into(), message };
        if self.model_type != 1 {
            let kind = match self.model_type {
                2 => "BPE",
                3 => "word",
                4 => "char",
                _ => "unknown-type",
            };
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            return Err(SpmError::NotUnigram { path: path.into(), kind, dir });
        }
        if self.unk_id >= self.pieces.len() {
            return Err(invalid(format!("unk_id {} is not a piece ({} pieces)", self.unk_id, self.pieces.len())));
        }
        let vocab: Vec<(String, f64)> = self.pieces.iter().map(|p| (p.piece.clone(), f64::from(p.score))).collect();
        let model = Unigram::from(vocab, Some(self.unk_id), self.byte_fallback).map_err(|e| invalid(e.to_string()))?;
        let mut tokenizer = Tokenizer::new(model);

        let mut normalizers: Vec<NormalizerWrapper> = Vec::new();
        if options.lowercase {
            normalizers.push(Lowercase.into());
        }
        if !self.charsmap.is_empty() {
            let map = Precompiled::from(&self.charsmap).map_err(|e| invalid(format!("precompiled_charsmap: {e}")))?;
            normalizers.push(map.into());
        } else {
            normalizers.push(Replace::new(regex(r"\s{2,}|[\n\r\t]"), " ").map_err(|e| invalid(e.to_string()))?.into());
            normalizers.push(tokenizers::normalizers::NFC.into());
        }
        normalizers.push(Strip::new(false, true).into());
        if !self.charsmap.is_empty() {
            normalizers.push(Replace::new(regex(" {2,}"), " ").map_err(|e| invalid(e.to_string()))?.into());
        }
        tokenizer.with_normalizer(Some(Sequence::new(normalizers)));

        let mut pre: Vec<PreTokenizerWrapper> = Vec::new();
        if options.split_by_punct {
            pre.push(Punctuation::new(SplitDelimiterBehavior::Isolated).into());
        }
        let prepend = if self.add_dummy_prefix { PrependScheme::Always } else { PrependScheme::First };
        pre.push(Metaspace::new('▁', prepend, true).into());
        tokenizer.with_pre_tokenizer(Some(PreSequence::new(pre)));
        tokenizer.with_decoder(Some(tokenizers::decoders::metaspace::Metaspace::new('▁', prepend, true)));

        // Control pieces (`[CLS]`, `<s>`) are special; DebertaV2Tokenizer's own
        // tokens are added after the pieces when the model lacks them, in its order.
        let controls: Vec<AddedToken> = self
            .pieces
            .iter()
            .filter(|p| p.kind == PieceType::Control)
            .map(|p| AddedToken::from(p.piece.clone(), true))
            .collect();
        tokenizer.add_special_tokens(&controls);
        let own: Vec<AddedToken> = ["[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]"]
            .into_iter()
            .filter(|t| !self.pieces.iter().any(|p| p.piece == *t))
            .map(|t| AddedToken::from(t, true))
            .collect();
        tokenizer.add_special_tokens(&own);

        let id = |t: &str| tokenizer.token_to_id(t).ok_or_else(|| invalid(format!("no {t}")));
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        let template = TemplateProcessing::builder()
            .try_single("[CLS]:0 $A:0 [SEP]:0")
            .and_then(|b| b.try_pair("[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1"))
            .map_err(|e| invalid(e.to_string()))?
            .special_tokens(vec![("[CLS]", cls), ("[SEP]", sep)])
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        tokenizer.with_post_processor(Some(template));
        Ok(tokenizer)
    }
}

fn regex(pattern: &str) -> tokenizers::normalizers::replace::ReplacePattern {
    tokenizers::normalizers::replace::ReplacePattern::Regex(pattern.to_string())
}

fn parse_piece(bytes: &[u8], at: usize) -> Result<Piece, (usize, String)> {
    let mut piece = Piece { piece: String::new(), score: 0.0, kind: PieceType::Normal };
    for field in Fields::new(bytes, at) {
        match field? {
            (offset, 1, Value::Bytes(text)) => {
                piece.piece =
                    String::from_utf8(text.to_vec()).map_err(|_| (offset, "a piece is not UTF-8".to_string()))?
            }
            (_, 2, Value::Fixed32(bits)) => piece.score = f32::from_bits(bits),
            (offset, 3, Value::Varint(kind)) => {
                piece.kind = match kind {
                    1 => PieceType::Normal,
                    2 => PieceType::Unknown,
                    3 => PieceType::Control,
                    4 => PieceType::UserDefined,
                    5 => PieceType::Unused,
                    6 => PieceType::Byte,
                    other => return Err((offset, format!("piece type {other}"))),
                }
            }
            _ => {}
        }
    }
    Ok(piece)
}

/// A protobuf field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value<'a> {
    Varint(u64),
    /// Read past: no field this reader keeps has it.
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of one protobuf message: (offset in the file, number, value).
struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Self {
        Fields { bytes, pos: 0, base, failed: false }
    }

    fn varint(&mut self) -> Result<u64, (usize, String)> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err((self.base + self.pos, "the file ends inside a number".into()));
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err((self.base + self.pos, "a number longer than 10 bytes".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], (usize, String)> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err((self.base + self.pos, format!("a field of {n} bytes runs past the end")));
        };
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn field(&mut self) -> Result<(usize, u64, Value<'a>), (usize, String)> {
        let start = self.pos;
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| (self.base + start, "a huge field".to_string()))?;
                Value::Bytes(self.take(n)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            wire => return Err((self.base + start, format!("wire type {wire}"))),
        };
        // Where a nested message's content starts, for errors inside it.
        let content = match value {
            Value::Bytes(bytes) => self.base + self.pos - bytes.len(),
            _ => self.base + self.pos,
        };
        Ok((content, key >> 3, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(usize, u64, Value<'a>), (usize, String)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/spm_botchan")
    }

    #[derive(serde::Deserialize)]
    struct Reference {
        sentences: Vec<String>,
        cased: Expected,
        lowercase: Expected,
        sentencepiece_ids: Vec<Vec<u32>>,
    }

    #[derive(serde::Deserialize)]
    struct Expected {
        ids: Vec<Vec<u32>>,
        specials: std::collections::BTreeMap<String, u32>,
    }

    #[test]
    fn sentencepieces_own_test_model_tokenizes_as_transformers_and_sentencepiece_do() {
        let path = fixture().join(SPM_FILE);
        let model = SpmModel::read(&path).unwrap();
        assert_eq!((model.pieces.len(), model.model_type, model.unk_id), (1000, 1, 0));
        assert_eq!(model.pieces[1], Piece { piece: "<s>".into(), score: 0.0, kind: PieceType::Control });
        assert!(!model.charsmap.is_empty() && model.add_dummy_prefix);
        let reference: Reference =
            serde_json::from_slice(&std::fs::read(fixture().join("reference.json")).unwrap()).unwrap();
        for (lowercase, expected) in [(false, &reference.cased), (true, &reference.lowercase)] {
            let tokenizer = model.tokenizer(SpmOptions { lowercase, split_by_punct: false }, &path).unwrap();
            for (sentence, ids) in reference.sentences.iter().zip(&expected.ids) {
                let encoded = tokenizer.encode(sentence.as_str(), false).unwrap();
                assert_eq!(encoded.get_ids(), ids.as_slice(), "lowercase {lowercase}: {sentence:?}");
            }
            for (token, id) in &expected.specials {
                assert_eq!(tokenizer.token_to_id(token), Some(*id), "{token}");
            }
        }
        assert_eq!(reference.cased.ids, reference.sentencepiece_ids, "transformers agrees with sentencepiece");
    }

    #[test]
    fn a_file_that_is_not_a_sentencepiece_model_names_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SPM_FILE);
        let mut bytes = std::fs::read(fixture().join(SPM_FILE)).unwrap();
        bytes.truncate(5_000);
        std::fs::write(&path, &bytes).unwrap();
        let err = SpmModel::read(&path).unwrap_err().to_string();
        assert!(err.contains("spm.model: not a SentencePiece model (byte") && err.contains("past the end"), "{err}");
        std::fs::write(&path, b"\x0f\x00").unwrap();
        let err = SpmModel::read(&path).unwrap_err().to_string();
        assert!(err.contains("wire type 7"), "{err}");
        // A BPE model is named, with the one command that converts it.
        let mut model = SpmModel::read(&fixture().join(SPM_FILE)).unwrap();
        model.model_type = 2;
        let err = model.tokenizer(SpmOptions { lowercase: false, split_by_punct: false }, &path).unwrap_err();
        assert!(err.to_string().contains("a SentencePiece BPE model") && err.to_string().contains("save_pretrained"));
    }
}
