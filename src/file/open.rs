//! The one way a file the project reads is opened (issue 12): never through a symbolic link,
//! never blocking, and only if it is a regular file. The spool's files, `config.yaml` and
//! the task directories are all opened here.
//!
//! A FIFO in `jobs/` once hung `sched_d` for ever in `open()` (and `qstat -j` and `qdel`
//! with it), and a symbolic link there was followed and read (to `/etc/passwd`) before it
//! was set aside. So every open under the spool is `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
//! O_NOCTTY` (a FIFO, a device or a socket cannot make it wait; a link is refused by the
//! kernel, not checked before and raced after), then `fstat` of the descriptor itself says
//! whether it is a regular file, and only then is `O_NONBLOCK` cleared (for files that are
//! written; reads of a regular file ignore it). Anything else is
//! [`OpenError::NotRegular`], which readers report and `sched_d` sets aside (the spool's
//! quarantine) like any malformed file; it is never read.
//!
//! Only the last component of a path is checked: the directories above are the spool's own
//! (`sched_d --init`, `scripts/install-multiuser.sh`), which users cannot replace.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::Mode;

/// Why a spool file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A FIFO, socket, device, directory or symbolic link where a file was expected.
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
}

impl OpenError {
    /// The file does not exist (readers of the spool take that as "not there yet" or "gone").
    pub fn is_not_found(&self) -> bool {
        matches!(self, OpenError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

impl From<OpenError> for std::io::Error {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Io(e) => e,
            other @ OpenError::NotRegular(_) => {
                std::io::Error::new(std::io::ErrorKind::InvalidData, other)
            }
        }
    }
}

/// Whether an I/O error came from [`OpenError::NotRegular`] (after a conversion to
/// `std::io::Error`).
pub fn is_not_regular(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<OpenError>())
        .is_some_and(|o| matches!(o, OpenError::NotRegular(_)))
}

/// What a file type is called in messages.
fn kind_name(t: std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// What the entry at `path` is called when it is not a regular file.
fn lstat_name(path: &Path) -> Option<&'static str> {
    let t = std::fs::symlink_metadata(path).ok()?.file_type();
    (!t.is_file()).then(|| kind_name(t))
}

/// How an open is asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// Appending, created with this mode if missing.
    Append(u32),
    /// Reading and writing in place, created with this mode if missing.
    Update(u32),
}

fn flags(access: Access) -> (OFlag, Mode) {
    let safe = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
    match access {
        Access::Read => (OFlag::O_RDONLY | safe, Mode::empty()),
        Access::Append(mode) => (
            OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT | safe,
            Mode::from_bits_truncate(mode),
        ),
        Access::Update(mode) => (
            OFlag::O_RDWR | OFlag::O_CREAT | safe,
            Mode::from_bits_truncate(mode),
        ),
    }
}

/// Turns the result of an `open`/`openat` into a checked regular file. `lstat` names what
/// the kernel refused to open (`ELOOP`: a link; `ENXIO`: a socket, or a FIFO opened for
/// writing; `EISDIR`: a directory opened for writing).
fn checked(
    access: Access,
    opened: nix::Result<std::os::fd::OwnedFd>,
    lstat: impl FnOnce() -> Option<&'static str>,
) -> Result<File, OpenError> {
    use nix::errno::Errno;
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::ELOOP) => return Err(OpenError::NotRegular("a symbolic link")),
        Err(e @ (Errno::ENXIO | Errno::EISDIR | Errno::ENODEV)) => {
            return Err(match lstat() {
                Some(kind) => OpenError::NotRegular(kind),
                None => OpenError::Io(std::io::Error::from(e)),
            });
        }
        Err(e) => return Err(OpenError::Io(std::io::Error::from(e))),
    };
    let file = File::from(fd);
    let t = file.metadata()?.file_type();
    if !t.is_file() {
        return Err(OpenError::NotRegular(kind_name(t)));
    }
    // Back to blocking I/O for files that are written. `F_SETFL` sets only the status flags
    // (`O_APPEND`, `O_NONBLOCK`…), so the ones wanted are known without an `F_GETFL`. A
    // regular file that is only read keeps the flag: Linux ignores `O_NONBLOCK` for
    // regular files (mandatory locking, the one exception, is gone since 5.15), and a scan
    // of 100,000 job files saves 100,000 system calls.
    let keep = match access {
        Access::Read => return Ok(file),
        Access::Append(_) => OFlag::O_APPEND,
        Access::Update(_) => OFlag::empty(),
    };
    fcntl(file.as_fd(), FcntlArg::F_SETFL(keep)).map_err(io)?;
    Ok(file)
}

fn io(e: nix::Error) -> std::io::Error {
    std::io::Error::from(e)
}

/// Opens a spool file for reading: a regular file, never through a link, never blocking.
pub fn open(path: &Path) -> Result<File, OpenError> {
    let (flags, mode) = flags(Access::Read);
    checked(Access::Read, nix::fcntl::open(path, flags, mode), || {
        lstat_name(path)
    })
}

/// [`open`] for `name` in the directory `dir` (`openat`: one name resolved per file).
pub fn open_at(dir: &File, name: &str) -> Result<File, OpenError> {
    let (flags, mode) = flags(Access::Read);
    checked(
        Access::Read,
        nix::fcntl::openat(dir, name, flags, mode),
        || {
            nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .ok()
                .and_then(|st| mode_name(st.st_mode))
        },
    )
}

/// Opens a spool file for appending, creating it with `mode` if missing; refuses what
/// [`open`] refuses (appending to a link would write where the link points).
pub fn open_append(path: &Path, mode: u32) -> Result<File, OpenError> {
    let access = Access::Append(mode);
    let (flags, mode) = flags(access);
    checked(access, nix::fcntl::open(path, flags, mode), || {
        lstat_name(path)
    })
}

/// Opens a spool file for reading and writing in place (the id counters of `seq/`),
/// creating it with `mode` if missing; refuses what [`open`] refuses.
pub fn open_update(path: &Path, mode: u32) -> Result<File, OpenError> {
    let access = Access::Update(mode);
    let (flags, mode) = flags(access);
    checked(access, nix::fcntl::open(path, flags, mode), || {
        lstat_name(path)
    })
}

/// Reads a whole spool file ([`open`]).
pub fn read(path: &Path) -> Result<Vec<u8>, OpenError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads a whole spool file as text ([`open`]).
pub fn read_to_string(path: &Path) -> Result<String, OpenError> {
    use std::io::Read;
    let mut text = String::new();
    open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// What an `st_mode` (from `fstatat`) is called in messages; `None` for a regular file.
fn mode_name(st_mode: nix::libc::mode_t) -> Option<&'static str> {
    use nix::libc::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};
    Some(match st_mode & S_IFMT {
        S_IFREG => return None,
        S_IFIFO => "a FIFO",
        S_IFSOCK => "a socket",
        S_IFCHR => "a character device",
        S_IFBLK => "a block device",
        S_IFDIR => "a directory",
        S_IFLNK => "a symbolic link",
        _ => "not a file",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open_and_nothing_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("file"), b"data").expect("file");
        nix::unistd::mkfifo(&d.join("fifo"), Mode::from_bits_truncate(0o644)).expect("fifo");
        std::os::unix::fs::symlink(d.join("file"), d.join("link")).expect("link");
        std::os::unix::fs::symlink(d.join("none"), d.join("dangling")).expect("link");
        std::fs::create_dir(d.join("dir")).expect("dir");
        let _sock = std::os::unix::net::UnixListener::bind(d.join("sock")).expect("socket");
        assert_eq!(read(&d.join("file")).expect("read"), b"data");
        let dir_file = File::open(d).expect("dir");
        for (name, kind) in [
            ("fifo", "a FIFO"),
            ("link", "a symbolic link"),
            ("dangling", "a symbolic link"),
            ("dir", "a directory"),
            ("sock", "a socket"),
        ] {
            let path = d.join(name);
            for e in [
                open(&path).expect_err(name),
                open_at(&dir_file, name).expect_err(name),
                open_append(&path, 0o644).expect_err(name),
                open_update(&path, 0o644).expect_err(name),
            ] {
                assert!(
                    matches!(e, OpenError::NotRegular(k) if k == kind),
                    "{name}: {e}"
                );
                assert!(is_not_regular(&std::io::Error::from(e)));
            }
        }
        assert!(open(&d.join("none")).expect_err("missing").is_not_found());
        // A regular file opened for writing blocks as usual again (O_NONBLOCK cleared).
        let f = open_update(&d.join("file"), 0o644).expect("open");
        let fl = OFlag::from_bits_truncate(fcntl(f.as_fd(), FcntlArg::F_GETFL).expect("flags"));
        assert!(!fl.contains(OFlag::O_NONBLOCK));
        let f = open_append(&d.join("file"), 0o644).expect("open");
        let fl = OFlag::from_bits_truncate(fcntl(f.as_fd(), FcntlArg::F_GETFL).expect("flags"));
        assert!(!fl.contains(OFlag::O_NONBLOCK) && fl.contains(OFlag::O_APPEND));
        // Appending creates a missing file; the link was not followed to the file.
        use std::io::Write;
        open_append(&d.join("new"), 0o600)
            .expect("append")
            .write_all(b"x")
            .expect("write");
        open_append(&d.join("new"), 0o600)
            .expect("append")
            .write_all(b"y")
            .expect("write");
        assert_eq!(std::fs::read(d.join("new")).expect("read"), b"xy");
        assert_eq!(std::fs::read(d.join("file")).expect("read"), b"data");
    }
}
