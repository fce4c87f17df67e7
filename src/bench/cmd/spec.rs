//! The text side of `cmd`: `--cmd [NAME=]COMMAND` values into parameter
//! settings, a point's command with its `{placeholders}` filled, and the
//! words of a command run without a shell, split as a POSIX shell would.

use crate::model::Params;
use anyhow::{bail, Result};

/// The parameter holding the compared commands' names (or texts).
pub(crate) const CMD: &str = "cmd";
/// The parameter holding `NAME=COMMAND` lines for the named ones.
pub(crate) const COMMANDS: &str = "commands";
/// The value of a command parameter meaning "nothing" (no `--prepare`).
pub(crate) const NONE: &str = "none";

/// A `--cmd` value as (name, command): `fast=gzip -1 data` is named `fast`,
/// `Fast=...` `Fast`; a value is named when what comes before its first `=`
/// is a word of letters, digits, `_`, `-` and `.` starting with a letter,
/// unless it is all capitals, digits and `_` (`LANG=C sort data`: an
/// environment variable, by the convention for their names, assigned for
/// the shell), which leaves the value a command. A leading `=` says "no
/// name": `=x=1 true` is the command `x=1 true`.
pub(crate) fn named(v: &str) -> (Option<&str>, &str) {
    if let Some(rest) = v.strip_prefix('=') {
        return (None, rest);
    }
    match v.split_once('=') {
        Some((name, cmd)) if is_name(name) => (Some(name), cmd),
        _ => (None, v),
    }
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    let variable = s.chars().all(|x| x.is_ascii_uppercase() || x.is_ascii_digit() || x == '_');
    !variable
        && c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|x| x.is_ascii_alphanumeric() || "_-.".contains(x))
}

/// The settings a list of `--cmd` values stands for: `cmd` with one line per
/// command (its name, or its text when it has none) and, when any is named,
/// `commands` with a `NAME=COMMAND` line for each named one.
pub(crate) fn cmd_settings(values: &[String]) -> Result<Vec<(String, String)>> {
    let (mut names, mut lines) = (Vec::new(), Vec::new());
    for v in values {
        let (name, text) = named(v);
        if text.trim().is_empty() {
            bail!("--cmd {v:?}: the command is empty");
        }
        if text.contains('\n') {
            bail!("--cmd {v:?}: a command is one line (put a script in a file and run that)");
        }
        let label = name.unwrap_or(text).to_string();
        if names.contains(&label) {
            bail!("--cmd {v:?}: {label:?} is given twice");
        }
        if let Some(n) = name {
            lines.push(format!("{n}={text}"));
        }
        names.push(label);
    }
    let mut out = vec![(CMD.to_string(), names.join("\n"))];
    if !lines.is_empty() {
        out.push((COMMANDS.to_string(), lines.join("\n")));
    }
    Ok(out)
}

/// The settings [`cmd_settings`] makes of the `--cmd` values that `cmd` and
/// `commands` (its settings) stood for, with `name=text` put first: the
/// baseline's build beside the new one (`check --baseline-cmd`).
pub(crate) fn with_first(cmd: &str, commands: Option<&str>, name: &str, text: &str) -> Result<Vec<(String, String)>> {
    let named: Vec<&str> = commands.unwrap_or("").lines().collect();
    let mut values = vec![format!("{name}={text}")];
    for label in cmd.lines() {
        let line = named.iter().find(|l| l.strip_prefix(label).is_some_and(|r| r.starts_with('=')));
        values.push(line.map_or_else(|| format!("={label}"), |l| l.to_string()));
    }
    cmd_settings(&values)
}

/// `--cmd` values with hyperfine's `-n NAME` given in order: the first name
/// goes with the first command, and so on (fewer names leave the last
/// commands unnamed). A name is one `--cmd NAME=` allows; a command already
/// named, or more names than commands, is refused.
pub(crate) fn with_names(cmds: &[String], names: &[String]) -> Result<Vec<String>> {
    if names.len() > cmds.len() {
        bail!("{} --command-name (-n) for {} --cmd: one name per command, in order", names.len(), cmds.len());
    }
    let mut out = cmds.to_vec();
    for (c, n) in out.iter_mut().zip(names) {
        if !is_name(n) {
            bail!(
                "--command-name {n:?}: a name is letters, digits, _, - and . starting with a letter, not all capitals"
            );
        }
        if let (Some(old), _) = named(c) {
            bail!("--command-name {n:?}: --cmd {c:?} is already named {old:?}");
        }
        *c = format!("{n}={}", c.strip_prefix('=').unwrap_or(c));
    }
    Ok(out)
}

/// The command text of a point: its `cmd` looked up among the named
/// `commands`, else the value itself.
pub(crate) fn command_of(p: &Params) -> Result<String> {
    let v = p.str(CMD)?;
    let named = p.str(COMMANDS).unwrap_or(NONE).lines().find_map(|l| l.strip_prefix(v)?.strip_prefix('='));
    Ok(named.unwrap_or(v).to_string())
}

/// The name a point's command was given (`--cmd NAME=COMMAND`), if any.
pub(crate) fn name_of(p: &Params) -> Option<&str> {
    let v = p.str(CMD).ok()?;
    let listed = p.str(COMMANDS).unwrap_or(NONE).lines().any(|l| l.strip_prefix(v).is_some_and(|r| r.starts_with('=')));
    listed.then_some(v)
}

/// `text` with every `{NAME}` of a parameter not in `declared` replaced by
/// its value (`xz -T{t}` with `t=2`), as hyperfine's `--parameter-scan`.
pub(crate) fn fill(text: &str, p: &Params, declared: &[&str]) -> String {
    p.0.iter()
        .filter(|(k, _)| !declared.contains(&k.as_str()))
        .fold(text.to_string(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

/// Split a command into words as a POSIX shell does, without expanding
/// anything: blanks separate words; `'...'` keeps everything literally;
/// `"..."` keeps everything but `\` before `"`, `\`, `$` or a backquote;
/// `\` outside quotes keeps the next character. Unbalanced quotes are an error.
pub(crate) fn split_words(s: &str) -> Result<Vec<String>> {
    let (mut words, mut cur, mut inword) = (Vec::new(), String::new(), false);
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if inword {
                    words.push(std::mem::take(&mut cur));
                    inword = false;
                }
                continue;
            }
            '\'' => loop {
                match it.next() {
                    Some('\'') => break,
                    Some(x) => cur.push(x),
                    None => bail!("unbalanced single quote in {s:?}"),
                }
            },
            '"' => loop {
                match it.next() {
                    Some('"') => break,
                    Some('\\') => match it.next() {
                        Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                        Some(x) => cur.extend(['\\', x]),
                        None => bail!("unbalanced double quote in {s:?}"),
                    },
                    Some(x) => cur.push(x),
                    None => bail!("unbalanced double quote in {s:?}"),
                }
            },
            '\\' => match it.next() {
                Some(x) => cur.push(x),
                None => bail!("a trailing backslash in {s:?}"),
            },
            x => cur.push(x),
        }
        inword = true;
    }
    if inword {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params(kv: &[(&str, &str)]) -> Params {
        let mut p = Params::default();
        for (k, v) in kv {
            p.set(k, *v);
        }
        p
    }

    #[test]
    fn names_are_words_before_an_equals_sign_but_variables() {
        assert_eq!(named("fast=gzip -1 data"), (Some("fast"), "gzip -1 data"));
        assert_eq!(named("Fast=gzip -1 data"), (Some("Fast"), "gzip -1 data"));
        assert_eq!(named("gzipBest=gzip -9"), (Some("gzipBest"), "gzip -9"));
        assert_eq!(named("X-1=true"), (Some("X-1"), "true"));
        assert_eq!(named("LANG=C sort data"), (None, "LANG=C sort data"));
        assert_eq!(named("LC_ALL=C sort"), (None, "LC_ALL=C sort"));
        assert_eq!(named("A1=x true"), (None, "A1=x true"));
        assert_eq!(named("=x=1 true"), (None, "x=1 true"));
        assert_eq!(named("gzip -9"), (None, "gzip -9"));
        assert_eq!(named("a b=c"), (None, "a b=c"));
        assert_eq!(named("x1.v-2_a=true"), (Some("x1.v-2_a"), "true"));
    }

    #[test]
    fn the_named_commands_are_carried_not_shown() {
        assert!(crate::model::params::is_carried(COMMANDS));
        let s = cmd_settings(&["fast=gzip -1".into(), "best=gzip -9".into()]).unwrap();
        let p = params(&[("cmd", s[0].1.lines().next().unwrap()), ("commands", &s[1].1)]);
        assert_eq!(p.display(), "cmd=fast");
        assert_eq!(command_of(&p).unwrap(), "gzip -1");
    }

    #[test]
    fn the_baseline_s_build_goes_first_beside_named_and_unnamed_commands() {
        let s = cmd_settings(&["fast=gzip -1".into(), "gzip -9 f".into()]).unwrap();
        let got = with_first(&s[0].1, Some(&s[1].1), "baseline", "./old/gzip -1").unwrap();
        assert_eq!(got[0].1, "baseline\nfast\ngzip -9 f");
        assert_eq!(got[1].1, "baseline=./old/gzip -1\nfast=gzip -1");
        // One unnamed command: `commands` appears for the baseline alone.
        let got = with_first("make -j2", None, "baseline", "make -j1").unwrap();
        assert_eq!(got, [("cmd".into(), "baseline\nmake -j2".into()), ("commands".into(), "baseline=make -j1".into())]);
        // The name taken, an empty or a two-line baseline: refused.
        assert!(with_first("baseline", Some("baseline=x"), "baseline", "y").is_err());
        assert!(with_first("x", None, "baseline", " ").is_err());
        assert!(with_first("x", None, "baseline", "a\nb").is_err());
    }

    #[test]
    fn settings_name_each_command_once() {
        let s = cmd_settings(&["fast=gzip -1".into(), "gzip -9, then".into()]).unwrap();
        assert_eq!(s[0], ("cmd".to_string(), "fast\ngzip -9, then".to_string()));
        assert_eq!(s[1], ("commands".to_string(), "fast=gzip -1".to_string()));
        assert_eq!(cmd_settings(&["true".into()]).unwrap(), [("cmd".to_string(), "true".to_string())]);
        for bad in [&["".to_string()][..], &["x=  ".into()], &["a\nb".into()], &["true".into(), "true".into()]] {
            assert!(cmd_settings(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn placeholders_take_undeclared_parameters() {
        let p = params(&[("cmd", "fast"), ("commands", "fast=xz -T{t} -c {f}\nslow=xz -9"), ("t", "2"), ("f", "a b")]);
        let text = command_of(&p).unwrap();
        assert_eq!(text, "xz -T{t} -c {f}");
        assert_eq!(fill(&text, &p, &["cmd", "commands"]), "xz -T2 -c a b");
        // A declared parameter is not a placeholder; an unknown name stays.
        assert_eq!(fill("{cmd} {u}", &p, &["cmd"]), "{cmd} {u}");
        assert_eq!(command_of(&params(&[("cmd", "echo {x}")])).unwrap(), "echo {x}");
        // A name that only starts another's is not it.
        assert_eq!(command_of(&params(&[("cmd", "fa"), ("commands", "fast=x")])).unwrap(), "fa");
    }

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let w = |s: &str| split_words(s).unwrap();
        assert_eq!(w("  echo  a\tb "), ["echo", "a", "b"]);
        assert_eq!(w(r#"printf '%s x' "a \"b\" \n" c\ d"#), ["printf", "%s x", "a \"b\" \\n", "c d"]);
        assert_eq!(w("a''b \"\""), ["ab", ""]);
        assert!(w("").is_empty());
        for bad in ["echo 'x", "echo \"x", "echo x\\"] {
            assert!(split_words(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_named_cmd_flag_round_trips(name in "[a-z][A-Za-z0-9_.-]{0,8}", cmd in "[ -~]{1,30}") {
            prop_assume!(!cmd.trim().is_empty());
            let s = cmd_settings(&[format!("{name}={cmd}")]).unwrap();
            prop_assert_eq!(&s[0].1, &name);
            let p = params(&[("cmd", &s[0].1), ("commands", &s[1].1)]);
            prop_assert_eq!(command_of(&p).unwrap(), cmd);
        }

        #[test]
        fn any_flag_value_is_refused_or_found_again(v in "[ -~]{0,30}") {
            if let Ok(s) = cmd_settings(std::slice::from_ref(&v)) {
                let mut p = params(&[("cmd", &s[0].1)]);
                if let Some((_, c)) = s.get(1) {
                    p.set("commands", c.clone());
                }
                prop_assert_eq!(command_of(&p).unwrap(), named(&v).1);
            }
        }
    }
}
