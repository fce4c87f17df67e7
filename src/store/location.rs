//! What a `--db` value (or `$KDELTA_DB`) names: a file path (SQLite) or a
//! `postgresql://` URL. Anything that starts like a URL (`scheme://`) is a
//! URL: one of a scheme kdelta does not keep results in is refused with one
//! line (exit 2), and no directory is ever made from it.

use crate::error::bad_input;
use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    File(PathBuf),
    /// The URL as given (the client parses it, options and all).
    Postgres(String),
}

/// The URL scheme `s` starts with (`scheme://`, RFC 3986's scheme letters),
/// if any.
pub fn scheme(s: &str) -> Option<&str> {
    let (head, _) = s.split_once("://")?;
    let mut chars = head.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))).then_some(head)
}

pub fn locate(db: &Path) -> Result<Location> {
    let Some(s) = db.to_str() else { return Ok(Location::File(db.to_path_buf())) };
    match scheme(s) {
        None => Ok(Location::File(db.to_path_buf())),
        Some(sc) if sc.eq_ignore_ascii_case("postgresql") || sc.eq_ignore_ascii_case("postgres") => Ok(Location::Postgres(s.to_string())),
        Some(sc) => Err(bad_input(format!(
            "--db {:?}: the scheme {sc:?} is not supported: give a file path (SQLite) or postgresql://USER@HOST[:PORT]/DBNAME",
            redact(s)
        ))),
    }
}

/// The URL with any password replaced by `***`, to print.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    let auth = match auth.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => auth.to_string(),
        },
        None => auth.to_string(),
    };
    // A password may also come as a query option.
    let tail = tail
        .split('&')
        .map(|kv| if kv.starts_with("password=") || kv.contains("?password=") { kv.split_once("password=").map(|(a, _)| format!("{a}password=***")).unwrap() } else { kv.to_string() })
        .collect::<Vec<_>>()
        .join("&");
    format!("{scheme}://{auth}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paths_urls_and_refusals() {
        assert_eq!(locate(Path::new("results.db")).unwrap(), Location::File("results.db".into()));
        assert_eq!(locate(Path::new("/a/b:c/d.db")).unwrap(), Location::File("/a/b:c/d.db".into()));
        assert_eq!(locate(Path::new("./x://y")).unwrap(), Location::File("./x://y".into()));
        let u = "postgresql://kd@127.0.0.1:55432/kdelta";
        assert_eq!(locate(Path::new(u)).unwrap(), Location::Postgres(u.into()));
        assert_eq!(locate(Path::new("postgres://h/db")).unwrap(), Location::Postgres("postgres://h/db".into()));
        for bad in ["mysql://kd@h/db", "sqlite:///tmp/x.db", "http://h/", "PG+x://a:secret@h/db"] {
            let e = locate(Path::new(bad)).unwrap_err();
            let m = e.to_string();
            assert!(crate::error::is_bad_input(&e) && !m.contains('\n') && m.contains("not supported"), "{m}");
            assert!(!m.contains("secret"), "{m}");
        }
    }

    #[test]
    fn passwords_are_never_printed() {
        assert_eq!(redact("postgresql://kd:pw@h:5/db?sslmode=require"), "postgresql://kd:***@h:5/db?sslmode=require");
        assert_eq!(redact("postgresql://kd@h/db?password=pw&sslmode=require"), "postgresql://kd@h/db?password=***&sslmode=require");
        assert_eq!(redact("postgresql:///db?host=/tmp"), "postgresql:///db?host=/tmp");
    }

    proptest! {
        /// Any value either is a file path, a PostgreSQL URL, or a one-line
        /// refusal; a value without `://` is always a path.
        #[test]
        fn every_value_is_classified(s in "\\PC{0,40}") {
            match locate(Path::new(&s)) {
                Ok(Location::File(p)) => prop_assert!(scheme(&s).is_none() && p == Path::new(&s)),
                Ok(Location::Postgres(u)) => prop_assert!(u.to_ascii_lowercase().starts_with("postgres")),
                Err(e) => prop_assert!(s.contains("://") && !e.to_string().contains('\n')),
            }
            if !s.contains("://") {
                prop_assert!(matches!(locate(Path::new(&s)), Ok(Location::File(_))));
            }
        }

        #[test]
        fn redacted_urls_lose_the_password(user in "[a-z]{1,8}", pw in "[A-Za-z0-9]{4,12}", host in "[a-z]{1,8}") {
            let r = redact(&format!("postgresql://{user}:{pw}@{host}/db"));
            let leaked = format!(":{pw}@");
            prop_assert!(!r.contains(&leaked));
        }
    }
}
