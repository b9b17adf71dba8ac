//! The script verification flags of a block: Core's `GetBlockScriptFlags`.

use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::{BlockHash, Height, Params};
use ibex_script::VerifyFlags;

/// The flags every input of the block `hash` at `height` is verified with.
///
/// P2SH, witness and taproot are on from genesis: BIP16 was applied
/// retroactively and only one block per chain broke it (the same for
/// taproot on mainnet), so Core lists those blocks in
/// `script_flag_exceptions` instead of tracking activation heights; an
/// exception replaces the three base flags. DERSIG (BIP66), CLTV (BIP65),
/// CSV (BIP112) and NULLDUMMY (BIP147, with segwit) are added from their
/// buried activation heights, exceptions included.
pub fn block_script_flags(params: &Params, height: Height, hash: &BlockHash) -> VerifyFlags {
    let mut flags = match params.script_flag_exception(hash) {
        Some(exception) => {
            let mut base = VerifyFlags::NONE;
            for (on, flag) in [
                (exception.verify_p2sh(), VerifyFlags::P2SH),
                (exception.verify_witness(), VerifyFlags::WITNESS),
                (exception.verify_taproot(), VerifyFlags::TAPROOT),
            ] {
                if on {
                    base = base.union(flag);
                }
            }
            base
        }
        None => VerifyFlags::P2SH.union(VerifyFlags::WITNESS).union(VerifyFlags::TAPROOT),
    };
    let by_height = [
        (BuriedDeployment::StrictDerSignatures, VerifyFlags::DERSIG),
        (BuriedDeployment::CheckLockTimeVerify, VerifyFlags::CHECKLOCKTIMEVERIFY),
        (BuriedDeployment::CheckSequenceVerify, VerifyFlags::CHECKSEQUENCEVERIFY),
        (BuriedDeployment::Segwit, VerifyFlags::NULLDUMMY),
    ];
    for (deployment, flag) in by_height {
        if params.deployment_active_at(deployment, height) {
            flags = flags.union(flag);
        }
    }
    flags
}
