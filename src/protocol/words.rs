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
pub(crate) fn split(text: &str) -> Vec<String> {
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
pub(crate) fn for_each_distinct(text: &str, mut f: impl FnMut(&str)) {
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

/// Puts `text` lowercased into `buf`, in place of what it held: ASCII text byte by
/// byte, other text as `str::to_lowercase` does.
pub(crate) fn lowercase_into(text: &str, buf: &mut String) {
    buf.clear();
    if text.is_ascii() {
        buf.push_str(text);
        buf.make_ascii_lowercase();
    } else {
        // `str::to_lowercase`, not per character: a final sigma lowercases by
        // its context.
        buf.push_str(&text.to_lowercase());
    }
}

/// Calls `f` with each word of `text` in order, repeats included (the words of
/// [`split`]). The lowercased text goes to `buf`, so a caller splitting many
/// bodies allocates once; ASCII text, the common case, is split byte by byte.
pub(crate) fn for_each_word(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    lowercase_into(text, buf);
    if buf.is_ascii() {
        let bytes = buf.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if !bytes[at].is_ascii_alphanumeric() {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                at += 1;
            }
            f(&buf[start..at]);
        }
    } else {
        buf.split(|c: char| !in_word(c))
            .filter(|w| !w.is_empty())
            .for_each(f);
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
    fn each_word_is_a_word_of_split() {
        let mut buf = String::from("left over");
        for text in [
            "Port 7878, or 8080?",
            "dev-server's PORT",
            "  ...  ",
            "",
            "x",
            "Grüße ÉCOLE e\u{301}te\u{301} 日本語のテキスト x²+y½=Ⅻ",
            "snake_case 🦀rust",
            "ΟΔΟΣ Σ",
            "\u{212A}elvin",
            "trailing word",
        ] {
            let mut seen = Vec::new();
            for_each_word(text, &mut buf, |w| seen.push(w.to_string()));
            assert_eq!(seen, split(text), "{text:?}");
        }
    }

    #[test]
    fn distinct_words_are_sorted_once() {
        assert_eq!(distinct("b a B a c"), ["a", "b", "c"]);
    }
}
