//! [`ExtraTable`]s in text, Markdown, CSV and JSON: the same four formats as
//! every other report, for tables whose cells a caller built (a study).

use super::extra::ExtraTable;
use super::Format;
use anyhow::{Context, Result};
use unicode_width_lite::width;

pub(crate) fn render(tables: &[ExtraTable], format: Format) -> Result<String> {
    Ok(match format {
        Format::Text => text(tables),
        Format::Markdown => markdown(tables),
        Format::Csv => csv(tables),
        Format::Json => {
            let s = serde_json::to_string_pretty(tables).context("writing the tables as JSON")?;
            crate::model::text::json_escape_bidi(&s).into_owned() + "\n"
        }
        Format::Asciidoc | Format::Orgmode => return Err(super::history::unsupported(format)),
    })
}

/// Cells that hold a figure are right-aligned (they start with a digit, a
/// sign or `<`), and so is `-`, no figure, in every column but the last.
fn numeric(cell: &str) -> bool {
    cell.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '+' || c == '-' || c == '<')
}

fn text(tables: &[ExtraTable]) -> String {
    let mut out = String::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for l in &t.before {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(&t.title);
        out.push('\n');
        let n = t.header.len();
        let mut w: Vec<usize> = t.header.iter().map(|h| width(h)).collect();
        for r in &t.rows {
            for (j, c) in r.iter().enumerate().take(n) {
                w[j] = w[j].max(width(c));
            }
        }
        let line = |cells: &[String], head: bool| -> String {
            let mut s = String::new();
            for (j, c) in cells.iter().enumerate().take(n) {
                let pad = " ".repeat(w[j] - width(c));
                if j > 0 {
                    s.push_str("  ");
                }
                if !head && j > 0 && j + 1 < n && numeric(c) {
                    s.push_str(&pad);
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&pad);
                }
            }
            s.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&t.header, true));
        out.push_str(&(w.iter().map(|&x| "-".repeat(x)).collect::<Vec<_>>().join("  ") + "\n"));
        for r in &t.rows {
            out.push_str(&line(r, false));
        }
        for l in &t.after {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

fn md_esc(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(tables: &[ExtraTable]) -> String {
    let mut out = String::new();
    for t in tables {
        for l in &t.before {
            out.push_str(&format!("{}\n", md_esc(l)));
        }
        if !t.before.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("**{}**\n\n", md_esc(&t.title)));
        out.push_str(&format!("| {} |\n", t.header.iter().map(|h| md_esc(h)).collect::<Vec<_>>().join(" | ")));
        out.push_str(&format!(
            "|{}|\n",
            t.header
                .iter()
                .enumerate()
                .map(|(j, _)| if j == 0 { ":---" } else { "---:" })
                .collect::<Vec<_>>()
                .join("|")
        ));
        for r in &t.rows {
            out.push_str(&format!("| {} |\n", r.iter().map(|c| md_esc(c)).collect::<Vec<_>>().join(" | ")));
        }
        out.push('\n');
        for l in &t.after {
            out.push_str(&format!("- {}\n", md_esc(l)));
        }
        out.push('\n');
    }
    out
}

/// RFC 4180 quoting.
fn q(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV document: a `table` column naming each row's table, then the header.
fn csv(tables: &[ExtraTable]) -> String {
    let mut out = String::new();
    let header = tables.first().map(|t| t.header.clone()).unwrap_or_default();
    out.push_str(
        &(std::iter::once("table".to_string())
            .chain(header.iter().cloned())
            .map(|c| q(&c))
            .collect::<Vec<_>>()
            .join(",")
            + "\n"),
    );
    for t in tables {
        for r in &t.rows {
            out.push_str(
                &(std::iter::once(t.title.as_str())
                    .chain(r.iter().map(String::as_str))
                    .map(q)
                    .collect::<Vec<_>>()
                    .join(",")
                    + "\n"),
            );
        }
    }
    out
}

/// Display width without a dependency: every char one column, except
/// combining marks (none in our tables) and East Asian wide ranges, two.
pub(super) mod unicode_width_lite {
    pub(in crate::report) fn width(s: &str) -> usize {
        s.chars().map(|c| if is_wide(c) { 2 } else { 1 }).sum()
    }
    fn is_wide(c: char) -> bool {
        matches!(c as u32, 0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<ExtraTable> {
        vec![
            ExtraTable {
                title: "Table 1: latencies".into(),
                before: vec!["study x".into(), "here: A = up (cpus 0), B = smp2 (cpus 0-1)".into()],
                header: crate::study::tables::HEADER.map(String::from).to_vec(),
                rows: vec![
                    ["simple syscall", "1.10", "1.10", "+0.0%", "0.0512 us", "0.0514 us", "-0.4%", "yes"]
                        .map(String::from)
                        .to_vec(),
                    ["fork, exit", "190.8", "198.8", "-4.0%", "101.2 us", "unavailable", "-", "-"]
                        .map(String::from)
                        .to_vec(),
                    ["geometric mean", "-", "-", "-", "-", "-", "-0.4% (1 rows)", "-"].map(String::from).to_vec(),
                ],
                after: vec![
                    "direction agrees in 1 of 1 rows; differs in: none".into(),
                    "unavailable: fork, exit: \"quoted\" | piped".into(),
                ],
            },
            ExtraTable {
                title: "Table 2".into(),
                before: vec![],
                header: vec!["row".into(), "here A".into()],
                rows: vec![vec!["a".into(), "3 s".into()]],
                after: vec![],
            },
        ]
    }

    #[test]
    fn text_snapshot() {
        let expected = "study x
here: A = up (cpus 0), B = smp2 (cpus 0-1)
Table 1: latencies
row             published A  published B  published change  here A     here B       here change     same direction?
--------------  -----------  -----------  ----------------  ---------  -----------  --------------  ---------------
simple syscall         1.10         1.10             +0.0%  0.0512 us    0.0514 us           -0.4%  yes
fork, exit            190.8        198.8             -4.0%   101.2 us  unavailable               -  -
geometric mean            -            -                 -          -            -  -0.4% (1 rows)  -
direction agrees in 1 of 1 rows; differs in: none
unavailable: fork, exit: \"quoted\" | piped

Table 2
row  here A
---  ------
a    3 s
";
        assert_eq!(render(&sample(), Format::Text).unwrap(), expected);
    }

    #[test]
    fn markdown_snapshot() {
        let expected = "study x
here: A = up (cpus 0), B = smp2 (cpus 0-1)

**Table 1: latencies**

| row | published A | published B | published change | here A | here B | here change | same direction? |
|:---|---:|---:|---:|---:|---:|---:|---:|
| simple syscall | 1.10 | 1.10 | +0.0% | 0.0512 us | 0.0514 us | -0.4% | yes |
| fork, exit | 190.8 | 198.8 | -4.0% | 101.2 us | unavailable | - | - |
| geometric mean | - | - | - | - | - | -0.4% (1 rows) | - |

- direction agrees in 1 of 1 rows; differs in: none
- unavailable: fork, exit: \"quoted\" \\| piped

**Table 2**

| row | here A |
|:---|---:|
| a | 3 s |


";
        assert_eq!(render(&sample(), Format::Markdown).unwrap(), expected);
    }

    #[test]
    fn csv_snapshot() {
        let expected = "table,row,published A,published B,published change,here A,here B,here change,same direction?
Table 1: latencies,simple syscall,1.10,1.10,+0.0%,0.0512 us,0.0514 us,-0.4%,yes
Table 1: latencies,\"fork, exit\",190.8,198.8,-4.0%,101.2 us,unavailable,-,-
Table 1: latencies,geometric mean,-,-,-,-,-,-0.4% (1 rows),-
Table 2,a,3 s
";
        assert_eq!(render(&sample(), Format::Csv).unwrap(), expected);
    }

    #[test]
    fn json_keeps_every_field() {
        let v: serde_json::Value = serde_json::from_str(&render(&sample(), Format::Json).unwrap()).unwrap();
        assert_eq!(v[0]["title"], "Table 1: latencies");
        assert_eq!(v[0]["rows"][1][0], "fork, exit");
        assert_eq!(v[0]["after"][1], "unavailable: fork, exit: \"quoted\" | piped");
        assert_eq!(v[1]["header"][1], "here A");
    }
}
