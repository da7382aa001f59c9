//! Where options come from besides the command line: the text and words of `sge_request`
//! and `-@` files (expanded recursively) and the `#$` directives of a script.

use super::SubmitError;
use crate::compat::options::{OptionSpec, split_words};

/// A defaults or `-@` file's bytes as text; `file` names it in the refusal, with the line
/// that is not UTF-8 (SGE passes the bytes on).
pub fn option_file_text(file: &str, bytes: Vec<u8>) -> Result<String, SubmitError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count();
        SubmitError::NotUtf8(format!("line {line} of option file \"{file}\""))
    })
}

/// Reads a defaults or `-@` file's text into words: every line not starting with `#`.
pub fn option_file_words(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(split_words)
        .collect()
}

/// The `#$` (or `-C`) directives of a script: for every line starting with `prefix` in its
/// first bytes, the words after it, with the line number. SGE scans the whole script, not only
/// its head (a directive after the first command still counts: oracle-checked). The script
/// itself may hold any bytes (it is kept byte for byte); a directive must be UTF-8 text.
pub fn script_directives(
    script: &[u8],
    prefix: &str,
) -> Result<Vec<(usize, Vec<String>)>, SubmitError> {
    if prefix.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, line) in script.split(|b| *b == b'\n').enumerate() {
        if let Some(rest) = line.strip_prefix(prefix.as_bytes()) {
            let text = std::str::from_utf8(rest).map_err(|_| {
                SubmitError::NotUtf8(format!("line {} of the script, a {prefix} line,", i + 1))
            })?;
            let words = split_words(text);
            if !words.is_empty() {
                out.push((i + 1, words));
            }
        }
    }
    Ok(out)
}

/// Expands `-@ file` in a word list (before the script operand), recursively up to a depth,
/// reading each file with `read`.
pub fn expand_option_files(
    words: &[String],
    table: &'static [OptionSpec],
    read: &mut dyn FnMut(&str) -> Result<String, SubmitError>,
    depth: u32,
) -> Result<Vec<String>, SubmitError> {
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if !w.starts_with('-') || w == "-" {
            out.extend(words[i..].iter().cloned());
            break;
        }
        if w == "-@" {
            let Some(file) = words.get(i + 1) else {
                return Err(SubmitError::Usage("-@ option must have argument".into()));
            };
            if depth > 8 {
                return Err(SubmitError::Usage(format!(
                    "option files nest too deeply at \"{file}\""
                )));
            }
            let text = read(file)?;
            let inner = option_file_words(&text);
            out.extend(expand_option_files(&inner, table, read, depth + 1)?);
            i += 2;
            continue;
        }
        let n = match table.iter().find(|s| s.name == w).map(|s| s.arity) {
            Some(crate::compat::options::Arity::One) => 1,
            Some(crate::compat::options::Arity::Two) => 2,
            Some(crate::compat::options::Arity::Optional) => {
                usize::from(words.get(i + 1).is_some_and(|x| !x.starts_with('-')))
            }
            _ => 0,
        };
        let end = (i + 1 + n).min(words.len());
        out.extend(words[i..end].iter().cloned());
        i = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_found_anywhere_at_line_start() {
        let script =
            b"#!/bin/sh\n#$ -N first\necho hi\n#$ -p -5\n  #$ -A indented\n#$-A nospace\r\n";
        let d = script_directives(script, "#$").expect("text");
        let words: Vec<Vec<String>> = d.into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            words,
            vec![vec!["-N", "first"], vec!["-p", "-5"], vec!["-A", "nospace"]]
        );
        assert!(script_directives(script, "").expect("none").is_empty());
        let e = script_directives(b"#!/bin/sh\n\xff\n#$ -N bad\xffname\n", "#$");
        assert_eq!(
            e.expect_err("not text").to_string(),
            "line 3 of the script, a #$ line, is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text"
        );
    }
}
