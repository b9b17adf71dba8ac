//! Script opcodes as bytes, with Core's names (`GetOpName`) and the classes the
//! interpreter needs: disabled opcodes, BIP342 OP_SUCCESSx, small integers.

/// An opcode byte. Plain `u8` constants keep the interpreter's dispatch a
/// single jump table.
pub type Opcode = u8;

macro_rules! opcodes {
    ($($(#[$doc:meta])* $name:ident = $value:expr;)*) => {
        $($(#[$doc])* pub const $name: Opcode = $value;)*

        /// Every named opcode with Core's name (without the `OP_` prefix), for
        /// the script assembly parser and for display.
        pub const NAMED: &[(&str, Opcode)] = &[$((strip_prefix(stringify!($name)), $name)),*];
    };
}

const fn strip_prefix(name: &'static str) -> &'static str {
    let bytes = name.as_bytes();
    // Every constant below is spelt `OP_...`; remove those three bytes.
    let (_, rest) = bytes.split_at(3);
    match core::str::from_utf8(rest) {
        Ok(text) => text,
        Err(_) => name,
    }
}

opcodes! {
    /// Push an empty vector (also `OP_FALSE`).
    OP_0 = 0x00;
    /// The next byte is the push length.
    OP_PUSHDATA1 = 0x4c;
    /// The next two bytes (little-endian) are the push length.
    OP_PUSHDATA2 = 0x4d;
    /// The next four bytes (little-endian) are the push length.
    OP_PUSHDATA4 = 0x4e;
    /// Push -1.
    OP_1NEGATE = 0x4f;
    /// Reserved: fails when executed; an OP_SUCCESSx in tapscript.
    OP_RESERVED = 0x50;
    /// Push 1 (also `OP_TRUE`).
    OP_1 = 0x51;
    /// Push 2.
    OP_2 = 0x52;
    /// Push 3.
    OP_3 = 0x53;
    /// Push 4.
    OP_4 = 0x54;
    /// Push 5.
    OP_5 = 0x55;
    /// Push 6.
    OP_6 = 0x56;
    /// Push 7.
    OP_7 = 0x57;
    /// Push 8.
    OP_8 = 0x58;
    /// Push 9.
    OP_9 = 0x59;
    /// Push 10.
    OP_10 = 0x5a;
    /// Push 11.
    OP_11 = 0x5b;
    /// Push 12.
    OP_12 = 0x5c;
    /// Push 13.
    OP_13 = 0x5d;
    /// Push 14.
    OP_14 = 0x5e;
    /// Push 15.
    OP_15 = 0x5f;
    /// Push 16.
    OP_16 = 0x60;
    /// Does nothing.
    OP_NOP = 0x61;
    /// Reserved: fails when executed.
    OP_VER = 0x62;
    /// Conditional.
    OP_IF = 0x63;
    /// Negated conditional.
    OP_NOTIF = 0x64;
    /// Fails even in an unexecuted branch.
    OP_VERIF = 0x65;
    /// Fails even in an unexecuted branch.
    OP_VERNOTIF = 0x66;
    /// Toggles the innermost conditional.
    OP_ELSE = 0x67;
    /// Ends a conditional.
    OP_ENDIF = 0x68;
    /// Fails unless the top item is true, which it pops.
    OP_VERIFY = 0x69;
    /// Fails.
    OP_RETURN = 0x6a;
    /// Moves the top item to the altstack.
    OP_TOALTSTACK = 0x6b;
    /// Moves the top altstack item to the stack.
    OP_FROMALTSTACK = 0x6c;
    /// Drops two items.
    OP_2DROP = 0x6d;
    /// Duplicates two items.
    OP_2DUP = 0x6e;
    /// Duplicates three items.
    OP_3DUP = 0x6f;
    /// Copies the pair below the top pair.
    OP_2OVER = 0x70;
    /// Moves the third pair to the top.
    OP_2ROT = 0x71;
    /// Swaps the top two pairs.
    OP_2SWAP = 0x72;
    /// Duplicates the top item if true.
    OP_IFDUP = 0x73;
    /// Pushes the stack depth.
    OP_DEPTH = 0x74;
    /// Drops the top item.
    OP_DROP = 0x75;
    /// Duplicates the top item.
    OP_DUP = 0x76;
    /// Removes the second item.
    OP_NIP = 0x77;
    /// Copies the second item.
    OP_OVER = 0x78;
    /// Copies the n-th item.
    OP_PICK = 0x79;
    /// Moves the n-th item.
    OP_ROLL = 0x7a;
    /// Rotates the top three items.
    OP_ROT = 0x7b;
    /// Swaps the top two items.
    OP_SWAP = 0x7c;
    /// Copies the top item below the second.
    OP_TUCK = 0x7d;
    /// Disabled.
    OP_CAT = 0x7e;
    /// Disabled.
    OP_SUBSTR = 0x7f;
    /// Disabled.
    OP_LEFT = 0x80;
    /// Disabled.
    OP_RIGHT = 0x81;
    /// Pushes the top item's size.
    OP_SIZE = 0x82;
    /// Disabled.
    OP_INVERT = 0x83;
    /// Disabled.
    OP_AND = 0x84;
    /// Disabled.
    OP_OR = 0x85;
    /// Disabled.
    OP_XOR = 0x86;
    /// Byte-wise equality.
    OP_EQUAL = 0x87;
    /// OP_EQUAL then OP_VERIFY.
    OP_EQUALVERIFY = 0x88;
    /// Reserved: fails when executed.
    OP_RESERVED1 = 0x89;
    /// Reserved: fails when executed.
    OP_RESERVED2 = 0x8a;
    /// Adds 1.
    OP_1ADD = 0x8b;
    /// Subtracts 1.
    OP_1SUB = 0x8c;
    /// Disabled.
    OP_2MUL = 0x8d;
    /// Disabled.
    OP_2DIV = 0x8e;
    /// Negates.
    OP_NEGATE = 0x8f;
    /// Absolute value.
    OP_ABS = 0x90;
    /// 1 if zero, else 0.
    OP_NOT = 0x91;
    /// 0 if zero, else 1.
    OP_0NOTEQUAL = 0x92;
    /// Adds.
    OP_ADD = 0x93;
    /// Subtracts.
    OP_SUB = 0x94;
    /// Disabled.
    OP_MUL = 0x95;
    /// Disabled.
    OP_DIV = 0x96;
    /// Disabled.
    OP_MOD = 0x97;
    /// Disabled.
    OP_LSHIFT = 0x98;
    /// Disabled.
    OP_RSHIFT = 0x99;
    /// Logical and.
    OP_BOOLAND = 0x9a;
    /// Logical or.
    OP_BOOLOR = 0x9b;
    /// Numeric equality.
    OP_NUMEQUAL = 0x9c;
    /// OP_NUMEQUAL then OP_VERIFY.
    OP_NUMEQUALVERIFY = 0x9d;
    /// Numeric inequality.
    OP_NUMNOTEQUAL = 0x9e;
    /// a < b.
    OP_LESSTHAN = 0x9f;
    /// a > b.
    OP_GREATERTHAN = 0xa0;
    /// a <= b.
    OP_LESSTHANOREQUAL = 0xa1;
    /// a >= b.
    OP_GREATERTHANOREQUAL = 0xa2;
    /// Minimum.
    OP_MIN = 0xa3;
    /// Maximum.
    OP_MAX = 0xa4;
    /// min <= x < max.
    OP_WITHIN = 0xa5;
    /// RIPEMD-160.
    OP_RIPEMD160 = 0xa6;
    /// SHA-1.
    OP_SHA1 = 0xa7;
    /// SHA-256.
    OP_SHA256 = 0xa8;
    /// RIPEMD-160 of SHA-256.
    OP_HASH160 = 0xa9;
    /// Double SHA-256.
    OP_HASH256 = 0xaa;
    /// Starts the signed script code after this opcode.
    OP_CODESEPARATOR = 0xab;
    /// Signature check.
    OP_CHECKSIG = 0xac;
    /// OP_CHECKSIG then OP_VERIFY.
    OP_CHECKSIGVERIFY = 0xad;
    /// m-of-n signature check (not in tapscript).
    OP_CHECKMULTISIG = 0xae;
    /// OP_CHECKMULTISIG then OP_VERIFY.
    OP_CHECKMULTISIGVERIFY = 0xaf;
    /// Upgradable no-op.
    OP_NOP1 = 0xb0;
    /// BIP65 (formerly OP_NOP2).
    OP_CHECKLOCKTIMEVERIFY = 0xb1;
    /// BIP112 (formerly OP_NOP3).
    OP_CHECKSEQUENCEVERIFY = 0xb2;
    /// Upgradable no-op.
    OP_NOP4 = 0xb3;
    /// Upgradable no-op.
    OP_NOP5 = 0xb4;
    /// Upgradable no-op.
    OP_NOP6 = 0xb5;
    /// Upgradable no-op.
    OP_NOP7 = 0xb6;
    /// Upgradable no-op.
    OP_NOP8 = 0xb7;
    /// Upgradable no-op.
    OP_NOP9 = 0xb8;
    /// Upgradable no-op.
    OP_NOP10 = 0xb9;
    /// BIP342 signature check adding to a counter (tapscript only).
    OP_CHECKSIGADD = 0xba;
    /// Core's `OP_INVALIDOPCODE`.
    OP_INVALIDOPCODE = 0xff;
}

/// Alias of [`OP_0`].
pub const OP_FALSE: Opcode = OP_0;
/// Alias of [`OP_1`].
pub const OP_TRUE: Opcode = OP_1;
/// Alias of [`OP_CHECKLOCKTIMEVERIFY`].
pub const OP_NOP2: Opcode = OP_CHECKLOCKTIMEVERIFY;
/// Alias of [`OP_CHECKSEQUENCEVERIFY`].
pub const OP_NOP3: Opcode = OP_CHECKSEQUENCEVERIFY;

/// Whether `opcode` is one of the opcodes disabled since 2010 (CVE-2010-5137):
/// they fail a script even in an unexecuted branch.
#[inline]
pub const fn is_disabled(opcode: Opcode) -> bool {
    matches!(
        opcode,
        OP_CAT
            | OP_SUBSTR
            | OP_LEFT
            | OP_RIGHT
            | OP_INVERT
            | OP_AND
            | OP_OR
            | OP_XOR
            | OP_2MUL
            | OP_2DIV
            | OP_MUL
            | OP_DIV
            | OP_MOD
            | OP_LSHIFT
            | OP_RSHIFT
    )
}

/// Whether `opcode` is a BIP342 OP_SUCCESSx: its presence anywhere in a
/// tapscript makes the script succeed unconditionally (Core's `IsOpSuccess`).
#[inline]
pub const fn is_op_success(opcode: Opcode) -> bool {
    matches!(opcode, 80 | 98 | 126..=129 | 131..=134 | 137..=138 | 141..=142 | 149..=153 | 187..=254)
}

/// The value of OP_0 and OP_1..OP_16 (Core's `CScript::DecodeOP_N`), `None` for
/// other opcodes.
#[inline]
pub const fn small_integer_value(opcode: Opcode) -> Option<u8> {
    match opcode {
        OP_0 => Some(0),
        OP_1..=OP_16 => Some(opcode - (OP_1 - 1)),
        _ => None,
    }
}

/// The opcode pushing `value` for 0..=16 (Core's `CScript::EncodeOP_N`).
#[inline]
pub const fn small_integer_opcode(value: u8) -> Option<Opcode> {
    match value {
        0 => Some(OP_0),
        1..=16 => Some(value + (OP_1 - 1)),
        _ => None,
    }
}

/// Core's `GetOpName` without the `OP_` prefix; `None` for unnamed bytes
/// (direct pushes 0x01..=0x4b and 0xbb..=0xfe).
pub fn name(opcode: Opcode) -> Option<&'static str> {
    NAMED.iter().find(|(_, known)| *known == opcode).map(|(text, _)| *text)
}

/// The opcode named `text`, with or without the `OP_` prefix (`"DUP"`,
/// `"OP_DUP"`, `"NOP2"`, `"OP_TRUE"`).
pub fn from_name(text: &str) -> Option<Opcode> {
    let bare = text.strip_prefix("OP_").unwrap_or(text);
    match bare {
        "FALSE" => return Some(OP_FALSE),
        "TRUE" => return Some(OP_TRUE),
        "NOP2" => return Some(OP_NOP2),
        "NOP3" => return Some(OP_NOP3),
        _ => {}
    }
    NAMED.iter().find(|(known, _)| *known == bare).map(|(_, opcode)| *opcode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(from_name("OP_CHECKSIG"), Some(OP_CHECKSIG));
        assert_eq!(from_name("CHECKSIGADD"), Some(0xba));
        assert_eq!(from_name("NOP2"), Some(0xb1));
        assert_eq!(name(OP_HASH160), Some("HASH160"));
        assert_eq!(name(0x20), None);
        assert_eq!(from_name("BOGUS"), None);
    }

    #[test]
    fn classes() {
        assert!(is_disabled(OP_CAT) && !is_disabled(OP_ADD));
        assert!(is_op_success(OP_RESERVED) && is_op_success(0xfe) && !is_op_success(0xff));
        assert!(!is_op_success(OP_CHECKSIGADD) && is_op_success(OP_CAT));
        assert_eq!(small_integer_value(OP_16), Some(16));
        assert_eq!(small_integer_opcode(3), Some(OP_3));
    }
}
