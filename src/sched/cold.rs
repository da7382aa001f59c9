//! Waiting jobs' records, kept as the difference from another record of the same owner.
//!
//! `sched_d` holds every job's record, but a pass reads only the rows ([`super::rows`]); a
//! waiting job's record is needed again only when the job is dispatched, altered or written.
//! Kept as its JSON (about 530 bytes for a plain job, kilobytes with `-V`) it was the largest
//! part of the daemon's memory at 100,000 pending jobs (51 MB). The records of one owner
//! differ in a few places (id, submission time, name, the options that vary), so each is
//! kept as copies from a reference record of its owner ([`Base`]) and the bytes that
//! differ: 40–80 bytes instead of 530. Decoding rebuilds the exact JSON, then parses it as
//! before, so what comes back is what went in, byte for byte.
//!
//! The format of a delta is a sequence of operations, each a LEB128 number `n`: `n & 1 == 0`
//! is a literal of `n >> 1` bytes that follow; `n & 1 == 1` a copy of `n >> 1` bytes of the
//! base from the offset in the next number.

use std::sync::Arc;

/// Shortest copy worth an operation (a copy costs 2–4 bytes).
const MIN_COPY: usize = 6;
/// Bytes hashed to find a copy's start in the base.
const WINDOW: usize = 4;

/// A reference record (its JSON) and where each 4-byte window of it starts, for the encoder.
#[derive(Debug)]
pub struct Base {
    bytes: Box<[u8]>,
    /// Position + 1 of the first window of each hash (0: none), for windows in the first
    /// 64 KiB (past them only the continuation of the last copy is tried). One slot per byte
    /// at most: 1,000 owners' bases of 530 bytes hold 1 MB of tables (twice the slots and
    /// `u32`s held 8 MB for no better deltas).
    table: Box<[u16]>,
    shift: u32,
}

impl Base {
    pub fn new(bytes: &[u8]) -> Base {
        let bits = bytes
            .len()
            .clamp(16, 1 << 16)
            .next_power_of_two()
            .trailing_zeros();
        let mut table = vec![0u16; 1 << bits].into_boxed_slice();
        let shift = 32 - bits;
        // Later windows first, so that the first occurrence of a window wins: in a record the
        // first is where the same field of another record sits.
        let indexed = bytes
            .len()
            .saturating_sub(WINDOW - 1)
            .min(u16::MAX as usize);
        for i in (0..indexed).rev() {
            table[hash(&bytes[i..], shift)] = i as u16 + 1;
        }
        Base {
            bytes: bytes.into(),
            table,
            shift,
        }
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

fn hash(w: &[u8], shift: u32) -> usize {
    let x = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    (x.wrapping_mul(0x9E37_79B1) >> shift) as usize
}

fn put(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get(bytes: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

fn literal(out: &mut Vec<u8>, bytes: &[u8]) {
    if !bytes.is_empty() {
        put(out, bytes.len() << 1);
        out.extend_from_slice(bytes);
    }
}

/// `src` as copies from `base` and literals.
pub fn encode(base: &Base, src: &[u8]) -> Vec<u8> {
    let b = &base.bytes[..];
    let mut out = Vec::with_capacity(64);
    let (mut i, mut lit) = (0, 0);
    // Where the last copy ended in the base: after a changed field the next bytes are most
    // often where they were in the base, shifted by the change in length.
    let mut next_in_base = 0usize;
    while i + WINDOW <= src.len() {
        let mut found = None;
        let candidates = [
            next_in_base + (i - lit),
            usize::from(base.table[hash(&src[i..], base.shift)]),
        ];
        for (k, c) in candidates.into_iter().enumerate() {
            // The table holds position + 1.
            let Some(start) = (if k == 1 { c.checked_sub(1) } else { Some(c) }) else {
                continue;
            };
            if start >= b.len() {
                continue;
            }
            let len = b[start..]
                .iter()
                .zip(&src[i..])
                .take_while(|(x, y)| x == y)
                .count();
            if len >= MIN_COPY && found.is_none_or(|(_, l)| len > l) {
                found = Some((start, len));
            }
        }
        match found {
            Some((start, len)) => {
                literal(&mut out, &src[lit..i]);
                put(&mut out, (len << 1) | 1);
                put(&mut out, start);
                i += len;
                lit = i;
                next_in_base = start + len;
            }
            None => i += 1,
        }
    }
    literal(&mut out, &src[lit..]);
    out
}

/// The bytes [`encode`] was given (`None` if `delta` is not an encoding against `base`).
pub fn decode(base: &Base, delta: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(base.len() + 64);
    let mut at = 0;
    while at < delta.len() {
        let n = get(delta, &mut at)?;
        let len = n >> 1;
        if n & 1 == 0 {
            out.extend_from_slice(delta.get(at..at.checked_add(len)?)?);
            at += len;
        } else {
            let start = get(delta, &mut at)?;
            out.extend_from_slice(base.bytes.get(start..start.checked_add(len)?)?);
        }
    }
    Some(out)
}

/// One reference record per owner (by interned name), replaced when a record of the owner
/// differs from it by more than half its size (the owner's jobs changed shape): records
/// encoded against the old one keep it alive through their `Arc`.
#[derive(Debug, Default)]
pub struct Bases {
    by_owner: Vec<Option<Arc<Base>>>,
    /// References held at the last prune ([`Bases::prune`]).
    held_at_prune: usize,
    held: usize,
}

impl Bases {
    /// `json` (a record of `owner`) as a delta and the base it is relative to.
    pub fn encode(&mut self, owner: u32, json: &[u8]) -> (Arc<Base>, Box<[u8]>) {
        let slot = owner as usize;
        if self.by_owner.len() <= slot {
            self.by_owner.resize(slot + 1, None);
        }
        if let Some(base) = &self.by_owner[slot] {
            let delta = encode(base, json);
            if delta.len() * 2 <= json.len() {
                return (base.clone(), delta.into_boxed_slice());
            }
        }
        let base = Arc::new(Base::new(json));
        if self.by_owner[slot].replace(base.clone()).is_none() {
            self.held += 1;
        }
        self.prune();
        let delta = encode(&base, json);
        (base, delta.into_boxed_slice())
    }

    /// Drops the bases no record refers to any more, once the table has doubled since the
    /// last time: owners whose jobs all left would otherwise keep theirs forever.
    fn prune(&mut self) {
        if self.held < 64 || self.held < self.held_at_prune * 2 {
            return;
        }
        for slot in &mut self.by_owner {
            if slot.as_ref().is_some_and(|b| Arc::strong_count(b) == 1) {
                *slot = None;
            }
        }
        self.held = self.by_owner.iter().flatten().count();
        self.held_at_prune = self.held;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn records_of_one_owner_cost_their_differences() {
        let a = br#"{"v":1,"id":345,"submitter":{"owner":"user345","uid":10345,"submission_time":1799996945,"sge_o_home":"/home/user345"},"spec":{"name":"job45.sh","priority":-20,"cluster":"/site/r5"}}"#;
        let b = br#"{"v":1,"id":12345,"submitter":{"owner":"user345","uid":10345,"submission_time":1799997945,"sge_o_home":"/home/user345"},"spec":{"name":"job45.sh","priority":-40,"cluster":"/site/r8"}}"#;
        let base = Base::new(a);
        let delta = encode(&base, b);
        assert_eq!(decode(&base, &delta).as_deref(), Some(&b[..]));
        assert!(delta.len() < 40, "{} bytes", delta.len());
    }

    #[test]
    fn a_base_is_replaced_when_the_owner_s_records_change_shape() {
        let mut bases = Bases::default();
        let (first, _) = bases.encode(3, b"{\"env\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}");
        let other = b"{\"args\":[\"0123456789\",\"abcdefghijklmnopqrstuvwxyz\"]}";
        let (second, delta) = bases.encode(3, other);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(decode(&second, &delta).as_deref(), Some(&other[..]));
        let (third, _) = bases.encode(3, other);
        assert!(Arc::ptr_eq(&second, &third));
    }

    #[test]
    fn records_past_64_kib_are_encoded_too() {
        let base: Vec<u8> = (0..70_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut src = base.clone();
        src[200_000] ^= 1;
        src.truncate(250_000);
        src.extend_from_slice(&base[1000..2000]);
        let b = Base::new(&base);
        let delta = encode(&b, &src);
        assert_eq!(decode(&b, &delta), Some(src));
        assert!(delta.len() < 100, "{} bytes", delta.len());
    }

    proptest! {
        #[test]
        fn decode_gives_back_what_was_encoded(
            base in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..300),
            edits in proptest::collection::vec((any::<usize>(), proptest::collection::vec(any::<u8>(), 0..12), 0usize..12), 0..8),
        ) {
            let mut src = base.clone();
            for (at, insert, remove) in edits {
                let at = if src.is_empty() { 0 } else { at % src.len() };
                let end = (at + remove).min(src.len());
                src.splice(at..end, insert);
            }
            let b = Base::new(&base);
            let delta = encode(&b, &src);
            prop_assert_eq!(decode(&b, &delta), Some(src));
        }
    }
}
