//! Unit tests of `node` (option parsing, values, precedence).
use super::*;
use crate::options::table::OPTIONS;
use ibex_primitives::{BlockHash, ChainWork, U256};

fn arguments(list: &[&str]) -> Vec<String> {
    list.iter().map(|argument| (*argument).to_owned()).collect()
}

fn parse_error(list: &[&str]) -> String {
    match CommandLine::parse(&arguments(list)) {
        Ok(command_line) => command_line.resolve().unwrap_err().to_string(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn command_line_syntax() {
    let command_line =
        CommandLine::parse(&arguments(&["--dbcache=5", "-reindex", "-noprinttoconsole"])).unwrap();
    let settings = &command_line.settings;
    assert_eq!(settings.value("", "dbcache", false), Some(SettingValue::Text("5".into())));
    assert_eq!(settings.value("", "reindex", false), Some(SettingValue::Text(String::new())));
    assert!(settings.is_negated("", "printtoconsole"));
    let double = CommandLine::parse(&arguments(&["-noreindex=0"])).unwrap();
    assert_eq!(double.settings.value("", "reindex", false), Some(SettingValue::Bool(true)));
    assert_eq!(double.warnings.len(), 1);
}

#[test]
fn command_line_refusals() {
    assert_eq!(
        parse_error(&["-foo=bar"]),
        "Error parsing command line arguments: Invalid parameter -foo=bar"
    );
    assert_eq!(
        parse_error(&["-regtest.dbcache=4"]),
        "Error parsing command line arguments: Invalid parameter -regtest.dbcache=4"
    );
    assert_eq!(
        parse_error(&["-regtest", "extra"]),
        "Command line contains unexpected token 'extra', see ibexd -h for a list of options."
    );
    assert!(parse_error(&["-includeconf=a.conf"]).contains("-includeconf=\"a.conf\""));
    CommandLine::parse(&arguments(&["-noincludeconf"])).unwrap();
    // A lone dash ends the options: what follows is not read, but a
    // token there is still refused.
    let command_line = CommandLine::parse(&arguments(&["-regtest", "-", "-junk"])).unwrap();
    assert!(!command_line.settings.command_line.contains_key("junk"));
    assert!(parse_error(&["-regtest", "-", "junk"]).contains("unexpected token 'junk'"));
    // Options after a token are not parsed; the token is the error.
    assert!(parse_error(&["junk", "-foo"]).contains("unexpected token 'junk'"));
    // -help before a token still shows the help.
    let command_line = CommandLine::parse(&arguments(&["-help", "junk"])).unwrap();
    assert!(command_line.help_requested());
}

#[test]
fn help_and_version() {
    assert!(CommandLine::parse(&arguments(&["-?"])).unwrap().help_requested());
    assert!(CommandLine::parse(&arguments(&["--help"])).unwrap().help_requested());
    assert!(CommandLine::parse(&arguments(&["-version"])).unwrap().version_requested());
    assert!(!CommandLine::parse(&arguments(&["-version=0"])).unwrap().version_requested());
}

#[test]
fn assume_valid_like_from_user_hex() {
    assert_eq!(parse_assume_valid("0"), Some(AssumeValid::Disabled));
    assert_eq!(parse_assume_valid(""), Some(AssumeValid::Disabled));
    let hash = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
    let expected = AssumeValid::Block(BlockHash::from_hex(hash).unwrap());
    assert_eq!(parse_assume_valid(hash), Some(expected));
    assert_eq!(parse_assume_valid(&format!("0x{hash}")), Some(expected));
    let short = parse_assume_valid("1f").unwrap();
    let AssumeValid::Block(short) = short else { panic!("not a block") };
    assert_eq!(short.to_hex(), format!("{:0>64}", "1f"));
    assert_eq!(parse_assume_valid(&format!("{hash}0")), None);
    assert_eq!(parse_assume_valid("0X1f"), None);
    assert_eq!(parse_assume_valid("xyz"), None);
}

#[test]
fn assume_valid_resolves_against_the_chain() {
    let main = Params::main();
    let built_in = main.default_assume_valid;
    assert!(built_in.is_some(), "mainnet has a built-in assume-valid block");
    assert_eq!(AssumeValid::Default.resolve(&main), built_in);
    assert_eq!(AssumeValid::Disabled.resolve(&main), None);
    let named = BlockHash::from_hex(&format!("{:0>64}", "1f")).unwrap();
    assert_eq!(AssumeValid::Block(named).resolve(&main), Some(named));
    let regtest = Params::regtest();
    assert_eq!(AssumeValid::Default.resolve(&regtest), None);
    assert_eq!(AssumeValid::Block(named).resolve(&regtest), Some(named));
}

#[test]
fn database_batch_default_is_the_chainstate_default_and_in_the_help() {
    let command_line = CommandLine::parse(&arguments(&["-regtest"])).unwrap();
    let typed = Typed { settings: &command_line.settings, section: "regtest" };
    let mut warnings = Vec::new();
    assert_eq!(typed.database_batch_bytes(&mut warnings).unwrap(), FLUSH_BATCH_BYTES_DEFAULT);
    assert!(warnings.is_empty());
    let (_, _, help) = OPTIONS.iter().find(|(name, _, _)| *name == "dbbatchsize").unwrap();
    assert!(help.contains(&format!("(default: {FLUSH_BATCH_BYTES_DEFAULT})")), "{help}");
}

#[test]
fn flush_tables_are_chosen_from_dbcache_unless_given_in_range() {
    let count = |list: &[&str]| {
        let mut all = vec!["-regtest", "-noconf"];
        all.extend_from_slice(list);
        CommandLine::parse(&arguments(&all))
            .unwrap()
            .resolve()
            .map(|options| options.flush_table_count)
    };
    assert_eq!(count(&[]).unwrap(), None);
    assert_eq!(count(&["-dbflushtables=1"]).unwrap(), Some(1));
    assert_eq!(count(&["-dbflushtables=16"]).unwrap(), Some(16));
    for refused in
        ["-dbflushtables=0", "-dbflushtables=17", "-dbflushtables=-2", "-dbflushtables=many"]
    {
        let error = count(&[refused]).unwrap_err();
        assert!(
            matches!(error, ConfigError::InvalidValue { name: "dbflushtables", .. }),
            "{refused}: {error}"
        );
    }
}

#[test]
fn minimum_chain_work_like_core() {
    let resolved = |list: &[&str]| {
        let mut all = vec!["-regtest", "-noconf"];
        all.extend_from_slice(list);
        CommandLine::parse(&arguments(&all)).unwrap().resolve().unwrap().params.minimum_chain_work
    };
    assert_eq!(resolved(&[]), ChainWork::ZERO, "regtest's own");
    let expected = ChainWork::from_u256(U256::from_u64(0x1234));
    assert_eq!(resolved(&["-minimumchainwork=0x1234"]), expected);
    assert_eq!(resolved(&["-minimumchainwork=1234"]), expected);
    assert_eq!(resolved(&["-minimumchainwork=1234", "-nominimumchainwork"]), ChainWork::ZERO);
    assert_eq!(
        parse_error(&["-regtest", "-noconf", "-minimumchainwork=xyz"]),
        "Invalid minimum work specified (xyz), must be up to 64 hex digits"
    );
    let too_long = format!("-minimumchainwork={}", "1".repeat(65));
    assert!(parse_error(&["-regtest", "-noconf", &too_long]).starts_with("Invalid minimum work"));
    // Below mainnet's default: Core's warning.
    let main = CommandLine::parse(&arguments(&["-noconf", "-minimumchainwork=1"]))
        .unwrap()
        .resolve()
        .unwrap();
    let lines = crate::daemon::configuration_lines(&main);
    assert!(lines.contains(&"Setting nMinimumChainWork=0000000000000000000000000000000000000000000000000000000000000001".to_owned()), "{lines:?}");
    assert!(lines.iter().any(
        |line| line.starts_with("[warning] nMinimumChainWork set below default value of 0000")
    ));
}

#[test]
fn mock_time_only_on_regtest() {
    let resolved = |list: &[&str]| {
        let mut all = vec!["-noconf"];
        all.extend_from_slice(list);
        CommandLine::parse(&arguments(&all)).unwrap().resolve().unwrap().mock_time
    };
    assert_eq!(resolved(&["-regtest"]), None);
    assert_eq!(resolved(&["-regtest", "-mocktime=0"]), None, "0 is the real clock");
    assert_eq!(resolved(&["-regtest", "-mocktime=1700000000"]), Some(1_700_000_000));
    assert_eq!(
        parse_error(&["-noconf", "-mocktime=1700000000"]),
        "-mocktime is only allowed on regtest"
    );
    assert_eq!(resolved(&["-mocktime=0"]), None, "mainnet with the real clock");
}

#[test]
fn hex_is_read_as_cores_try_parse_hex_reads_it() {
    assert_eq!(parse_hex_like_core(""), Some(Vec::new()));
    assert_eq!(parse_hex_like_core("51"), Some(vec![0x51]));
    assert_eq!(parse_hex_like_core(" 51\t52\n"), Some(vec![0x51, 0x52]));
    assert_eq!(parse_hex_like_core("AbcD"), Some(vec![0xab, 0xcd]));
    assert_eq!(parse_hex_like_core("5 1"), None, "whitespace inside a pair");
    assert_eq!(parse_hex_like_core("515"), None, "a lone digit");
    assert_eq!(parse_hex_like_core("5x"), None);
    assert_eq!(parse_hex_like_core("0x51"), None, "no prefix");
}

#[test]
fn signet_challenge_and_seed_nodes_like_core() {
    let resolved = |list: &[&str]| {
        let mut all = vec!["-signet", "-noconf"];
        all.extend_from_slice(list);
        CommandLine::parse(&arguments(&all)).unwrap().resolve().unwrap()
    };
    let default = resolved(&[]);
    assert!(!default.params.is_custom_signet());
    assert_eq!(default.params, Params::signet());
    assert!(default.network_options.fixed_seeds);
    assert!(!default.network_options.chain_dns_seeds.is_empty());

    let custom = resolved(&["-signetchallenge=51"]);
    assert!(custom.params.is_custom_signet());
    assert_eq!(custom.params, Params::custom_signet(vec![0x51]));
    assert_ne!(custom.params.message_start, default.params.message_start);
    assert_eq!(custom.params.minimum_chain_work, ChainWork::ZERO);
    assert_eq!(custom.params.default_assume_valid, None);
    assert!(custom.network_options.chain_dns_seeds.is_empty(), "no seeds of its own");
    assert!(!custom.network_options.fixed_seeds);
    let lines = crate::daemon::startup_lines(&custom);
    assert!(lines.contains(&"Signet with challenge 51".to_owned()), "{lines:?}");
    let lines = crate::daemon::configuration_lines(&custom);
    assert!(!lines.iter().any(|line| line.contains("below default")), "{lines:?}");

    let seeded = resolved(&["-signetchallenge=51", "-signetseednode=a.example:1234"]);
    assert_eq!(seeded.network_options.chain_dns_seeds, vec!["a.example:1234".to_owned()]);
    let seeded = resolved(&["-signetseednode=b.example"]);
    assert_eq!(seeded.network_options.chain_dns_seeds, vec!["b.example".to_owned()]);

    assert_eq!(
        parse_error(&["-signet", "-noconf", "-signetchallenge=51", "-signetchallenge=52"]),
        "-signetchallenge cannot be multiple values."
    );
    assert_eq!(
        parse_error(&["-signet", "-noconf", "-signetchallenge=zz"]),
        "-signetchallenge must be hex, not 'zz'."
    );
    assert_eq!(
        parse_error(&["-signet", "-noconf", "-nosignetchallenge"]),
        "Error parsing command line arguments: Negating of -signetchallenge is meaningless and therefore forbidden"
    );
    let datadir = tempfile::tempdir().unwrap();
    std::fs::write(datadir.path().join("bitcoin.conf"), "signet=1\nnosignetseednode=1\n").unwrap();
    let datadir_option = format!("-datadir={}", datadir.path().display());
    assert_eq!(
        parse_error(&[&datadir_option]),
        "Error reading configuration file: Negating of -signetseednode is meaningless and therefore forbidden"
    );
    // Off signet the challenge is not read, as in Core.
    let regtest = CommandLine::parse(&arguments(&["-regtest", "-noconf", "-signetchallenge=zz"]))
        .unwrap()
        .resolve()
        .unwrap();
    assert_eq!(regtest.params.signet_challenge, None);
}

#[test]
fn testassumeutxo_adds_an_entry_on_regtest_only() {
    let block = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
    let coins = "a4bf3407ccb2cc0145c49ebba8fa91199f8a3903daf0883875941497d2493c27";
    let given = format!("-testassumeutxo=7:{block}:{coins}:8");
    let resolve = |list: &[&str]| CommandLine::parse(&arguments(list)).unwrap().resolve();
    let options = resolve(&["-regtest", &given]).unwrap();
    let entry = options.params.assumeutxo.iter().find(|entry| entry.height == 7).unwrap();
    assert_eq!(entry.block_hash, BlockHash::from_hex(block).unwrap());
    assert_eq!(entry.hash_serialized.0, BlockHash::from_hex(coins).unwrap().0);
    assert_eq!(entry.chain_transaction_count, 8);
    // Core's own regtest entries stay; one at the same height is replaced.
    assert!(options.params.assumeutxo.iter().any(|entry| entry.height == 110));
    let replaced = format!("-testassumeutxo=110:{block}:{coins}:8");
    let options = resolve(&["-regtest", &replaced]).unwrap();
    let at_110: Vec<_> = options.params.assumeutxo.iter().filter(|e| e.height == 110).collect();
    assert_eq!(at_110.len(), 1);
    assert_eq!(at_110[0].block_hash, BlockHash::from_hex(block).unwrap());
    for bad in [
        "7",
        &format!("7:{block}:{coins}"),
        &format!("7:{block}:{coins}:0"),
        &format!("x:{block}:{coins}:8"),
        &format!("7:{block}:{coins}:8:9"),
    ] {
        let error = parse_error(&["-regtest", &format!("-testassumeutxo={bad}")]);
        assert!(error.contains("testassumeutxo"), "{bad}: {error}");
    }
    assert!(parse_error(&[&given]).contains("testassumeutxo"), "mainnet refuses it");
}
