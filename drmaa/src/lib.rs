//! `libdrmaa.so.1.0`: DRMAA 1.0 for gridspool, with the C binding Grid Engine ships
//! (`include/drmaa.h`), so that `drmaa-python`, Galaxy, snakemake and the like run their jobs
//! on gridspool with `DRMAA_LIBRARY_PATH` pointing at this library and nothing else changed.
//!
//! - [`template`]: job templates and the `qsub` command line each stands for;
//! - [`drm`]: the cell, reached through its installed clients (a user's process may not
//!   read or write the spool), one of which answers for the session's job states, and its
//!   accounting file;
//! - [`session`]: the session, its jobs, waiting;
//! - `ffi`: the C functions, the one module with `unsafe` code (raw pointers from C).

pub mod drm;
pub mod error;
mod ffi;
pub mod session;
pub mod template;

/// `drmaa_get_DRM_system`.
pub const DRM_SYSTEM: &str = concat!("gridspool ", env!("CARGO_PKG_VERSION"));
/// `drmaa_get_DRMAA_implementation`.
pub const IMPLEMENTATION: &str = concat!("gridspool DRMAA 1.0 ", env!("CARGO_PKG_VERSION"));
