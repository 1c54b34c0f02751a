//! An image dataset as a folder of class folders, the layout torchvision's
//! `ImageFolder` reads: `<root>/<class>/<image>.png|jpg|jpeg`. Classes are
//! the sub-folders in name order (label 0 is the first); files in name order
//! within each. Its fingerprint hashes the listing and every file's bytes, so
//! that the same images under another path give the same cache keys.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::Image;

/// The extensions read (case-insensitive); other files are not images of
/// the dataset and are skipped (a `README`, `.DS_Store`).
const EXTENSIONS: [&str; 3] = ["png", "jpg", "jpeg"];

/// One image of the dataset: where it is and its class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFile {
    pub path: PathBuf,
    pub label: usize,
}

/// A listed image folder.
#[derive(Debug, Clone)]
pub struct ImageFolder {
    root: PathBuf,
    classes: Vec<String>,
    files: Vec<ImageFile>,
}

impl ImageFolder {
    /// Lists `root`: at least two class folders, each with at least one image.
    pub fn open(root: &Path) -> Result<ImageFolder> {
        let entries = |dir: &Path| -> Result<Vec<PathBuf>> {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<_>>()
                .with_context(|| format!("cannot list {}", dir.display()))?;
            paths.sort();
            Ok(paths)
        };
        let class_dirs: Vec<PathBuf> = entries(root)?.into_iter().filter(|p| p.is_dir()).collect();
        if class_dirs.len() < 2 {
            bail!(
                "{}: an image folder needs a sub-folder per class, at least two; found {}",
                root.display(),
                class_dirs.len()
            );
        }
        let mut classes = Vec::new();
        let mut files = Vec::new();
        for (label, dir) in class_dirs.iter().enumerate() {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let images: Vec<PathBuf> = entries(dir)?
                .into_iter()
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .is_some_and(|e| EXTENSIONS.contains(&e.to_string_lossy().to_lowercase().as_str()))
                })
                .collect();
            if images.is_empty() {
                bail!("{}: class folder `{name}` has no .png, .jpg or .jpeg file", root.display());
            }
            files.extend(images.into_iter().map(|path| ImageFile { path, label }));
            classes.push(name);
        }
        Ok(ImageFolder { root: root.to_path_buf(), classes, files })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Class names, by label.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    pub fn files(&self) -> &[ImageFile] {
        &self.files
    }

    /// SHA-256 over the classes, each file's name within its class, and its
    /// bytes: what a cache key takes instead of the folder's path.
    pub fn fingerprint(&self) -> Result<String> {
        let sums: Vec<String> = self
            .files
            .par_iter()
            .map(|file| {
                let bytes =
                    std::fs::read(&file.path).with_context(|| format!("cannot read {}", file.path.display()))?;
                Ok(hex::encode(Sha256::digest(&bytes)))
            })
            .collect::<Result<_>>()?;
        let mut hasher = Sha256::new();
        for class in &self.classes {
            hasher.update(format!("class {class}\n"));
        }
        for (file, sum) in self.files.iter().zip(sums) {
            let name = file.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            hasher.update(format!("{} {name} {sum}\n", file.label));
        }
        Ok(hex::encode(hasher.finalize()))
    }

    /// Every image decoded at `side × side` (centre crop, resize), in the
    /// listing's order, with its label; the first file that fails is named.
    pub fn load(&self, side: usize) -> Result<Vec<(Image, usize)>> {
        self.files.par_iter().map(|file| Ok((super::decode::load(&file.path, side)?, file.label))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::decode::encode_png;

    fn write(path: &Path, colour: [f32; 3]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, encode_png(&Image::filled(6, 8, colour)).unwrap()).unwrap();
    }

    #[test]
    fn classes_in_name_order_and_a_fingerprint_of_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("birds");
        write(&root.join("tern/b.png"), [0.2, 0.2, 0.2]);
        write(&root.join("tern/a.PNG"), [0.4, 0.4, 0.4]);
        write(&root.join("crow/x.png"), [0.9, 0.1, 0.1]);
        std::fs::write(root.join("crow/README"), "not an image").unwrap();
        let folder = ImageFolder::open(&root).unwrap();
        assert_eq!(folder.classes(), ["crow", "tern"]);
        let listed: Vec<(String, usize)> = folder
            .files()
            .iter()
            .map(|f| (f.path.file_name().unwrap().to_string_lossy().into_owned(), f.label))
            .collect();
        assert_eq!(listed, [("x.png".into(), 0), ("a.PNG".into(), 1), ("b.png".into(), 1)]);
        let loaded = folder.load(4).unwrap();
        assert_eq!(loaded.len(), 3);
        assert_eq!((loaded[0].0.height(), loaded[0].1), (4, 0));
        assert!((loaded[0].0.rgb(0, 0)[0] - 0.9).abs() < 1.0 / 255.0);

        // The same bytes elsewhere: the same fingerprint; one byte changed: another.
        let print = folder.fingerprint().unwrap();
        let copy = dir.path().join("copy");
        for f in folder.files() {
            let to = copy.join(f.path.strip_prefix(&root).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&f.path, to).unwrap();
        }
        assert_eq!(ImageFolder::open(&copy).unwrap().fingerprint().unwrap(), print);
        write(&copy.join("tern/b.png"), [0.2, 0.2, 0.21]);
        assert_ne!(ImageFolder::open(&copy).unwrap().fingerprint().unwrap(), print);
    }

    #[test]
    fn bad_folders_are_named() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("one/a.png"), [0.5; 3]);
        let error = ImageFolder::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("at least two") && error.contains(&dir.path().display().to_string()), "{error}");
        std::fs::create_dir_all(dir.path().join("two")).unwrap();
        let error = ImageFolder::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("`two` has no .png"), "{error}");
        std::fs::write(dir.path().join("two/broken.jpg"), "no").unwrap();
        let error = format!("{:#}", ImageFolder::open(dir.path()).unwrap().load(4).unwrap_err());
        assert!(error.contains("broken.jpg"), "{error}");
    }
}
