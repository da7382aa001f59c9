//! `qhold` (being written).

pub fn main(args: Vec<String>) -> std::process::ExitCode {
    let mut o = super::Output {
        code: 1,
        ..Default::default()
    };
    o.err(format!(
        "qhold: not implemented yet ({} arguments)",
        args.len()
    ));
    o.finish()
}
