//! Interpreter unit tests: limits, malformed scripts, conditionals, tapscript
//! rules. Script behaviour against Core as a whole is covered by
//! `tests/core_vectors` (script_tests.json).

use super::*;
use crate::assembly::parse_assembly;
use crate::checker::NoSignatures;

fn eval_with(
    stack: Vec<Vec<u8>>,
    script: &[u8],
    flags: VerifyFlags,
    sig_version: SigVersion,
) -> (Result<(), ScriptError>, Stack, ExecutionData) {
    let mut stack = stack;
    let mut execution = ExecutionData { validation_weight_left: Some(1_000), ..Default::default() };
    let result = eval_script(&mut stack, script, flags, &NoSignatures, sig_version, &mut execution);
    (result, stack, execution)
}

fn eval(script: &[u8]) -> Result<(), ScriptError> {
    eval_with(Vec::new(), script, VerifyFlags::NONE, SigVersion::Base).0
}

fn asm(text: &str) -> Vec<u8> {
    parse_assembly(text).unwrap()
}

#[test]
fn truncated_pushes_are_bad_opcodes() {
    for script in [
        &[0x01][..],
        &[0x4b, 0x00],
        &[OP_PUSHDATA1],
        &[OP_PUSHDATA1, 0x02, 0x00],
        &[OP_PUSHDATA2, 0xff],
        &[OP_PUSHDATA2, 0xff, 0xff, 0x00],
        &[OP_PUSHDATA4, 0xff, 0xff, 0xff, 0xff],
        &[OP_PUSHDATA4, 0xff, 0xff, 0xff, 0x7f, 0x00],
    ] {
        assert_eq!(eval(script), Err(ScriptError::BadOpcode), "{script:?}");
    }
}

#[test]
fn oversized_pushes_fail_even_unexecuted() {
    let mut script = vec![OP_0, OP_IF, OP_PUSHDATA2, 0x09, 0x02];
    script.extend_from_slice(&[0u8; 521]);
    script.push(OP_ENDIF);
    assert_eq!(eval(&script), Err(ScriptError::PushSize));
    let mut fits = vec![OP_PUSHDATA2, 0x08, 0x02];
    fits.extend_from_slice(&[0u8; 520]);
    assert_eq!(eval(&fits), Ok(()));
}

#[test]
fn script_size_limit_only_before_tapscript() {
    let script = vec![OP_NOP; SCRIPT_BYTES_MAX + 1];
    assert_eq!(eval(&script), Err(ScriptError::ScriptSize));
    let (result, ..) = eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Ok(()), "tapscript has no size or op count limit");
}

#[test]
fn op_count_limit() {
    let script = vec![OP_NOP; MAX_OPS_PER_SCRIPT];
    assert_eq!(eval(&script), Ok(()));
    let script = vec![OP_NOP; MAX_OPS_PER_SCRIPT + 1];
    assert_eq!(eval(&script), Err(ScriptError::OpCount));
    // Pushes and OP_RESERVED (unexecuted) do not count.
    let mut script = vec![OP_1; 300];
    script.extend([OP_0, OP_IF, OP_RESERVED, OP_ENDIF]);
    script.extend(vec![OP_2DROP; 150]);
    assert_eq!(eval(&script), Ok(()));
    // Multisig key counts add to the op count.
    let mut script = vec![OP_NOP; 190];
    script.extend(asm("0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 CHECKMULTISIG"));
    assert_eq!(eval(&script), Err(ScriptError::OpCount));
}

#[test]
fn stack_size_limit_counts_altstack() {
    let script = vec![OP_1; MAX_STACK_SIZE];
    assert_eq!(eval(&script), Ok(()));
    let script = vec![OP_1; MAX_STACK_SIZE + 1];
    assert_eq!(eval(&script), Err(ScriptError::StackSize));
    // Tapscript keeps the stack limit (and has no op limit to hit first).
    let mut script = vec![OP_1; 500];
    script.extend(vec![OP_TOALTSTACK; 500]);
    script.extend(vec![OP_1; 500]);
    let tapscript =
        |script: &[u8]| eval_with(Vec::new(), script, VerifyFlags::NONE, SigVersion::Tapscript).0;
    assert_eq!(tapscript(&script), Ok(()));
    script.push(OP_1);
    assert_eq!(tapscript(&script), Err(ScriptError::StackSize));
}

#[test]
fn deep_conditionals() {
    // Legacy: nesting is bounded by the op count.
    let mut script = Vec::new();
    for _ in 0..100 {
        script.extend([OP_1, OP_IF]);
    }
    script.extend(vec![OP_ENDIF; 100]);
    assert_eq!(eval(&script), Ok(()));
    script.pop();
    assert_eq!(eval(&script), Err(ScriptError::UnbalancedConditional));
    // Tapscript: 100,000 levels, constant work per opcode.
    let depth = 100_000;
    let mut script = vec![OP_0, OP_IF];
    for _ in 0..depth {
        script.extend([OP_IF, OP_ELSE]);
    }
    script.extend(vec![OP_ENDIF; depth + 1]);
    script.push(OP_1);
    let (result, stack, _) =
        eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Ok(()));
    assert_eq!(stack, vec![vec![1]]);
    script.truncate(script.len() - 2);
    let (result, ..) = eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Err(ScriptError::UnbalancedConditional));
}

#[test]
fn conditional_structure() {
    assert_eq!(eval(&[OP_ELSE]), Err(ScriptError::UnbalancedConditional));
    assert_eq!(eval(&[OP_ENDIF]), Err(ScriptError::UnbalancedConditional));
    assert_eq!(eval(&[OP_IF]), Err(ScriptError::UnbalancedConditional), "IF on empty stack");
    // ELSE may repeat, toggling each time.
    let (result, stack, _) = eval_with(
        Vec::new(),
        &asm("1 IF 2 ELSE 3 ELSE 4 ENDIF"),
        VerifyFlags::NONE,
        SigVersion::Base,
    );
    assert_eq!(result, Ok(()));
    assert_eq!(stack, vec![vec![2], vec![4]]);
    // OP_VERIF and OP_VERNOTIF fail even unexecuted; OP_VER only executed.
    assert_eq!(eval(&asm("0 IF VERIF ENDIF")), Err(ScriptError::BadOpcode));
    assert_eq!(eval(&asm("0 IF VERNOTIF ENDIF")), Err(ScriptError::BadOpcode));
    assert_eq!(eval(&asm("0 IF VER ENDIF")), Ok(()));
    assert_eq!(eval(&asm("0 IF CAT ENDIF")), Err(ScriptError::DisabledOpcode));
    assert_eq!(eval(&asm("0 IF 0xba ENDIF")), Ok(()));
}

#[test]
fn minimal_if_rules() {
    let script = asm("IF 1 ENDIF");
    let two = vec![vec![2]];
    let (result, ..) = eval_with(two.clone(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Err(ScriptError::TapscriptMinimalif));
    let (result, ..) =
        eval_with(two.clone(), &script, VerifyFlags::MINIMALIF, SigVersion::WitnessV0);
    assert_eq!(result, Err(ScriptError::Minimalif));
    let (result, ..) = eval_with(two.clone(), &script, VerifyFlags::MINIMALIF, SigVersion::Base);
    assert_eq!(result, Ok(()), "MINIMALIF is a segwit v0 rule only");
    let (result, ..) = eval_with(vec![vec![1]], &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Ok(()));
}

#[test]
fn numbers_overflow_into_errors() {
    // 2^31 - 1 + 1 gives a 5-byte result, valid on the stack but not as an operand.
    let (result, stack, _) =
        eval_with(Vec::new(), &asm("0x04 0xffffff7f 1ADD"), VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(result, Ok(()));
    assert_eq!(stack, vec![vec![0x00, 0x00, 0x00, 0x80, 0x00]]);
    assert_eq!(eval(&asm("0x04 0xffffff7f 1ADD 1ADD")), Err(ScriptError::UnknownError));
    // A 5-byte lock time operand is accepted by CLTV (and fails the checker).
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0x05 0x0000000001 CHECKLOCKTIMEVERIFY"),
        VerifyFlags::CHECKLOCKTIMEVERIFY,
        SigVersion::Base,
    );
    assert_eq!(result, Err(ScriptError::UnsatisfiedLocktime));
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0x06 0x000000000001 CHECKLOCKTIMEVERIFY"),
        VerifyFlags::CHECKLOCKTIMEVERIFY,
        SigVersion::Base,
    );
    assert_eq!(result, Err(ScriptError::UnknownError));
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("-1 CHECKSEQUENCEVERIFY"),
        VerifyFlags::CHECKSEQUENCEVERIFY,
        SigVersion::Base,
    );
    assert_eq!(result, Err(ScriptError::NegativeLocktime));
    // The disable bit makes CSV a NOP without asking the checker.
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0x05 0x0000008000 CHECKSEQUENCEVERIFY"),
        VerifyFlags::CHECKSEQUENCEVERIFY,
        SigVersion::Base,
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn stack_operations_on_short_stacks_fail_cleanly() {
    for opcode in OP_TOALTSTACK..=OP_TUCK {
        let result = eval(&[opcode]);
        let expected = match opcode {
            OP_FROMALTSTACK => Err(ScriptError::InvalidAltstackOperation),
            OP_DEPTH => Ok(()),
            _ => Err(ScriptError::InvalidStackOperation),
        };
        assert_eq!(result, expected, "opcode {opcode:#x}");
    }
    assert_eq!(eval(&asm("1 2 3 2 ROLL")), Ok(()));
    assert_eq!(eval(&asm("1 2 3 3 ROLL")), Err(ScriptError::InvalidStackOperation));
    assert_eq!(eval(&asm("1 -1 PICK")), Err(ScriptError::InvalidStackOperation));
    let (_, stack, _) =
        eval_with(Vec::new(), &asm("1 2 3 4 5 6 2ROT"), VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(stack, vec![vec![3], vec![4], vec![5], vec![6], vec![1], vec![2]]);
    let (_, stack, _) =
        eval_with(Vec::new(), &asm("1 2 TUCK"), VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(stack, vec![vec![2], vec![1], vec![2]]);
}

#[test]
fn signature_opcodes_by_version() {
    assert_eq!(eval(&asm("0 0 0 CHECKSIGADD")), Err(ScriptError::BadOpcode));
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0 0 0 CHECKMULTISIG"),
        VerifyFlags::NONE,
        SigVersion::Tapscript,
    );
    assert_eq!(result, Err(ScriptError::TapscriptCheckmultisig));
    // Tapscript: empty signature is a failed check; empty key is an error.
    let key = vec![7u8; 32];
    let (result, stack, _) = eval_with(
        vec![vec![], key.clone()],
        &[OP_CHECKSIG],
        VerifyFlags::NONE,
        SigVersion::Tapscript,
    );
    assert_eq!(result, Ok(()));
    assert_eq!(stack, vec![Vec::<u8>::new()]);
    let (result, ..) =
        eval_with(vec![vec![1], vec![]], &[OP_CHECKSIG], VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Err(ScriptError::TapscriptEmptyPubkey));
    let (result, ..) = eval_with(
        vec![vec![1], key.clone()],
        &[OP_CHECKSIG],
        VerifyFlags::NONE,
        SigVersion::Tapscript,
    );
    assert_eq!(result, Err(ScriptError::SchnorrSig));
    // Unknown key types succeed (unless discouraged) but spend budget: 1,000
    // units pay for 20 checks.
    let unknown_key = vec![7u8; 33];
    let mut script = Vec::new();
    for _ in 0..20 {
        script.extend([OP_1, OP_DUP, 0x21]);
        script.extend_from_slice(&unknown_key);
        script.extend([OP_CHECKSIGADD, OP_DROP]);
    }
    let (result, stack, execution) =
        eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Ok(()));
    assert!(stack.is_empty());
    assert_eq!(execution.validation_weight_left, Some(0));
    script.extend([OP_1, OP_DUP, 0x21]);
    script.extend_from_slice(&unknown_key);
    script.push(OP_CHECKSIGADD);
    let (result, ..) = eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(result, Err(ScriptError::TapscriptValidationWeight));
    let (result, ..) = eval_with(
        vec![vec![1], unknown_key],
        &[OP_CHECKSIG],
        VerifyFlags::DISCOURAGE_UPGRADABLE_PUBKEYTYPE,
        SigVersion::Tapscript,
    );
    assert_eq!(result, Err(ScriptError::DiscourageUpgradablePubkeytype));
}

#[test]
fn multisig_nulldummy_and_nullfail() {
    // No signatures against one (empty) key: succeeds, consuming the dummy.
    let script = asm("0 0 1 CHECKMULTISIG");
    let (result, stack, _) =
        eval_with(vec![vec![]], &script, VerifyFlags::NULLDUMMY, SigVersion::Base);
    assert_eq!(result, Ok(()));
    assert_eq!(stack, vec![vec![1]]);
    let (result, ..) = eval_with(vec![vec![1]], &script, VerifyFlags::NULLDUMMY, SigVersion::Base);
    assert_eq!(result, Err(ScriptError::SigNulldummy));
    let (result, ..) = eval_with(Vec::new(), &script, VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(result, Err(ScriptError::InvalidStackOperation), "the dummy is required");
    let failing = asm("0 0x01 0x01 1 0 1 CHECKMULTISIG");
    let (result, ..) = eval_with(Vec::new(), &failing, VerifyFlags::NULLFAIL, SigVersion::Base);
    assert_eq!(result, Err(ScriptError::SigNullfail));
    assert_eq!(eval(&asm("0 0 21 CHECKMULTISIG")), Err(ScriptError::PubkeyCount));
    assert_eq!(eval(&asm("0 2 0 1 CHECKMULTISIG")), Err(ScriptError::SigCount));
}

#[test]
fn codeseparator_rules() {
    let (result, _, execution) = eval_with(
        Vec::new(),
        &asm("1 CODESEPARATOR 2 CODESEPARATOR"),
        VerifyFlags::NONE,
        SigVersion::Tapscript,
    );
    assert_eq!(result, Ok(()));
    assert_eq!(execution.codeseparator_position, Some(3));
    let (_, _, execution) =
        eval_with(Vec::new(), &asm("1"), VerifyFlags::NONE, SigVersion::Tapscript);
    assert_eq!(execution.codeseparator_position, Some(u32::MAX));
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0 IF CODESEPARATOR ENDIF"),
        VerifyFlags::CONST_SCRIPTCODE,
        SigVersion::Base,
    );
    assert_eq!(result, Err(ScriptError::OpCodeseparator));
    let (result, ..) = eval_with(
        Vec::new(),
        &asm("0 IF CODESEPARATOR ENDIF"),
        VerifyFlags::CONST_SCRIPTCODE,
        SigVersion::WitnessV0,
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn minimal_pushes() {
    assert!(is_minimal_push(&[], OP_0));
    assert!(!is_minimal_push(&[], OP_PUSHDATA1));
    assert!(is_minimal_push(&[5], OP_5));
    assert!(!is_minimal_push(&[5], 0x01));
    assert!(is_minimal_push(&[0x81], OP_1NEGATE));
    assert!(is_minimal_push(&[0; 75], 75));
    assert!(!is_minimal_push(&[0; 75], OP_PUSHDATA1));
    assert!(is_minimal_push(&[0; 76], OP_PUSHDATA1));
    assert!(is_minimal_push(&[0; 256], OP_PUSHDATA2));
    assert!(!is_minimal_push(&[0; 256], OP_PUSHDATA4));
    assert_eq!(
        eval_with(Vec::new(), &[0x01, 0x05], VerifyFlags::MINIMALDATA, SigVersion::Base).0,
        Err(ScriptError::Minimaldata)
    );
    // Unexecuted pushes are not checked.
    assert_eq!(
        eval_with(
            Vec::new(),
            &[OP_0, OP_IF, 0x01, 0x05, OP_ENDIF],
            VerifyFlags::MINIMALDATA,
            SigVersion::Base
        )
        .0,
        Ok(())
    );
}

#[test]
fn hashes() {
    let (_, stack, _) =
        eval_with(vec![b"abc".to_vec()], &[OP_SHA1], VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(ibex_primitives::hex::encode(&stack[0]), "a9993e364706816aba3e25717850c26c9cd0d89d");
    let (_, stack, _) =
        eval_with(vec![b"abc".to_vec()], &[OP_RIPEMD160], VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(ibex_primitives::hex::encode(&stack[0]), "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc");
    let (_, stack, _) =
        eval_with(vec![Vec::new()], &[OP_HASH160], VerifyFlags::NONE, SigVersion::Base);
    assert_eq!(ibex_primitives::hex::encode(&stack[0]), "b472a266d0bd89c13706a4132ccfb16f7c3b9fcb");
}
