//! The one way text reaches the report's HTML and SVG: [`Html`], a string
//! that is safe to put in a page, whose only constructors are
//! [`Html::text`] (escaping `& < > " '` and neutralising bidirectional
//! controls through [`crate::model::text::neutral`]), [`Html::lit`] (a
//! literal written in this source) and the [`html_write!`] and
//! [`html_format!`] macros, whose format string must be a literal without
//! inline captures (`{name}` refused at compile time) and whose arguments
//! must be [`Safe`]: another `Html` or a number. A `String` or `&str` does
//! not compile into the page.

use std::fmt;

/// Text that is safe in an HTML page or inline SVG, element content and
/// quoted attribute values alike.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Html(String);

impl Html {
    /// Nothing.
    pub(crate) fn new() -> Html {
        Html(String::new())
    }

    /// `s` as text: `& < > " '` escaped, bidirectional controls shown as
    /// `[U+202E]` (so a label cannot reorder what follows it).
    pub(crate) fn text(s: &str) -> Html {
        let s = crate::model::text::neutral(s);
        let mut o = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '&' => o.push_str("&amp;"),
                '<' => o.push_str("&lt;"),
                '>' => o.push_str("&gt;"),
                '"' => o.push_str("&quot;"),
                '\'' => o.push_str("&#39;"),
                _ => o.push(c),
            }
        }
        Html(o)
    }

    /// Markup written in this source, trusted as it is.
    pub(crate) fn lit(s: &'static str) -> Html {
        Html(s.to_string())
    }

    /// A flame graph drawn by inferno, inline ([`crate::report::flame`]):
    /// its text neutralised before inferno wrote it and escaped by inferno's
    /// XML writer; no script. `id` makes its element ids unique in the page.
    pub(crate) fn flame(f: &crate::report::flame::Flame, id: &str) -> Html {
        Html(f.inline(id))
    }

    /// Append another safe piece.
    pub(crate) fn push(&mut self, h: &Html) {
        self.0.push_str(&h.0);
    }

    /// Append a literal written in this source.
    pub(crate) fn push_lit(&mut self, s: &'static str) {
        self.0.push_str(s);
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, pat: &str) -> bool {
        self.0.contains(pat)
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_string(self) -> String {
        self.0
    }

    /// For [`html_write!`] only: the macro has checked the format string and
    /// that every argument is [`Safe`].
    #[doc(hidden)]
    pub(in crate::report::html) fn write_checked(&mut self, args: fmt::Arguments) {
        let _ = fmt::Write::write_fmt(&mut self.0, args);
    }
}

impl fmt::Display for Html {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Html {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// What may be formatted into a page as it is: safe text and numbers, whose
/// `Display` never writes markup.
pub(crate) trait Safe: fmt::Display {}
impl Safe for Html {}
impl Safe for f64 {}
impl Safe for f32 {}
impl Safe for usize {}
impl Safe for u32 {}
impl Safe for u64 {}
impl Safe for i32 {}
impl Safe for i64 {}
impl<T: Safe + ?Sized> Safe for &T {}

#[doc(hidden)]
pub(crate) fn safe<T: Safe>(t: T) -> T {
    t
}

/// True when `fmt` names its arguments only by position (`{}` or `{:...}`):
/// an inline capture (`{name}`) would bypass the [`Safe`] check.
#[doc(hidden)]
pub(crate) const fn positional_only(fmt: &str) -> bool {
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            if i + 1 < b.len() && b[i + 1] == b'{' {
                i += 2;
                continue;
            }
            if i + 1 >= b.len() || !(b[i + 1] == b'}' || b[i + 1] == b':') {
                return false;
            }
        }
        i += 1;
    }
    true
}

/// Append to an [`Html`]: `html_write!(out, "<td>{}</td>", Html::text(s))`.
macro_rules! html_write {
    ($out:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = assert!($crate::report::html::escape::positional_only($fmt), "html_write!: name arguments by position ({{}}), no inline captures");
        $out.write_checked(format_args!($fmt $(, $crate::report::html::escape::safe(&$arg))*))
    }};
}

/// A new [`Html`] from a literal format and [`Safe`] arguments.
macro_rules! html_format {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        let mut h = $crate::report::html::escape::Html::new();
        html_write!(h, $fmt $(, $arg)*);
        h
    }};
}

pub(crate) use {html_format, html_write};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The inverse of [`Html::text`] for the entities it writes.
    fn unescape(s: &str) -> String {
        s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
    }

    fn bidi(c: char) -> bool {
        matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
    }

    /// Every `&` starts one of the entities `text` writes.
    fn ampersands_start_entities(s: &str) -> bool {
        s.match_indices('&')
            .all(|(i, _)| ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| s[i..].starts_with(e)))
    }

    #[test]
    fn escapes_markup_and_neutralises_bidi() {
        assert_eq!(Html::text("<a href=\"x\">&'").as_str(), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(Html::text("ab\u{202e}cd\u{2067}").as_str(), "ab[U+202E]cd[U+2067]");
        assert_eq!(Html::text("&amp;").as_str(), "&amp;amp;", "an entity in the text is text");
    }

    #[test]
    fn only_positional_formats_pass() {
        assert!(positional_only("<td class=\"{}\">{:.1}</td>{{x}}"));
        assert!(!positional_only("<td>{name}</td>"));
        assert!(!positional_only("<td>{0}</td>"));
        assert!(!positional_only("{"));
        let mut h = Html::new();
        html_write!(h, "<td x=\"{:.1}\">{}</td>", 1.25f64, Html::text("<b>"));
        assert_eq!(h.as_str(), "<td x=\"1.2\">&lt;b&gt;</td>");
    }

    fn any_text() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            Just("<".to_string()),
            Just(">".to_string()),
            Just("\"".to_string()),
            Just("'".to_string()),
            Just("&".to_string()),
            Just("&amp;".to_string()),
            Just("&lt;".to_string()),
            Just("<script>".to_string()),
            Just("\u{202e}".to_string()),
            Just("\u{2066}".to_string()),
            Just("\u{200f}".to_string()),
            Just("\u{061c}".to_string()),
            any::<char>().prop_map(|c| c.to_string()),
            "[a-z ]{0,4}",
        ];
        prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn escaped_text_holds_no_markup(s in any_text()) {
            let h = Html::text(&s);
            let o = h.as_str();
            prop_assert!(!o.contains('<') && !o.contains('>') && !o.contains('"') && !o.contains('\''), "{o:?}");
            prop_assert!(ampersands_start_entities(o), "{o:?}");
            prop_assert!(!o.chars().any(bidi), "{o:?}");
        }

        #[test]
        fn escaping_round_trips_text_without_bidi(s in any_text()) {
            let plain: String = s.chars().filter(|c| !bidi(*c)).collect();
            prop_assert_eq!(unescape(Html::text(&plain).as_str()), plain.clone());
            // With bidi controls: the same text, each control as its placeholder.
            let shown = crate::model::text::neutral(&s).into_owned();
            prop_assert_eq!(unescape(Html::text(&s).as_str()), shown);
        }
    }
}
