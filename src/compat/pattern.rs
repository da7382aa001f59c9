//! SGE's wildcard patterns (`fnmatch(3)` style: `*`, `?`, `[...]`), used for job names in
//! `qdel`/`qstat -j`/`-hold_jid`, queue names (`wc_queue`) and PE names (`wc_pe_name`).

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    match_from(&p, &t)
}

/// Whether a word contains wildcard characters (and so is a pattern, not a plain name).
pub fn is_pattern(word: &str) -> bool {
    word.contains(['*', '?', '['])
}

fn match_from(p: &[char], t: &[char]) -> bool {
    // Iterative matcher with one backtrack point for `*` (linear in practice).
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class(&p[pi..], t[ti])
                        && matched
                    {
                        pi += next;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches `c` against the bracket expression at the start of `p`; returns (matched, length).
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|e| *e != ']') {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(matches("job*", "job.sh"));
        assert!(matches("*", ""));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("all.q", "all.q"));
        assert!(matches("[ab]*.q", "b1.q"));
        assert!(!matches("[!ab]*", "a"));
        assert!(matches("s[0-9]*", "s64"));
        assert!(!matches("job", "job.sh"));
        assert!(is_pattern("j*") && !is_pattern("myname"));
    }
}
