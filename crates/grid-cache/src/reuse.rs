//! Sharing one result between steps that do the same work.
//!
//! A key names its inputs by their keys, so it changes whenever an input
//! changes, even in a part the step never reads: a training run reads its
//! data's train and validation splits, yet its key follows the test split
//! too. For such kinds a step also gets a *content key* over what it does
//! read (`dag::reuse` says what that is), and a step whose key is missing
//! takes the payload of a published step with the same content key instead
//! of computing it: Bazel's action cache, Shake's early cut-off. The payload
//! taken is checked against its manifest first, like any cached result, and
//! the new manifest names where it came from.

use std::fs;

use serde::{Deserialize, Serialize};

use super::gc::read_dir_or_empty;
use super::{Cache, CacheError, Entry, Kind, Manifest, Staging, StepKey, io_err};

/// `sha256` over the canonical JSON of what a step computes from, by content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContentKey(String);

impl ContentKey {
    /// `value` must be canonical: serde_json's maps are ordered by key.
    pub fn of(value: &serde_json::Value) -> ContentKey {
        ContentKey(super::files::sha256_hex(value.to_string().as_bytes()))
    }
}

impl Cache {
    /// The manifest of a published step as written, without checking its
    /// payload; `None` when missing or unreadable.
    pub fn manifest<K: Kind>(&self, kind: K, key: &StepKey) -> Option<Manifest<K>> {
        let bytes = fs::read(self.step_dir(kind, key).join("manifest.json")).ok()?;
        serde_json::from_slice::<Manifest<K>>(&bytes).ok().filter(|m| m.kind == kind && &m.key == key)
    }

    /// The manifests of every published step of `kind`, unchecked, in key order.
    pub fn manifests<K: Kind>(&self, kind: K) -> Result<Vec<Manifest<K>>, CacheError> {
        let mut found = Vec::new();
        for shard in read_dir_or_empty(&self.root.join(kind.name()))? {
            for entry in read_dir_or_empty(&shard)? {
                let Some(key) = entry.file_name().and_then(|n| n.to_str()).and_then(StepKey::parse) else { continue };
                if let Some(manifest) = self.manifest(kind, &key) {
                    found.push(manifest);
                }
            }
        }
        Ok(found)
    }

    /// The first published step of `kind` other than `except` whose content
    /// key (`content_key_of` a manifest) is `wanted` and whose payload checks
    /// out against its manifest. A damaged one is passed over.
    pub fn find_same_work<K: Kind>(
        &self,
        kind: K,
        except: &StepKey,
        wanted: &ContentKey,
        content_key_of: impl Fn(&Manifest<K>) -> Option<ContentKey>,
    ) -> Result<Option<Manifest<K>>, CacheError> {
        for candidate in self.manifests(kind)? {
            if &candidate.key == except || content_key_of(&candidate).as_ref() != Some(wanted) {
                continue;
            }
            if let Entry::Valid(manifest) = self.entry(kind, &candidate.key)? {
                return Ok(Some(manifest));
            }
        }
        Ok(None)
    }

    /// Fills `staging` with the payload of the published step `from`
    /// (hard links, or copies across file systems) and records where it came
    /// from. `from` should have just been checked ([`Cache::find_same_work`]);
    /// [`Cache::publish`] checksums the files again.
    pub fn take_payload<K: Kind>(&self, staging: &mut Staging<K>, from: &Manifest<K>) -> Result<(), CacheError> {
        let source = self.step_dir(from.kind, &from.key);
        for file in &from.files {
            let (src, dst) = (source.join(&file.name), staging.dir.join(&file.name));
            if fs::hard_link(&src, &dst).is_err() {
                fs::copy(&src, &dst).map_err(io_err(&dst))?;
            }
        }
        staging.reused_from = Some(from.reference());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    fn publish(cache: &Cache, label: &str, content: &str, body: &str) -> Manifest<StepKind> {
        let params = serde_json::json!({ "label": label });
        let key = StepKey::compute(StepKind::Train, &params, &[]);
        let _lock = cache.lock(StepKind::Train, &key).unwrap();
        let mut staging = cache.begin(StepKind::Train, &key).unwrap();
        fs::write(staging.dir.join("model.bin"), body).unwrap();
        staging.content_key = Some(ContentKey::of(&serde_json::json!(content)));
        cache.publish(staging, label, &params, vec![], 1.0, "cpu").unwrap()
    }

    #[test]
    fn a_step_takes_the_checked_payload_of_the_same_work_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let first = publish(&cache, "train/a", "work-1", "weights");
        publish(&cache, "train/b", "work-2", "other weights");
        let by_record = |m: &Manifest<StepKind>| m.content_key.clone();
        let wanted = ContentKey::of(&serde_json::json!("work-1"));

        let params = serde_json::json!({ "label": "train/c" });
        let key = StepKey::compute(StepKind::Train, &params, &[]);
        let found = cache.find_same_work(StepKind::Train, &key, &wanted, by_record).unwrap().unwrap();
        assert_eq!(found.key, first.key);
        assert!(cache.find_same_work(StepKind::Train, &first.key, &wanted, by_record).unwrap().is_none(), "not itself");

        let mut staging = cache.begin(StepKind::Train, &key).unwrap();
        cache.take_payload(&mut staging, &found).unwrap();
        staging.content_key = Some(wanted.clone());
        let taken = cache.publish(staging, "train/c", &params, vec![], 0.0, "cpu").unwrap();
        assert_eq!(taken.files, first.files);
        assert_eq!(taken.reused_from.as_ref().map(|r| &r.key), Some(&first.key));
        assert_eq!(cache.lookup(StepKind::Train, &key).unwrap(), Some(taken));
    }

    #[test]
    fn a_damaged_result_is_never_taken() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let first = publish(&cache, "train/a", "work-1", "weights");
        fs::write(cache.step_dir(StepKind::Train, &first.key).join("model.bin"), "tampered").unwrap();
        let wanted = ContentKey::of(&serde_json::json!("work-1"));
        let other = StepKey::compute(StepKind::Train, &serde_json::json!({}), &[]);
        let found = cache.find_same_work(StepKind::Train, &other, &wanted, |m| m.content_key.clone()).unwrap();
        assert!(found.is_none());
    }
}
