//! `qhost` (placeholder while being written).
pub fn main(_args: Vec<String>) -> std::process::ExitCode {
    std::process::ExitCode::from(1)
}
