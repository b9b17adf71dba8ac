//! `ibex gen`: realistic, valid regtest chains, made fast and byte for byte
//! reproducible from a seed.
//!
//! The pipeline per block: [`planner`] picks coins from the [`wallet`] and
//! shapes unsigned transactions (payments, batch payouts, consolidations,
//! OP_RETURN, lock times); [`signer`] signs them on all cores (with the
//! seeded [`nonce_pool`]);
//! [`block_builder`] adds the coinbase (BIP34 height, subsidy plus fees,
//! witness commitment) and grinds the regtest proof of work; [`output`]
//! writes Core-format block files. [`signet`] writes custom signet chains
//! whose blocks carry real BIP325 solutions (and the ways they can be wrong). [`invalid`] and [`forks`] append blocks
//! broken in one documented way and competing branches. [`replay`]
//! re-validates generated files with the consensus and script crates, and
//! the `kernel-oracle` feature's tests hand them to Bitcoin Core's own
//! validation (libbitcoinkernel).

pub mod aged_coins;
pub mod block_budget;
pub mod block_builder;
pub mod chain;
pub mod cli;
pub mod coin;
pub mod error;
pub mod forks;
pub mod generate;
pub mod invalid;
pub mod invalid_class;
pub mod keys;
pub mod locks;
pub mod manifest;
pub mod named_counts;
pub mod nonce_pool;
pub mod options;
pub mod output;
pub mod planner;
pub mod random;
pub mod regtest;
pub mod replay;
pub mod script_kind;
pub mod siblings;
pub mod signer;
pub mod signet;
pub mod signet_grind;
pub mod spend_age;
pub mod statistics;
pub mod utxo_heavy;
pub mod utxo_heavy_mix;
pub mod wallet;

pub use error::GeneratorError;
pub use generate::{generate, GenerationReport};
pub use manifest::Manifest;
pub use options::{GeneratorOptions, Profile};
