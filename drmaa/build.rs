//! `libdrmaa.so.1.0` is the soname Grid Engine's library has: programs linked against it
//! (`-ldrmaa`) load ours under the same name.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdrmaa.so.1.0");
}
