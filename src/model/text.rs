//! Text that came from a user or a machine, made fit to show and to store:
//! bidirectional controls neutralised (a right-to-left override in a label
//! would reorder what a terminal or a page shows after it), and free text
//! given on the command line (labels, titles) bounded in length.

use std::borrow::Cow;

/// The Unicode bidirectional formatting characters: embeddings and
/// overrides (U+202A-U+202E), isolates (U+2066-U+2069) and the marks
/// (U+200E, U+200F, U+061C).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// `s` with every bidirectional control shown as a visible placeholder
/// (`[U+202E]`); borrowed when there is none.
pub(crate) fn neutral(s: &str) -> Cow<'_, str> {
    replace_bidi(s, |c| format!("[U+{:04X}]", c as u32))
}

/// JSON text with every bidirectional control written as its `\uXXXX`
/// escape: the same JSON value, without the raw character. serde_json
/// writes bidi controls raw, and it can only be inside a string there.
pub(crate) fn json_escape_bidi(json: &str) -> Cow<'_, str> {
    replace_bidi(json, |c| format!("\\u{:04x}", c as u32))
}

/// `s` with each bidirectional control replaced by `with(c)`; borrowed when there is none.
fn replace_bidi(s: &str, with: impl Fn(char) -> String) -> Cow<'_, str> {
    if !s.chars().any(is_bidi_control) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_bidi_control(c) {
            o.push_str(&with(c));
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// `s` fit for one line of a terminal, a CSV cell, a Markdown table or an
/// XML text node: every control character (C0, DEL, C1: escape sequences,
/// OSC, NULs, carriage returns, newlines) written as a visible `\x1b`, and
/// bidirectional controls as [`neutral`] shows them; borrowed when there is
/// nothing to change.
pub(crate) fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || is_bidi_control(c)) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_bidi_control(c) {
            o.push_str(&format!("[U+{:04X}]", c as u32));
        } else if c.is_control() {
            o.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// Longest `--label`, in bytes.
pub(crate) const LABEL_MAX: usize = 256;
/// Longest `--title` of a report, in bytes.
pub(crate) const TITLE_MAX: usize = 1024;

/// Why a free-text option's value is refused: one line naming the option
/// and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TextError {
    #[error("{option} \"{head}...\" is {len} bytes: at most {max} bytes are allowed")]
    TooLong { option: String, head: String, len: usize, max: usize },
    #[error("{option} {shown:?} holds the control character U+{code:04X}: printable text only")]
    Control { option: String, shown: String, code: u32 },
}

/// A free-text option (`--label`, `--title`): at most `max` bytes and no
/// control characters (a newline would split the one-line messages that
/// quote it). The error is one line naming the option and the limit.
pub(crate) fn check_free_text(option: &str, s: &str, max: usize) -> Result<(), TextError> {
    if s.len() > max {
        let head: String = s.chars().take(24).filter(|c| !c.is_control() && !is_bidi_control(*c)).collect();
        return Err(TextError::TooLong { option: option.to_string(), head, len: s.len(), max });
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(TextError::Control { option: option.to_string(), shown: neutral(s).into_owned(), code: c as u32 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        let raw = "a\x1b]0;title\x07\x1b[2J\x1b[31mred\0nul\r\u{9b}x\ty\nz\u{202e}";
        assert_eq!(printable(raw), "a\\x1b]0;title\\x07\\x1b[2J\\x1b[31mred\\x00nul\\x0d\\x9bx\\x09y\\x0az[U+202E]");
        assert!(matches!(printable("plain text, ok"), Cow::Borrowed(_)));
        assert!(!printable(raw).chars().any(|c| c.is_control()));
    }

    #[test]
    fn bidi_controls_become_placeholders() {
        assert_eq!(neutral("fast\u{202e}wols"), "fast[U+202E]wols");
        assert_eq!(neutral("\u{061c}\u{200e}\u{2069}"), "[U+061C][U+200E][U+2069]");
        assert!(matches!(neutral("plain"), Cow::Borrowed(_)));
        let j = serde_json::to_string(&serde_json::json!({"label": "a\u{202e}b"})).unwrap();
        let e = json_escape_bidi(&j);
        assert_eq!(e, "{\"label\":\"a\\u202eb\"}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&e).unwrap()["label"], "a\u{202e}b", "the same value");
    }

    #[test]
    fn free_text_is_bounded() {
        assert!(check_free_text("--label", &"x".repeat(LABEL_MAX), LABEL_MAX).is_ok());
        let e = check_free_text("--label", &"x".repeat(100_000), LABEL_MAX).unwrap_err().to_string();
        assert!(e.contains("100000 bytes") && e.contains("at most 256") && e.len() < 200, "{e}");
        assert!(check_free_text("--label", "a\nb", LABEL_MAX).unwrap_err().to_string().contains("U+000A"));
    }
}
