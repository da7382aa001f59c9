//! A compiled snapshot of the configuration, so that a client does not parse YAML on every
//! call (the YAML parse was the largest user-space cost of `qsub`: about 700,000 of its
//! 1,270,000 instructions).
//!
//! `sched_d` (at start, on reload and at `--init`) writes `config.snapshot` next to
//! `config.yaml`: a header line, the exact bytes of `config.yaml` it parsed, then the parsed
//! configuration as JSON. A client uses the snapshot only when it provably stands for the
//! `config.yaml` it has just read:
//!
//! * the YAML bytes inside are byte for byte those of the current `config.yaml` (not a size
//!   or a time stamp, which an edit within one clock tick can leave unchanged);
//! * it was written by a build whose configuration code is this one: the header carries a
//!   fingerprint of the configuration module's source, the crate version and `Cargo.lock`
//!   (a field added, a default or a parser changed: the fingerprint changes);
//! * the JSON parses back to exactly the configuration the YAML gave, which passed
//!   validation: the writer checks both before writing (a float that JSON would not carry exactly, for instance, means no
//!   snapshot), and parsing is deterministic;
//! * its owner is root or the owner of `config.yaml`, and neither group nor others may write
//!   it (checked by the caller, who has the file's metadata).
//!
//! Anything else — no snapshot, another build, another text, a malformed file — and the client
//! parses `config.yaml` as before. The snapshot is never the authority: `sched_d` always
//! parses the YAML itself.

use super::ClusterConfig;

/// First word of the header line.
const MAGIC: &str = "gridspool-config-snapshot";

/// Layout version of the snapshot file.
const FORMAT: u32 = 1;

/// FNV-1a over the sources that decide how `config.yaml` becomes a [`ClusterConfig`].
const fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut p = 0;
    while p < parts.len() {
        let bytes = parts[p];
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        // A separator, so that moving bytes from one part to the next changes the hash.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        p += 1;
    }
    h
}

/// This build's fingerprint: the configuration types and their parser (through the crate
/// versions in `Cargo.lock`), and the snapshot code itself.
pub const BUILD_FINGERPRINT: u64 = fingerprint(&[
    include_bytes!("mod.rs"),
    include_bytes!("complexes.rs"),
    include_bytes!("calendars.rs"),
    include_bytes!("resource_quotas.rs"),
    include_bytes!("snapshot.rs"),
    include_bytes!("../../Cargo.lock"),
    env!("CARGO_PKG_VERSION").as_bytes(),
]);

fn header(yaml_len: usize) -> String {
    format!("{MAGIC} {FORMAT} {BUILD_FINGERPRINT:016x} {yaml_len}\n")
}

/// The snapshot of `config`, parsed from `yaml`; `None` when the configuration would not come
/// back exactly from its JSON form (then clients keep parsing the YAML).
pub fn encode(yaml: &[u8], config: &ClusterConfig) -> Option<Vec<u8>> {
    // Checked here, once, rather than by every client that reads the snapshot back.
    config.validate().ok()?;
    let json = serde_json::to_vec(config).ok()?;
    let back: ClusterConfig = serde_json::from_slice(&json).ok()?;
    if back != *config {
        return None;
    }
    let head = header(yaml.len());
    let mut out = Vec::with_capacity(head.len() + yaml.len() + json.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(yaml);
    out.extend_from_slice(&json);
    Some(out)
}

/// The configuration in `snapshot` if it was made by this build from exactly `yaml`.
pub fn decode(snapshot: &[u8], yaml: &[u8]) -> Option<ClusterConfig> {
    let end = snapshot.iter().position(|b| *b == b'\n')?;
    let head = snapshot.get(..=end)?;
    if head != header(yaml.len()).as_bytes() {
        return None;
    }
    let rest = &snapshot[end + 1..];
    if rest.len() < yaml.len() || &rest[..yaml.len()] != yaml {
        return None;
    }
    let json = std::str::from_utf8(&rest[yaml.len()..]).ok()?;
    // Not validated again: `encode` wrote only a configuration that passed, and the JSON
    // comes back to exactly it (validation was a tenth of a `qsub`'s instructions).
    let config: ClusterConfig = serde_json::from_str(json).ok()?;
    Some(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn examples() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/spool/examples");
        let mut texts = vec![ClusterConfig::default_text("node1", 4)];
        for entry in std::fs::read_dir(dir).expect("examples") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                texts.push(std::fs::read_to_string(&path).expect("read example"));
            }
        }
        assert!(texts.len() >= 5, "the examples were not found");
        texts
    }

    #[test]
    fn snapshots_of_the_shipped_configurations_give_back_what_the_yaml_gives() {
        for text in examples() {
            let config = ClusterConfig::parse(&text).expect("parses");
            let snap = encode(text.as_bytes(), &config).expect("round-trips through JSON");
            assert_eq!(decode(&snap, text.as_bytes()), Some(config));
        }
    }

    #[test]
    fn a_snapshot_of_another_text_or_build_or_a_damaged_one_is_not_used() {
        let text = ClusterConfig::default_text("node1", 4);
        let config = ClusterConfig::parse(&text).expect("parses");
        let snap = encode(text.as_bytes(), &config).expect("encodes");
        // One byte changed, same length (an edit within one clock tick, for instance).
        let edited = text.replacen("slots: 4", "slots: 5", 1);
        assert_eq!(edited.len(), text.len());
        assert_eq!(decode(&snap, edited.as_bytes()), None);
        // Another build.
        let other = String::from_utf8(snap.clone()).expect("utf8").replacen(
            &format!("{BUILD_FINGERPRINT:016x}"),
            "0000000000000000",
            1,
        );
        assert_eq!(decode(other.as_bytes(), text.as_bytes()), None);
        // Truncated, or empty.
        assert_eq!(decode(&snap[..snap.len() - 1], text.as_bytes()), None);
        assert_eq!(decode(b"", text.as_bytes()), None);
    }

    #[test]
    fn a_configuration_json_would_not_carry_exactly_gets_no_snapshot() {
        let text = ClusterConfig::default_text("node1", 4);
        let mut config = ClusterConfig::parse(&text).expect("parses");
        config.scheduler.weight_urgency = f64::NAN;
        assert_eq!(encode(text.as_bytes(), &config), None);
    }
}
