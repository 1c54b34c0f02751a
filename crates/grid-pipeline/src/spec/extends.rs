//! `extends = "base.toml"`: a grid written as changes to another grid.
//!
//! A grid that attributes new methods on another grid's models must declare the
//! same datasets, shortcuts and models word for word, or its cache keys differ
//! and it silently trains again. With `extends` it names that grid and writes
//! only what differs:
//!
//! - tables merge key by key, at any depth (`[attribution]`, `[models.training]`,
//!   an inline `limits = { … }`);
//! - `[[datasets]]` and `[[models]]` entries merge with the base's entry of the
//!   same `name`; an entry with a new name is added;
//! - any other value (a number, a string, a list such as `methods`) replaces
//!   the base's;
//! - `name` is never inherited: without one, the grid is named after its file.
//!
//! The base may extend another grid in turn; its path is relative to the file
//! that names it. The merged text is then read exactly as a grid file is, so
//! every cache key is what it would be had the base been copied in. Every line
//! of the merged text remembers the file and line it came from, so an error
//! names the line as written.

use std::path::{Path, PathBuf};

use toml_edit::{ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use super::overrides::line_origins;
use super::{SpecError, line_column};

/// The key that names a base grid.
const KEY: &str = "extends";

/// Where a line of the composed text was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    pub line: usize,
}

/// A grid file's text with its `extends` chain merged in.
#[derive(Debug, Clone)]
pub struct Composed {
    pub text: String,
    /// For each line of `text`, where it was written; `None` for a line the
    /// merge wrote itself (a table header the files spell differently).
    origins: Vec<Option<Origin>>,
}

impl Composed {
    /// Where line `line` (1-based) of the composed text was written.
    pub fn origin(&self, line: usize) -> Option<&Origin> {
        self.origins.get(line.checked_sub(1)?).and_then(Option::as_ref)
    }
}

/// Reads `path` and every grid it extends, and merges them.
pub fn compose(path: &Path) -> Result<Composed, SpecError> {
    compose_chain(path, &mut Vec::new())
}

fn compose_chain(path: &Path, chain: &mut Vec<PathBuf>) -> Result<Composed, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read { path: path.into(), source })?;
    let invalid = |offset: usize, message: String| {
        let (line, column) = line_column(&text, offset);
        SpecError::Invalid { path: path.into(), line, column, message }
    };
    // Syntax first, with the toml crate's messages (toml_edit's are terser).
    if let Err(e) = toml::from_str::<toml::Table>(&text) {
        return Err(invalid(e.span().map_or(0, |s| s.start), e.message().trim_end().into()));
    }
    let parsed = toml_edit::Document::parse(text.as_str()).map_err(|e| invalid(0, format!("{e}")))?;
    // Spans exist only before the document becomes editable.
    let span = parsed.get(KEY).and_then(Item::span).unwrap_or(0..0);
    let mut document = parsed.into_mut();
    let own = || Composed {
        origins: (1..=text.lines().count()).map(|line| Some(Origin { path: path.into(), line })).collect(),
        text: text.clone(),
    };
    let Some(item) = document.remove(KEY) else { return Ok(own()) };
    let Some(base) = item.as_str() else {
        return Err(invalid(span.start, format!("`{KEY}` names the grid file this one builds on, as a string")));
    };
    let base_path = path.parent().unwrap_or(Path::new("")).join(base);
    let identity = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    chain.push(identity(path));
    if chain.contains(&identity(&base_path)) {
        return Err(invalid(
            span.start,
            format!("`{KEY} = \"{base}\"` comes back to this file: grids cannot extend each other in a cycle"),
        ));
    }
    if !base_path.is_file() {
        return Err(invalid(span.start, format!("`{KEY}`: no grid file at {}", base_path.display())));
    }
    let base = compose_chain(&base_path, chain)?;
    chain.pop();

    let mut merged: DocumentMut = base.text.parse().expect("a composed grid is TOML");
    // A name belongs to one grid: the extending one is named by its own key or file.
    merged.remove("name");
    merge_table(merged.as_table_mut(), document.as_table());
    let mut position = 0;
    renumber(merged.as_table_mut(), &mut position);
    let merged = merged.to_string();

    let from_base = line_origins(&base.text, &merged);
    let from_file = line_origins(&text, &merged);
    // A dotted key merged into a base table loses its prefix
    // (`training.max_steps = 0` becomes `max_steps = 0`): found by its ending.
    let by_ending = |written: &str| {
        let written = written.trim();
        let line = text.lines().position(|l| !written.is_empty() && l.trim_end().ends_with(written))?;
        Some(Origin { path: path.into(), line: line + 1 })
    };
    let origins = from_base
        .iter()
        .zip(&from_file)
        .zip(merged.lines())
        .map(|((in_base, in_file), written)| match (in_base, in_file) {
            (Some(line), _) => base.origin(*line).cloned(),
            (None, Some(line)) => Some(Origin { path: path.into(), line: *line }),
            (None, None) => by_ending(written),
        })
        .collect();
    Ok(Composed { text: merged, origins })
}

/// Writes `changes` into `base`: tables merge, entries of an array of tables
/// merge by `name`, anything else replaces.
fn merge_table(base: &mut Table, changes: &Table) {
    for (key, change) in changes.iter() {
        match (base.get_mut(key), change) {
            (Some(Item::Table(into)), Item::Table(from)) => merge_table(into, from),
            (Some(Item::Table(into)), Item::Value(Value::InlineTable(from))) => {
                merge_table(into, &from.clone().into_table())
            }
            (Some(Item::Value(Value::InlineTable(into))), Item::Table(from)) => {
                merge_inline(into, &from.clone().into_inline_table())
            }
            (Some(Item::Value(Value::InlineTable(into))), Item::Value(Value::InlineTable(from))) => {
                merge_inline(into, from)
            }
            (Some(Item::ArrayOfTables(into)), Item::ArrayOfTables(from)) => merge_entries(into, from),
            // The new value with its own comment: the base's was about the old one.
            (Some(old), _) => *old = change.clone(),
            (None, _) => {
                base.insert(key, change.clone());
            }
        }
    }
}

fn merge_inline(base: &mut InlineTable, changes: &InlineTable) {
    for (key, change) in changes.iter() {
        match (base.get_mut(key), change) {
            (Some(Value::InlineTable(into)), Value::InlineTable(from)) => merge_inline(into, from),
            _ => {
                base.insert(key, change.clone());
            }
        }
    }
}

fn merge_entries(base: &mut ArrayOfTables, changes: &ArrayOfTables) {
    for change in changes.iter() {
        let name = change.get("name").and_then(Item::as_str);
        let existing =
            name.and_then(|name| base.iter_mut().find(|e| e.get("name").and_then(Item::as_str) == Some(name)));
        match existing {
            Some(entry) => merge_table(entry, change),
            None => base.push(change.clone()),
        }
    }
}

/// Numbers the tables in the order they nest, so each one is written under its
/// parent (toml_edit writes tables by position, and merged-in tables carry the
/// positions of the file they came from).
fn renumber(table: &mut Table, position: &mut isize) {
    table.set_position(*position);
    *position += 1;
    for (_, item) in table.iter_mut() {
        match item {
            Item::Table(child) => renumber(child, position),
            Item::ArrayOfTables(entries) => entries.iter_mut().for_each(|entry| renumber(entry, position)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of grid files, removed on drop.
    struct Files(PathBuf);

    impl Files {
        fn new(files: &[(&str, &str)]) -> Files {
            let dir = std::env::temp_dir().join(format!(
                "grid-extends-{}-{}",
                std::process::id(),
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(name), text).unwrap();
            }
            Files(dir)
        }
        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const BASE: &str = r#"name = "base"
metrics = ["precision", "rank", "agreement"]

[[datasets]]
name = "sst2"
train = "sst2/train.parquet"
test = "sst2/test.parquet"
limits = { train = 8000, test = 500 }

[[models]]
name = "lstm"
architecture = "bilstm"

[models.training]
max_steps = 10000 # long enough
seed = 3

[[models]]
name = "bert"
architecture = "bert"

[attribution]
methods = ["gradp-l2", "random"]
sample = 1000
"#;

    fn table(composed: &Composed) -> toml::Table {
        toml::from_str(&composed.text).unwrap_or_else(|e| panic!("{e}\n{}", composed.text))
    }

    #[test]
    fn a_file_without_extends_is_itself() {
        let files = Files::new(&[("base.toml", BASE)]);
        let composed = compose(&files.path("base.toml")).unwrap();
        assert_eq!(composed.text, BASE);
        assert_eq!(composed.origin(3), Some(&Origin { path: files.path("base.toml"), line: 3 }));
    }

    #[test]
    fn tables_merge_entries_merge_by_name_and_values_replace() {
        let child = r#"extends = "base.toml"
metrics = ["precision"]

[[datasets]]
name = "sst2"
limits = { test = 50 }

[[models]]
name = "lstm"
training.max_steps = 20000

[[models]]
name = "roberta"
architecture = "bert"

[attribution]
methods = ["ig{p,l}-zero-100"]
"#;
        let files = Files::new(&[("base.toml", BASE), ("child.toml", child)]);
        let composed = compose(&files.path("child.toml")).unwrap();
        let value = table(&composed);
        assert!(value.get("name").is_none(), "the base's name is not inherited:\n{}", composed.text);
        assert!(value.get(KEY).is_none());
        assert_eq!(value["metrics"].as_array().unwrap().len(), 1);
        let dataset = &value["datasets"].as_array().unwrap()[0];
        assert_eq!(dataset["train"].as_str(), Some("sst2/train.parquet"));
        assert_eq!(dataset["limits"]["train"].as_integer(), Some(8000));
        assert_eq!(dataset["limits"]["test"].as_integer(), Some(50));
        let models = value["models"].as_array().unwrap();
        let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["lstm", "bert", "roberta"]);
        assert_eq!(models[0]["architecture"].as_str(), Some("bilstm"));
        assert_eq!(models[0]["training"]["max_steps"].as_integer(), Some(20000));
        assert_eq!(models[0]["training"]["seed"].as_integer(), Some(3));
        assert!(models[1].get("training").is_none(), "bert's entry gained lstm's training:\n{}", composed.text);
        let attribution = &value["attribution"];
        assert_eq!(attribution["methods"].as_array().unwrap().len(), 1);
        assert_eq!(attribution["sample"].as_integer(), Some(1000));
    }

    #[test]
    fn every_line_remembers_its_file_and_line() {
        let child = "extends = \"base.toml\"\nname = \"child\"\n\n[attribution]\nsample = 200\n";
        let files = Files::new(&[("base.toml", BASE), ("child.toml", child)]);
        let composed = compose(&files.path("child.toml")).unwrap();
        let line_of = |needle: &str| composed.text.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
        let at = |needle: &str| composed.origin(line_of(needle)).cloned().unwrap();
        assert_eq!(at("sample"), Origin { path: files.path("child.toml"), line: 5 });
        assert_eq!(at("name = \"child\""), Origin { path: files.path("child.toml"), line: 2 });
        assert_eq!(at("max_steps"), Origin { path: files.path("base.toml"), line: 15 });

        // A dotted key written into the base's table.
        let child = "extends = \"base.toml\"\n\n[[models]]\nname = \"lstm\"\ntraining.max_steps = 7\n";
        std::fs::write(files.path("child.toml"), child).unwrap();
        let composed = compose(&files.path("child.toml")).unwrap();
        assert!(composed.text.contains("\nmax_steps = 7"), "{}", composed.text);
        assert_eq!(at_in(&composed, "max_steps"), Origin { path: files.path("child.toml"), line: 5 });
    }

    fn at_in(composed: &Composed, needle: &str) -> Origin {
        let line = composed.text.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
        composed.origin(line).cloned().unwrap()
    }

    #[test]
    fn chains_resolve_relative_to_the_naming_file() {
        let middle = "extends = \"../base.toml\"\n\n[attribution]\nsample = 200\n";
        let top = "extends = \"sub/middle.toml\"\n\n[attribution]\nmethods = [\"random\"]\n";
        let files = Files::new(&[("base.toml", BASE), ("top.toml", top)]);
        std::fs::create_dir_all(files.path("sub")).unwrap();
        std::fs::write(files.path("sub/middle.toml"), middle).unwrap();
        let composed = compose(&files.path("top.toml")).unwrap();
        let value = table(&composed);
        assert_eq!(value["attribution"]["sample"].as_integer(), Some(200));
        assert_eq!(value["attribution"]["methods"].as_array().unwrap().len(), 1);
        assert_eq!(value["models"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn bad_extends_are_errors_at_the_key() {
        let files = Files::new(&[
            ("a.toml", "name = \"a\"\nextends = \"b.toml\"\n"),
            ("b.toml", "extends = \"a.toml\"\n"),
            ("missing.toml", "\nextends = \"nowhere.toml\"\n"),
            ("number.toml", "extends = 3\n"),
            ("broken.toml", "extends = \"syntax.toml\"\n"),
            ("syntax.toml", "[attribution\n"),
        ]);
        let error = |name: &str| compose(&files.path(name)).unwrap_err().to_string();
        let e = error("a.toml");
        assert!(e.contains("b.toml:1:11:") && e.contains("cycle"), "{e}");
        let e = error("missing.toml");
        assert!(e.contains("missing.toml:2:11:") && e.contains("nowhere.toml"), "{e}");
        let e = error("number.toml");
        assert!(e.contains("number.toml:1:11:") && e.contains("as a string"), "{e}");
        // A syntax error in the base names the base's line.
        let e = error("broken.toml");
        assert!(e.contains("syntax.toml:1:"), "{e}");
    }
}
