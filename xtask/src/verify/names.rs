//! The leak scanner's reading of Rust sources: the public names a file
//! declares at its top level, and whether a text mentions a name as a
//! whole word. Line-based on purpose: a teaching file is plain Rust, and a
//! name the scanner misses only makes the leak proof weaker, never wrong.

/// The item kinds whose names count as a layer's public names.
const ITEM_KINDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
];

/// The keywords that may stand between the visibility and the name besides
/// the item kinds (`pub const unsafe fn`, `pub extern "C" fn`, `pub static
/// mut`); none can be a name.
const QUALIFIERS: [&str; 4] = ["async", "unsafe", "extern", "mut"];

/// Top-level public item names of a Rust source (`pub fn name`, `pub struct
/// Name`, …, whatever the visibility's scope and qualifiers), in order.
pub fn public_names(source: &str) -> Vec<String> {
    source.lines().filter_map(public_name).collect()
}

/// The name a top-level `pub` item declared on `line` gives, if any: the
/// first word after the visibility that is no item kind, qualifier or ABI
/// string, when an item kind came before it.
fn public_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub")?;
    let rest = match rest.trim_start().strip_prefix('(') {
        Some(scope) => &scope[scope.find(')')? + 1..],
        None if rest.starts_with(char::is_whitespace) => rest,
        None => return None,
    };
    // Raw identifiers (`r#type`) and ABI strings (`"C"`) are one word each.
    let in_word = |c: char| is_ident(c) || c == '#' || c == '"';
    let mut kind = false;
    for word in rest.split(|c| !in_word(c)).filter(|word| !word.is_empty()) {
        if ITEM_KINDS.contains(&word) {
            kind = true;
        } else if !QUALIFIERS.contains(&word) && !word.starts_with('"') {
            let is_name = word != "_" && word.starts_with(|c: char| c.is_alphabetic() || c == '_');
            return (kind && is_name).then(|| word.to_string());
        }
    }
    None
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// True when `word` occurs in `text` with no identifier character on either side.
pub fn contains_word(text: &str, word: &str) -> bool {
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
            ("pub fn default() -> Self {}", "default"),
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
