//! Words of a body (SPEC §14.4): the text lowercased (Unicode), split at every
//! character that is not a letter, a mark or a digit (general categories L, M, N);
//! empty pieces dropped, no other normalisation.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

fn in_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    matches!(
        c.general_category_group(),
        GeneralCategoryGroup::Letter | GeneralCategoryGroup::Mark | GeneralCategoryGroup::Number
    )
}

/// The words of `text` in order, repeats included.
pub fn split(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !in_word(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The distinct words of `text`, sorted (the order the index stores them in).
pub fn distinct(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_distinct(text, |w| out.push(w.to_string()));
    out
}

/// Calls `f` with each distinct word of `text`, in sorted order, without
/// allocating a string per word. Most bodies are ASCII: they are lowercased and
/// split byte by byte.
pub fn for_each_distinct(text: &str, mut f: impl FnMut(&str)) {
    let lower = if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    };
    let mut words: Vec<&str> = if lower.is_ascii() {
        lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect()
    } else {
        lower
            .split(|c: char| !in_word(c))
            .filter(|w| !w.is_empty())
            .collect()
    };
    words.sort_unstable();
    words.dedup();
    for w in words {
        f(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercased_and_split_at_what_is_not_a_letter_mark_or_digit() {
        assert_eq!(split("Port 7878, or 8080?"), ["port", "7878", "or", "8080"]);
        assert_eq!(split("dev-server's PORT"), ["dev", "server", "s", "port"]);
        assert_eq!(split("  ...  "), Vec::<String>::new());
        // Letters of any script; a combining mark stays in its word; no folding.
        assert_eq!(split("Grüße ÉCOLE"), ["grüße", "école"]);
        assert_eq!(split("e\u{301}te\u{301}"), ["e\u{301}te\u{301}"]);
        assert_eq!(split("日本語のテキスト"), ["日本語のテキスト"]);
        assert_eq!(split("x²+y½=Ⅻ"), ["x²", "y½", "ⅻ"]);
        // Underscore and emoji are not word characters.
        assert_eq!(split("snake_case 🦀rust"), ["snake", "case", "rust"]);
    }

    #[test]
    fn distinct_words_are_sorted_once() {
        assert_eq!(distinct("b a B a c"), ["a", "b", "c"]);
    }
}
