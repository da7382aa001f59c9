//! The evolving state of the FBSNG and Armada policies, kept by the daemon in `daemon/` as
//! JSON so that a restart does not forget it. One reader and one writer for both.

use crate::spool::SpoolError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Reads `dir/name`; a missing or unreadable file is `None` (the policy starts fresh).
pub fn load<T: DeserializeOwned>(dir: &Path, name: &str) -> Option<T> {
    let bytes = crate::file::open::read(&dir.join(name)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes `dir/name` atomically (temp file, fsync, rename, fsync of the directory).
pub fn save<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), SpoolError> {
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| SpoolError::io("serialize", &dir.join(name), std::io::Error::other(e)))?;
    crate::file::durable::write_replace(dir, name, &json, 0o644).map_err(SpoolError::from)
}
