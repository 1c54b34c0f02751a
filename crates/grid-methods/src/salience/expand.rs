//! Brace expansion for method config names, as the paper writes them:
//! `grad{p,l}-{l1,l2,mean}` → `gradp-l1, gradp-l2, …, gradl-mean` (left to right,
//! first group outermost). Groups do not nest.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("unbalanced `{{` or `}}` in `{0}`")]
    Unbalanced(String),
    #[error("empty alternative in `{0}`")]
    EmptyAlternative(String),
    #[error("nested braces are not supported in `{0}`")]
    Nested(String),
}

pub fn expand(pattern: &str) -> Result<Vec<String>, ExpandError> {
    let mut results = vec![String::new()];
    let mut rest = pattern;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                results.iter_mut().for_each(|r| r.push_str(rest));
                rest = "";
            }
            Some(i) if rest.as_bytes()[i] == b'}' => return Err(ExpandError::Unbalanced(pattern.into())),
            Some(open) => {
                let prefix = &rest[..open];
                let after = &rest[open + 1..];
                let close = after.find('}').ok_or_else(|| ExpandError::Unbalanced(pattern.into()))?;
                let group = &after[..close];
                if group.contains('{') {
                    return Err(ExpandError::Nested(pattern.into()));
                }
                let alternatives: Vec<&str> = group.split(',').map(str::trim).collect();
                if alternatives.iter().any(|a| a.is_empty()) {
                    return Err(ExpandError::EmptyAlternative(pattern.into()));
                }
                results = results
                    .into_iter()
                    .flat_map(|r| alternatives.iter().map(move |a| format!("{r}{prefix}{a}")))
                    .collect();
                rest = &after[close + 1..];
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_in_order() {
        assert_eq!(expand("grad{p,l}-{l1,mean}").unwrap(), vec!["gradp-l1", "gradp-mean", "gradl-l1", "gradl-mean"]);
        assert_eq!(expand("random").unwrap(), vec!["random"]);
        assert_eq!(expand("{a}").unwrap(), vec!["a"]);
    }

    #[test]
    fn rejects_malformed() {
        assert!(matches!(expand("grad{p,l"), Err(ExpandError::Unbalanced(_))));
        assert!(matches!(expand("gradp}"), Err(ExpandError::Unbalanced(_))));
        assert!(matches!(expand("grad{p,}"), Err(ExpandError::EmptyAlternative(_))));
        assert!(matches!(expand("a{b{c}}"), Err(ExpandError::Nested(_))));
    }
}
