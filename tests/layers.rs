//! The modules of `src/` stand on each other in one order, ground first (README, "Layout of
//! the code"): a module uses itself and the ones below it, never one above. An import that
//! runs up ties the lower module to everything above it, and soon no module can be read,
//! tested or changed apart from the rest (issue 24). The order is read from the README's
//! `Layers, ground first:` line, so that it is written once and the README cannot drift.
//! Comments, strings and `#[cfg(test)]` items are left out: a test may reach anywhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ORDER_LINE: &str = "Layers, ground first:";

/// The layer names of the README's order line, ground first.
fn layer_order(readme: &str) -> Vec<String> {
    let line = readme
        .lines()
        .find(|l| l.starts_with(ORDER_LINE))
        .unwrap_or_else(|| panic!("README.md has no line starting with {ORDER_LINE:?}"));
    let order: Vec<String> = line[ORDER_LINE.len()..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let distinct: BTreeSet<&String> = order.iter().collect();
    assert!(
        !order.is_empty() && distinct.len() == order.len(),
        "the README's layer order names each layer once: {order:?}"
    );
    order
}

/// The source with comments, string and character literals blanked out (newlines kept), so
/// that only code is searched.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' || rest.starts_with(b"b\"") {
            let start = usize::from(rest[0] == b'b');
            let mut j = start + 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A character literal (`'{'`, `'\''`, `'\u{7b}'`), not a lifetime (`'a`).
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            let len = len.unwrap_or(1);
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            let ch = src[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&src[i..i + ch]);
            i += ch;
        }
    }
    out
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`) at the start of `s`.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = start + hashes + 1;
    let end = s[body..].windows(close.len()).position(|w| w == close)?;
    Some(body + end + close.len())
}

/// The code with every `#[cfg(test)]` item removed (up to its `;`, or its braces' end), and
/// the names of test modules declared as files (`#[cfg(test)] mod name;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut test_files = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(ATTR) {
        out.push_str(&rest[..at]);
        let item = &rest[at + ATTR.len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    let words: Vec<&str> = item[..k].split_whitespace().collect();
                    if let [.., "mod", name] = words.as_slice() {
                        test_files.push((*name).to_string());
                    }
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// Every top-level module named by a `crate::` path in `code`: `crate::spool::Spool`,
/// `crate::{config, model::JobId}`.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue; // `gridspool_crate::`, not this crate
        }
        let after = code[at + "crate::".len()..].trim_start();
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1;
            let mut part = String::new();
            let mut parts = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => parts.push(std::mem::take(&mut part)),
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if depth == 1 && c != ',' {
                    part.push(c);
                }
            }
            parts.push(part);
            found.extend(
                parts
                    .iter()
                    .map(|p| ident(p.trim()))
                    .filter(|p| !p.is_empty()),
            );
        } else {
            let name = ident(after);
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folder a file's child modules live in (`a/mod.rs` → `a/`, `a/b.rs` → `a/b/`).
fn child_dir(file: &Path) -> PathBuf {
    let parent = file.parent().expect("parent");
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
        None => parent.to_path_buf(),
    }
}

/// `file -> module` for every import in `src/` that runs up the order.
fn upward_imports(root: &Path, order: &[String]) -> BTreeSet<String> {
    let src = root.join("src");
    let rank = |name: &str| order.iter().position(|l| l == name);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut test_dirs: Vec<PathBuf> = Vec::new();
    let mut read = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let (code, test_mods) = without_tests(&code_only(&text));
        for name in test_mods {
            let dir = child_dir(file);
            test_dirs.push(dir.join(format!("{name}.rs")));
            test_dirs.push(dir.join(name));
        }
        read.push((file.clone(), code));
    }
    let mut upward = BTreeSet::new();
    for (file, code) in read {
        if test_dirs.iter().any(|t| file.starts_with(t)) {
            continue;
        }
        let rel = file.strip_prefix(root).expect("under root");
        let in_src = file.strip_prefix(&src).expect("under src");
        let top = in_src
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("file name");
        let top = top.strip_suffix(".rs").unwrap_or(top);
        if top == "lib" {
            continue;
        }
        let Some(mine) = rank(top) else {
            panic!(
                "{}: module `{top}` is not in the README's layer order; place it there",
                rel.display()
            );
        };
        for dep in crate_modules(&code) {
            if rank(&dep).is_some_and(|theirs| theirs > mine) {
                upward.insert(format!("{} -> {dep}", rel.display()));
            }
        }
    }
    upward
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let order = layer_order(&readme);
    let upward = upward_imports(root, &order);
    assert!(
        upward.is_empty(),
        "imports running up the layers ({}): {upward:#?}",
        order.join(" ")
    );
}

#[test]
fn the_check_sees_what_runs_up() {
    let order: Vec<String> = ["time", "config", "sched"].map(str::to_string).to_vec();
    assert_eq!(
        layer_order("x\nLayers, ground first: `time` `config` `sched`\n"),
        order
    );
    let code = code_only(
        "use crate::{time, sched::value};\n\
         // crate::cli in a comment\n\
         /* crate::sim */ let s = \"crate::bin\"; let c = '{';\n\
         let r = r#\"crate::mail\"#;\n\
         fn f() { crate::spool::open(); }\n\
         #[cfg(test)]\n\
         mod tests { use crate::acct; fn g() { if x { } } }\n\
         #[cfg(test)]\n\
         mod more;\n\
         use crate::launch::X;\n",
    );
    let (code, test_mods) = without_tests(&code);
    assert_eq!(test_mods, ["more"]);
    let found: Vec<String> = crate_modules(&code).into_iter().collect();
    assert_eq!(found, ["launch", "sched", "spool", "time"]);
}
