//! The README and the guide under `docs/`: every link resolves inside the
//! repository, to a file that exists and, with `#anchor`, to one of its
//! headings (GitHub's anchors: lower case, punctuation dropped, spaces to `-`).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The text outside ``` fences.
fn prose(text: &str) -> String {
    let mut in_code = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn anchors(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    prose(&text)
        .lines()
        .filter_map(|l| l.trim_start_matches('#').strip_prefix(' ').filter(|_| l.starts_with('#')))
        .map(|title| {
            let kept: String = title
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .collect();
            kept.replace(' ', "-")
        })
        .collect()
}

/// Every `](target)` of a markdown text, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if !target.contains(char::is_whitespace) {
                out.push(target.to_string());
            }
        }
    }
    out
}

#[test]
fn every_link_of_the_readme_and_the_guide_resolves_inside_the_repository() {
    let mut pages = vec![root().join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    assert!(guide.len() >= 10, "the guide has a page per topic: {guide:?}");
    pages.extend(guide);
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in link_targets(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            let Ok(file) = file.canonicalize() else {
                broken.push(format!("{}: {target}: no such file", page.display()));
                continue;
            };
            if !file.starts_with(root().canonicalize().unwrap()) {
                broken.push(format!("{}: {target}: outside the repository", page.display()));
            } else if !anchor.is_empty() && !anchors(&file).iter().any(|a| a == anchor) {
                broken.push(format!("{}: {target}: no such heading", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_page_read_in_five_minutes() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let words = readme.split_whitespace().count();
    assert!(words < 1_300, "README.md has {words} words; the manual belongs in docs/");
    let opening: Vec<&str> = readme.lines().filter(|l| l.starts_with("cargo ")).take(2).collect();
    assert_eq!(
        opening,
        [
            "cargo run --release -- run experiments/quickstart.toml   # (1) the quickstart, end to end, on CPU",
            "cargo test --workspace                                   # (2) the tests (every crate of the workspace)"
        ]
    );
}

/// Every grid in `experiments/` loads (its `extends` merged, every key
/// validated): a committed experiment stays in step with the code.
#[test]
fn every_committed_grid_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut grids: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("experiments/ is readable")
        .map(|entry| entry.expect("an entry of experiments/").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    grids.sort();
    assert!(grids.len() >= 30, "experiments/ has its grids: {grids:?}");
    let failures: Vec<String> = grids
        .iter()
        .filter_map(|path| grid_pipeline::spec::Grid::load(path).err().map(|e| format!("{}: {e}", path.display())))
        .collect();
    assert!(failures.is_empty(), "grids that do not load:\n{}", failures.join("\n"));
}
