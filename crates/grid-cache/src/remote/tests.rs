use std::fs;
use std::path::Path;

use super::*;
use crate::kind::testing::StepKind;
use crate::{InputRef, StepKey};

fn publish(cache: &Cache, params: serde_json::Value, payload: &[(&str, &str)]) -> Manifest<StepKind> {
    let key = StepKey::compute(StepKind::Train, &params, &[]);
    let _lock = cache.lock(StepKind::Train, &key).unwrap();
    let staging = cache.begin(StepKind::Train, &key).unwrap();
    for (name, body) in payload {
        fs::write(staging.dir.join(name), body).unwrap();
    }
    cache.publish(staging, "train/x", &params, Vec::<InputRef<StepKind>>::new(), 2.5, "cpu").unwrap()
}

/// The objects of the remote folder, relative to it.
fn objects(remote: &Remote) -> Vec<String> {
    let mut all: Vec<String> = remote.list("").unwrap().into_iter().map(|(name, _)| name).collect();
    all.sort();
    all
}

#[test]
fn a_pushed_step_is_pulled_into_an_empty_cache_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote::folder(&dir.path().join("remote")).unwrap();
    let first = Cache::open(dir.path().join("a")).unwrap();
    let manifest = publish(&first, serde_json::json!({"x": 1}), &[("model.bin", "weights"), ("log.json", "[]")]);
    assert_eq!(remote.push(&first, &manifest).unwrap(), Pushed::Uploaded { bytes: 9 });
    assert!(remote.holds(StepKind::Train, &manifest.key).unwrap());

    let second = Cache::open(dir.path().join("b")).unwrap();
    let _lock = second.lock(StepKind::Train, &manifest.key).unwrap();
    match remote.pull(&second, StepKind::Train, &manifest.key).unwrap() {
        Pulled::Installed { manifest: pulled, bytes } => {
            assert_eq!(*pulled, manifest, "the manifest travels as written: timings, device, version");
            assert_eq!(bytes, 9);
        }
        other => panic!("not pulled: {other:?}"),
    }
    assert_eq!(second.lookup(StepKind::Train, &manifest.key).unwrap(), Some(manifest.clone()));
    let model = second.step_dir(StepKind::Train, &manifest.key).join("model.bin");
    assert_eq!(fs::read_to_string(model).unwrap(), "weights");
    // Pushing what the remote holds moves nothing.
    assert_eq!(remote.push(&second, &manifest).unwrap(), Pushed::AlreadyThere);
}

#[test]
fn a_missing_step_is_missing_and_a_payload_without_record_is_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote::folder(&dir.path().join("remote")).unwrap();
    let cache = Cache::open(dir.path().join("c")).unwrap();
    let key = StepKey::compute(StepKind::Train, &serde_json::json!({"x": 2}), &[]);
    assert_eq!(remote.pull(&cache, StepKind::Train, &key).unwrap(), Pulled::Missing);
    // What a writer killed mid-upload leaves: payload objects, no record.
    let folder = dir.path().join("remote/payloads/train").join(&key.as_str()[..2]).join(key.as_str()).join("u1");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("model.bin"), "half").unwrap();
    assert_eq!(remote.pull(&cache, StepKind::Train, &key).unwrap(), Pulled::Missing);
    assert!(!remote.holds(StepKind::Train, &key).unwrap());
    assert!(cache.lookup(StepKind::Train, &key).unwrap().is_none());
}

#[test]
fn a_damaged_remote_copy_is_refused_set_aside_and_replaced_by_the_next_push() {
    let dir = tempfile::tempdir().unwrap();
    let remote_dir = dir.path().join("remote");
    let remote = Remote::folder(&remote_dir).unwrap();
    let first = Cache::open(dir.path().join("a")).unwrap();
    let manifest = publish(&first, serde_json::json!({"x": 3}), &[("model.bin", "weights")]);
    let second = Cache::open(dir.path().join("b")).unwrap();
    let key = &manifest.key;
    let uploaded = |remote: &Remote| -> String {
        objects(remote).into_iter().find(|o| o.starts_with("payloads/") && o.ends_with("model.bin")).unwrap()
    };
    // Same size, other bytes (only the checksum can tell); truncated; gone.
    type Damage<'a> = (&'a str, &'a dyn Fn(&Path));
    let damages: [Damage; 3] = [
        ("checksum", &|file| fs::write(file, "weighty").unwrap()),
        ("3 bytes, published with 7", &|file| fs::write(file, "wei").unwrap()),
        ("listed in the record but missing", &|file| fs::remove_file(file).unwrap()),
    ];
    for (n, (expected, damage)) in damages.iter().enumerate() {
        // The first machine publishes (again: the damaged record is out of the way).
        assert!(matches!(remote.push(&first, &manifest).unwrap(), Pushed::Uploaded { .. }), "{expected}");
        let payload = uploaded(&remote);
        damage(&remote_dir.join(&payload));
        match remote.pull(&second, StepKind::Train, key).unwrap() {
            Pulled::Damaged { why, set_aside: Some(aside) } => {
                assert!(why.contains(expected), "{why}");
                assert!(
                    aside.starts_with(&format!("damaged/train/{}/{}.", &key.as_str()[..2], key.as_str())),
                    "{aside}"
                );
            }
            other => panic!("served a damaged copy: {other:?}"),
        }
        assert!(second.lookup(StepKind::Train, key).unwrap().is_none());
        assert!(!second.has_leftover(StepKind::Train, key), "the staging folder is removed");
        // Set aside: the step is missing for everyone, the record kept for a look.
        assert_eq!(remote.entry(StepKind::Train, key).unwrap(), RemoteEntry::Missing);
        assert_eq!(remote.list("damaged").unwrap().len(), n + 1);
        assert_eq!(remote.pull(&second, StepKind::Train, key).unwrap(), Pulled::Missing);
        // Its payload is an upload no record names, for gc; cleared here so
        // that the next round finds one.
        for (object, _) in remote.list("payloads").unwrap() {
            fs::remove_file(remote_dir.join(object)).unwrap();
        }
    }
    // A good copy again is served.
    remote.push(&first, &manifest).unwrap();
    assert!(matches!(remote.pull(&second, StepKind::Train, key).unwrap(), Pulled::Installed { .. }));
}

#[test]
fn a_record_that_does_not_parse_gives_way_to_a_push() {
    let dir = tempfile::tempdir().unwrap();
    let remote_dir = dir.path().join("remote");
    let remote = Remote::folder(&remote_dir).unwrap();
    let cache = Cache::open(dir.path().join("a")).unwrap();
    let manifest = publish(&cache, serde_json::json!({"x": 6}), &[("model.bin", "w")]);
    let record = remote_dir.join(Remote::record_path(StepKind::Train, &manifest.key));
    fs::create_dir_all(record.parent().unwrap()).unwrap();
    fs::write(&record, "{ half a rec").unwrap();
    assert!(matches!(remote.entry(StepKind::Train, &manifest.key).unwrap(), RemoteEntry::Damaged(_)));
    assert_eq!(remote.push(&cache, &manifest).unwrap(), Pushed::Uploaded { bytes: 1 });
    assert!(remote.holds(StepKind::Train, &manifest.key).unwrap());
    let aside = remote.list("damaged").unwrap();
    assert_eq!(aside.len(), 1);
    assert_eq!(fs::read_to_string(remote_dir.join(&aside[0].0)).unwrap(), "{ half a rec");
}

#[test]
fn a_record_naming_another_step_or_a_path_outside_its_folder_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let remote_dir = dir.path().join("remote");
    let remote = Remote::folder(&remote_dir).unwrap();
    let cache = Cache::open(dir.path().join("a")).unwrap();
    let manifest = publish(&cache, serde_json::json!({"x": 4}), &[("model.bin", "w")]);
    remote.push(&cache, &manifest).unwrap();
    let record_path = remote_dir.join(Remote::record_path(StepKind::Train, &manifest.key));
    let mut record: Published<StepKind> = serde_json::from_slice(&fs::read(&record_path).unwrap()).unwrap();
    record.manifest.files[0].name = "../../escape".into();
    fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    assert!(matches!(remote.entry(StepKind::Train, &manifest.key).unwrap(), RemoteEntry::Damaged(_)));
    record.manifest.files[0].name = "model.bin".into();
    record.manifest.key = StepKey::compute(StepKind::Train, &serde_json::json!({"other": 1}), &[]);
    fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    assert!(matches!(remote.entry(StepKind::Train, &manifest.key).unwrap(), RemoteEntry::Damaged(_)));
    fs::write(&record_path, "{ not json").unwrap();
    assert!(matches!(remote.entry(StepKind::Train, &manifest.key).unwrap(), RemoteEntry::Damaged(_)));
}

#[test]
fn two_writers_of_one_step_both_succeed_and_one_copy_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote::folder(&dir.path().join("remote")).unwrap();
    let params = serde_json::json!({"x": 5});
    // Two machines computed the same step; float rounding made their bytes differ.
    let (a, b) = (Cache::open(dir.path().join("a")).unwrap(), Cache::open(dir.path().join("b")).unwrap());
    let from_a = publish(&a, params.clone(), &[("model.bin", "aaaa")]);
    let from_b = publish(&b, params, &[("model.bin", "bbbb")]);
    assert_eq!(from_a.key, from_b.key);
    let pushes = std::thread::scope(|s| {
        let pa = s.spawn(|| remote.push(&a, &from_a).unwrap());
        let pb = s.spawn(|| remote.push(&b, &from_b).unwrap());
        [pa.join().unwrap(), pb.join().unwrap()]
    });
    assert_eq!(pushes.iter().filter(|p| matches!(p, Pushed::Uploaded { .. })).count(), 1, "{pushes:?}");
    assert_eq!(pushes.iter().filter(|p| **p == Pushed::AlreadyThere).count(), 1, "{pushes:?}");
    let payloads: Vec<String> = objects(&remote).into_iter().filter(|o| o.starts_with("payloads/")).collect();
    assert_eq!(payloads.len(), 1, "one copy: {payloads:?}");
    // And what is served is the winner's, whole.
    let c = Cache::open(dir.path().join("c")).unwrap();
    let Pulled::Installed { manifest, .. } = remote.pull(&c, StepKind::Train, &from_a.key).unwrap() else {
        panic!("not served")
    };
    assert!(*manifest == from_a || *manifest == from_b);
}

#[test]
fn a_reused_payload_is_named_not_uploaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote::folder(&dir.path().join("remote")).unwrap();
    let cache = Cache::open(dir.path().join("a")).unwrap();
    let original = publish(&cache, serde_json::json!({"x": 6}), &[("model.bin", "weights")]);
    remote.push(&cache, &original).unwrap();
    let params = serde_json::json!({"x": 7});
    let key = StepKey::compute(StepKind::Train, &params, &[]);
    let mut staging = cache.begin(StepKind::Train, &key).unwrap();
    cache.take_payload(&mut staging, &original).unwrap();
    let reused = cache.publish(staging, "train/y", &params, Vec::new(), 0.0, "cpu").unwrap();
    assert_eq!(remote.push(&cache, &reused).unwrap(), Pushed::SharedPayload);
    assert_eq!(objects(&remote).iter().filter(|o| o.starts_with("payloads/")).count(), 1);
    let other = Cache::open(dir.path().join("b")).unwrap();
    assert!(matches!(remote.pull(&other, StepKind::Train, &key).unwrap(), Pulled::Installed { .. }));
    assert_eq!(other.lookup(StepKind::Train, &key).unwrap(), Some(reused));
}

#[test]
fn locations_are_shown_without_credentials_and_unknown_schemes_are_refused() {
    assert_eq!(without_credentials("https://user:secret@host/bucket"), "https://host/bucket");
    assert_eq!(without_credentials("s3://bucket/prefix"), "s3://bucket/prefix");
    let error = Remote::open("ftp://host/x").unwrap_err().to_string();
    assert!(error.contains("unknown scheme `ftp://`"), "{error}");
}

#[test]
fn prefetched_records_answer_once_and_then_the_remote_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let remote_dir = dir.path().join("remote");
    let remote = Remote::folder(&remote_dir).unwrap();
    let cache = Cache::open(dir.path().join("a")).unwrap();
    let held = publish(&cache, serde_json::json!({"x": 7}), &[("model.bin", "w")]);
    remote.push(&cache, &held).unwrap();
    let absent = StepKey::compute(StepKind::Train, &serde_json::json!({"x": 8}), &[]);
    remote.prefetch(&[(StepKind::Train, &held.key), (StepKind::Train, &absent)]);
    // The record goes after the read-ahead: the first answer is the one read
    // ahead, the next is the remote's own.
    fs::remove_file(remote_dir.join(Remote::record_path(StepKind::Train, &held.key))).unwrap();
    assert!(matches!(remote.entry(StepKind::Train, &held.key).unwrap(), RemoteEntry::Published(_)));
    assert_eq!(remote.entry(StepKind::Train, &held.key).unwrap(), RemoteEntry::Missing);
    assert_eq!(remote.entry(StepKind::Train, &absent).unwrap(), RemoteEntry::Missing);
    // A cache reads ahead only what it lacks.
    let with_remote = Cache::open(dir.path().join("a")).unwrap().with_remote(Remote::folder(&remote_dir).unwrap());
    with_remote.prefetch_remote([(StepKind::Train, &held.key), (StepKind::Train, &absent)]);
    let read_ahead = with_remote.remote().unwrap().prefetched.lock().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(read_ahead, [Remote::record_path(StepKind::Train, &absent)]);
}
