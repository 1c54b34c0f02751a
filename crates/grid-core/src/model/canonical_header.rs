//! One byte layout per set of tensors: a safetensors header with its keys sorted.
//!
//! burn writes the header's `__metadata__` map (`producer`, `format`,
//! `version`) from a `HashMap`, in an order that changes from save to save. So
//! two trainings with equal tensors wrote files with different bytes, and
//! different sha256 in the cache's manifests: a cluster node's result could
//! not be compared with another's by checksum. Sorting every key of the header
//! makes the file a function of the tensors and the metadata alone.
//!
//! The header is JSON padded with spaces to a multiple of eight bytes; tensor
//! offsets count from its end, so only its own bytes change. Sorting keeps its
//! length, and it is then rewritten in place; otherwise the file is rewritten.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Rewrites the header of the safetensors file at `path` with sorted keys.
pub fn canonicalize(path: &Path) -> io::Result<()> {
    let mut file = File::options().read(true).write(true).open(path)?;
    let mut length = [0u8; 8];
    file.read_exact(&mut length)?;
    let length = usize::try_from(u64::from_le_bytes(length)).map_err(invalid)?;
    if length > 100 << 20 {
        return Err(invalid(format!("a header of {length} bytes")));
    }
    let mut header = vec![0u8; length];
    file.read_exact(&mut header)?;
    // serde_json's maps are ordered by key (no `preserve_order`), so parsing
    // and printing sorts them; compact printing is how safetensors writes.
    let value: serde_json::Value = serde_json::from_slice(&header).map_err(invalid)?;
    let mut sorted = serde_json::to_vec(&value).map_err(invalid)?;
    sorted.resize(sorted.len().next_multiple_of(8), b' ');
    if sorted == header {
        return Ok(());
    }
    if sorted.len() == length {
        file.seek(SeekFrom::Start(8))?;
        file.write_all(&sorted)?;
        return file.sync_data();
    }
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    drop(file);
    let staged = path.with_extension("safetensors.sorting");
    let mut out = File::create(&staged)?;
    out.write_all(&(sorted.len() as u64).to_le_bytes())?;
    out.write_all(&sorted)?;
    out.write_all(&data)?;
    out.sync_data()?;
    fs::rename(&staged, path)
}

fn invalid(e: impl ToString) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not a safetensors header: {}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut padded = header.as_bytes().to_vec();
        padded.resize(padded.len().next_multiple_of(8), b' ');
        let mut bytes = (padded.len() as u64).to_le_bytes().to_vec();
        bytes.extend(padded);
        bytes.extend(data);
        bytes
    }

    const DATA: [u8; 8] = [0, 0, 128, 63, 0, 0, 0, 64];
    const SORTED: &str = r#"{"__metadata__":{"format":"safetensors","producer":"burn","version":"0.21.0"},"w":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}}"#;

    #[test]
    fn two_orders_of_one_header_become_the_same_bytes_and_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let orders = [
            r#"{"__metadata__":{"version":"0.21.0","producer":"burn","format":"safetensors"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            r#"{"w":{"shape":[2],"dtype":"F32","data_offsets":[0,8]},"__metadata__":{"producer":"burn","format":"safetensors","version":"0.21.0"}}"#,
        ];
        let mut written = Vec::new();
        for (i, header) in orders.iter().enumerate() {
            let path = dir.path().join(format!("{i}.safetensors"));
            fs::write(&path, file(header, &DATA)).unwrap();
            canonicalize(&path).unwrap();
            written.push(fs::read(&path).unwrap());
        }
        assert_eq!(written[0], written[1]);
        let tensors = safetensors::SafeTensors::deserialize(&written[0]).unwrap();
        let w = tensors.tensor("w").unwrap();
        assert_eq!((w.shape(), w.data()), (&[2][..], &DATA[..]));
    }

    #[test]
    fn a_header_that_changes_length_is_rewritten_whole_and_a_sorted_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.safetensors");
        // Spaces inside the JSON: compact printing is shorter by more than the padding.
        let loose = SORTED.replace(",\"w\"", ",          \"w\"");
        fs::write(&path, file(&loose, &DATA)).unwrap();
        canonicalize(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap(), file(SORTED, &DATA));
        let modified = fs::metadata(&path).unwrap().modified().unwrap();
        canonicalize(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), modified);
    }

    #[test]
    fn a_file_that_is_not_safetensors_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.safetensors");
        fs::write(&path, file("not json", &DATA)).unwrap();
        assert_eq!(canonicalize(&path).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
