//! The library exports every function `include/drmaa.h` declares (and so `cargo test
//! --workspace` builds `libdrmaa.so` before the cell tests of `tests/drmaa.rs` load it).

#[test]
fn every_function_of_the_header_is_exported() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/drmaa.h"))
        .expect("header");
    let declared: Vec<String> = header
        .lines()
        .filter(|l| l.contains('('))
        .filter_map(|l| {
            let name = l.split('(').next()?.split_whitespace().last()?;
            let name = name.trim_start_matches('*');
            name.starts_with("drmaa_").then(|| name.to_string())
        })
        .collect();
    assert_eq!(declared.len(), 37, "{declared:?}");
    // `cargo test` builds the library in `<profile>/deps/`.
    let lib = std::env::current_exe()
        .expect("exe")
        .ancestors()
        .find(|d| d.join("deps").is_dir())
        .expect("the profile directory")
        .join("deps/libdrmaa.so");
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm");
    let symbols = String::from_utf8_lossy(&out.stdout);
    for name in &declared {
        assert!(
            symbols.lines().any(|l| l.ends_with(&format!(" T {name}"))),
            "{name} is not exported by {}",
            lib.display()
        );
    }
}
