//! AWS's shared config files, which `object_store` does not read: the keys
//! `aws configure` writes to `~/.aws/credentials`, and the region in
//! `~/.aws/config`, for the profile `AWS_PROFILE` names (else `default`).
//! The environment wins over the files, as with AWS's own tools; the keys
//! are handed to the client and never written anywhere.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a profile gives.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
}

/// Where the files are: `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`,
/// else under `~/.aws/`.
fn files(env: &dyn Fn(&str) -> Option<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env("HOME").map(|h| Path::new(&h).join(".aws"));
    let credentials =
        env("AWS_SHARED_CREDENTIALS_FILE").map(PathBuf::from).or_else(|| home.clone().map(|h| h.join("credentials")));
    let config = env("AWS_CONFIG_FILE").map(PathBuf::from).or_else(|| home.map(|h| h.join("config")));
    (credentials, config)
}

/// The profile's settings from the files, for what the environment does not set.
pub fn from_files(env: &dyn Fn(&str) -> Option<String>) -> Profile {
    let name = env("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
    let (credentials, config) = files(env);
    let read = |path: Option<PathBuf>| path.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let keys = section(&read(credentials), &name);
    // In `config`, a profile other than the default is `[profile NAME]`.
    let config_name = if name == "default" { name.clone() } else { format!("profile {name}") };
    let settings = section(&read(config), &config_name);
    let unset = |var: &str| env(var).is_none_or(|v| v.is_empty());
    // Keys come whole from one place: the environment's, if it has a key.
    let from_file = |key: &str| keys.get(key).cloned().filter(|_| unset("AWS_ACCESS_KEY_ID"));
    Profile {
        access_key_id: from_file("aws_access_key_id"),
        secret_access_key: from_file("aws_secret_access_key"),
        session_token: from_file("aws_session_token"),
        region: settings
            .get("region")
            .or_else(|| keys.get("region"))
            .cloned()
            .filter(|_| unset("AWS_REGION") && unset("AWS_DEFAULT_REGION")),
    }
}

/// The `key = value` lines of `[name]` in an INI text (`#` and `;` start comments).
fn section(text: &str, name: &str) -> HashMap<String, String> {
    let mut found = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = header.trim() == name;
            continue;
        }
        if inside && let Some((key, value)) = line.split_once('=') {
            found.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
# written by aws configure
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = secret/default

[lab]
aws_access_key_id=AKIALAB
aws_secret_access_key=secret/lab
aws_session_token = token
";
    const CONFIG: &str = "\
[default]
region = eu-west-1

[profile lab]
region = us-east-2
";

    fn with_files(vars: &[(&str, &str)]) -> Profile {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
        std::fs::write(dir.path().join(".aws/credentials"), CREDENTIALS).unwrap();
        std::fs::write(dir.path().join(".aws/config"), CONFIG).unwrap();
        let home = dir.path().display().to_string();
        let env = |name: &str| match name {
            "HOME" => Some(home.clone()),
            _ => vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()),
        };
        from_files(&env)
    }

    #[test]
    fn the_default_profile_and_a_named_one_are_read() {
        let default = with_files(&[]);
        assert_eq!(default.access_key_id.as_deref(), Some("AKIADEFAULT"));
        assert_eq!(default.secret_access_key.as_deref(), Some("secret/default"));
        assert_eq!(default.session_token, None);
        assert_eq!(default.region.as_deref(), Some("eu-west-1"));
        let lab = with_files(&[("AWS_PROFILE", "lab")]);
        assert_eq!(lab.access_key_id.as_deref(), Some("AKIALAB"));
        assert_eq!(lab.session_token.as_deref(), Some("token"));
        assert_eq!(lab.region.as_deref(), Some("us-east-2"), "`[profile lab]` in config");
    }

    #[test]
    fn the_environment_wins_and_missing_files_give_nothing() {
        let profile = with_files(&[("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_REGION", "ap-south-1")]);
        assert_eq!(profile.access_key_id, None, "the environment's key stands");
        assert_eq!(profile.secret_access_key, None, "and is not mixed with the file's secret");
        assert_eq!(profile.region, None);
        let nothing = from_files(&|name: &str| (name == "HOME").then(|| "/nonexistent".to_string()));
        assert_eq!(nothing, Profile::default());
    }
}
