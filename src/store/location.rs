//! What a `--db` value (or `$KDELTA_DB`) names: a file path (SQLite) or a
//! `postgresql://` URL. Anything that starts like a URL (`scheme://`) is a
//! URL: one of a scheme kdelta does not keep results in is refused with one
//! line (exit 2), and no directory is ever made from it.

use crate::error::bad_input;
use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Location {
    File(PathBuf),
    /// The URL as given (the client parses it, options and all).
    Postgres(String),
}

/// The URL scheme `s` starts with (`scheme://`, RFC 3986's scheme letters),
/// if any.
pub(crate) fn scheme(s: &str) -> Option<&str> {
    let (head, _) = s.split_once("://")?;
    let mut chars = head.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .then_some(head)
}

pub(crate) fn locate(db: &Path) -> Result<Location> {
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

/// The URL with its password replaced by `***`, to print or to store.
///
/// Conservative by design: a password may hold `/`, `?`, `@`, `:` or
/// `%`-escapes, and the client takes the userinfo up to the first `@` while
/// a person may mean the last one. So everything from the first `:` of the
/// part after `scheme://` up to its last `@` goes (when there is an `@`), and
/// so does the value of every `password=` option (its key `%`-decoded, as the
/// client decodes it) up to the next `&`; where the two readings overlap,
/// both are hidden. Hiding too much costs a less precise message; hiding
/// too little would print the secret.
pub(crate) fn redact(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut pos = 0;
    for (a, b) in hidden(url) {
        out.push_str(&url[pos..a]);
        out.push_str("***");
        pos = b;
    }
    out.push_str(&url[pos..]);
    out
}

/// The text [`redact`] hides, as written and `%`-decoded: what a message
/// built from pieces of the URL must not show either.
pub(crate) fn secrets(url: &str) -> Vec<String> {
    let mut v = Vec::new();
    for (a, b) in hidden(url) {
        let raw = &url[a..b];
        v.push(String::from_utf8_lossy(&percent_decoded(raw)).into_owned());
        v.push(raw.to_string());
    }
    v.retain(|s| !s.is_empty());
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v
}

/// `msg` with every one of `secrets` replaced by `***`.
pub(crate) fn scrub(msg: &str, secrets: &[String]) -> String {
    secrets.iter().fold(msg.to_string(), |m, s| m.replace(s.as_str(), "***"))
}

/// The byte ranges of `url` to hide, sorted and disjoint.
fn hidden(url: &str) -> Vec<(usize, usize)> {
    let Some(at) = url.find("://") else { return Vec::new() };
    let body = at + 3;
    let rest = &url[body..];
    let mut hide: Vec<(usize, usize)> = Vec::new();
    if let Some(last_at) = rest.rfind('@') {
        if let Some(colon) = rest[..last_at].find(':') {
            hide.push((body + colon + 1, body + last_at));
        }
    }
    for (i, c) in url.char_indices().skip(body) {
        if c != '?' && c != '&' {
            continue;
        }
        let key_start = i + 1;
        let Some(eq) = url[key_start..].find(['=', '&', '?']) else { continue };
        if url.as_bytes()[key_start + eq] != b'='
            || !percent_decoded(&url[key_start..key_start + eq]).eq_ignore_ascii_case(b"password")
        {
            continue;
        }
        let value = key_start + eq + 1;
        let end = url[value..].find('&').map_or(url.len(), |e| value + e);
        hide.push((value, end));
    }
    hide.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in hide {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// `%XX` escapes decoded, as the PostgreSQL client decodes option names.
fn percent_decoded(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// One command-line argument with the password of any URL in it hidden
/// (`--db=postgresql://u:pw@h/db`, `postgresql://...`): what kdelta stores
/// as a run's command. An argument without `://` is returned as it is.
pub(crate) fn redact_arg(arg: &str) -> String {
    let Some(sep) = arg.find("://") else { return arg.to_string() };
    // The scheme's letters before `://`; the URL starts there.
    let start =
        arg[..sep].rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))).map_or(0, |i| i + 1);
    format!("{}{}", &arg[..start], redact(&arg[start..]))
}

/// A stored command line with the password of any URL in it hidden, for
/// runs stored before kdelta hid them: the line is split into words as a
/// shell would (kdelta stores it shell-quoted), each word redacted as
/// [`redact_arg`], and quoted again. A line without `://` is returned as
/// it is.
pub(crate) fn redact_command(cmd: &str) -> String {
    if !cmd.contains("://") {
        return cmd.to_string();
    }
    let mut words: Vec<String> = Vec::new();
    let (mut word, mut in_word, mut quoted) = (String::new(), false, false);
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if !quoted => {
                word.extend(chars.next());
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    let quote = |a: &str| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "_./=,:+@%^-".contains(c)) {
            a.to_string()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    words.iter().map(|w| quote(&redact_arg(w))).collect::<Vec<_>>().join(" ")
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
        assert_eq!(
            redact("postgresql://kd@h/db?password=pw&sslmode=require"),
            "postgresql://kd@h/db?password=***&sslmode=require"
        );
        assert_eq!(redact("postgresql:///db?host=/tmp"), "postgresql:///db?host=/tmp");
        // Passwords holding what ends a userinfo elsewhere, or escaped.
        assert_eq!(redact("postgresql://u:se/cr?et@h/db"), "postgresql://u:***@h/db");
        assert_eq!(redact("postgresql://u:a@b@h/db"), "postgresql://u:***@h/db");
        assert_eq!(redact("postgresql://u:p%40w@/db?host=/tmp"), "postgresql://u:***@/db?host=/tmp");
        assert_eq!(redact("postgresql://u@h/db?%70assword=x/y?z&a=1"), "postgresql://u@h/db?%70assword=***&a=1");
        assert_eq!(redact("postgresql://u@h/db?password=a@b"), "postgresql://u@h/db?password=***");
        assert_eq!(redact("postgresql://u@h:5/db?password=a@b"), "postgresql://u@h:***");
        assert_eq!(redact_arg("--db=postgresql://u:pw@h/db"), "--db=postgresql://u:***@h/db");
        assert_eq!(redact_arg("run"), "run");
        // Commands stored before passwords were hidden lose them when read.
        assert_eq!(
            redact_command("kdelta --db 'postgresql://u:p w@h/db' run lat.syscall"),
            "kdelta --db 'postgresql://u:***@h/db' run lat.syscall"
        );
        assert_eq!(
            redact_command("kdelta --db=postgres://u:pw@h/db run 'lat.sel*'"),
            "kdelta '--db=postgres://u:***@h/db' run 'lat.sel*'"
        );
        assert_eq!(redact_command("kdelta run 'lat.sel*'  x"), "kdelta run 'lat.sel*'  x");
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

        /// Whatever a password holds (`/ ? @ : & %`), given in the userinfo
        /// or as an option, no part of it is printed.
        #[test]
        fn no_part_of_any_password_is_printed(user in "[a-z]{1,8}", pw in "[!-~]{3,16}", host in "[a-z]{1,8}") {
            let pw = format!("ZQ{pw}QZ");
            let option = pw.replace('&', "%26");
            for url in [format!("postgresql://{user}:{pw}@{host}/db?sslmode=disable"), format!("postgresql://{user}@{host}/db?password={option}&sslmode=disable")] {
                let r = redact(&url);
                let a = redact_arg(&format!("--db={url}"));
                for shown in [&r, &a] {
                    prop_assert!(!shown.contains("ZQ") && !shown.contains("QZ"), "{url} -> {shown}");
                }
            }
        }
    }
}
