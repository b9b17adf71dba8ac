use super::*;

/// Protections that hold whatever the candidates: 4 + 8 + 4 + 4 (the
/// block-relay step protects only peers that relay no transactions).
const ALWAYS_PROTECTED: usize = 20;

struct Candidates {
    start: Instant,
    list: Vec<EvictionCandidate>,
}

impl Candidates {
    fn new() -> Candidates {
        Candidates { start: Instant::now(), list: Vec::new() }
    }

    /// A candidate connected `seconds` after the start, in `group`.
    fn add(&mut self, seconds: u64, group: u64) -> &mut EvictionCandidate {
        let id = PeerId(self.list.len() as u64);
        self.list.push(EvictionCandidate {
            id,
            connected: self.start + Duration::from_secs(seconds),
            min_ping: None,
            last_block: None,
            relevant_services: true,
            relays_transactions: true,
            keyed_group: group,
            prefer_evict: false,
            is_local: false,
            network: AddressNetwork::Ipv4,
        });
        self.list.last_mut().unwrap_or_else(|| unreachable!())
    }
}

#[test]
fn nothing_is_evicted_while_every_candidate_is_protected() {
    let mut candidates = Candidates::new();
    for index in 0..ALWAYS_PROTECTED {
        candidates.add(index as u64, 7);
    }
    assert_eq!(select_to_evict(candidates.list.clone()), None);
    assert_eq!(select_to_evict(Vec::new()), None);
    candidates.add(100, 7);
    assert!(select_to_evict(candidates.list.clone()).is_some(), "21: one is evictable");
}

/// The attacker holds all 114 slots from one group; 10 honest peers from
/// other groups arrive one by one, then the attacker reconnects 200
/// times. Every selection evicts one of the attacker's connections,
/// though the honest peers are the youngest and have no ping or block to
/// their name: their groups are smaller.
#[test]
fn a_flood_from_one_group_evicts_its_own_never_an_honest_peer() {
    let attacker_group = 1_000;
    let mut candidates = Candidates::new();
    for index in 0..114 {
        candidates.add(index, attacker_group);
    }
    let mut next_id = 10_000;
    for round in 0..210u64 {
        let list = candidates.list.clone();
        let evicted = select_to_evict(list).unwrap_or_else(|| panic!("round {round}: none"));
        let position = candidates.list.iter().position(|candidate| candidate.id == evicted);
        let Some(position) = position else { panic!("round {round}: unknown {evicted:?}") };
        let gone = candidates.list.remove(position);
        assert_eq!(gone.keyed_group, attacker_group, "round {round}: an honest peer went");
        let group = if round < 10 { round } else { attacker_group };
        let connected = candidates.start + Duration::from_secs(1_000 + round);
        next_id += 1;
        candidates.list.push(EvictionCandidate {
            id: PeerId(next_id),
            connected,
            keyed_group: group,
            ..gone
        });
    }
    let honest = candidates.list.iter().filter(|candidate| candidate.keyed_group < 10).count();
    assert_eq!(honest, 10);
}

#[test]
fn an_honest_newcomer_in_its_own_group_survives_later_evictions() {
    let mut candidates = Candidates::new();
    for index in 0..113 {
        candidates.add(index, 5);
    }
    candidates.add(500, 6);
    let honest = PeerId(113);
    assert_ne!(select_to_evict(candidates.list.clone()), Some(honest));
}

/// Candidates with distinct pings (the older the faster), so each
/// protection picks known peers.
fn with_pings(count: u64, group_of: impl Fn(u64) -> u64) -> Candidates {
    let mut candidates = Candidates::new();
    for index in 0..count {
        candidates.add(index, group_of(index)).min_ping = Some(Duration::from_millis(index + 1));
    }
    candidates
}

#[test]
fn discouraged_peers_go_first_and_protections_come_before_them() {
    let mut candidates = with_pings(40, |index| index % 3);
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(39)));
    candidates.list[30].prefer_evict = true;
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(30)));
    // The fastest ping of all is protected even when discouraged.
    candidates.list[30].min_ping = Some(Duration::from_micros(1));
    assert_ne!(select_to_evict(candidates.list.clone()), Some(PeerId(30)));
}

#[test]
fn ping_and_block_relay_protect_peers_an_attacker_cannot_imitate() {
    let mut candidates = with_pings(60, |_| 9);
    for group in 10..14 {
        candidates.add(0, group);
    }
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(59)));
    candidates.list[59].min_ping = Some(Duration::from_micros(10));
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(58)), "ping protects");
    candidates.list[58].last_block = Some(candidates.start + Duration::from_secs(3_000));
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(57)), "a block protects");
}

#[test]
fn the_ratio_protects_the_oldest_half_and_local_peers() {
    let mut candidates = Candidates::new();
    for index in 0..60 {
        candidates.add(index, 3);
    }
    let mut survivors = candidates.list.clone();
    while let Some(id) = select_to_evict(survivors.clone()) {
        survivors.retain(|candidate| candidate.id != id);
    }
    assert_eq!(survivors.len(), ALWAYS_PROTECTED, "evicted down to the fixed protections");
    assert!(survivors.iter().any(|candidate| candidate.id == PeerId(0)), "the oldest stays");

    // Local peers get up to a quarter of the ratio's slots even if young.
    let mut candidates = with_pings(60, |_| 3);
    for group in 10..14 {
        candidates.add(0, group);
    }
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(59)));
    for candidate in candidates.list.iter_mut().take(60).skip(55) {
        candidate.is_local = true;
    }
    assert_eq!(select_to_evict(candidates.list.clone()), Some(PeerId(54)));
}

#[test]
fn keyed_groups_depend_on_the_secret_and_the_seam_splits_loopback() {
    let first = "127.0.0.1:1".parse().unwrap_or_else(|_| unreachable!());
    let second = "127.1.0.1:1".parse().unwrap_or_else(|_| unreachable!());
    let core = EvictionGrouping::Core;
    assert_eq!(core.group(first), core.group(second), "Core: one group for all local");
    let seam = EvictionGrouping::LoopbackBySlash16;
    assert_ne!(seam.group(first), seam.group(second));
    let routable: SocketAddr = "8.8.4.4:1".parse().unwrap_or_else(|_| unreachable!());
    assert_eq!(seam.group(routable), core.group(routable));
    let group = core.group(routable);
    assert_ne!(keyed_group(&[1; 32], &group), keyed_group(&[2; 32], &group));
}
