//! The font PNG charts draw their text with, found on the system when
//! `ibex plot` runs (no font ships with Ibex): the file `IBEX_PLOT_FONT`
//! names if set (and then only it), else the first of the usual places of
//! DejaVu Sans, Liberation Sans, FreeSans or Noto Sans (Debian's
//! `fonts-dejavu-core` first), else what fontconfig's `fc-match` picks for
//! `sans-serif`. It is read once per process, at most [`FONT_BYTES_MAX`],
//! and registered with plotters as `sans-serif` (plotters keeps it for the
//! life of the process, so its bytes are leaked once, ~750 KB for DejaVu
//! Sans). Without one, `ibex plot` writes SVG only and says why.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

/// The environment variable naming the font file to use.
pub const FONT_VARIABLE: &str = "IBEX_PLOT_FONT";
/// The largest font file read, in bytes (DejaVu Sans is 757 KB; Noto's
/// CJK collections reach ~20 MB).
pub const FONT_BYTES_MAX: u64 = 32 << 20;
/// The family the charts name, which the font is registered as.
pub const FONT_FAMILY: &str = "sans-serif";

/// Where fonts usually are, in order: Debian and Ubuntu, Fedora, Arch,
/// then other families, then macOS.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// Why no font could be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FontError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The font file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is larger than [`FONT_BYTES_MAX`].
    #[error("{}: larger than {} bytes", path.display(), FONT_BYTES_MAX)]
    TooLarge {
        /// The font file.
        path: PathBuf,
    },
    /// The file is not a TrueType or OpenType font.
    #[error("{}: not a TrueType or OpenType font", path.display())]
    NotAFont {
        /// The file.
        path: PathBuf,
    },
    /// No font was found.
    #[error("no font found ({FONT_VARIABLE} unset, none of the usual font files exists, fc-match named none)")]
    NotFound,
}

/// Whether `bytes` start like a TrueType, OpenType or collection file.
fn looks_like_a_font(bytes: &[u8]) -> bool {
    matches!(bytes.get(..4), Some(b"\x00\x01\x00\x00" | b"OTTO" | b"true" | b"ttcf"))
}

/// Reads `path` whole if it is a font of at most [`FONT_BYTES_MAX`].
fn read_font(path: &Path) -> Result<Vec<u8>, FontError> {
    let read_error = |source| FontError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(FONT_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > FONT_BYTES_MAX {
        return Err(FontError::TooLarge { path: path.to_owned() });
    }
    if !looks_like_a_font(&bytes) {
        return Err(FontError::NotAFont { path: path.to_owned() });
    }
    Ok(bytes)
}

/// What fontconfig picks for `sans-serif`, if it is installed and names a
/// TrueType or OpenType file.
fn fontconfig_choice() -> Option<PathBuf> {
    let output = Command::new("fc-match").args(["-f", "%{file}", FONT_FAMILY]).output().ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    (output.status.success() && matches!(extension.as_str(), "ttf" | "otf" | "ttc")).then_some(path)
}

/// The font file to use, by the order in the module docs.
fn find_font() -> Result<PathBuf, FontError> {
    if let Some(named) = std::env::var_os(FONT_VARIABLE).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(named));
    }
    let known = FONT_PATHS.iter().map(Path::new).find(|path| path.is_file());
    known.map(Path::to_path_buf).or_else(fontconfig_choice).ok_or(FontError::NotFound)
}

/// Finds, reads and registers the font.
fn load_font() -> Result<PathBuf, FontError> {
    let path = find_font()?;
    let bytes: &'static [u8] = Vec::leak(read_font(&path)?);
    register_font(FONT_FAMILY, FontStyle::Normal, bytes)
        .map_err(|_| FontError::NotAFont { path: path.clone() })?;
    Ok(path)
}

/// The registered font's file, found and registered at the first call.
pub fn chart_font() -> Result<&'static Path, &'static FontError> {
    static FONT: OnceLock<Result<PathBuf, FontError>> = OnceLock::new();
    FONT.get_or_init(load_font).as_ref().map(PathBuf::as_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fonts_and_refuses_other_files() {
        let directory = tempfile::tempdir().unwrap();
        let text = directory.path().join("notes.txt");
        std::fs::write(&text, "not a font").unwrap();
        assert!(matches!(read_font(&text), Err(FontError::NotAFont { .. })));
        let missing = directory.path().join("missing.ttf");
        assert!(matches!(read_font(&missing), Err(FontError::Read { .. })));
        let truetype = directory.path().join("header-only.ttf");
        std::fs::write(&truetype, b"\x00\x01\x00\x00rest").unwrap();
        assert_eq!(read_font(&truetype).unwrap().len(), 8);
        assert!(looks_like_a_font(b"OTTOxxxx") && looks_like_a_font(b"ttcf"));
        assert!(!looks_like_a_font(b"OTT"));
    }
}
