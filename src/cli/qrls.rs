//! `qrls`: releases holds; the same code as `qhold` (see [`super::qhold`]), as in SGE where
//! both are `qalter` under another name.

use super::qhold::{HoldCommand, run};

pub fn main(args: Vec<String>) -> std::process::ExitCode {
    run(HoldCommand::Release, args)
}
