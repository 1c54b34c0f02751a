//! A dataset split's file as a grid names it: a path under the data root or a
//! Hub address, as a string, or pinned to its bytes as a table:
//!
//! ```toml
//! train = "sst2/train.parquet"
//! test = { file = "hf://datasets/stanfordnlp/sst2@8d51e7e…/data/validation-00000-of-00001.parquet",
//!          bytes = 72813, sha256 = "fb00fe00…" }
//! ```
//!
//! A pinned file is read only with those bytes, wherever it comes from: a
//! download of other bytes is never published, a cached or local copy of other
//! bytes stops the plan naming both hashes.

use std::fmt;
use std::path::PathBuf;

use serde::de::{self, Deserializer, MapAccess, Visitor};

use grid_core::model::hub::Pin;

/// One split's file and the bytes it must have, if the grid says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SplitFile {
    /// Relative to the data root, absolute, or `hf://datasets/…`.
    pub path: PathBuf,
    pub pin: Option<Pin>,
}

impl SplitFile {
    /// A file named without a pin.
    pub fn unpinned(path: impl Into<PathBuf>) -> SplitFile {
        SplitFile { path: path.into(), pin: None }
    }

    /// The file's address as written, when it is a Hub address.
    pub fn hub_address(&self) -> Option<&str> {
        self.path.to_str().filter(|a| grid_core::model::hub::HubFile::is_hub(a))
    }
}

impl<'de> serde::Deserialize<'de> for SplitFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SplitFileVisitor)
    }
}

struct SplitFileVisitor;

const KEYS: &[&str] = &["file", "sha256", "bytes"];

impl<'de> Visitor<'de> for SplitFileVisitor {
    type Value = SplitFile;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file path or hf:// address, or a table `{ file = \"…\", sha256 = \"…\", bytes = N }`")
    }

    fn visit_str<E: de::Error>(self, path: &str) -> Result<SplitFile, E> {
        Ok(SplitFile::unpinned(path))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SplitFile, A::Error> {
        let (mut file, mut sha256, mut bytes) = (None::<String>, None::<String>, None::<u64>);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "file" => file = Some(map.next_value()?),
                "sha256" => sha256 = Some(map.next_value()?),
                "bytes" => bytes = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, KEYS)),
            }
        }
        let file = file.ok_or_else(|| de::Error::missing_field("file"))?;
        let pin = match (sha256, bytes) {
            (Some(sha256), bytes) => Some(Pin::new(&sha256, bytes).map_err(de::Error::custom)?),
            (None, Some(_)) => {
                return Err(de::Error::custom("`bytes` pins a file together with its `sha256`; add `sha256 = \"…\"`"));
            }
            (None, None) => None,
        };
        Ok(SplitFile { path: file.into(), pin })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Doc {
        train: SplitFile,
    }

    fn parse(text: &str) -> Result<SplitFile, String> {
        toml::from_str::<Doc>(text).map(|d| d.train).map_err(|e| e.to_string())
    }

    #[test]
    fn a_split_file_is_a_path_or_a_pinned_table() {
        assert_eq!(parse(r#"train = "sst2/train.parquet""#).unwrap(), SplitFile::unpinned("sst2/train.parquet"));
        let sha = "C7921283B75A42E685F50EDECB96798607EA0FCBFD0739EE8975F22C12D55F09";
        let pinned = parse(&format!(
            r#"train = {{ file = "hf://datasets/o/n@c/x.parquet", sha256 = "{sha}", bytes = 3110458 }}"#
        ))
        .unwrap();
        assert_eq!(pinned.hub_address(), Some("hf://datasets/o/n@c/x.parquet"));
        assert_eq!(pinned.pin, Some(Pin { sha256: sha.to_lowercase(), bytes: Some(3110458) }));
        assert_eq!(parse(r#"train = { file = "x.csv" }"#).unwrap(), SplitFile::unpinned("x.csv"));
    }

    #[test]
    fn a_bad_pin_is_refused_on_its_line_with_the_reason() {
        for (text, reason) in [
            (r#"train = { file = "x", sha256 = "abc" }"#, "is not a sha256"),
            (r#"train = { file = "x", bytes = 3 }"#, "together with its `sha256`"),
            (r#"train = { sha256 = "abc" }"#, "missing field `file`"),
            (r#"train = { file = "x", md5 = "abc" }"#, "unknown field `md5`"),
            ("train = 3", "a file path or hf:// address"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(reason) && err.contains("line 1"), "{text}: {err}");
        }
    }
}
