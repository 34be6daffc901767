//! The terminal's width in columns, so the progress line fits on one row: a
//! line that wraps cannot be erased with one carriage return. Unix asks the
//! kernel (`TIOCGWINSZ` on stderr, where the line is drawn); elsewhere, and
//! where stderr is no terminal or the kernel says 0, the answer is 80.

/// The width assumed where the terminal does not say.
pub const FALLBACK_COLUMNS: usize = 80;

/// The columns of the terminal stderr writes to.
pub fn columns() -> usize {
    asked().filter(|&c| c > 0).unwrap_or(FALLBACK_COLUMNS)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn asked() -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points
    // at a live one; on a descriptor that is no terminal it fails and writes
    // nothing.
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    ok.then_some(usize::from(size.ws_col))
}

#[cfg(not(unix))]
fn asked() -> Option<usize> {
    None
}
