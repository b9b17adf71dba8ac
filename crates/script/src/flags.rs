//! Script verification flags, with Bitcoin Core's bit values (`SCRIPT_VERIFY_*`).

/// A set of script verification flags. Bit values equal Core's, so flag sets can
/// be passed to Core's library (the differential tests do) unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VerifyFlags(pub u32);

macro_rules! flags {
    ($($(#[$doc:meta])* $name:ident = $bit:expr, $text:literal;)*) => {
        impl VerifyFlags {
            $($(#[$doc])* pub const $name: VerifyFlags = VerifyFlags(1 << $bit);)*

            /// Every flag with its name as Core's test vectors spell it.
            pub const NAMED: &'static [(&'static str, VerifyFlags)] = &[$(($text, VerifyFlags::$name)),*];
        }
    };
}

flags! {
    /// BIP16 pay-to-script-hash.
    P2SH = 0, "P2SH";
    /// Strict signature and public key encodings (policy).
    STRICTENC = 1, "STRICTENC";
    /// BIP66 strict DER signatures.
    DERSIG = 2, "DERSIG";
    /// Low S values (policy).
    LOW_S = 3, "LOW_S";
    /// BIP147 empty CHECKMULTISIG dummy.
    NULLDUMMY = 4, "NULLDUMMY";
    /// scriptSig only pushes (policy).
    SIGPUSHONLY = 5, "SIGPUSHONLY";
    /// Minimal pushes and numbers (policy).
    MINIMALDATA = 6, "MINIMALDATA";
    /// Fail on upgradable NOPs (policy).
    DISCOURAGE_UPGRADABLE_NOPS = 7, "DISCOURAGE_UPGRADABLE_NOPS";
    /// Exactly one stack item left (policy).
    CLEANSTACK = 8, "CLEANSTACK";
    /// BIP65 OP_CHECKLOCKTIMEVERIFY.
    CHECKLOCKTIMEVERIFY = 9, "CHECKLOCKTIMEVERIFY";
    /// BIP112 OP_CHECKSEQUENCEVERIFY.
    CHECKSEQUENCEVERIFY = 10, "CHECKSEQUENCEVERIFY";
    /// BIP141 segregated witness.
    WITNESS = 11, "WITNESS";
    /// Fail on unknown witness versions (policy).
    DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM = 12, "DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM";
    /// Minimal OP_IF arguments in segwit v0 (policy).
    MINIMALIF = 13, "MINIMALIF";
    /// Failed signature checks must have empty signatures (policy).
    NULLFAIL = 14, "NULLFAIL";
    /// Compressed keys only in segwit v0 (policy).
    WITNESS_PUBKEYTYPE = 15, "WITNESS_PUBKEYTYPE";
    /// No OP_CODESEPARATOR or FindAndDelete in legacy scripts (policy).
    CONST_SCRIPTCODE = 16, "CONST_SCRIPTCODE";
    /// BIP341/342 taproot.
    TAPROOT = 17, "TAPROOT";
    /// Fail on unknown taproot leaf versions (policy).
    DISCOURAGE_UPGRADABLE_TAPROOT_VERSION = 18, "DISCOURAGE_UPGRADABLE_TAPROOT_VERSION";
    /// Fail on OP_SUCCESSx (policy).
    DISCOURAGE_OP_SUCCESS = 19, "DISCOURAGE_OP_SUCCESS";
    /// Fail on unknown tapscript public key types (policy).
    DISCOURAGE_UPGRADABLE_PUBKEYTYPE = 20, "DISCOURAGE_UPGRADABLE_PUBKEYTYPE";
}

impl VerifyFlags {
    /// No flags.
    pub const NONE: VerifyFlags = VerifyFlags(0);

    /// Every consensus flag: what a block after taproot activation is checked
    /// with (Core's `GetBlockScriptFlags` at the tip, libbitcoinkernel's
    /// `btck_ScriptVerificationFlags_ALL`).
    pub const CONSENSUS: VerifyFlags = VerifyFlags(
        VerifyFlags::P2SH.0
            | VerifyFlags::DERSIG.0
            | VerifyFlags::NULLDUMMY.0
            | VerifyFlags::CHECKLOCKTIMEVERIFY.0
            | VerifyFlags::CHECKSEQUENCEVERIFY.0
            | VerifyFlags::WITNESS.0
            | VerifyFlags::TAPROOT.0,
    );

    /// Whether every flag in `other` is set.
    #[inline]
    pub const fn contains(self, other: VerifyFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union.
    #[inline]
    pub const fn union(self, other: VerifyFlags) -> VerifyFlags {
        VerifyFlags(self.0 | other.0)
    }

    /// Parses Core's comma-separated flag list (`"P2SH,STRICTENC"`; `""` and
    /// `"NONE"` are no flags). Returns the unknown name on failure.
    pub fn parse(text: &str) -> Result<VerifyFlags, String> {
        let mut flags = VerifyFlags::NONE;
        for name in text.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            if name == "NONE" {
                continue;
            }
            match VerifyFlags::NAMED.iter().find(|(known, _)| *known == name) {
                Some((_, flag)) => flags = flags.union(*flag),
                None => return Err(name.to_string()),
            }
        }
        Ok(flags)
    }
}

impl std::ops::BitOr for VerifyFlags {
    type Output = VerifyFlags;
    fn bitor(self, other: VerifyFlags) -> VerifyFlags {
        self.union(other)
    }
}

impl std::ops::BitOrAssign for VerifyFlags {
    fn bitor_assign(&mut self, other: VerifyFlags) {
        *self = self.union(other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names() {
        let flags = VerifyFlags::parse("P2SH,WITNESS").unwrap();
        assert_eq!(flags, VerifyFlags::P2SH | VerifyFlags::WITNESS);
        assert_eq!(flags.0, 1 | (1 << 11));
        assert_eq!(VerifyFlags::parse("NONE"), Ok(VerifyFlags::NONE));
        assert_eq!(VerifyFlags::parse("BOGUS"), Err("BOGUS".to_string()));
    }
}
