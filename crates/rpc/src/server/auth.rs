//! HTTP Basic authentication as Core's `httprpc.cpp` does it.
//!
//! Every accepted credential is kept as `user`, `salt` and the hex
//! HMAC-SHA256 of the password keyed by the salt: `-rpcauth=user:salt$hmac`
//! lines as given, `-rpcuser`/`-rpcpassword` hashed at start with a random
//! 16-byte salt (so the password is not kept in memory), and the cookie
//! (`__cookie__` and 32 random bytes in hex, written to `.cookie` at start
//! and deleted at exit) likewise. A request's `Authorization: Basic ...`
//! is decoded, split at the first colon and checked against each
//! credential with Core's timing-resistant comparison.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::config::ServerConfig;

/// The user name of cookie authentication.
pub const COOKIE_USER: &str = "__cookie__";
/// Random bytes in the cookie's password.
const COOKIE_PASSWORD_BYTES: usize = 32;
/// Random bytes in the salt `-rpcpassword` is hashed with.
const SALT_BYTES: usize = 16;

/// Why authentication could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// An `-rpcauth` line is not `user:salt$hmac` (Core refuses to start).
    #[error("invalid -rpcauth argument (expected user:salt$hmac)")]
    InvalidRpcAuth,
    /// The operating system gave no random bytes.
    #[error("no random bytes for the RPC cookie or salt")]
    Random(#[source] getrandom::Error),
    /// The cookie file could not be written.
    #[error("unable to write the RPC cookie file {path}")]
    CookieWrite {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

/// One accepted credential.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Credential {
    user: String,
    salt: String,
    hmac_hex: String,
}

/// The credentials a request may present.
#[derive(Debug, Clone, Default)]
pub(crate) struct Authenticator {
    credentials: Vec<Credential>,
}

/// The cookie file this process wrote; removed by [`CookieFile::remove`].
#[derive(Debug)]
pub(crate) struct CookieFile {
    path: PathBuf,
}

impl CookieFile {
    /// Deletes the file (Core's `DeleteAuthCookie`); a file already gone is
    /// fine.
    pub(crate) fn remove(&self) {
        let _ = fs::remove_file(&self.path);
    }
}

impl Authenticator {
    /// Builds the credentials from `config`, writing the cookie file when
    /// `-rpcpassword` is empty and a cookie path is set.
    pub(crate) fn new(
        config: &ServerConfig,
    ) -> Result<(Authenticator, Option<CookieFile>), AuthError> {
        let mut credentials = Vec::new();
        let mut cookie_file = None;
        let (user, password) = if config.rpc_password.is_empty() {
            match &config.cookie_file {
                Some(path) => {
                    let password = hex(&random_bytes::<COOKIE_PASSWORD_BYTES>()?);
                    write_cookie(path, &password)?;
                    cookie_file = Some(CookieFile { path: path.clone() });
                    (COOKIE_USER.to_owned(), password)
                }
                None => (String::new(), String::new()),
            }
        } else {
            (config.rpc_user.clone(), config.rpc_password.clone())
        };
        if !user.is_empty() || !password.is_empty() {
            let salt = hex(&random_bytes::<SALT_BYTES>()?);
            let hmac_hex = password_hmac(&salt, password.as_bytes());
            credentials.push(Credential { user, salt, hmac_hex });
        }
        for line in &config.rpc_auth {
            credentials.push(parse_rpc_auth(line).ok_or(AuthError::InvalidRpcAuth)?);
        }
        Ok((Authenticator { credentials }, cookie_file))
    }

    /// Whether an `Authorization` header value is accepted.
    pub(crate) fn check(&self, header: &[u8]) -> bool {
        let Some(encoded) = header.strip_prefix(b"Basic ") else { return false };
        let encoded = encoded.trim_ascii();
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
            return false;
        };
        let Some(colon) = decoded.iter().position(|byte| *byte == b':') else { return false };
        let (user, password) = (&decoded[..colon], &decoded[colon + 1..]);
        self.credentials.iter().any(|credential| {
            timing_resistant_equal(credential.user.as_bytes(), user)
                && timing_resistant_equal(
                    password_hmac(&credential.salt, password).as_bytes(),
                    credential.hmac_hex.as_bytes(),
                )
        })
    }
}

/// `user:salt$hmac`, as Core splits it: exactly one colon, exactly one
/// dollar after it.
fn parse_rpc_auth(line: &str) -> Option<Credential> {
    let (user, salted) = line.split_once(':')?;
    if salted.contains(':') {
        return None;
    }
    let (salt, hmac_hex) = salted.split_once('$')?;
    if hmac_hex.contains('$') {
        return None;
    }
    Some(Credential { user: user.to_owned(), salt: salt.to_owned(), hmac_hex: hmac_hex.to_owned() })
}

/// Lower-case hex of HMAC-SHA256(key = salt, message = password).
fn password_hmac(salt: &str, password: &[u8]) -> String {
    // HMAC takes keys of any length; the error branch cannot happen.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(salt.as_bytes()) else {
        return String::new();
    };
    mac.update(password);
    hex(&mac.finalize().into_bytes())
}

/// Core's `TimingResistantEqual`: the time depends on the lengths only.
fn timing_resistant_equal(a: &[u8], b: &[u8]) -> bool {
    if b.is_empty() {
        return a.is_empty();
    }
    let mut accumulator = a.len() ^ b.len();
    for (index, byte) in a.iter().enumerate() {
        accumulator |= usize::from(byte ^ b[index % b.len()]);
    }
    accumulator == 0
}

fn random_bytes<const N: usize>() -> Result<[u8; N], AuthError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(AuthError::Random)?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    ibex_primitives::hex::encode(bytes)
}

/// Writes `__cookie__:<password>` to `<path>.tmp`, readable by the owner
/// only, then renames it over `path` (Core's `GenerateAuthCookie`).
///
/// The temporary file is created fresh (`O_EXCL`): a `.cookie.tmp` left
/// behind, or planted by another user as a symbolic link or a file others
/// can read, is removed first, never written through or reused with its
/// permissions. If one appears again between the removal and the creation,
/// the creation fails and no cookie is written.
fn write_cookie(path: &Path, password: &str) -> Result<(), AuthError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let failed = |source| AuthError::CookieWrite { path: path.to_owned(), source };
    match fs::remove_file(&temporary) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(failed(error)),
        _ => {}
    }
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(failed)?;
    file.write_all(format!("{COOKIE_USER}:{password}").as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    drop(file);
    fs::rename(&temporary, path).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::Network;

    fn basic(user_password: &str) -> Vec<u8> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(user_password);
        format!("Basic {encoded}").into_bytes()
    }

    #[test]
    fn rpcauth_lines_and_passwords() {
        // A line as Core's share/rpcauth/rpcauth.py makes one: user "foo",
        // password "bar", a 16-byte hex salt.
        let salt = "c3c2a0e59b13dbb4f5f6e8c5e0f3e8c3";
        let line = format!("foo:{salt}${}", password_hmac(salt, b"bar"));
        let mut config = ServerConfig::new(Network::Regtest);
        config.rpc_auth = vec![line];
        config.rpc_user = "alice".into();
        config.rpc_password = "secret:with:colons".into();
        let (auth, cookie) = Authenticator::new(&config).unwrap();
        assert!(cookie.is_none());
        assert!(auth.check(&basic("foo:bar")));
        assert!(auth.check(&basic("alice:secret:with:colons")));
        assert!(!auth.check(&basic("foo:baz")));
        assert!(!auth.check(&basic("alice:secret")));
        assert!(!auth.check(&basic("foobar")));
        assert!(!auth.check(b"Bearer abc"));
        assert!(!auth.check(b"Basic !!!"));
        for bad in ["foo", "foo:salt", "foo:a:b$c", "foo:salt$h$h"] {
            config.rpc_auth = vec![bad.into()];
            assert!(Authenticator::new(&config).is_err(), "{bad}");
        }
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231 test case 2: key "Jefe".
        assert_eq!(
            password_hmac("Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(timing_resistant_equal(b"abc", b"abc"));
        assert!(!timing_resistant_equal(b"abc", b"abd"));
        assert!(!timing_resistant_equal(b"abc", b"abcabc"));
        assert!(!timing_resistant_equal(b"", b"a") && timing_resistant_equal(b"", b""));
    }

    #[test]
    fn cookie_is_written_and_removed() {
        let directory =
            std::env::temp_dir().join(format!("ibex-rpc-cookie-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();
        let path = directory.join(".cookie");
        let mut config = ServerConfig::new(Network::Regtest);
        config.cookie_file = Some(path.clone());
        let (auth, cookie) = Authenticator::new(&config).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let password = text.strip_prefix("__cookie__:").unwrap();
        assert_eq!(password.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(auth.check(&basic(&text)));
        assert!(!auth.check(&basic("__cookie__:00")));
        cookie.unwrap().remove();
        assert!(!path.exists());
        fs::remove_dir_all(&directory).unwrap();
    }
}
