//! Percent-encoding for the URLs results link to (RFC 3986): a site page's path, segment by
//! segment, and a heading's anchor. A file named `sp ace#1.html` or `pct%41.html`, or an `id` with
//! spaces, must give a link that opens it: characters a path or fragment may not hold as they are
//! (space, `#`, `?`, `%`, controls, non-ASCII) become `%XX` of their UTF-8 bytes.

/// Bytes a path segment keeps as they are: unreserved, sub-delims, `:` and `@`.
fn path_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

fn encode(text: &str, safe: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if safe(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `/`-separated path with each segment percent-encoded (the slashes kept).
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|segment| encode(segment, path_safe))
        .collect::<Vec<_>>()
        .join("/")
}

/// A fragment (what follows `#`) percent-encoded: a path segment's safe bytes, `/` and `?`.
pub fn encode_fragment(fragment: &str) -> String {
    encode(fragment, |b| path_safe(b) || b == b'/' || b == b'?')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_url_cannot_hold_is_encoded_and_nothing_else() {
        assert_eq!(encode_path("/sp ace#1.html"), "/sp%20ace%231.html");
        assert_eq!(encode_path("/pct%41%2F.html"), "/pct%2541%252F.html");
        assert_eq!(encode_path("/a\r\nb/c?.html"), "/a%0D%0Ab/c%3F.html");
        assert_eq!(encode_path("/café/x.html"), "/caf%C3%A9/x.html");
        assert_eq!(encode_path("/guide/index-2_v1.0~x/"), "/guide/index-2_v1.0~x/");
        assert_eq!(encode_fragment("my id#2"), "my%20id%232");
        assert_eq!(encode_fragment("a/b?c"), "a/b?c");
        assert_eq!(encode_fragment("x%y"), "x%25y");
    }
}
