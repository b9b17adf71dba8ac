//! Files `ibexd` creates are its user's alone: Core's umask of 077 is set
//! before anything is created, and the RPC cookie's temporary file is created
//! fresh, so a `.cookie.tmp` planted in the chain directory (a symbolic link to
//! another file, or a file others can read) is neither written through nor
//! reused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{free_port, wait_exit, wait_for_log};

/// `ibexd` started by a shell whose umask lets everyone read (022), so
/// only the node's own umask keeps its files private.
fn ibexd_under_open_umask(datadir: &Path, options: &[String]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("umask 022; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_ibexd"))
        .arg(common::datadir_argument(datadir))
        .args(common::REGTEST_QUIET)
        .args(options)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Every file and directory under `directory`, not following links.
fn entries(directory: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            found.extend(entries(&path));
        }
        found.push(path);
    }
    found
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn files_are_private_and_a_planted_cookie_file_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("node");
    let chain_directory = datadir.join("regtest");
    std::fs::create_dir_all(&chain_directory).unwrap();
    // Another user's file, which a link in the chain directory points at.
    let victim = root.path().join("victim");
    std::fs::write(&victim, "not the cookie").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    symlink(&victim, chain_directory.join(".cookie.tmp")).unwrap();

    let options = vec![
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={}", free_port()),
        format!("-rpcport={}", free_port()),
    ];
    let mut child = common::spawn_node(&mut ibexd_under_open_umask(&datadir, &options));
    wait_for_log(&datadir, "init message: Done loading", &mut child);
    let cookie = chain_directory.join(".cookie");
    assert_eq!(mode(&cookie), 0o600, "the cookie is the owner's alone");
    let text = std::fs::read_to_string(&cookie).unwrap();
    assert!(text.starts_with("__cookie__:") && text.len() == 11 + 64, "{text}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "not the cookie");
    assert_eq!(mode(&victim), 0o644, "the link's target keeps its permissions");
    assert!(std::fs::symlink_metadata(chain_directory.join(".cookie.tmp")).is_err());

    common::terminate(&child);
    assert!(wait_exit(&mut child, &datadir).success());
    assert!(chain_directory.join("ibex_peers.dat").exists(), "the address file is written");
    // Everything but the chain directory, which the test made to plant the link.
    let created: Vec<PathBuf> =
        entries(&datadir).into_iter().filter(|path| *path != chain_directory).collect();
    assert!(created.len() > 10, "{created:?}");
    for path in created {
        assert_eq!(mode(&path) & 0o077, 0, "{} is open to others", path.display());
    }
}
