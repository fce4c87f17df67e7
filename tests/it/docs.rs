//! The documentation against the binary: every relative link in README.md
//! and docs/*.md leads to a file (and a heading, when it names one), every
//! `kdelta COMMAND` a code block or code span names is a command, every
//! `--flag` after it is one that command takes, the Rust version the docs
//! claim is Cargo.toml's, and no table cell is a wall of text. Reads files
//! and runs `kdelta ... --help` once per command: fast.

use crate::common::assert_ok;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, as (path relative to the root, text).
fn docs() -> Vec<(PathBuf, String)> {
    let mut files = vec![PathBuf::from("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    more.sort();
    files.extend(more);
    files.into_iter().map(|f| (f.clone(), std::fs::read_to_string(root().join(&f)).unwrap())).collect()
}

/// A fenced code block: its language and lines.
struct Block {
    lang: String,
    lines: Vec<String>,
}

/// The fenced code blocks of a Markdown text, and its prose lines (outside
/// every block).
fn split(text: &str) -> (Vec<Block>, Vec<String>) {
    let (mut blocks, mut prose) = (Vec::new(), Vec::new());
    let mut open: Option<Block> = None;
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            Some(b) if fence => blocks.push(b),
            Some(mut b) => {
                b.lines.push(line.to_string());
                open = Some(b);
            }
            None if fence => {
                open = Some(Block { lang: line.trim_start().trim_start_matches('`').trim().to_string(), lines: vec![] })
            }
            None => prose.push(line.to_string()),
        }
    }
    (blocks, prose)
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces made `-`; a repeated one gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let (_, prose) = split(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose.iter().filter(|l| l.starts_with('#')) {
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    out
}

/// Every Markdown link target `](...)` in prose, code spans left out.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            in_code = !in_code;
        } else if !in_code && b[i] == b']' && b.get(i + 1) == Some(&b'(') {
            if let Some(end) = line[i + 2..].find(')') {
                out.push(line[i + 2..i + 2 + end].to_string());
            }
        }
        i += 1;
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for (file, text) in docs() {
        let (_, prose) = split(&text);
        for target in prose.iter().flat_map(|l| links(l)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest: PathBuf =
                if path.is_empty() { root().join(&file) } else { root().join(file.parent().unwrap()).join(path) };
            if !dest.exists() {
                bad.push(format!("{}: {target}: no such file", file.display()));
                continue;
            }
            if let (Some(a), true) = (anchor, dest.extension().is_some_and(|x| x == "md")) {
                let text = std::fs::read_to_string(&dest).unwrap();
                if !anchors(&text).contains(a) {
                    bad.push(format!("{}: {target}: no heading with anchor #{a}", file.display()));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found: is the parser broken?");
    assert!(bad.is_empty(), "broken links:\n  {}", bad.join("\n  "));
}

/// A command line the docs show: the command words after `kdelta` (or
/// `cargo run --release --`) and the `--flags` after them.
#[derive(Debug)]
struct Invocation {
    words: Vec<String>,
    flags: Vec<String>,
    at: String,
}

/// The `kdelta` command lines in `line`: each runs to the end of the line
/// or to a `|`, `;`, `&` or `)` outside quotes; what is inside quotes (a
/// `--cmd 'gzip -9'`) is not kdelta's.
fn invocations(line: &str, at: &str) -> Vec<Invocation> {
    let line = line.replace("\\|", "/");
    let mut out = Vec::new();
    let starts: Vec<usize> = line
        .match_indices("kdelta ")
        .map(|(i, _)| i)
        .filter(|&i| {
            i == 0 || !line.as_bytes()[i - 1].is_ascii_alphanumeric() && !b"-_.".contains(&line.as_bytes()[i - 1])
        })
        .map(|i| i + "kdelta ".len())
        .chain(line.match_indices("cargo run --release -- ").map(|(i, s)| i + s.len()))
        .collect();
    for start in starts {
        let mut rest = String::new();
        // A quote, or a `$(...)` (closed by `)`), holds what is not kdelta's.
        let mut quote: Option<char> = None;
        for c in line[start..].chars() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '(' => quote = Some(')'),
                None if "|;&)#".contains(c) => break,
                None => rest.push(c),
            }
        }
        let mut words = Vec::new();
        let mut flags = Vec::new();
        for tok in rest.split_whitespace() {
            let tok = tok.trim_start_matches(['[', '(']);
            let word =
                !tok.is_empty() && !tok.starts_with('-') && tok.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            if flags.is_empty() && words.len() < 2 && word {
                words.push(tok.to_string());
                continue;
            }
            let mut s = tok;
            while let Some(i) = s.find("--") {
                let name: String = s[i + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                    .collect();
                if !name.is_empty() {
                    flags.push(format!("--{name}"));
                }
                s = &s[i + 2 + name.len()..];
            }
            if words.is_empty() && flags.is_empty() {
                break; // `kdelta COMMAND`, `kdelta's`: a placeholder or prose
            }
        }
        out.push(Invocation { words, flags, at: at.to_string() });
    }
    out
}

/// A shell line without its comment (a `#` after a space, outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && prev.is_whitespace() => return &line[..i],
            None => {}
        }
        prev = c;
    }
    line
}

/// Every command line in code: fenced blocks of shell (only the `$ ` lines
/// when a block has any), and code spans in prose.
fn all_invocations() -> Vec<Invocation> {
    let mut out = Vec::new();
    for (file, text) in docs() {
        let (blocks, prose) = split(&text);
        for b in blocks.iter().filter(|b| ["", "sh", "bash", "console", "shell", "ini"].contains(&b.lang.as_str())) {
            let prompted = b.lines.iter().any(|l| l.starts_with("$ "));
            let mut joined = Vec::new();
            let mut cur = String::new();
            for l in &b.lines {
                if prompted && cur.is_empty() && !l.starts_with("$ ") {
                    continue;
                }
                match l.strip_suffix('\\') {
                    Some(head) => cur.push_str(head),
                    None => {
                        cur.push_str(l);
                        joined.push(std::mem::take(&mut cur));
                    }
                }
            }
            for l in joined.iter().map(|l| without_comment(l)) {
                out.extend(invocations(l, &format!("{}: {l}", file.display())));
            }
        }
        for line in &prose {
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 && (span.starts_with("kdelta ") || span.starts_with("cargo run --release -- ")) {
                    out.extend(invocations(span, &format!("{}: `{span}`", file.display())));
                }
            }
        }
    }
    out
}

/// `kdelta WORDS... --help`, None when that is not a command.
fn help(words: &[String]) -> Option<String> {
    let bin = env!("CARGO_BIN_EXE_kdelta");
    let out = Command::new(bin).args(words).arg("--help").env("NO_COLOR", "1").output().unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The subcommand names a help text lists under `Commands:`.
fn subcommands(help: &str) -> BTreeSet<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Whether a help text lists `flag` (`--runs`, not `--runs-x`).
fn takes(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(
        |(i, _)| !matches!(help[i + flag.len()..].chars().next(), Some(c) if c.is_ascii_alphanumeric() || c == '-'),
    )
}

#[test]
fn every_command_and_flag_in_the_docs_exists() {
    let found = all_invocations();
    assert!(found.len() > 30, "only {} command lines found: is the parser broken?", found.len());
    let top = help(&[]).expect("kdelta --help");
    let commands = subcommands(&top);
    let mut cache: BTreeMap<Vec<String>, Option<String>> = BTreeMap::new();
    let mut bad = Vec::new();
    for inv in &found {
        let mut text = top.clone();
        if let Some(first) = inv.words.first() {
            if !commands.contains(first) {
                bad.push(format!("{}: no command {first:?}", inv.at));
                continue;
            }
            let h = cache.entry(vec![first.clone()]).or_insert_with(|| help(&inv.words[..1])).clone();
            let Some(h) = h else {
                bad.push(format!("{}: `kdelta {first} --help` fails", inv.at));
                continue;
            };
            text = h;
            // A second word that is a subcommand of the first: its flags too.
            if let Some(second) = inv.words.get(1).filter(|w| subcommands(&text).contains(*w)) {
                let key = vec![first.clone(), second.clone()];
                if let Some(h2) = cache.entry(key.clone()).or_insert_with(|| help(&key)).clone() {
                    text.push_str(&h2);
                }
            }
        }
        for flag in &inv.flags {
            if !takes(&text, flag) {
                bad.push(format!("{}: {} takes no {flag}", inv.at, inv.words.first().map_or("kdelta", |w| w)));
            }
        }
    }
    assert!(bad.is_empty(), "the docs name what kdelta does not take:\n  {}", bad.join("\n  "));
}

#[test]
fn the_rust_version_claimed_is_cargo_tomls() {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let version = toml
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("rust-version in Cargo.toml");
    let mut claims = 0;
    for (file, text) in docs() {
        for (n, line) in text.lines().enumerate() {
            if let Some(i) = line.find("Rust toolchain (") {
                claims += 1;
                let claimed: String =
                    line[i + "Rust toolchain (".len()..].chars().take_while(|c| *c != ' ' && *c != '+').collect();
                assert_eq!(
                    claimed,
                    version,
                    "{}:{}: claims Rust {claimed}, Cargo.toml {version}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
    assert!(claims >= 1, "no \"Rust toolchain (\" claim found in the docs");
}

#[test]
fn no_table_cell_is_a_wall_of_text() {
    // fidelity.md and mem.md are measurement reports whose tables predate
    // this rule.
    let mut bad = Vec::new();
    for (file, text) in docs() {
        if ["docs/fidelity.md", "docs/mem.md"].contains(&file.to_str().unwrap()) {
            continue;
        }
        for (n, line) in text.lines().enumerate().filter(|(_, l)| l.starts_with('|')) {
            for cell in line.replace("\\|", "/").split('|') {
                if cell.chars().count() > 320 {
                    bad.push(format!("{}:{}: a cell of {} characters", file.display(), n + 1, cell.chars().count()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "table cells too long to read:\n  {}", bad.join("\n  "));
}

#[test]
fn the_parsers_see_what_they_should() {
    let inv = invocations("$ kdelta check cmd --cmd 'sh ./x --nope' --runs 6 --against base; echo --not", "t");
    assert_eq!(inv.len(), 1);
    assert_eq!(inv[0].words, ["check", "cmd"]);
    assert_eq!(inv[0].flags, ["--cmd", "--runs", "--against"]);
    let inv = invocations("kdelta doctor [--json] [--apply\\|--reset]", "t");
    assert_eq!(inv[0].flags, ["--json", "--apply", "--reset"]);
    assert_eq!(without_comment("kdelta run x  # kdelta 'y' --z"), "kdelta run x  ");
    let inv = invocations("kdelta run lat --meta commit=$(git rev-parse --short HEAD) --label x", "t");
    assert_eq!(inv[0].flags, ["--meta", "--label"]);
    assert!(anchors("# A b\n## Is it `x`? y\n## A b\n").contains("is-it-x-y"));
    assert_eq!(without_comment("kdelta run x  # kdelta 'y' --z"), "kdelta run x  ");
    let inv = invocations("kdelta run lat --meta commit=$(git rev-parse --short HEAD) --label x", "t");
    assert_eq!(inv[0].flags, ["--meta", "--label"]);
    assert!(anchors("# A b\n## A b\n").contains("a-b-1"));
    assert_eq!(links("see [a](b.md#c) and `[x](y)`"), ["b.md#c"]);
    assert!(takes("  --runs <N>", "--runs") && !takes("  --runs-x", "--runs"));
}

#[test]
fn man_all_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let bin = env!("CARGO_BIN_EXE_kdelta");
    let out = Command::new(bin).args(["man", "--all"]).arg(&out_dir).output().unwrap();
    assert_ok(&out);
    let mut pages: Vec<String> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    pages.sort();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("wrote {} manual pages", pages.len())), "{said}");
    // Every command `kdelta --help` lists, and the nested ones.
    let top = help(&[]).unwrap();
    for c in subcommands(&top).iter().filter(|c| *c != "help") {
        assert!(pages.contains(&format!("kdelta-{c}.1")), "no page for {c}: {pages:?}");
    }
    for p in ["kdelta.1", "kdelta-loadfile-generate.1"] {
        assert!(pages.contains(&p.to_string()), "no {p}: {pages:?}");
    }
    // A command's page carries its own flags, with their help.
    let run = std::fs::read_to_string(out_dir.join("kdelta-run.1")).unwrap();
    assert!(run.contains(".TH kdelta-run 1"), "{}", &run[..run.len().min(300)]);
    for flag in ["\\-\\-config", "\\-\\-param", "\\-\\-runs"] {
        assert!(run.contains(flag), "kdelta-run.1 lacks {flag}");
    }
    // Without --all: the one page on stdout, as before.
    let one = Command::new(bin).arg("man").output().unwrap();
    assert!(one.status.success() && String::from_utf8_lossy(&one.stdout).contains(".TH kdelta"));
    // A DIR that is a file: bad input, one line, exit 2, the file untouched.
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let bad = Command::new(bin).args(["man", "--all"]).arg(&file).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("not a directory") && err.trim().lines().count() == 1, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}
