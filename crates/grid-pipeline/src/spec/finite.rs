//! Non-finite numbers anywhere in a grid file. TOML spells `nan` and `inf`,
//! and no key of a grid means either: a NaN threshold passes or fails every
//! check, a NaN rate trains a model of NaNs. Refused before anything else is
//! read, at the value's own line and column.

use std::ops::Range;

use toml_edit::{Item, Value};

/// The first float in `text` that is NaN or infinite: its span and dotted key.
/// `None` for a file without one, or one that does not parse (the typed
/// parse that follows reports that).
pub fn first_non_finite(text: &str) -> Option<(Range<usize>, String, f64)> {
    let document = toml_edit::Document::parse(text).ok()?;
    in_item(document.as_item(), &mut Vec::new())
}

fn in_item(item: &Item, path: &mut Vec<String>) -> Option<(Range<usize>, String, f64)> {
    match item {
        Item::Value(value) => in_value(value, path),
        Item::Table(table) => table.iter().find_map(|(key, item)| nested(path, key, |path| in_item(item, path))),
        // An entry of `[[models]]` / `[[datasets]]` by its name, as `--set` names it.
        Item::ArrayOfTables(tables) => tables.iter().enumerate().find_map(|(i, table)| {
            let name = table.get("name").and_then(Item::as_str).map_or_else(|| i.to_string(), str::to_string);
            nested(path, &name, |path| {
                table.iter().find_map(|(key, item)| nested(path, key, |path| in_item(item, path)))
            })
        }),
        Item::None => None,
    }
}

fn in_value(value: &Value, path: &mut Vec<String>) -> Option<(Range<usize>, String, f64)> {
    match value {
        Value::Float(f) if !f.value().is_finite() => Some((value.span()?, path.join("."), *f.value())),
        Value::Array(array) => {
            array.iter().enumerate().find_map(|(i, v)| nested(path, &i.to_string(), |path| in_value(v, path)))
        }
        Value::InlineTable(table) => table.iter().find_map(|(key, v)| nested(path, key, |path| in_value(v, path))),
        _ => None,
    }
}

fn nested<T>(path: &mut Vec<String>, key: &str, f: impl FnOnce(&mut Vec<String>) -> Option<T>) -> Option<T> {
    path.push(key.to_string());
    let found = f(path);
    path.pop();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nan_and_infinities_at_any_depth_with_their_key() {
        let text = "a = 1.5\n[t]\nx = [1.0, { y = -inf }]\n[[m]]\nz = 2\n[[m]]\nw = nan\n";
        let (span, key, value) = first_non_finite(text).unwrap();
        assert_eq!((key.as_str(), value), ("t.x.1.y", f64::NEG_INFINITY), "unnamed entries go by index");
        assert_eq!(&text[span], "-inf");
        let (span, key, value) = first_non_finite("[[m]]\nz = 2\n[[m]]\nname = 'b'\nw = nan\n").unwrap();
        assert_eq!((key.as_str(), value.is_nan()), ("m.b.w", true));
        assert_eq!(span.start, "[[m]]\nz = 2\n[[m]]\nname = 'b'\nw = ".len());
        assert_eq!(first_non_finite("a = 1e308\nb = [0.0, -2.5]\nc = 'nan'\n"), None);
        assert_eq!(first_non_finite("not toml = = ="), None);
    }
}
