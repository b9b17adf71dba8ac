//! Property tests for the interpreter: untrusted scripts and witnesses never
//! panic, whatever the flags and checker answers; adding flags never turns a
//! failure into a success (the soft-fork property Core's script tests rely
//! on); numbers round-trip; script walking stays in bounds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_script::checker::{ExecutionData, NoSignatures, SigVersion, SignatureChecker};
use ibex_script::number::ScriptNum;
use ibex_script::script::{find_and_delete, Instructions};
use ibex_script::{eval_script, verify_script, ScriptError, VerifyFlags};
use proptest::prelude::*;

/// A checker for which every signature, lock time and sequence is valid, so
/// execution goes past the signature opcodes.
struct AcceptAll;

impl SignatureChecker for AcceptAll {
    fn check_ecdsa_signature(&self, _: &[u8], _: &[u8], _: &[u8], _: SigVersion) -> bool {
        true
    }

    fn check_schnorr_signature(
        &self,
        _: &[u8],
        _: &[u8],
        _: SigVersion,
        _: &ExecutionData,
    ) -> Result<(), ScriptError> {
        Ok(())
    }

    fn check_lock_time(&self, _: i64) -> bool {
        true
    }

    fn check_sequence(&self, _: i64) -> bool {
        true
    }
}

/// Script bytes built from plausible pieces (small pushes, numbers,
/// conditionals, any opcode, truncated pushes) so execution gets deep.
fn script() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => (0x51u8..=0x60).prop_map(|opcode| vec![opcode]),
        4 => any::<u8>().prop_map(|opcode| vec![opcode]),
        2 => prop::collection::vec(any::<u8>(), 0..6).prop_map(|data| {
            let mut piece = vec![data.len() as u8];
            piece.extend(data);
            piece
        }),
        2 => prop::sample::select(vec![0x63u8, 0x64, 0x67, 0x68, 0x00, 0x69]).prop_map(|opcode| vec![opcode]),
        1 => Just(vec![0x20; 33]),
        1 => prop::sample::select(vec![vec![0x4c], vec![0x4d, 0x01], vec![0x4e, 0xff, 0xff, 0xff, 0xff]]),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// Valid flag combinations: WITNESS implies P2SH, CLEANSTACK implies both.
fn flags() -> impl Strategy<Value = VerifyFlags> {
    (0u32..(1 << 21)).prop_map(|bits| {
        let mut flags = VerifyFlags(bits);
        if flags.contains(VerifyFlags::CLEANSTACK) {
            flags |= VerifyFlags::P2SH | VerifyFlags::WITNESS;
        }
        if flags.contains(VerifyFlags::WITNESS) {
            flags |= VerifyFlags::P2SH;
        }
        flags
    })
}

/// A scriptPubKey: random, or a P2SH/segwit/taproot template around random bytes.
fn script_pubkey() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => script(),
        1 => prop::collection::vec(any::<u8>(), 20).prop_map(|hash| [&[0xa9, 0x14][..], &hash, &[0x87]].concat()),
        1 => prop::collection::vec(any::<u8>(), 20).prop_map(|hash| [&[0x00, 0x14][..], &hash].concat()),
        1 => prop::collection::vec(any::<u8>(), 32).prop_map(|hash| [&[0x00, 0x20][..], &hash].concat()),
        1 => prop::collection::vec(any::<u8>(), 32).prop_map(|key| [&[0x51, 0x20][..], &key].concat()),
    ]
}

fn witness() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop_oneof![script(), prop::collection::vec(any::<u8>(), 0..80), Just(vec![0x50, 1])],
        0..5,
    )
}

fn verify(
    script_sig: &[u8],
    script_pubkey: &[u8],
    witness: &[Vec<u8>],
    flags: VerifyFlags,
    checker: &dyn SignatureChecker,
) -> Result<(), ScriptError> {
    let items: Vec<&[u8]> = witness.iter().map(Vec::as_slice).collect();
    verify_script(script_sig, script_pubkey, &items, flags, checker)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_never_panic(
        script_sig in script(),
        script_pubkey in script_pubkey(),
        witness in witness(),
        flags in flags(),
    ) {
        let _ = verify(&script_sig, &script_pubkey, &witness, flags, &NoSignatures);
        let _ = verify(&script_sig, &script_pubkey, &witness, flags, &AcceptAll);
    }

    #[test]
    fn raw_bytes_never_panic(script_sig in prop::collection::vec(any::<u8>(), 0..200),
                             script_pubkey in prop::collection::vec(any::<u8>(), 0..200),
                             flags in flags()) {
        let _ = verify(&script_sig, &script_pubkey, &[], flags, &AcceptAll);
    }

    #[test]
    fn every_sig_version_never_panics(
        script in script(),
        stack in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6),
        flags in flags(),
    ) {
        for sig_version in [SigVersion::Base, SigVersion::WitnessV0, SigVersion::Tapscript, SigVersion::Taproot] {
            let mut stack = stack.clone();
            let mut execution = ExecutionData { validation_weight_left: Some(100), ..Default::default() };
            let _ = eval_script(&mut stack, &script, flags, &AcceptAll, sig_version, &mut execution);
        }
    }

    #[test]
    fn adding_flags_never_makes_a_failure_pass(
        script_sig in script(),
        script_pubkey in script_pubkey(),
        witness in witness(),
        flags in flags(),
        extra in flags(),
    ) {
        for checker in [&NoSignatures as &dyn SignatureChecker, &AcceptAll] {
            let narrow = verify(&script_sig, &script_pubkey, &witness, flags, checker);
            let wide = verify(&script_sig, &script_pubkey, &witness, flags | extra, checker);
            prop_assert!(narrow.is_ok() || wide.is_err(), "{narrow:?} then {wide:?}");
        }
    }

    #[test]
    fn numbers_round_trip(value in -(1i64 << 39)..(1i64 << 39)) {
        let bytes = ScriptNum(value).encode();
        prop_assert!(bytes.len() <= 5);
        prop_assert_eq!(ScriptNum::decode(&bytes, true, 5), Ok(ScriptNum(value)));
    }

    #[test]
    fn walking_stays_in_bounds(script in prop::collection::vec(any::<u8>(), 0..300),
                               pattern in prop::collection::vec(any::<u8>(), 0..4)) {
        let mut instructions = Instructions::new(&script);
        let mut last = 0;
        while let Some(Ok(_)) = instructions.next() {
            prop_assert!(instructions.position() > last && instructions.position() <= script.len());
            last = instructions.position();
        }
        let (deleted, found) = find_and_delete(&script, &pattern);
        let length = deleted.as_ref().map_or(script.len(), Vec::len);
        prop_assert_eq!(length + found * pattern.len(), script.len());
    }
}
