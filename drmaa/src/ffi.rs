//! The C functions of `drmaa.h`. The one module with `unsafe` code: it turns C's pointers
//! into Rust values and back, and nothing else.
//!
//! # Safety, for every function here
//!
//! The caller (C) passes what `drmaa.h` says: strings are NUL-terminated or NULL; an output
//! buffer `buf` with its length `len` has room for `len` bytes (a result longer than
//! `len - 1` is cut, and always NUL-terminated); opaque pointers are ones this library handed
//! out and not yet released; `const char *value[]` vectors end with NULL. A NULL where a
//! value is needed is `DRMAA_ERRNO_INVALID_ARGUMENT`, never a crash.
#![allow(unsafe_code)]
#![allow(clippy::missing_safety_doc)]

use crate::error::{DrmaaError, DrmaaResult, Errno};
use crate::session;
use crate::template::{JobTemplate, SCALAR_ATTRIBUTES, VECTOR_ATTRIBUTES};
use std::ffi::{CStr, CString, c_char, c_int, c_long, c_uint};
use std::sync::OnceLock;

/// `drmaa_job_template_t`.
pub struct DrmaaJobTemplate(JobTemplate);

/// `drmaa_attr_names_t`, `drmaa_attr_values_t` and `drmaa_job_ids_t`: a list read one
/// element at a time.
pub struct DrmaaStrings {
    items: Vec<CString>,
    next: usize,
}

fn strings(items: impl IntoIterator<Item = String>) -> *mut DrmaaStrings {
    let items = items
        .into_iter()
        .map(|s| CString::new(s.replace('\0', "")).unwrap_or_default())
        .collect();
    Box::into_raw(Box::new(DrmaaStrings { items, next: 0 }))
}

unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string from the caller (module doc).
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

unsafe fn put(buf: *mut c_char, len: usize, s: &str) {
    if buf.is_null() || len == 0 {
        return;
    }
    let bytes = s.as_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: `buf` has room for `len` bytes (module doc); `n + 1 <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
    }
}

/// The result code, with the diagnosis written on failure.
unsafe fn answer(r: DrmaaResult<()>, diag: *mut c_char, diag_len: usize) -> c_int {
    match r {
        Ok(()) => Errno::Success as c_int,
        Err(e) => {
            // SAFETY: as `put`.
            unsafe { put(diag, diag_len, &e.message) };
            e.code as c_int
        }
    }
}

fn null_argument(what: &str) -> DrmaaError {
    DrmaaError::new(Errno::InvalidArgument, format!("{what} is NULL"))
}

unsafe fn required(p: *const c_char, what: &str) -> DrmaaResult<String> {
    // SAFETY: as `text`.
    unsafe { text(p) }.ok_or_else(|| null_argument(what))
}

/// `const char *value[]`, NULL-terminated.
unsafe fn vector(p: *const *const c_char) -> DrmaaResult<Vec<String>> {
    if p.is_null() {
        return Err(null_argument("the vector"));
    }
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // SAFETY: a NULL-terminated array (module doc).
        let item = unsafe { *p.add(i) };
        if item.is_null() {
            return Ok(out);
        }
        // SAFETY: a NUL-terminated string.
        out.push(unsafe { text(item) }.unwrap_or_default());
        i += 1;
    }
}

// ---------------------------------------------------------------------------------------
// lists

unsafe fn next(values: *mut DrmaaStrings, buf: *mut c_char, len: usize) -> c_int {
    if values.is_null() {
        return Errno::InvalidArgument as c_int;
    }
    // SAFETY: a list this library handed out (module doc).
    let list = unsafe { &mut *values };
    match list.items.get(list.next) {
        Some(item) => {
            // SAFETY: as `put`.
            unsafe { put(buf, len, &item.to_string_lossy()) };
            list.next += 1;
            Errno::Success as c_int
        }
        None => Errno::NoMoreElements as c_int,
    }
}

unsafe fn count(values: *mut DrmaaStrings, size: *mut c_int) -> c_int {
    if values.is_null() || size.is_null() {
        return Errno::InvalidArgument as c_int;
    }
    // SAFETY: a list of ours; `size` points at an int.
    unsafe { *size = (*values).items.len() as c_int };
    Errno::Success as c_int
}

unsafe fn release(values: *mut DrmaaStrings) {
    if !values.is_null() {
        // SAFETY: a list of ours, released once (module doc).
        drop(unsafe { Box::from_raw(values) });
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_next_attr_name(
    values: *mut DrmaaStrings,
    value: *mut c_char,
    value_len: usize,
) -> c_int {
    unsafe { next(values, value, value_len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_next_attr_value(
    values: *mut DrmaaStrings,
    value: *mut c_char,
    value_len: usize,
) -> c_int {
    unsafe { next(values, value, value_len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_next_job_id(
    values: *mut DrmaaStrings,
    value: *mut c_char,
    value_len: usize,
) -> c_int {
    unsafe { next(values, value, value_len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_num_attr_names(
    values: *mut DrmaaStrings,
    size: *mut c_int,
) -> c_int {
    unsafe { count(values, size) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_num_attr_values(
    values: *mut DrmaaStrings,
    size: *mut c_int,
) -> c_int {
    unsafe { count(values, size) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_num_job_ids(
    values: *mut DrmaaStrings,
    size: *mut c_int,
) -> c_int {
    unsafe { count(values, size) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_release_attr_names(values: *mut DrmaaStrings) {
    unsafe { release(values) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_release_attr_values(values: *mut DrmaaStrings) {
    unsafe { release(values) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_release_job_ids(values: *mut DrmaaStrings) {
    unsafe { release(values) }
}

// ---------------------------------------------------------------------------------------
// session

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_init(
    contact: *const c_char,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let contact = text(contact);
        answer(
            session::init(contact.as_deref()),
            error_diagnosis,
            error_diag_len,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_exit(error_diagnosis: *mut c_char, error_diag_len: usize) -> c_int {
    unsafe { answer(session::exit(), error_diagnosis, error_diag_len) }
}

// ---------------------------------------------------------------------------------------
// job templates

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_allocate_job_template(
    jt: *mut *mut DrmaaJobTemplate,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = if jt.is_null() {
            Err(null_argument("the template pointer"))
        } else {
            session::with(|_| Ok(())).map(|()| {
                *jt = Box::into_raw(Box::new(DrmaaJobTemplate(JobTemplate::default())));
            })
        };
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_delete_job_template(
    jt: *mut DrmaaJobTemplate,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = if jt.is_null() {
            Err(null_argument("the template"))
        } else {
            drop(Box::from_raw(jt));
            Ok(())
        };
        answer(r, error_diagnosis, error_diag_len)
    }
}

unsafe fn template<'a>(jt: *const DrmaaJobTemplate) -> DrmaaResult<&'a JobTemplate> {
    if jt.is_null() {
        return Err(null_argument("the template"));
    }
    // SAFETY: a template of ours (module doc).
    Ok(unsafe { &(*jt).0 })
}

unsafe fn template_mut<'a>(jt: *mut DrmaaJobTemplate) -> DrmaaResult<&'a mut JobTemplate> {
    if jt.is_null() {
        return Err(null_argument("the template"));
    }
    // SAFETY: a template of ours (module doc), not shared with another call at once.
    Ok(unsafe { &mut (*jt).0 })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_set_attribute(
    jt: *mut DrmaaJobTemplate,
    name: *const c_char,
    value: *const c_char,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template_mut(jt)?;
            let name = required(name, "the attribute name")?;
            let value = required(value, "the attribute value")?;
            t.set(&name, &value)
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_attribute(
    jt: *mut DrmaaJobTemplate,
    name: *const c_char,
    value: *mut c_char,
    value_len: usize,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template(jt)?;
            let name = required(name, "the attribute name")?;
            let v = t.get(&name)?.unwrap_or("");
            put(value, value_len, v);
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_set_vector_attribute(
    jt: *mut DrmaaJobTemplate,
    name: *const c_char,
    value: *const *const c_char,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template_mut(jt)?;
            let name = required(name, "the attribute name")?;
            t.set_vector(&name, vector(value)?)
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_vector_attribute(
    jt: *mut DrmaaJobTemplate,
    name: *const c_char,
    values: *mut *mut DrmaaStrings,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template(jt)?;
            let name = required(name, "the attribute name")?;
            if values.is_null() {
                return Err(null_argument("the values pointer"));
            }
            let v = t
                .get_vector(&name)?
                .map(<[String]>::to_vec)
                .unwrap_or_default();
            *values = strings(v);
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

unsafe fn names(
    list: &[&str],
    values: *mut *mut DrmaaStrings,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = if values.is_null() {
            Err(null_argument("the values pointer"))
        } else {
            *values = strings(list.iter().map(|s| s.to_string()));
            Ok(())
        };
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_attribute_names(
    values: *mut *mut DrmaaStrings,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe { names(SCALAR_ATTRIBUTES, values, error_diagnosis, error_diag_len) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_vector_attribute_names(
    values: *mut *mut DrmaaStrings,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe { names(VECTOR_ATTRIBUTES, values, error_diagnosis, error_diag_len) }
}

// ---------------------------------------------------------------------------------------
// jobs

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_run_job(
    job_id: *mut c_char,
    job_id_len: usize,
    jt: *const DrmaaJobTemplate,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template(jt)?;
            let ids = session::with(|s| s.run(t, None))?;
            put(
                job_id,
                job_id_len,
                &ids.first().map(ToString::to_string).unwrap_or_default(),
            );
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_run_bulk_jobs(
    jobids: *mut *mut DrmaaStrings,
    jt: *const DrmaaJobTemplate,
    start: c_int,
    end: c_int,
    incr: c_int,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let t = template(jt)?;
            if jobids.is_null() {
                return Err(null_argument("the job ids pointer"));
            }
            if start < 1 || end < start || incr < 1 {
                return Err(DrmaaError::new(
                    Errno::InvalidArgument,
                    format!("invalid task range {start}-{end}:{incr}"),
                ));
            }
            let ids = session::with(|s| s.run(t, Some((start as u32, end as u32, incr as u32))))?;
            *jobids = strings(ids.iter().map(ToString::to_string));
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_control(
    jobid: *const c_char,
    action: c_int,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let id = required(jobid, "the job id")?;
            session::with(|s| s.control(&id, action))
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_synchronize(
    job_ids: *const *const c_char,
    timeout: c_long,
    dispose: c_int,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let ids = vector(job_ids)?;
            // `c_long` is 32 bits wide on some targets.
            #[allow(clippy::useless_conversion)]
            session::synchronize(&ids, i64::from(timeout), dispose != 0)
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wait(
    job_id: *const c_char,
    job_id_out: *mut c_char,
    job_id_out_len: usize,
    stat: *mut c_int,
    timeout: c_long,
    rusage: *mut *mut DrmaaStrings,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let id = required(job_id, "the job id")?;
            // `c_long` is 32 bits wide on some targets.
            #[allow(clippy::useless_conversion)]
            let end = session::wait(&id, i64::from(timeout))?;
            put(job_id_out, job_id_out_len, &end.job.to_string());
            if !stat.is_null() {
                *stat = end.stat;
            }
            match end.rusage {
                Some(usage) => {
                    if !rusage.is_null() {
                        *rusage = strings(usage);
                    }
                    Ok(())
                }
                None => Err(DrmaaError::new(
                    Errno::NoRusage,
                    "no usage information was returned for the completed job",
                )),
            }
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

unsafe fn flag(out: *mut c_int, value: bool) -> c_int {
    if out.is_null() {
        return Errno::InvalidArgument as c_int;
    }
    // SAFETY: `out` points at an int (module doc).
    unsafe { *out = c_int::from(value) };
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wifexited(
    exited: *mut c_int,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { flag(exited, stat & 0x1 != 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wexitstatus(
    exit_status: *mut c_int,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    if exit_status.is_null() {
        return Errno::InvalidArgument as c_int;
    }
    unsafe { *exit_status = (stat >> 4) & 0xff };
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wifsignaled(
    signaled: *mut c_int,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { flag(signaled, stat & 0x2 != 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wtermsig(
    signal: *mut c_char,
    signal_len: usize,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    let number = (stat >> 12) & 0xffff;
    let name = nix::sys::signal::Signal::try_from(number)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("SIG{number}"));
    unsafe { put(signal, signal_len, &name) };
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wcoredump(
    core_dumped: *mut c_int,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { flag(core_dumped, stat & 0x4 != 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_wifaborted(
    aborted: *mut c_int,
    stat: c_int,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { flag(aborted, stat & 0x8 != 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_job_ps(
    job_id: *const c_char,
    remote_ps: *mut c_int,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    unsafe {
        let r = (|| {
            let id = required(job_id, "the job id")?;
            if remote_ps.is_null() {
                return Err(null_argument("the status pointer"));
            }
            *remote_ps = session::with(|s| s.status(&id))?;
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

// ---------------------------------------------------------------------------------------
// gridspool extensions (not DRMAA 1.0: `drmaa.h`'s gridspool section)

/// `DRMAA_GRIDSPOOL_START_UNKNOWN` and `DRMAA_GRIDSPOOL_START_NEVER`.
const START_UNKNOWN: nix::libc::time_t = -1;
const START_NEVER: nix::libc::time_t = -2;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_gridspool_estimated_start(
    job_id: *const c_char,
    start: *mut nix::libc::time_t,
    detail: *mut c_char,
    detail_len: usize,
    error_diagnosis: *mut c_char,
    error_diag_len: usize,
) -> c_int {
    use crate::drm::StartEstimate;
    unsafe {
        let r = (|| {
            let id = required(job_id, "the job id")?;
            if start.is_null() {
                return Err(null_argument("the start time pointer"));
            }
            let (when, text) = match session::with(|s| s.estimated_start(&id))? {
                StartEstimate::At {
                    time,
                    queue,
                    hosts,
                    slots,
                } => (
                    time as nix::libc::time_t,
                    format!(
                        "{queue} on {hosts} ({slots} slot{})",
                        if slots == 1 { "" } else { "s" }
                    ),
                ),
                StartEstimate::Unknown(why) => (START_UNKNOWN, why),
                StartEstimate::Never(why) => (START_NEVER, why),
            };
            *start = when;
            put(detail, detail_len, &text);
            Ok(())
        })();
        answer(r, error_diagnosis, error_diag_len)
    }
}

// ---------------------------------------------------------------------------------------
// information

#[unsafe(no_mangle)]
pub extern "C" fn drmaa_strerror(drmaa_errno: c_int) -> *const c_char {
    static TEXTS: OnceLock<Vec<CString>> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        (0..=Errno::NoMoreElements as i32 + 1)
            .map(|c| CString::new(Errno::text(c)).unwrap_or_default())
            .collect()
    });
    let i = usize::try_from(drmaa_errno)
        .ok()
        .filter(|i| *i < texts.len() - 1)
        .unwrap_or(texts.len() - 1);
    texts[i].as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_contact(
    contact: *mut c_char,
    contact_len: usize,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { put(contact, contact_len, &session::contact()) };
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_version(
    major: *mut c_uint,
    minor: *mut c_uint,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    if major.is_null() || minor.is_null() {
        return Errno::InvalidArgument as c_int;
    }
    unsafe {
        *major = 1;
        *minor = 0;
    }
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_DRM_system(
    drm_system: *mut c_char,
    drm_system_len: usize,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { put(drm_system, drm_system_len, crate::DRM_SYSTEM) };
    Errno::Success as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmaa_get_DRMAA_implementation(
    drmaa_impl: *mut c_char,
    drmaa_impl_len: usize,
    _error_diagnosis: *mut c_char,
    _error_diag_len: usize,
) -> c_int {
    unsafe { put(drmaa_impl, drmaa_impl_len, crate::IMPLEMENTATION) };
    Errno::Success as c_int
}
