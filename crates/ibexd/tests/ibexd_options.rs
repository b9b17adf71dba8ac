//! `ibexd`'s option handling end to end: the binary on temporary data
//! directories (exit codes, Core's error texts, the log file), and
//! `parse_options` on the configuration-file rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_core_blocks, datadir_argument, debug_log};
use ibex_daemon::options::{
    parse_options, AssumeValid, ConfigError, ConfigFileStatus, ConfigWarning,
};
use ibex_primitives::params::Network;

/// `ibexd <arguments>` with `HOME` set to `home`: no `-datadir` of its own.
fn ibexd(arguments: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ibexd")).args(arguments).env("HOME", home).output().unwrap()
}

/// A node with no blocks has the genesis block for its tip, below any
/// positive `-stopatheight`: `-stopatheight=-1` (every height) ends its
/// run there, as `bitcoind`'s ends at its first tip; no RPC server binds.
const ENDS_AT_GENESIS: [&str; 2] = ["-stopatheight=-1", "-server=0"];

/// [`ibexd`] with [`ENDS_AT_GENESIS`] after `arguments`.
fn ibexd_to_genesis(arguments: &[&str], home: &Path) -> Output {
    let arguments: Vec<&str> = arguments.iter().chain(&ENDS_AT_GENESIS).copied().collect();
    ibexd(&arguments, home)
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// `YYYY-MM-DDTHH:MM:SSZ ` at the start of a line.
fn is_timestamped(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.len() > 21
        && bytes[..20].iter().enumerate().all(|(index, byte)| match index {
            4 | 7 => *byte == b'-',
            10 => *byte == b'T',
            13 | 16 => *byte == b':',
            19 => *byte == b'Z',
            _ => byte.is_ascii_digit(),
        })
        && bytes[20] == b' '
}

#[test]
fn unknown_option_and_stray_token_fail_like_core() {
    let home = tempfile::tempdir().unwrap();
    let output = ibexd(&["-regtest", "-foo=1"], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "Error: Error parsing command line arguments: Invalid parameter -foo=1\n"
    );
    let output = ibexd(&["regtest"], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "Error: Command line contains unexpected token 'regtest', see ibexd -h for a list of options.\n"
    );
    let output = ibexd(&["-regtest", "-testnet4"], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).starts_with("Error: Invalid combination of -regtest"));
}

#[test]
fn help_and_version_exit_zero() {
    let home = tempfile::tempdir().unwrap();
    for flag in ["-help", "-?", "--h"] {
        let output = ibexd(&[flag, "-datadir=/does/not/exist"], home.path());
        assert_eq!(output.status.code(), Some(0), "{flag}");
        let text = stdout(&output);
        assert!(text.contains("Usage: ibexd [options]"), "{text}");
        assert!(text
            .contains("\n  -dbcache=<n>\n       Database cache in MiB (minimum 4, default: 450)"));
        assert!(text.contains("\n  -par=<n>\n"));
    }
    let output = ibexd(&["-version"], home.path());
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).starts_with("Ibex daemon version v"));
}

#[test]
fn missing_data_directory_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("absent");
    let output = ibexd(&[&datadir_argument(&missing)], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("Error: Specified data directory \"{}\" does not exist.\n", missing.display())
    );
}

#[test]
fn regtest_from_the_config_file_logs_to_the_chain_directory() {
    let home = tempfile::tempdir().unwrap();
    let datadir = home.path().join("data");
    std::fs::create_dir(&datadir).unwrap();
    std::fs::write(
        datadir.join("bitcoin.conf"),
        "# chosen here\nregtest=1\nprinttoconsole=0\n[regtest]\ndbcache=100\n",
    )
    .unwrap();
    let output = ibexd_to_genesis(&[&datadir_argument(&datadir), "-par=2"], home.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "", "printtoconsole=0 from the file");
    let log = debug_log(&datadir);
    assert!(log.starts_with("\n\n\n\n\n"));
    let lines: Vec<&str> = log.trim_start_matches('\n').lines().collect();
    assert!(lines.iter().all(|line| is_timestamped(line)), "{log}");
    let messages: Vec<&str> = lines.iter().map(|line| &line[21..]).collect();
    assert!(messages[0].starts_with("Ibex version v"));
    let expected = [
        format!("Using data directory {}", datadir.join("regtest").display()),
        format!("Config file: {}", datadir.join("bitcoin.conf").display()),
        "Config file arg: printtoconsole=\"0\"".to_owned(),
        "Config file arg: regtest=\"1\"".to_owned(),
        "Config file arg: [regtest] dbcache=\"100\"".to_owned(),
        format!("Command-line arg: datadir=\"{}\"", datadir.display()),
        "Command-line arg: par=\"2\"".to_owned(),
        "Script verification uses 1 additional threads".to_owned(),
        "* Using 2.0 MiB for block index database".to_owned(),
        "* Using 12.7 MiB for chain state database".to_owned(),
        "* Using 12.5 MiB for blocks read ahead of validation".to_owned(),
        "* Using 72.8 MiB for in-memory UTXO set".to_owned(),
        "Validating signatures for all blocks.".to_owned(),
        "Shutdown: done".to_owned(),
    ];
    for line in &expected {
        assert!(messages.contains(&line.as_str()), "missing {line:?} in\n{log}");
    }
    // A second run appends.
    let output = ibexd_to_genesis(&[&datadir_argument(&datadir)], home.path());
    assert_eq!(output.status.code(), Some(0));
    let log = debug_log(&datadir);
    assert_eq!(log.matches("Shutdown: done").count(), 2);
}

#[test]
fn default_data_directory_and_console() {
    let home = tempfile::tempdir().unwrap();
    let output = ibexd_to_genesis(&["-printtoconsole", "-debuglogfile=other.log"], home.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let console = stdout(&output);
    assert!(console.lines().all(is_timestamped), "{console}");
    assert!(
        console.contains(&format!("Using data directory {}", home.path().join(".ibex").display()))
    );
    assert!(console.contains("Config file: ") && console.contains("(not found, skipping)"));
    let log = std::fs::read_to_string(home.path().join(".ibex/other.log")).unwrap();
    assert!(log.contains("Command-line arg: debuglogfile=\"other.log\""));
}

#[test]
fn config_file_errors_exit_one() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("bitcoin.conf"), "regtest=1\nnodbcache\n").unwrap();
    let output = ibexd(&[&datadir_argument(home.path())], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "Error: Error reading configuration file: parse error on line 2: nodbcache, \
         if you intended to specify a negated option, use nodbcache=1 instead\n"
    );
    let output = ibexd(&[&datadir_argument(home.path()), "-conf=missing.conf"], home.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("could not be opened"), "{}", stderr(&output));
}

struct Fixture {
    _directory: tempfile::TempDir,
    datadir: PathBuf,
}

impl Fixture {
    fn new(conf: &str) -> Fixture {
        let directory = tempfile::tempdir().unwrap();
        let datadir = directory.path().canonicalize().unwrap();
        std::fs::write(datadir.join("bitcoin.conf"), conf).unwrap();
        Fixture { _directory: directory, datadir }
    }

    fn parse(&self, extra: &[&str]) -> Result<ibex_daemon::options::NodeOptions, ConfigError> {
        let mut arguments = vec![datadir_argument(&self.datadir)];
        arguments.extend(extra.iter().map(|argument| (*argument).to_owned()));
        parse_options(&arguments)
    }
}

#[test]
fn defaults_and_layout() {
    let fixture = Fixture::new("");
    let options = fixture.parse(&[]).unwrap();
    assert_eq!(options.network, Network::Main);
    assert_eq!(options.data_directory, fixture.datadir);
    assert_eq!(options.chain_directory, fixture.datadir);
    assert_eq!(options.blocks_directory, fixture.datadir.join("blocks"));
    assert_eq!(options.dbcache_mebibytes, 450);
    assert_eq!(options.database_batch_bytes, 33_554_432);
    assert_eq!(options.assume_valid, AssumeValid::Default);
    assert_eq!(options.stop_at_height, None);
    assert!(options.print_to_console && !options.reindex && !options.reindex_chainstate);
    assert_eq!(options.debug_log_file, Some(fixture.datadir.join("debug.log")));
    assert_eq!(options.config_file, ConfigFileStatus::Found(fixture.datadir.join("bitcoin.conf")));
    let options =
        fixture.parse(&["-testnet4", "-nodebuglogfile", "-dbcache=1", "-noconf"]).unwrap();
    assert_eq!(options.chain_directory, fixture.datadir.join("testnet4"));
    assert_eq!(options.blocks_directory, fixture.datadir.join("testnet4/blocks"));
    assert_eq!(options.debug_log_file, None);
    assert_eq!(options.dbcache_mebibytes, 4);
    assert_eq!(options.config_file, ConfigFileStatus::Disabled);
    let blocks = tempfile::tempdir().unwrap();
    let argument = format!("-blocksdir={}", blocks.path().display());
    let options = fixture.parse(&["-chain=signet", &argument]).unwrap();
    assert_eq!(options.blocks_directory, blocks.path().join("signet/blocks"));
    let error = fixture.parse(&["-blocksdir=/does/not/exist"]).unwrap_err();
    assert!(matches!(error, ConfigError::BlocksDirectoryMissing { .. }));
}

#[test]
fn precedence_command_line_then_section_then_top_level() {
    let fixture = Fixture::new(
        "chain=regtest\ndbcache=100\nstopatheight=7\n[regtest]\ndbcache=200\n[main]\ndbcache=300\n",
    );
    let options = fixture.parse(&[]).unwrap();
    assert_eq!(options.network, Network::Regtest);
    assert_eq!(options.dbcache_mebibytes, 200);
    assert_eq!(options.stop_at_height, Some(7));
    assert_eq!(fixture.parse(&["-dbcache=50"]).unwrap().dbcache_mebibytes, 50);
    // -nostopatheight on the command line hides the file's value.
    assert_eq!(fixture.parse(&["-nostopatheight"]).unwrap().stop_at_height, None);
    // Choosing another chain on the command line conflicts with the file's.
    assert!(matches!(fixture.parse(&["-testnet"]), Err(ConfigError::ConflictingChains)));
    let fixture = Fixture::new("regtest.dbcache=64\ndbcache=32\nunknownthing=1\n[nochain]\n");
    let options = fixture.parse(&["-regtest"]).unwrap();
    assert_eq!(options.dbcache_mebibytes, 64);
    assert!(options
        .warnings
        .contains(&ConfigWarning::UnknownConfigValue { name: "unknownthing".into() }));
    assert!(options.warnings.iter().any(|warning| matches!(
        warning,
        ConfigWarning::UnrecognizedSection { section, line: 4, .. } if section == "nochain"
    )));
    assert_eq!(fixture.parse(&[]).unwrap().dbcache_mebibytes, 32);
}

#[test]
fn repeatable_and_regtest_only_options() {
    let fixture = Fixture::new("loadblock=c.dat\n[regtest]\ntestactivationheight=segwit@50\n");
    let options = fixture
        .parse(&[
            "-regtest",
            "-loadblock=a.dat",
            "-loadblock=b.dat",
            "-testactivationheight=csv@20",
        ])
        .unwrap();
    let loaded: Vec<PathBuf> = ["a.dat", "b.dat", "c.dat"].iter().map(PathBuf::from).collect();
    assert_eq!(options.load_blocks, loaded);
    assert_eq!(options.params.csv_height, 20);
    assert_eq!(options.params.segwit_height, 50);
    assert_eq!(options.params.bip34_height, 1);
    let options = fixture.parse(&["-regtest", "-test=bip94", "-test=other"]).unwrap();
    assert!(options.params.enforce_bip94);
    assert!(options
        .warnings
        .contains(&ConfigWarning::UnknownTestOption { option: "other".into() }));
    let error = fixture.parse(&["-testactivationheight=csv@20"]).unwrap_err();
    assert_eq!(error.to_string(), "-testactivationheight can only be used with regtest");
    let error = fixture.parse(&["-regtest", "-testactivationheight=csv"]).unwrap_err();
    assert!(matches!(error, ConfigError::TestActivationHeight(_)));
}

#[test]
fn typed_values_and_their_errors() {
    let fixture = Fixture::new("");
    let hash = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
    let argument = format!("-assumevalid={hash}");
    let options = fixture.parse(&[&argument, "-reindex", "-noprinttoconsole"]).unwrap();
    assert!(matches!(options.assume_valid, AssumeValid::Block(block) if block.to_hex() == hash));
    assert!(options.reindex && !options.print_to_console);
    assert_eq!(fixture.parse(&["-noassumevalid"]).unwrap().assume_valid, AssumeValid::Disabled);
    let error = fixture.parse(&["-assumevalid=xyz"]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Invalid assumevalid block hash specified (xyz), must be up to 64 hex digits (or 0 to disable)"
    );
    assert!(matches!(
        fixture.parse(&["-dbbatchsize=0"]),
        Err(ConfigError::InvalidValue { name: "dbbatchsize", .. })
    ));
    assert_eq!(fixture.parse(&["-dbbatchsize=4096"]).unwrap().database_batch_bytes, 4096);
    assert_eq!(fixture.parse(&["-par=1"]).unwrap().script_threads, 1);
    let options = fixture.parse(&["-debuglogfile=logs/node.log", "-regtest"]).unwrap();
    assert_eq!(options.debug_log_file, Some(fixture.datadir.join("regtest/logs/node.log")));
    assert!(matches!(fixture.parse(&["-chain=moon"]), Err(ConfigError::UnknownChain { .. })));
    let options = fixture.parse(&["-testnet"]).unwrap();
    assert!(options.warnings.contains(&ConfigWarning::Testnet3Deprecated));
}

#[test]
fn conf_option_include_and_datadir_in_file() {
    let fixture = Fixture::new("");
    std::fs::write(fixture.datadir.join("other.conf"), "regtest=1\nincludeconf=extra.conf\n")
        .unwrap();
    std::fs::write(fixture.datadir.join("extra.conf"), "dbcache=77\nincludeconf=deeper.conf\n")
        .unwrap();
    let options = fixture.parse(&["-conf=other.conf"]).unwrap();
    assert_eq!(options.network, Network::Regtest);
    assert_eq!(options.dbcache_mebibytes, 77);
    assert!(options
        .warnings
        .contains(&ConfigWarning::NestedInclude { name: "deeper.conf".into() }));
    std::fs::write(fixture.datadir.join("bitcoin.conf"), "includeconf=absent.conf\n").unwrap();
    assert!(matches!(fixture.parse(&[]), Err(ConfigError::IncludeMissing { .. })));

    // datadir= in a file named by an absolute -conf moves the data
    // directory (a -datadir on the command line would win)...
    let elsewhere = tempfile::tempdir().unwrap();
    let elsewhere_path = elsewhere.path().canonicalize().unwrap();
    let line = format!("datadir={}\nregtest=1\n", elsewhere_path.display());
    std::fs::write(fixture.datadir.join("bitcoin.conf"), &line).unwrap();
    let conf = vec![format!("-conf={}", fixture.datadir.join("bitcoin.conf").display())];
    let options = parse_options(&conf).unwrap();
    assert_eq!(options.chain_directory, elsewhere_path.join("regtest"));
    assert_eq!(fixture.parse(&[]).unwrap().data_directory, fixture.datadir);
    // ...but not to a directory whose own bitcoin.conf would go unread.
    std::fs::write(elsewhere_path.join("bitcoin.conf"), "").unwrap();
    assert!(matches!(parse_options(&conf), Err(ConfigError::IgnoredConfigFile { .. })));
    // conf= inside a file is refused.
    std::fs::write(fixture.datadir.join("bitcoin.conf"), "conf=x.conf\n").unwrap();
    assert!(matches!(fixture.parse(&[]), Err(ConfigError::ConfigFile { .. })));
}

#[test]
fn numeric_values_are_read_like_core_with_warnings() {
    let fixture = Fixture::new("");
    let options = fixture.parse(&["-dbcache=abc", "-par=1000", "-stopatheight=-1"]).unwrap();
    assert_eq!(options.dbcache_mebibytes, 4);
    assert_eq!(options.script_threads, 16);
    assert_eq!(options.stop_at_height, Some(0));
    let names: Vec<&str> = options
        .warnings
        .iter()
        .filter_map(|warning| match warning {
            ConfigWarning::DbcacheBelowMinimum { used_mebibytes: 4, .. } => Some("dbcache"),
            ConfigWarning::ParAdjusted { used_threads: 16, .. } => Some("par"),
            ConfigWarning::StopAtHeightNegative { .. } => Some("stopatheight"),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["dbcache", "par", "stopatheight"]);
    assert_eq!(fixture.parse(&["-dbcache=-5"]).unwrap().dbcache_mebibytes, 4);
    let options = fixture.parse(&["-dbcache=999999999"]).unwrap();
    assert_eq!(options.dbcache_mebibytes, 1 << 20);
    assert!(options.warnings.iter().any(|warning| matches!(
        warning,
        ConfigWarning::DbcacheAboveMaximum { used_mebibytes: 1_048_576, .. }
    )));
    // Numbers with trailing text: read as Core reads them, with a word.
    let options = fixture.parse(&["-dbcrashratio=7x", "-dbbatchsize=4096bytes"]).unwrap();
    assert_eq!(options.database_crash_ratio, 7);
    assert_eq!(options.database_batch_bytes, 4096);
    let not_numbers = options
        .warnings
        .iter()
        .filter(|warning| matches!(warning, ConfigWarning::NotANumber { .. }))
        .count();
    assert_eq!(not_numbers, 2, "{:?}", options.warnings);
    // Plain values in range: not a word.
    let options =
        fixture.parse(&["-dbcache=100", "-par=2", "-stopatheight=5", "-dbcrashratio=0"]).unwrap();
    assert!(options.warnings.is_empty(), "{:?}", options.warnings);
}

/// The `[warning]` lines of `datadir`'s regtest log, without timestamps.
fn logged_warnings(datadir: &Path) -> Vec<String> {
    let log = debug_log(datadir);
    log.lines()
        .filter_map(|line| line.get(21..))
        .filter(|message| message.starts_with("[warning] "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn out_of_range_values_start_with_a_warning_in_the_log() {
    let cases: [(&str, &[&str]); 5] = [
        (
            "-dbcache=abc",
            &["[warning] -dbcache=abc (read as 0) is below the minimum of 4 MiB; using -dbcache=4"],
        ),
        ("-dbcache=-5", &["[warning] -dbcache=-5 is below the minimum of 4 MiB; using -dbcache=4"]),
        (
            "-dbcache=999999999",
            &[
                "[warning] -dbcache=999999999 is above Ibex's maximum of 1048576 MiB; using -dbcache=1048576",
                "[warning] A 1048576 MiB dbcache may be too large for a system memory of only ",
            ],
        ),
        (
            "-par=1000",
            &["[warning] -par=1000 is more script threads than the 16 allowed; using -par=16"],
        ),
        (
            "-stopatheight=-1",
            &["[warning] -stopatheight=-1 is negative, a height every block reaches: stopping as soon as the chain has a tip"],
        ),
    ];
    for (argument, expected) in cases {
        let home = tempfile::tempdir().unwrap();
        let arguments = ["-regtest", &datadir_argument(home.path()), argument];
        let output = ibexd_to_genesis(&arguments, home.path());
        // Core refuses none of these values: the node runs and exits 0.
        assert_eq!(output.status.code(), Some(0), "{argument}: {}", stderr(&output));
        let warnings = logged_warnings(home.path());
        for line in expected {
            assert!(
                warnings.iter().any(|warning| warning.starts_with(line)),
                "{argument}: no {line:?} in {warnings:?}"
            );
        }
    }
    // The values in use: 4 MiB, below the caches' minimums (said); 16 threads.
    let home = tempfile::tempdir().unwrap();
    let output = ibexd_to_genesis(
        &["-regtest", &datadir_argument(home.path()), "-dbcache=abc", "-par=1000"],
        home.path(),
    );
    assert_eq!(output.status.code(), Some(0));
    let log = debug_log(home.path());
    assert!(log.contains("* Using 1.0 MiB for in-memory UTXO set"), "{log}");
    assert!(
        log.contains(
            "[warning] -dbcache=4 is below the caches' minimums: they take up to 14.3 MiB"
        ),
        "{log}"
    );
    assert!(log.contains("Script verification uses 15 additional threads"), "{log}");
    // -stopatheight=-1 on Core's chain of several hundred blocks stops at the
    // genesis block, the first tip, as Core stops at its first new block.
    let home = tempfile::tempdir().unwrap();
    copy_core_blocks(home.path());
    let arguments =
        ["-regtest", &datadir_argument(home.path()), "-reindex", "-stopatheight=-1", "-server=0"];
    let output = ibexd(&arguments, home.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = debug_log(home.path());
    assert!(log.contains("Imported to height 0:"), "{log}");
}
