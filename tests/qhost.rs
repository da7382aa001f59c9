//! `qhost` against the SGE 8.1.9 captures.
