//! File access every layer needs: files opened safely ([`open`]: never through a link,
//! never blocking on a FIFO) and written durably ([`durable`]: whole or not at all). The
//! spool is the largest user but not the only one (`config.yaml`, task directories,
//! accounting), so this stands at the ground, below the configuration.

pub mod durable;
pub mod open;

use std::path::{Path, PathBuf};

/// A durable write or removal that failed, with the path and the operation.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} already exists")]
    Exists { path: PathBuf },
}

impl FileError {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        FileError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}
