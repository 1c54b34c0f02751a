//! `--set key.path=value`: a grid file changed from the command line, as Hydra
//! users know it. `models.bert.checkpoint=DIR` sets `checkpoint` in the
//! `[[models]]` entry named `bert` (an entry may also be picked by its index,
//! `models.0`); `datasets.sst2.limits.train=8000` reaches into an inline table.
//! A value is read as TOML (`8000`, `0.1`, `true`, `["a", "b"]`, `"text"`), and
//! as a plain string when it is not TOML (`DIR`, `hf://org/name`).
//! `~KEY` deletes, as in Hydra: `~datasets.imdb` drops that `[[datasets]]`
//! entry (run a sweep on SST-2 alone), `~datasets.sst2.limits` a key.
//!
//! The overrides are written into the file's text (format kept, through
//! toml_edit), and the result is validated exactly as a file is: an override
//! goes into every cache key just as if it were written in the file. A
//! validation error on a line the overrides wrote names the override; one on a
//! line of the file names the file's own line.
//!
//! `--with FILE` writes a grid fragment over the grid the same way, one
//! override per key it sets: `[[datasets]]` entries by `name`, as `extends`
//! merges them, so one file can say "SST-2 and IMDB from these local copies"
//! for every grid (an entry the grid does not have is left out).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use toml_edit::{DocumentMut, Item, Table, Value};

/// One `--set KEY=VALUE` or `--set ~KEY`.
#[derive(Debug, Clone)]
pub struct Override {
    /// As given on the command line, for messages.
    pub text: String,
    path: Vec<String>,
    action: Action,
    /// From a `--with` fragment: an entry the grid lacks is left out, not an error.
    only_if_present: bool,
}

#[derive(Debug, Clone)]
enum Action {
    Set(Value),
    Delete,
}

impl FromStr for Override {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let dotted = |key: &str| -> Result<Vec<String>, String> {
            let path: Vec<String> = key.trim().split('.').map(|s| s.trim().to_string()).collect();
            if path.iter().any(String::is_empty) {
                return Err(format!("--set {text}: `{key}` is not a dotted key such as models.bert.checkpoint"));
            }
            Ok(path)
        };
        if let Some(key) = text.trim_start().strip_prefix('~') {
            if key.contains('=') {
                return Err(format!("--set {text}: `~KEY` deletes a key and takes no value"));
            }
            return Ok(Override {
                text: text.to_string(),
                path: dotted(key)?,
                action: Action::Delete,
                only_if_present: false,
            });
        }
        let (key, value) = text.split_once('=').ok_or_else(|| {
            format!("--set {text}: expected KEY=VALUE (e.g. models.bert.checkpoint=DIR) or ~KEY (e.g. ~datasets.imdb)")
        })?;
        let path = dotted(key)?;
        let value = value.trim();
        // TOML when it parses as TOML; `DIR` or `hf://org/name` are strings.
        let value = value.parse::<Value>().unwrap_or_else(|_| Value::from(value));
        Ok(Override {
            text: text.to_string(),
            path,
            action: Action::Set(value.decorated(" ", "")),
            only_if_present: false,
        })
    }
}

impl Override {
    /// Sets `path` to `value`; `text` says where it comes from in messages.
    pub fn setting(path: &[&str], value: Value, text: String) -> Override {
        Override {
            text,
            path: path.iter().map(|p| p.to_string()).collect(),
            action: Action::Set(value.decorated(" ", "")),
            only_if_present: false,
        }
    }
}

/// The overrides a `--with` fragment stands for: one per value it sets,
/// `[[datasets]]` / `[[models]]` entries addressed by their `name`.
pub fn from_fragment(file: &Path) -> Result<Vec<Override>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("--with {}: {e}", file.display()))?;
    let document: DocumentMut = text.parse().map_err(|e| format!("--with {}: {e}", file.display()))?;
    let mut out = Vec::new();
    flatten(document.as_table(), &mut Vec::new(), file, &mut out)?;
    Ok(out)
}

fn flatten(table: &Table, at: &mut Vec<String>, file: &Path, out: &mut Vec<Override>) -> Result<(), String> {
    for (key, item) in table.iter() {
        if at.is_empty() && matches!(key, "extends" | "name") {
            return Err(format!(
                "--with {}: `{key}` belongs to the grid, not to a fragment written over it",
                file.display()
            ));
        }
        at.push(key.to_string());
        match item {
            Item::Table(inner) => flatten(inner, at, file, out)?,
            Item::ArrayOfTables(entries) => {
                for entry in entries.iter() {
                    let Some(name) = entry.get("name").and_then(Item::as_str) else {
                        return Err(format!(
                            "--with {}: every `[[{}]]` entry names the grid's entry it changes with `name`",
                            file.display(),
                            at.join(".")
                        ));
                    };
                    at.push(name.to_string());
                    let mut keys = entry.clone();
                    keys.remove("name");
                    let before = out.len();
                    flatten(&keys, at, file, out)?;
                    for o in &mut out[before..] {
                        o.only_if_present = true;
                    }
                    at.pop();
                }
            }
            Item::Value(value) => out.push(Override {
                text: format!("{}={} (from {})", at.join("."), value.clone().decorated("", ""), file.display()),
                path: at.clone(),
                action: Action::Set(value.clone().decorated(" ", "")),
                only_if_present: false,
            }),
            Item::None => {}
        }
        at.pop();
    }
    Ok(())
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Override {
    /// The dotted key it sets or deletes.
    pub fn key(&self) -> String {
        self.path.join(".")
    }

    /// The last key of the path, which the written line starts with.
    fn leaf(&self) -> &str {
        self.path.last().map(String::as_str).unwrap_or_default()
    }
}

/// The file's text with every override written in, or a sentence naming the
/// override that cannot be placed (an entry that does not exist, a key below a
/// value). `text` must already be valid TOML.
pub fn apply(text: &str, file: &Path, overrides: &[Override]) -> Result<String, String> {
    let mut document: DocumentMut = text.parse().map_err(|e| format!("{}: {e}", file.display()))?;
    for setting in overrides {
        place(document.as_item_mut(), &setting.path, setting, file)?;
    }
    Ok(document.to_string())
}

fn place(item: &mut Item, path: &[String], setting: &Override, file: &Path) -> Result<(), String> {
    let Some((key, rest)) = path.split_first() else { unreachable!("paths are never empty") };
    let done = setting.path.len() - path.len();
    let at = || setting.path[..done].join(".");
    match item {
        Item::ArrayOfTables(entries) => {
            let names: Vec<String> =
                entries.iter().filter_map(|t| t.get("name").and_then(Item::as_str).map(String::from)).collect();
            if setting.only_if_present && !names.iter().any(|n| n == key) {
                return Ok(());
            }
            let index = match key.parse::<usize>() {
                Ok(i) if i < entries.len() => i,
                _ => names.iter().position(|n| n == key).ok_or_else(|| {
                    format!(
                        "--set {setting}: {} has no `{}` entry named `{key}` (it has: {})",
                        file.display(),
                        at(),
                        names.join(", ")
                    )
                })?,
            };
            if rest.is_empty() {
                return match setting.action {
                    Action::Delete => {
                        entries.remove(index);
                        Ok(())
                    }
                    Action::Set(_) => {
                        Err(format!("--set {setting}: `{}.{key}` is a whole entry; set one of its keys", at()))
                    }
                };
            }
            let entry = entries.get_mut(index).expect("index checked");
            place_in_table(entry, rest, setting, file)
        }
        Item::Table(table) => place_in_table(table, path, setting, file),
        Item::Value(Value::InlineTable(table)) => {
            if rest.is_empty() {
                match &setting.action {
                    Action::Set(new) => {
                        let value = keeping_decor(table.get(key), new);
                        table.insert(key, value);
                    }
                    Action::Delete => {
                        table.remove(key).ok_or_else(|| missing(setting, file))?;
                    }
                }
                return Ok(());
            }
            if matches!(setting.action, Action::Delete) && !table.contains_key(key) {
                return Err(missing(setting, file));
            }
            let child = table.entry(key).or_insert_with(|| Value::InlineTable(Default::default()));
            let mut child_item = Item::Value(child.clone());
            place(&mut child_item, rest, setting, file)?;
            *child = child_item.into_value().map_err(|_| format!("--set {setting}: cannot write `{key}`"))?;
            Ok(())
        }
        _ => Err(format!("--set {setting}: `{}` is a value, not a table", at())),
    }
}

fn place_in_table(table: &mut Table, path: &[String], setting: &Override, file: &Path) -> Result<(), String> {
    let (key, rest) = path.split_first().expect("paths are never empty");
    let new = match &setting.action {
        Action::Delete if rest.is_empty() => {
            table.remove(key).ok_or_else(|| missing(setting, file))?;
            return Ok(());
        }
        // Nothing to delete below a table the file lacks.
        Action::Delete if !table.contains_key(key) => return Err(missing(setting, file)),
        Action::Delete => None,
        Action::Set(new) => Some(new),
    };
    if let (true, Some(new)) = (rest.is_empty(), new) {
        if matches!(table.get(key), Some(Item::Table(_) | Item::ArrayOfTables(_))) {
            return Err(format!("--set {setting}: `{key}` is a table; set one of its keys"));
        }
        let value = keeping_decor(table.get(key).and_then(Item::as_value), new);
        table.insert(key, Item::Value(value));
        return Ok(());
    }
    // A table the file does not have yet: a dotted key in the entry (`training.max_steps = …`).
    let child = table.entry(key).or_insert_with(|| {
        let mut new = Table::new();
        new.set_dotted(true);
        Item::Table(new)
    });
    place(child, rest, setting, file)
}

fn missing(setting: &Override, file: &Path) -> String {
    format!("--set {setting}: {} has no `{}` to delete", file.display(), setting.path.join("."))
}

/// The new value, with the spacing and trailing comment of the one it replaces.
fn keeping_decor(old: Option<&Value>, new: &Value) -> Value {
    let mut value = new.clone();
    if let Some(old) = old {
        *value.decor_mut() = old.decor().clone();
    }
    value
}

/// For each line of `edited`, the line of `original` it is (1-based), or
/// `None` for a line the overrides wrote: a longest common subsequence of lines.
pub fn line_origins(original: &str, edited: &str) -> Vec<Option<usize>> {
    let (a, b): (Vec<&str>, Vec<&str>) = (original.lines().collect(), edited.lines().collect());
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut origins = vec![None; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            origins[j] = Some(i + 1);
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    origins
}

/// The overrides a written line comes from: those whose key the line sets,
/// else all of them.
pub fn written_by<'a>(line: &str, overrides: &'a [Override]) -> Vec<&'a Override> {
    let line = line.trim_start().trim_start_matches('[');
    let matching: Vec<&Override> =
        overrides.iter().filter(|o| line.starts_with(o.leaf()) || line.contains(&format!(" {} =", o.leaf()))).collect();
    if matching.is_empty() { overrides.iter().collect() } else { matching }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"name = "g"

[[datasets]]
name = "sst2"
train = "sst2/train.parquet"
limits = { train = 100 }

[[models]]
name = "bert"
architecture = "bert"

[models.training]
max_steps = 10 # short
"#;

    fn set(settings: &[&str]) -> Result<String, String> {
        let overrides: Vec<Override> = settings.iter().map(|s| s.parse().unwrap()).collect();
        apply(FILE, Path::new("g.toml"), &overrides)
    }

    #[test]
    fn values_are_toml_or_plain_strings() {
        let value = |text: &str| match text.parse::<Override>().unwrap().action {
            Action::Set(value) => value,
            Action::Delete => panic!("{text} is not a deletion"),
        };
        assert_eq!(value("models.bert.checkpoint=/data/minilm").as_str(), Some("/data/minilm"));
        assert_eq!(value("datasets.sst2.limits.train=8000").as_integer(), Some(8000));
        assert_eq!(value(r#"attribution.methods=["gradp-l2", "random"]"#).as_array().map(|a| a.len()), Some(2));
        assert!(matches!("~datasets.imdb".parse::<Override>().unwrap().action, Action::Delete));
        assert!("~datasets.imdb=1".parse::<Override>().unwrap_err().contains("takes no value"));
        assert!("models.bert".parse::<Override>().unwrap_err().contains("KEY=VALUE"));
        assert!("models..x=1".parse::<Override>().unwrap_err().contains("dotted key"));
    }

    #[test]
    fn entries_by_name_inline_tables_and_new_keys() {
        let text = set(&[
            "models.bert.checkpoint=DIR",
            "datasets.sst2.limits.train=8000",
            "datasets.0.limits.test=50",
            "models.bert.training.max_steps=99",
            "models.bert.training.patience=5",
        ])
        .unwrap();
        let value: toml::Table = toml::from_str(&text).unwrap();
        let model = &value["models"][0];
        assert_eq!(model["checkpoint"].as_str(), Some("DIR"));
        assert_eq!(model["training"]["max_steps"].as_integer(), Some(99));
        assert_eq!(model["training"]["patience"].as_integer(), Some(5));
        let limits = &value["datasets"][0]["limits"];
        assert_eq!(limits["train"].as_integer(), Some(8000));
        assert_eq!(limits["test"].as_integer(), Some(50));
        // The file's comment and layout survive.
        assert!(text.contains("# short"), "{text}");
    }

    #[test]
    fn tilde_deletes_entries_and_keys() {
        const TWO: &str = "name = \"g\"\n\n[[datasets]]\nname = \"sst2\"\nlimits = { train = 100, test = 5 }\n\n[[datasets]]\nname = \"imdb\"\n\n[models.training]\nmax_steps = 10\npatience = 3\n";
        let apply_all = |settings: &[&str]| {
            let overrides: Vec<Override> = settings.iter().map(|s| s.parse().unwrap()).collect();
            apply(TWO, Path::new("g.toml"), &overrides)
        };
        let text = apply_all(&["~datasets.imdb", "~datasets.sst2.limits.test", "~models.training.patience"]).unwrap();
        let value: toml::Table = toml::from_str(&text).unwrap();
        let datasets = value["datasets"].as_array().unwrap();
        assert_eq!(datasets.len(), 1, "{text}");
        assert_eq!(datasets[0]["name"].as_str(), Some("sst2"));
        assert_eq!(datasets[0]["limits"].as_table().map(|t| t.len()), Some(1), "{text}");
        assert!(value["models"]["training"].get("patience").is_none(), "{text}");
        assert!(value["models"]["training"].get("max_steps").is_some(), "{text}");
        // By index too, and a deleted entry's name is gone for later overrides.
        let text = apply_all(&["~datasets.0"]).unwrap();
        assert!(!text.contains("sst2") && text.contains("imdb"), "{text}");
        let error = apply_all(&["~datasets.imdb", "datasets.imdb.train=x"]).unwrap_err();
        assert!(error.contains("no `datasets` entry named `imdb`"), "{error}");
        // Nothing to delete: a sentence naming the override.
        for absent in ["~models.training.warmup_share", "~erasure.ratios", "~datasets.sst2.limits.validation"] {
            let error = apply_all(&[absent]).unwrap_err();
            assert!(error.contains(&format!("--set {absent}")) && error.contains("to delete"), "{error}");
        }
    }

    #[test]
    fn a_table_the_file_lacks_is_created() {
        let text = set(&["erasure.ratios=[0.1, 0.5]"]).unwrap();
        let value: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(value["erasure"]["ratios"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn impossible_places_are_sentences_naming_the_override() {
        let error = set(&["models.roberta.checkpoint=DIR"]).unwrap_err();
        assert!(error.contains("--set models.roberta.checkpoint=DIR") && error.contains("bert"), "{error}");
        let error = set(&["name.x=1"]).unwrap_err();
        assert!(error.contains("`name` is a value"), "{error}");
        let error = set(&["models.bert=1"]).unwrap_err();
        assert!(error.contains("whole entry"), "{error}");
        let error = set(&["models.bert.training=1"]).unwrap_err();
        assert!(error.contains("is a table"), "{error}");
    }

    #[test]
    fn lines_of_the_file_keep_their_numbers() {
        let edited = set(&["models.bert.checkpoint=DIR"]).unwrap();
        let origins = line_origins(FILE, &edited);
        let written: Vec<&str> =
            edited.lines().zip(&origins).filter(|(_, o)| o.is_none()).map(|(line, _)| line).collect();
        assert_eq!(written, vec!["checkpoint = \"DIR\""]);
        let line_of = |needle: &str| edited.lines().position(|l| l.starts_with(needle)).unwrap();
        assert_eq!(origins[line_of("max_steps")], Some(13));
    }
}
