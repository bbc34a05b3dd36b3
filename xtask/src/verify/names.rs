//! The leak scanner's reading of Rust sources: the public names a file
//! declares at its top level, and whether a text mentions a name as a
//! whole word. Line-based on purpose: a teaching file is plain Rust, and a
//! name the scanner misses only makes the leak proof weaker, never wrong.

/// The item kinds whose names count as a layer's public names.
const ITEM_KINDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
];

/// Words that may stand between the visibility and the item kind
/// (`pub const unsafe fn`, `pub async fn`, `pub unsafe trait`).
const QUALIFIERS: [&str; 4] = ["async", "unsafe", "default", "auto"];

/// Top-level public item names of a Rust source (`pub fn name`, `pub struct
/// Name`, …, whatever the visibility's scope, `pub(crate)`, `pub(in path)`,
/// and whatever qualifiers: `const fn`, `async fn`, `unsafe fn`,
/// `extern "C" fn`, `static mut`), in the order they appear.
pub fn public_names(source: &str) -> Vec<String> {
    source.lines().filter_map(public_name).collect()
}

/// The name a top-level `pub` item declared on `line` gives, if any.
fn public_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub")?;
    let rest = match rest.trim_start().strip_prefix('(') {
        Some(scope) => &scope[scope.find(')')? + 1..],
        None if rest.starts_with(char::is_whitespace) => rest,
        None => return None,
    };
    let mut words = Words(rest);
    let mut word = words.next()?;
    loop {
        match word {
            "extern" => {
                // An ABI string may follow: `extern "C" fn`.
                word = words.next()?;
                if word.starts_with('"') {
                    word = words.next()?;
                }
            }
            // `const` qualifies a function (`const fn`, `const unsafe fn`);
            // otherwise it is the item kind.
            "const"
                if words
                    .peek()
                    .is_some_and(|next| next == "fn" || is_qualifier(next)) =>
            {
                word = words.next()?;
            }
            qualifier if is_qualifier(qualifier) => word = words.next()?,
            _ => break,
        }
    }
    ITEM_KINDS.contains(&word).then_some(())?;
    let mut name = words.next()?;
    if word == "static" && name == "mut" {
        name = words.next()?;
    }
    let is_name = name != "_" && name.starts_with(|c: char| c.is_alphabetic() || c == '_');
    is_name.then(|| name.to_string())
}

fn is_qualifier(word: &str) -> bool {
    QUALIFIERS.contains(&word) || word == "extern"
}

/// The words of a line: identifiers (raw ones too) and string literals; anything else
/// (punctuation, generics) ends a word and is skipped.
struct Words<'a>(&'a str);

impl<'a> Words<'a> {
    fn peek(&self) -> Option<&'a str> {
        Words(self.0).next()
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let is_ident = |c: char| c.is_alphanumeric() || c == '_';
        let text = self
            .0
            .trim_start_matches(|c: char| !is_ident(c) && c != '"');
        if text.is_empty() {
            return None;
        }
        let end = if let Some(literal) = text.strip_prefix('"') {
            literal.find('"').map_or(text.len(), |at| at + 2)
        } else if let Some(raw) = text.strip_prefix("r#") {
            // A raw identifier, `r#type`, is one word.
            2 + raw.find(|c: char| !is_ident(c)).unwrap_or(raw.len())
        } else {
            text.find(|c: char| !is_ident(c)).unwrap_or(text.len())
        };
        let (word, rest) = text.split_at(end);
        self.0 = rest;
        Some(word)
    }
}

/// True when `word` occurs in `text` with no identifier character on either side.
pub fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_names_are_the_top_level_pub_items() {
        let source = "pub fn text_of(m: &M) -> String {}\npub struct Usage {\n    pub input: u64,\n}\n\
                      pub(crate) enum Kind {}\npub mod types;\npub use x::Y;\nfn private() {}\n    pub fn method() {}\n\
                      pub const EMPTY_USAGE: Usage = Usage;\npub trait Model {}\npub type Alias = u8;\n\
                      public fn not_rust() {}\npub(crate)fn tight() {}\n";
        assert_eq!(
            public_names(source),
            [
                "text_of",
                "Usage",
                "Kind",
                "types",
                "EMPTY_USAGE",
                "Model",
                "Alias",
                "tight"
            ]
        );
    }

    #[test]
    fn every_qualifier_is_read_past_to_the_name() {
        let cases = [
            ("pub const fn x() {}", "x"),
            ("pub const unsafe fn cu() {}", "cu"),
            ("pub async fn fetch() {}", "fetch"),
            ("pub async unsafe fn au() {}", "au"),
            ("pub unsafe fn raw() {}", "raw"),
            ("pub extern \"C\" fn callback() {}", "callback"),
            ("pub extern fn bare() {}", "bare"),
            ("pub unsafe extern \"C\" fn ue() {}", "ue"),
            ("pub const unsafe extern \"C\" fn cue() {}", "cue"),
            ("pub static mut COUNTER: u32 = 0;", "COUNTER"),
            ("pub static LIMIT: u32 = 0;", "LIMIT"),
            ("pub const LIMIT2: u32 = 0;", "LIMIT2"),
            ("pub unsafe trait Send2 {}", "Send2"),
            ("pub auto trait Marker {}", "Marker"),
            ("pub union Bits { a: u32 }", "Bits"),
            ("pub(crate) const fn crate_const() {}", "crate_const"),
            ("pub(super) static mut UP: u8 = 0;", "UP"),
            ("pub(in crate::types) async fn scoped() {}", "scoped"),
            ("pub fn generic<T: Into<String>>(t: T) {}", "generic"),
            ("pub struct Tuple(pub u8);", "Tuple"),
            ("pub fn r#type() {}", "r#type"),
        ];
        for (line, name) in cases {
            assert_eq!(public_names(line), [name], "{line}");
        }
        for line in [
            "pub use crate::x;",
            "pub extern crate serde;",
            "pub impl X {}",
            "pub const _: () = ();",
            "pub static mut",
            "pub",
        ] {
            assert!(public_names(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_word_is_found_only_between_non_identifier_characters() {
        assert!(contains_word("use course::types::{text};", "text"));
        assert!(contains_word("text", "text"));
        assert!(!contains_word("text_stream(texts)", "text"));
        assert!(!contains_word("context", "text"));
        assert!(
            !contains_word("日本text語", "text"),
            "letters of any script continue an identifier"
        );
    }
}
