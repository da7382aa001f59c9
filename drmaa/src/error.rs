//! DRMAA's error codes (the C binding's `DRMAA_ERRNO_*`, in their order) and what
//! `drmaa_strerror` says of each.

/// `DRMAA_ERRNO_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Errno {
    Success = 0,
    InternalError,
    DrmCommunicationFailure,
    AuthFailure,
    InvalidArgument,
    NoActiveSession,
    NoMemory,
    InvalidContactString,
    DefaultContactStringError,
    NoDefaultContactStringSelected,
    DrmsInitFailed,
    AlreadyActiveSession,
    DrmsExitError,
    InvalidAttributeFormat,
    InvalidAttributeValue,
    ConflictingAttributeValues,
    TryLater,
    DeniedByDrm,
    InvalidJob,
    ResumeInconsistentState,
    SuspendInconsistentState,
    HoldInconsistentState,
    ReleaseInconsistentState,
    ExitTimeout,
    NoRusage,
    NoMoreElements,
}

/// The texts of `drmaa_strerror`, by code.
const TEXTS: [&str; 26] = [
    "No errors",
    "The DRMAA implementation has experienced an internal error",
    "Could not contact the DRM system for this request",
    "The request was not processed because the authorization failed",
    "An input value for an argument is invalid",
    "There is no active DRMAA session",
    "Failed to allocate memory",
    "The contact string is invalid",
    "The default contact string could not be used to connect to the DRM system",
    "No default contact string was provided or selected",
    "The DRM system could not be initialized",
    "A DRMAA session is already active",
    "The DRM system could not be disengaged",
    "The format of a job attribute value is invalid",
    "The value of a job attribute is invalid",
    "The value of a job attribute conflicts with a value set before",
    "The DRM system could not take the job now: try later",
    "The DRM system rejected the job",
    "The job does not exist",
    "The job is not suspended: it cannot be resumed",
    "The job is not running: it cannot be suspended",
    "The job cannot be put on hold",
    "The job is not on hold: it cannot be released",
    "The time-out ran out before the job(s) ended",
    "The job ended but no usage or status could be obtained",
    "There are no more elements in the vector",
];

impl Errno {
    pub fn text(code: i32) -> &'static str {
        usize::try_from(code)
            .ok()
            .and_then(|i| TEXTS.get(i))
            .copied()
            .unwrap_or("Unknown DRMAA error code")
    }
}

/// An error and the diagnosis that goes with it (`error_diagnosis`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrmaaError {
    pub code: Errno,
    pub message: String,
}

impl DrmaaError {
    pub fn new(code: Errno, message: impl Into<String>) -> Self {
        DrmaaError {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DrmaaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub type DrmaaResult<T> = Result<T, DrmaaError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_keep_the_c_bindings_numbers() {
        assert_eq!(Errno::InvalidJob as i32, 18);
        assert_eq!(Errno::NoMoreElements as i32, 25);
        assert_eq!(Errno::text(Errno::ExitTimeout as i32), TEXTS[23]);
        assert_eq!(Errno::text(99), "Unknown DRMAA error code");
    }
}
