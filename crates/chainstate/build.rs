//! Builds `cpp/table_writer.cc` against the RocksDB headers of the
//! `librocksdb-sys` crate that links RocksDB (its `DEP_ROCKSDB_*` metadata),
//! with the same C++ standard, so both see one layout of RocksDB's types.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=cpp/table_writer.cc");
    println!("cargo:rerun-if-env-changed=ROCKSDB_CXX_STD");
    let Ok(rocksdb_crate) = std::env::var("DEP_ROCKSDB_CARGO_MANIFEST_DIR") else {
        // Cargo shows this and stops the build.
        println!(
            "cargo::error=librocksdb-sys did not say where its sources are \
             (DEP_ROCKSDB_CARGO_MANIFEST_DIR)"
        );
        return;
    };
    let include = PathBuf::from(rocksdb_crate).join("rocksdb").join("include");
    let standard = std::env::var("ROCKSDB_CXX_STD").unwrap_or_else(|_| "-std=c++17".to_owned());
    let standard =
        if standard.starts_with("-std=") { standard } else { format!("-std={standard}") };
    cc::Build::new()
        .cpp(true)
        .flag(&standard)
        .define("NDEBUG", Some("1"))
        .define("ROCKSDB_PLATFORM_POSIX", None)
        .define("ROCKSDB_LIB_IO_POSIX", None)
        .define("OS_LINUX", None)
        .include(include)
        .file("cpp/table_writer.cc")
        .compile("ibex_table_writer");
}
