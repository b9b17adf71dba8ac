//! Options for one node (`--node-option-for NAME=OPTION`), and the file
//! names each node's runs take, which must not collide with another
//! node's.
//!
//! Per-node options let one benchmark compare a node with itself under
//! another setting (`ibexd` against `ibexd-prune` with `-prune=550`) in
//! the same interleaved rounds, so both meet the same machine noise.

use std::collections::HashMap;

use super::arguments::NODE_NAME_BYTES_MAX;

/// An option given to one node: `--node-option-for NAME=OPTION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOption {
    /// The node's name (one of the `--node` names).
    pub node: String,
    /// The option, as the node takes it (`-prune=550`).
    pub option: String,
}

/// Checks a node's name. Names become file names and `NAME-RUN` labels:
/// no path separators, no leading '-' or '.' (an option, a hidden file);
/// two names whose files would collide are refused by [`colliding_names`].
pub fn check_node_name(name: &str) -> Result<(), String> {
    let allowed = |character: char| character.is_ascii_alphanumeric() || "_.-".contains(character);
    if name.is_empty()
        || name.len() > NODE_NAME_BYTES_MAX
        || !name.chars().all(allowed)
        || name.starts_with(['-', '.'])
    {
        return Err(format!(
            "node name {name:?}: use 1 to {NODE_NAME_BYTES_MAX} letters, digits, '_', '.' or '-', \
             not starting with '-' or '.' (it names files)"
        ));
    }
    Ok(())
}

/// Parses `NAME=OPTION` (split at the first `=`: names hold none, options
/// may).
pub fn parse_node_option(text: &str) -> Result<NodeOption, String> {
    let Some((node, option)) = text.split_once('=') else {
        return Err(format!("{text:?}: give NAME=OPTION, such as ibexd-prune=-prune=550"));
    };
    check_node_name(node).map_err(|error| format!("{text:?}: {error}"))?;
    if option.is_empty() {
        return Err(format!("{text:?}: no option after NAME="));
    }
    Ok(NodeOption { node: node.to_owned(), option: option.to_owned() })
}

/// The options of node `name`: every node's (`--node-option`) first, then
/// its own in the order given, so that its own can override.
pub fn options_for(common: &[String], per_node: &[NodeOption], name: &str) -> Vec<String> {
    let own = per_node.iter().filter(|option| option.node == name).map(|o| o.option.clone());
    common.iter().cloned().chain(own).collect()
}

/// The label of a run (its log `logs/LABEL.log`, its data directory
/// `work/LABEL`): `NAME-RUN`, or `NAME-warmup-RUN` for a warm-up.
pub fn run_label(name: &str, warmup: bool, run_index: u32) -> String {
    match warmup {
        true => format!("{name}-warmup-{run_index}"),
        false => format!("{name}-{run_index}"),
    }
}

/// Every name the benchmark gives a file or directory of node `name`
/// (before the extension): its runs' labels for up to `runs_max` runs of
/// each kind, its profiled run, its prepared data directory, and the
/// logs and profiles named after it.
pub fn file_stems(name: &str, runs_max: u32) -> Vec<String> {
    let mut stems: Vec<String> = (1..=runs_max)
        .flat_map(|run_index| [run_label(name, false, run_index), run_label(name, true, run_index)])
        .collect();
    for prefix in ["prepare", "prepared", "serve", "perf", "flame", "profile-quarters"] {
        stems.push(format!("{prefix}-{name}"));
    }
    stems.push(format!("{name}-perf"));
    stems
}

/// The first pair of nodes whose files would share a name, with that
/// name: node `a-warmup`'s first run and node `a`'s first warm-up are
/// both `a-warmup-1`; node `prepare`'s first run and node `1`'s
/// preparation are both `prepare-1`.
pub fn colliding_names(names: &[String], runs_max: u32) -> Option<(String, String, String)> {
    let mut owners: HashMap<String, &String> = HashMap::new();
    for name in names {
        for stem in file_stems(name, runs_max) {
            match owners.get(&stem) {
                Some(&owner) if owner != name => {
                    return Some((owner.clone(), name.clone(), stem));
                }
                _ => {
                    owners.insert(stem, name);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_option_at_the_first_equals_sign() {
        let option = parse_node_option("ibexd-prune=-prune=550").expect("valid");
        assert_eq!(option.node, "ibexd-prune");
        assert_eq!(option.option, "-prune=550");
        assert!(parse_node_option("-prune").is_err(), "no name");
        assert!(parse_node_option("=-prune=550").is_err(), "empty name");
        assert!(parse_node_option("ibexd=").is_err(), "empty option");
        assert!(parse_node_option("-prune=550").is_err(), "the name left out");
    }

    #[test]
    fn gives_a_node_the_common_options_then_only_its_own() {
        let common = vec!["-par=2".to_owned()];
        let per_node = vec![
            parse_node_option("a-prune=-prune=550").expect("valid"),
            parse_node_option("b=-debug=net").expect("valid"),
            parse_node_option("a-prune=-prune=600").expect("valid"),
        ];
        assert_eq!(
            options_for(&common, &per_node, "a-prune"),
            ["-par=2", "-prune=550", "-prune=600"]
        );
        assert_eq!(options_for(&common, &per_node, "b"), ["-par=2", "-debug=net"]);
        assert_eq!(options_for(&common, &per_node, "a"), ["-par=2"], "a prefix is not a name");
        assert!(options_for(&[], &per_node, "c").is_empty());
    }

    #[test]
    fn finds_names_whose_files_would_collide() {
        let names = |list: &[&str]| list.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        assert_eq!(colliding_names(&names(&["ibexd", "ibexd-prune", "bitcoind-prune"]), 3), None);
        let (first, second, stem) =
            colliding_names(&names(&["a", "a-warmup"]), 2).expect("a collision");
        assert_eq!(
            (first.as_str(), second.as_str(), stem.as_str()),
            ("a", "a-warmup", "a-warmup-1")
        );
        // Runs always end in a number, so a name ending in one is no run.
        assert_eq!(colliding_names(&names(&["a", "a-2", "a-perf", "perf"]), 3), None);
        // Node `a-2`'s profile and node `perf-a`'s second run.
        let (_, _, stem) = colliding_names(&names(&["a-2", "perf-a"]), 2).expect("a collision");
        assert_eq!(stem, "perf-a-2");
        let (_, _, stem) = colliding_names(&names(&["prepare", "1"]), 1).expect("a collision");
        assert_eq!(stem, "prepare-1");
    }
}
