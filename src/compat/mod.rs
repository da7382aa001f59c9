//! Everything a Grid Engine user observes: option tables and their parser, output formats
//! (plain and `-xml`), messages and exit codes. Behaviour is checked against
//! SGE 8.1.9 captures in `tests/compat/`; deliberate divergences are listed in
//! `tests/compat/DIVERGENCES.md`.

pub mod ar;
pub mod docs;
pub mod host_attributes;
pub mod job_list;
pub mod messages;
pub mod options;
pub mod pattern;
pub mod qconf;
pub mod qconf_attrs;
pub mod qquota;
pub mod qstat;
pub mod qsub_options;
pub mod sge_conf;
pub mod sge_export;
pub mod submit;
pub mod sync;
pub mod syntax;
