//! What `getdeploymentinfo` reports about a block (Core's `DeploymentInfo`
//! and `SoftForkDescPushBack`, `rpc/blockchain.cpp`; `versionbits.cpp`):
//! the script verification flags its scripts are checked with, each buried
//! deployment (active from a height the parameters fix), and each BIP9
//! version-bits deployment with its state machine.
//!
//! Ibex enforces no version-bits deployment: its parameters bury every
//! soft fork. Core still lists one on regtest, `testdummy` (bit 28, no
//! rules attached), whose state follows the blocks' version bits; it is
//! computed here so that regtest answers match Core's. On the other
//! networks Core's `testdummy` never starts and is not listed.
//!
//! The state of a block depends only on its ancestors' versions and median
//! times, given through [`Ancestry`]; the node reads them from its block
//! index. One call visits each retarget period once (states are memoised
//! per period), and counts the versions of the periods that were
//! `started`: ~1,200 header reads for a regtest chain of 1,200 blocks.

use std::collections::HashMap;

use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::{BlockHash, Height, Network, Params};

/// Core's `VERSIONBITS_TOP_MASK`: the top three bits of a version.
const VERSION_BITS_TOP_MASK: i32 = 0xE000_0000_u32 as i32;
/// Core's `VERSIONBITS_TOP_BITS`: `001` in the top bits signals BIP9.
const VERSION_BITS_TOP_BITS: i32 = 0x2000_0000;
/// Core's `BIP9Deployment::NO_TIMEOUT`.
pub const NO_TIMEOUT: i64 = i64::MAX;
/// Core's `BIP9Deployment::ALWAYS_ACTIVE` start time.
pub const ALWAYS_ACTIVE: i64 = -1;
/// Core's `BIP9Deployment::NEVER_ACTIVE` start time.
pub const NEVER_ACTIVE: i64 = -2;

/// A version-bits deployment's parameters (Core's `BIP9Deployment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionBitsDeployment {
    /// Core's name for it.
    pub name: &'static str,
    /// The version bit that signals it (0-28).
    pub bit: u8,
    /// Median time past from which signalling counts, or [`ALWAYS_ACTIVE`]
    /// / [`NEVER_ACTIVE`].
    pub start_time: i64,
    /// Median time past after which it fails if not locked in.
    pub timeout: i64,
    /// The first height it may be active at.
    pub min_activation_height: u32,
    /// Blocks in a signalling period.
    pub period: u32,
    /// Signalling blocks in a period that lock it in.
    pub threshold: u32,
}

/// Core's regtest `testdummy`: bit 28, started from the beginning, 108 of
/// 144 blocks to lock in.
pub const REGTEST_TESTDUMMY: VersionBitsDeployment = VersionBitsDeployment {
    name: "testdummy",
    bit: 28,
    start_time: 0,
    timeout: NO_TIMEOUT,
    min_activation_height: 0,
    period: 144,
    threshold: 108,
};

/// The version-bits deployments Core lists on `network` (those whose start
/// time is not [`NEVER_ACTIVE`]).
pub fn version_bits_deployments(network: Network) -> &'static [VersionBitsDeployment] {
    match network {
        Network::Regtest => &[REGTEST_TESTDUMMY],
        _ => &[],
    }
}

/// A BIP9 state (Core's `ThresholdState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThresholdState {
    /// Before the start time.
    Defined,
    /// Signalling counts.
    Started,
    /// Enough blocks signalled; active from the next period.
    LockedIn,
    /// The rules apply.
    Active,
    /// Timed out.
    Failed,
}

impl ThresholdState {
    /// Core's name for it.
    pub const fn name(self) -> &'static str {
        match self {
            ThresholdState::Defined => "defined",
            ThresholdState::Started => "started",
            ThresholdState::LockedIn => "locked_in",
            ThresholdState::Active => "active",
            ThresholdState::Failed => "failed",
        }
    }
}

/// The ancestors of the block asked about, by height (itself included).
pub trait Ancestry {
    /// The version of the ancestor at `height`.
    fn version(&self, height: u32) -> i32;
    /// The median time past of the ancestor at `height`.
    fn median_time_past(&self, height: u32) -> i64;
}

/// Signalling in the block's period so far (Core's `BIP9Stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bip9Statistics {
    /// Blocks in a period.
    pub period: u32,
    /// Blocks of the period up to the block.
    pub elapsed: u32,
    /// Those that signalled.
    pub count: u32,
    /// The threshold and whether it can still be reached; `None` once
    /// locked in (Core leaves both out then).
    pub threshold_possible: Option<(u32, bool)>,
}

/// A version-bits deployment's state at a block (Core's `BIP9Info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bip9Status {
    /// The deployment.
    pub deployment: VersionBitsDeployment,
    /// The state for the block.
    pub current: ThresholdState,
    /// The state for its child.
    pub next: ThresholdState,
    /// The first height with the current state.
    pub since: u32,
    /// While started or locked in: the period's signalling so far.
    pub statistics: Option<Bip9Statistics>,
    /// While started or locked in: `#` for each block of the period that
    /// signalled, `-` for the others.
    pub signalling: Option<String>,
    /// The height it is (or will next be) active from.
    pub active_since: Option<u32>,
}

/// A buried deployment at a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuriedStatus {
    /// Core's name for it.
    pub name: &'static str,
    /// Its activation height.
    pub height: u32,
    /// Whether the block's child enforces it (Core's `DeploymentActiveAfter`).
    pub active: bool,
}

/// `getdeploymentinfo`'s answer for one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentInfo {
    /// The block.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// The names of the script flags its scripts are checked with, sorted.
    pub script_flags: Vec<&'static str>,
    /// Buried deployments, in Core's order.
    pub buried: Vec<BuriedStatus>,
    /// Version-bits deployments.
    pub version_bits: Vec<Bip9Status>,
}

/// Core's order of the buried deployments in `getdeploymentinfo`.
const BURIED_ORDER: [BuriedDeployment; 5] = [
    BuriedDeployment::HeightInCoinbase,
    BuriedDeployment::StrictDerSignatures,
    BuriedDeployment::CheckLockTimeVerify,
    BuriedDeployment::CheckSequenceVerify,
    BuriedDeployment::Segwit,
];

/// Core's `DeploymentEnabled` for buried deployments: a height of
/// `i32::MAX` means never.
const BURIED_NEVER_HEIGHT: u32 = i32::MAX as u32;

/// Everything `getdeploymentinfo` reports for the block `hash` at
/// `height`, whose ancestors `ancestry` gives.
pub fn deployment_info(
    params: &Params,
    hash: BlockHash,
    height: u32,
    ancestry: &dyn Ancestry,
) -> DeploymentInfo {
    let buried = BURIED_ORDER
        .iter()
        .filter(|deployment| params.deployment_height(**deployment) < BURIED_NEVER_HEIGHT)
        .map(|deployment| BuriedStatus {
            name: deployment.name(),
            height: params.deployment_height(*deployment),
            active: height.saturating_add(1) >= params.deployment_height(*deployment),
        })
        .collect();
    let version_bits = version_bits_deployments(params.network)
        .iter()
        .map(|deployment| bip9_status(deployment, height, ancestry))
        .collect();
    DeploymentInfo {
        hash,
        height,
        script_flags: script_flag_names(params, &hash, height),
        buried,
        version_bits,
    }
}

/// Core's `GetBlockScriptFlags` as names (`GetScriptFlagNames`, sorted):
/// P2SH, WITNESS and TAPROOT unless the block is a script flag exception,
/// then each buried soft fork's flag once active at `height`.
pub fn script_flag_names(params: &Params, hash: &BlockHash, height: u32) -> Vec<&'static str> {
    let (p2sh, witness, taproot) = match params.script_flag_exception(hash) {
        Some(exception) => {
            (exception.verify_p2sh(), exception.verify_witness(), exception.verify_taproot())
        }
        None => (true, true, true),
    };
    let active = |deployment| params.deployment_active_at(deployment, Height::new(height));
    let mut names: Vec<&'static str> = [
        (p2sh, "P2SH"),
        (witness, "WITNESS"),
        (taproot, "TAPROOT"),
        (active(BuriedDeployment::StrictDerSignatures), "DERSIG"),
        (active(BuriedDeployment::CheckLockTimeVerify), "CHECKLOCKTIMEVERIFY"),
        (active(BuriedDeployment::CheckSequenceVerify), "CHECKSEQUENCEVERIFY"),
        (active(BuriedDeployment::Segwit), "NULLDUMMY"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    names.sort_unstable();
    names
}

/// A deployment's state at the block at `height` (Core's
/// `VersionBitsCache::Info`).
pub fn bip9_status(
    deployment: &VersionBitsDeployment,
    height: u32,
    ancestry: &dyn Ancestry,
) -> Bip9Status {
    let mut machine = StateMachine { deployment, ancestry, states: HashMap::new() };
    let parent = height.checked_sub(1);
    let current = machine.state_for(parent);
    let next = machine.state_for(Some(height));
    let since = machine.since_height_for(parent);
    let (statistics, signalling) = match current {
        ThresholdState::Started | ThresholdState::LockedIn => {
            let (mut statistics, signalling) = machine.statistics(height);
            if current == ThresholdState::LockedIn {
                statistics.threshold_possible = None;
            }
            (Some(statistics), Some(signalling))
        }
        _ => (None, None),
    };
    let active_since = match (current, next) {
        (ThresholdState::Active, _) => Some(since),
        (_, ThresholdState::Active) => Some(height.saturating_add(1)),
        _ => None,
    };
    Bip9Status {
        deployment: *deployment,
        current,
        next,
        since,
        statistics,
        signalling,
        active_since,
    }
}

/// Core's `AbstractThresholdConditionChecker` over one block's ancestry,
/// with its cache: the state after each period's last block (`None`: the
/// genesis block's missing parent).
struct StateMachine<'a> {
    deployment: &'a VersionBitsDeployment,
    ancestry: &'a dyn Ancestry,
    states: HashMap<Option<u32>, ThresholdState>,
}

impl StateMachine<'_> {
    fn period(&self) -> u32 {
        self.deployment.period.max(1)
    }

    /// Whether the ancestor at `height` signals the deployment.
    fn signals(&self, height: u32) -> bool {
        let version = self.ancestry.version(height);
        let mask = 1i32.checked_shl(u32::from(self.deployment.bit)).unwrap_or(0);
        version & VERSION_BITS_TOP_MASK == VERSION_BITS_TOP_BITS && version & mask != 0
    }

    /// The last block of the period before the one holding the child of
    /// `parent` (`None` when that is the first period).
    fn period_parent(&self, parent: Option<u32>) -> Option<u32> {
        let parent = parent?;
        parent.checked_sub((parent + 1) % self.period())
    }

    /// The state of the child of the block at `parent` (`None`: genesis),
    /// Core's `GetStateFor`.
    fn state_for(&mut self, parent: Option<u32>) -> ThresholdState {
        match self.deployment.start_time {
            ALWAYS_ACTIVE => return ThresholdState::Active,
            NEVER_ACTIVE => return ThresholdState::Failed,
            _ => {}
        }
        let mut cursor = self.period_parent(parent);
        let mut to_compute = Vec::new();
        let mut state = loop {
            if let Some(known) = self.states.get(&cursor) {
                break *known;
            }
            let Some(height) = cursor else {
                self.states.insert(None, ThresholdState::Defined);
                break ThresholdState::Defined;
            };
            if self.ancestry.median_time_past(height) < self.deployment.start_time {
                self.states.insert(cursor, ThresholdState::Defined);
                break ThresholdState::Defined;
            }
            to_compute.push(height);
            cursor = height.checked_sub(self.period());
        };
        while let Some(height) = to_compute.pop() {
            state = self.next_state(state, height);
            self.states.insert(Some(height), state);
        }
        state
    }

    /// The state after the period ending at `height`, from the state
    /// during it.
    fn next_state(&self, state: ThresholdState, height: u32) -> ThresholdState {
        let deployment = self.deployment;
        match state {
            ThresholdState::Defined
                if self.ancestry.median_time_past(height) >= deployment.start_time =>
            {
                ThresholdState::Started
            }
            ThresholdState::Started => {
                let first = (height + 1).saturating_sub(self.period());
                let count = (first..=height).filter(|at| self.signals(*at)).count();
                if count >= deployment.threshold as usize {
                    ThresholdState::LockedIn
                } else if self.ancestry.median_time_past(height) >= deployment.timeout {
                    ThresholdState::Failed
                } else {
                    state
                }
            }
            ThresholdState::LockedIn if height + 1 >= deployment.min_activation_height => {
                ThresholdState::Active
            }
            other => other,
        }
    }

    /// The first height whose state is the one the child of `parent` has
    /// (Core's `GetStateSinceHeightFor`).
    fn since_height_for(&mut self, parent: Option<u32>) -> u32 {
        if matches!(self.deployment.start_time, ALWAYS_ACTIVE | NEVER_ACTIVE) {
            return 0;
        }
        let initial = self.state_for(parent);
        if initial == ThresholdState::Defined {
            return 0;
        }
        // Not `Defined`, so the child's period has a parent period.
        let Some(mut cursor) = self.period_parent(parent) else { return 0 };
        while let Some(previous) = cursor.checked_sub(self.period()) {
            if self.state_for(Some(previous)) != initial {
                break;
            }
            cursor = previous;
        }
        cursor + 1
    }

    /// The signalling in the period of the block at `height`, up to it
    /// (Core's `GetStateStatisticsFor`).
    fn statistics(&self, height: u32) -> (Bip9Statistics, String) {
        let period = self.period();
        let first = height - height % period;
        let signalling: String =
            (first..=height).map(|at| if self.signals(at) { '#' } else { '-' }).collect();
        let elapsed = height - first + 1;
        let count = signalling.bytes().filter(|mark| *mark == b'#').count() as u32;
        let threshold = self.deployment.threshold;
        let possible = i64::from(period) - i64::from(threshold) >= i64::from(elapsed - count);
        let statistics = Bip9Statistics {
            period,
            elapsed,
            count,
            threshold_possible: Some((threshold, possible)),
        };
        (statistics, signalling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain whose blocks have the given versions, ten minutes apart.
    struct Versions(Vec<i32>);

    impl Ancestry for Versions {
        fn version(&self, height: u32) -> i32 {
            self.0[height as usize]
        }

        fn median_time_past(&self, height: u32) -> i64 {
            1_600_000_000 + i64::from(height) * 600
        }
    }

    use ThresholdState::{Active, Defined, Failed, LockedIn, Started};

    const SIGNAL: i32 = 0x3000_0000;
    const QUIET: i32 = 0x2000_0000;

    fn chain(signalling_from: usize, length: usize) -> Versions {
        Versions(
            (0..length)
                .map(|height| if height >= signalling_from { SIGNAL } else { QUIET })
                .collect(),
        )
    }

    fn at(deployment: &VersionBitsDeployment, versions: &Versions, height: u32) -> Bip9Status {
        bip9_status(deployment, height, versions)
    }

    #[test]
    fn every_block_signalling_locks_in_after_one_period_and_activates_after_two() {
        // The first period's blocks are `defined` (their period has only
        // the genesis block's missing parent before it); period 1 is
        // `started` and all signal, period 2 is `locked_in`, then active:
        // Core's testdummy on the shared chain, active since 432.
        let versions = chain(0, 600);
        let dummy = &REGTEST_TESTDUMMY;
        let genesis = at(dummy, &versions, 0);
        assert_eq!((genesis.current, genesis.next, genesis.since), (Defined, Defined, 0));
        let last_defined = at(dummy, &versions, 143);
        assert_eq!((last_defined.current, last_defined.next), (Defined, Started));
        assert!(last_defined.statistics.is_none() && last_defined.signalling.is_none());
        let started = at(dummy, &versions, 200);
        assert_eq!((started.current, started.since), (Started, 144));
        let statistics = started.statistics.unwrap();
        assert_eq!((statistics.period, statistics.elapsed, statistics.count), (144, 57, 57));
        assert_eq!(statistics.threshold_possible, Some((108, true)));
        assert_eq!(started.signalling.unwrap(), "#".repeat(57));
        let locked = at(dummy, &versions, 300);
        assert_eq!((locked.current, locked.next, locked.since), (LockedIn, LockedIn, 288));
        assert_eq!(locked.statistics.unwrap().threshold_possible, None);
        assert_eq!(locked.active_since, None);
        let last_locked = at(dummy, &versions, 431);
        assert_eq!((last_locked.next, last_locked.active_since), (Active, Some(432)));
        let active = at(dummy, &versions, 500);
        assert_eq!((active.current, active.since, active.active_since), (Active, 432, Some(432)));
        assert!(active.statistics.is_none() && active.signalling.is_none());
    }

    #[test]
    fn half_signalling_stays_started_and_counts_each_block() {
        let versions =
            Versions((0..400).map(|height| if height % 2 == 0 { SIGNAL } else { QUIET }).collect());
        let dummy = &REGTEST_TESTDUMMY;
        let early = at(dummy, &versions, 200);
        let statistics = early.statistics.unwrap();
        assert_eq!((statistics.elapsed, statistics.count), (57, 29));
        assert_eq!(statistics.threshold_possible, Some((108, true)));
        let signalling = early.signalling.unwrap();
        assert!(signalling.starts_with("#-#-") && signalling.len() == 57);
        // 53 quiet blocks: more than the 36 a period may have.
        let late = at(dummy, &versions, 250).statistics.unwrap();
        assert_eq!(
            (late.elapsed, late.count, late.threshold_possible),
            (107, 54, Some((108, false)))
        );
        let next_period = at(dummy, &versions, 300);
        assert_eq!((next_period.current, next_period.since), (Started, 144));
        // Bits outside the top-bits pattern do not signal.
        let old_style = Versions(vec![0x1000_0000; 400]);
        assert_eq!(at(dummy, &old_style, 399).current, Started);
        assert_eq!(at(dummy, &old_style, 200).statistics.unwrap().count, 0);
    }

    #[test]
    fn start_time_timeout_and_minimum_activation_height() {
        let versions = chain(0, 1_000);
        let median_time = |height: u32| versions.median_time_past(height);
        let late_start =
            VersionBitsDeployment { start_time: median_time(200), ..REGTEST_TESTDUMMY };
        // Period 1 ends at 287, the first period end at or after the start.
        assert_eq!(at(&late_start, &versions, 287).current, Defined);
        assert_eq!(at(&late_start, &versions, 288).current, Started);
        let timed_out = VersionBitsDeployment { timeout: median_time(287), ..REGTEST_TESTDUMMY };
        let quiet = Versions(vec![QUIET; 1_000]);
        let failed = at(&timed_out, &quiet, 500);
        assert_eq!((failed.current, failed.since), (Failed, 288));
        let delayed = VersionBitsDeployment { min_activation_height: 720, ..REGTEST_TESTDUMMY };
        assert_eq!(at(&delayed, &versions, 600).current, LockedIn);
        let activating = at(&delayed, &versions, 719);
        assert_eq!((activating.next, activating.active_since), (Active, Some(720)));
        let always = VersionBitsDeployment { start_time: ALWAYS_ACTIVE, ..REGTEST_TESTDUMMY };
        let status = at(&always, &quiet, 5);
        assert_eq!((status.current, status.since, status.active_since), (Active, 0, Some(0)));
    }

    #[test]
    fn script_flags_and_buried_deployments_follow_the_parameters() {
        let params = Params::regtest();
        let hash = BlockHash([7; 32]);
        assert_eq!(
            script_flag_names(&params, &hash, 1000),
            [
                "CHECKLOCKTIMEVERIFY",
                "CHECKSEQUENCEVERIFY",
                "DERSIG",
                "NULLDUMMY",
                "P2SH",
                "TAPROOT",
                "WITNESS"
            ]
        );
        let main = Params::main();
        assert_eq!(script_flag_names(&main, &hash, 100), ["P2SH", "TAPROOT", "WITNESS"]);
        let versions = chain(0, 1);
        let info = deployment_info(&main, hash, 0, &versions);
        let names: Vec<&str> = info.buried.iter().map(|status| status.name).collect();
        assert_eq!(names, ["bip34", "bip66", "bip65", "csv", "segwit"]);
        assert!(info.buried.iter().all(|status| !status.active));
        assert!(info.version_bits.is_empty(), "testdummy never starts on mainnet");
        let segwit = deployment_info(&main, hash, 481_823, &versions).buried[4];
        assert_eq!((segwit.height, segwit.active), (481_824, true));
    }
}
