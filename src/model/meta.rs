//! A run's metadata: `KEY=VALUE` pairs the user attaches to a run
//! (`--meta commit=abc123 --meta branch=main`), stored with it and shown,
//! filtered and exported beside it. Keys are short words of letters,
//! digits, `_`, `-` and `.`; values are printable text up to
//! [`VALUE_MAX`] bytes; a run has at most [`KEYS_MAX`] keys, each once.
//! The checks live here, once; the command line turns their refusals into
//! one-line bad input.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most keys one run may carry.
pub(crate) const KEYS_MAX: usize = 64;
/// Longest key, in bytes.
pub(crate) const KEY_MAX: usize = 64;
/// Longest value, in bytes (1 KiB).
pub(crate) const VALUE_MAX: usize = 1024;

/// What a key may hold, as the refusals say it.
pub(crate) const KEY_ALLOWED: &str = "1 to 64 of letters, digits, '_', '-' and '.'";

/// Why `--meta` (or a filter on it) is refused: one line naming the key
/// and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MetaError {
    #[error("--meta given {0} times: at most {KEYS_MAX} keys per run are allowed")]
    TooMany(usize),
    #[error("--meta {0} given twice: each key may be given once per run")]
    Twice(String),
    #[error("--meta with an empty key: a key is {KEY_ALLOWED}")]
    EmptyKey,
    #[error("--meta key \"{head}...\" is {len} bytes: a key is {KEY_ALLOWED}")]
    KeyTooLong { head: String, len: usize },
    #[error("--meta key {key:?} holds {c:?}: a key is {KEY_ALLOWED}")]
    KeyChar { key: String, c: char },
    #[error("--meta {0:?} has no value: expected KEY=VALUE (e.g. commit=abc123)")]
    NoValue(String),
    #[error(transparent)]
    Value(#[from] super::text::TextError),
}

/// A run's metadata, ordered by key. Stored and printed as a JSON object;
/// a run stored before kdelta kept metadata reads back empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct RunMeta(pub(crate) BTreeMap<String, String>);

impl RunMeta {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The pairs, checked as a whole: at most [`KEYS_MAX`] keys, none twice.
    /// Each pair is checked by [`pair`] before it gets here.
    pub(crate) fn from_pairs(pairs: &[(String, String)]) -> Result<RunMeta, MetaError> {
        if pairs.len() > KEYS_MAX {
            return Err(MetaError::TooMany(pairs.len()));
        }
        let mut m = BTreeMap::new();
        for (k, v) in pairs {
            if m.insert(k.clone(), v.clone()).is_some() {
                return Err(MetaError::Twice(k.clone()));
            }
        }
        Ok(RunMeta(m))
    }

    /// `branch=main commit=abc123`: every pair, by key, on one line.
    pub(crate) fn compact(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The JSON object stored in the `meta` column (`{}` when empty).
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "{}".into())
    }

    /// The stored column read back: absent (a run stored before metadata)
    /// or unreadable reads as empty, never as an error.
    pub(crate) fn from_json(s: Option<&str>) -> RunMeta {
        s.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
    }
}

/// A key: non-empty, at most [`KEY_MAX`] bytes of ASCII letters, digits,
/// `_`, `-` and `.` (so it needs no quoting in a shell, a CSV cell or a
/// JSON path).
pub(crate) fn key(k: &str) -> Result<(), MetaError> {
    if k.is_empty() {
        return Err(MetaError::EmptyKey);
    }
    if k.len() > KEY_MAX {
        let head: String = k.chars().take(24).filter(|c| !c.is_control()).collect();
        return Err(MetaError::KeyTooLong { head, len: k.len() });
    }
    if let Some(c) = k.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(MetaError::KeyChar { key: k.to_string(), c });
    }
    Ok(())
}

/// A value: at most [`VALUE_MAX`] bytes of printable text (a newline would
/// split the one-line listings that show it).
pub(crate) fn value(k: &str, v: &str) -> Result<(), MetaError> {
    Ok(super::text::check_free_text(&format!("--meta {k}"), v, VALUE_MAX)?)
}

/// `KEY=VALUE`, split at the first `=` (the value may hold more), both sides checked.
pub(crate) fn pair(s: &str) -> Result<(String, String), MetaError> {
    let Some((k, v)) = s.split_once('=') else {
        key(s)?;
        return Err(MetaError::NoValue(s.to_string()));
    };
    key(k)?;
    value(k, v)?;
    Ok((k.to_string(), v.to_string()))
}

/// A filter on runs' metadata (`runs --meta KEY=VALUE`, or `--meta KEY`:
/// the run has the key, whatever its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MetaFilter {
    pub(crate) key: String,
    pub(crate) value: Option<String>,
}

impl MetaFilter {
    pub(crate) fn parse(s: &str) -> Result<MetaFilter, MetaError> {
        match s.split_once('=') {
            Some(_) => pair(s).map(|(key, v)| MetaFilter { key, value: Some(v) }),
            None => key(s).map(|()| MetaFilter { key: s.to_string(), value: None }),
        }
    }

    pub(crate) fn keeps(&self, m: &RunMeta) -> bool {
        match (&self.value, m.get(&self.key)) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(want), Some(got)) => want == got,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[&str]) -> Result<RunMeta, MetaError> {
        let p: Result<Vec<_>, MetaError> = list.iter().map(|s| pair(s)).collect();
        RunMeta::from_pairs(&p?)
    }

    #[test]
    fn pairs_split_at_the_first_equals_sign() {
        assert_eq!(pair("commit=abc123").unwrap(), ("commit".into(), "abc123".into()));
        assert_eq!(pair("kernel_build=CONFIG_X=y").unwrap().1, "CONFIG_X=y");
        assert_eq!(pair("note=").unwrap().1, "", "an empty value is a value");
        assert_eq!(pair("a.b-c_D9=x y").unwrap().0, "a.b-c_D9");
    }

    #[test]
    fn bad_keys_say_what_is_allowed() {
        for (bad, says) in [
            ("=x", "empty key"),
            ("commit", "has no value"),
            ("com mit=x", "holds ' '"),
            ("k\u{e9}y=x", "holds '\u{e9}'"),
            ("a/b=x", "holds '/'"),
            ("k\ny=x", "holds '\\n'"),
        ] {
            let e = pair(bad).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{bad:?}: {e}");
            if says != "has no value" {
                assert!(e.contains(KEY_ALLOWED), "{e}");
            }
        }
        let long = format!("{}=x", "k".repeat(KEY_MAX + 1));
        assert!(pair(&long).unwrap_err().to_string().contains("65 bytes"));
        assert!(pair(&format!("{}=x", "k".repeat(KEY_MAX))).is_ok());
    }

    #[test]
    fn values_are_bounded_and_printable() {
        assert!(pair(&format!("k={}", "v".repeat(VALUE_MAX))).is_ok());
        let e = pair(&format!("k={}", "v".repeat(VALUE_MAX + 1))).unwrap_err().to_string();
        assert!(e.contains("1025 bytes") && e.contains("at most 1024"), "{e}");
        assert!(pair("k=a\nb").unwrap_err().to_string().contains("U+000A"));
    }

    #[test]
    fn a_run_has_each_key_once_and_at_most_64() {
        let e = pairs(&["commit=a", "branch=b", "commit=c"]).unwrap_err().to_string();
        assert_eq!(e, "--meta commit given twice: each key may be given once per run");
        let many: Vec<String> = (0..=KEYS_MAX).map(|i| format!("k{i}=v")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(pairs(&refs[..KEYS_MAX]).is_ok());
        assert!(pairs(&refs).unwrap_err().to_string().contains("at most 64 keys"));
    }

    #[test]
    fn filters_match_a_value_or_the_key() {
        let m = pairs(&["commit=abc", "branch=main"]).unwrap();
        assert_eq!(m.compact(), "branch=main commit=abc");
        assert!(MetaFilter::parse("commit=abc").unwrap().keeps(&m));
        assert!(!MetaFilter::parse("commit=ab").unwrap().keeps(&m));
        assert!(MetaFilter::parse("branch").unwrap().keeps(&m));
        assert!(!MetaFilter::parse("tag").unwrap().keeps(&m));
        assert!(!MetaFilter::parse("tag").unwrap().keeps(&RunMeta::default()));
        assert!(MetaFilter::parse("a b").is_err() && MetaFilter::parse("=x").is_err());
    }

    #[test]
    fn stored_json_reads_back_and_old_rows_read_empty() {
        let m = pairs(&["commit=abc", "x=\"q\"\\"]).unwrap();
        assert_eq!(RunMeta::from_json(Some(&m.to_json())), m);
        assert_eq!(RunMeta::from_json(None), RunMeta::default());
        assert_eq!(RunMeta::from_json(Some("not json")), RunMeta::default());
        assert_eq!(RunMeta::default().to_json(), "{}");
    }

    proptest::proptest! {
        /// Nothing panics, whatever the input; an accepted pair round-trips
        /// through the stored JSON and its text form.
        #[test]
        fn any_accepted_pair_round_trips(s in "\\PC{0,80}|[a-z.=_-]{0,20}=\\PC{0,40}") {
            if let Ok((k, v)) = pair(&s) {
                proptest::prop_assert_eq!(format!("{k}={v}"), s.clone());
                proptest::prop_assert!(key(&k).is_ok());
                let m = RunMeta::from_pairs(&[(k.clone(), v.clone())]).unwrap();
                proptest::prop_assert_eq!(RunMeta::from_json(Some(&m.to_json())), m.clone());
                proptest::prop_assert_eq!(pair(&m.compact()).unwrap(), (k.clone(), v.clone()));
                let f = MetaFilter::parse(&s).unwrap();
                proptest::prop_assert!(f.keeps(&m));
            }
            let _ = MetaFilter::parse(&s);
        }
    }
}
