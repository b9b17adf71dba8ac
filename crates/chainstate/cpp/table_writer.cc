// A RocksDB table writer that leaves the page cache alone.
//
// RocksDB's `SstFileWriter` drops every table it writes from the page cache
// (`posix_fadvise(POSIX_FADV_DONTNEED)`, its `invalidate_page_cache`), and
// RocksDB's C API always asks for that. The coins database ingests each
// background flush as a table whose young coins are read again within
// seconds, so here the writer is made with `invalidate_page_cache = false`.
// Measured on the `utxo-heavy` chain (docs/utxo-heavy.md, session 15):
// with the C API's writer an import read 1.5 GB more from the disk.
//
// Every function catches C++ exceptions: none may cross into Rust.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"

struct ibex_table_writer {
  std::unique_ptr<rocksdb::SstFileWriter> writer;
};

namespace {

char* copy_message(const char* message) {
  std::size_t length = std::strlen(message);
  char* copy = static_cast<char*>(std::malloc(length + 1));
  if (copy != nullptr) {
    std::memcpy(copy, message, length + 1);
  }
  return copy;
}

// Stores `status`'s message in `*error` (freed by ibex_table_writer_free_error)
// and returns 0, or returns 1 when it is OK.
int report(const rocksdb::Status& status, char** error) {
  if (status.ok()) {
    return 1;
  }
  *error = copy_message(status.ToString().c_str());
  return 0;
}

}  // namespace

extern "C" {

// Opens a writer of a table at `path` with the coins database's table
// format: bloom filters of `bloom_bits_per_key` (whole keys when
// `whole_key_filtering`, and fixed prefixes of `prefix_bytes`; none at 0
// bits), no compression. With `direct_writes`, the file is written with O_DIRECT,
// past the page cache (refused where the file system cannot). Null with
// `*error` set on failure.
ibex_table_writer* ibex_table_writer_open(const char* path, std::size_t path_bytes,
                                          double bloom_bits_per_key,
                                          int whole_key_filtering,
                                          std::size_t prefix_bytes, int direct_writes,
                                          char** error) {
  try {
    rocksdb::BlockBasedTableOptions table;
    // No bits a key: a table without filters (one of the last level).
    if (bloom_bits_per_key > 0) {
      table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(bloom_bits_per_key));
    }
    table.whole_key_filtering = whole_key_filtering != 0;
    table.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinarySearch;
    rocksdb::Options options;
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    options.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(prefix_bytes));
    options.compression = rocksdb::kNoCompression;
    auto handle = std::make_unique<ibex_table_writer>();
    rocksdb::EnvOptions env_options;
    env_options.use_direct_writes = direct_writes != 0;
    handle->writer = std::make_unique<rocksdb::SstFileWriter>(
        env_options, options, nullptr, /*invalidate_page_cache=*/false);
    if (!report(handle->writer->Open(std::string(path, path_bytes)), error)) {
      return nullptr;
    }
    return handle.release();
  } catch (const std::exception& exception) {
    *error = copy_message(exception.what());
  } catch (...) {
    *error = copy_message("unknown C++ exception opening a table writer");
  }
  return nullptr;
}

// Adds `key` -> `value`; keys must come in increasing order. 1 on success.
int ibex_table_writer_put(ibex_table_writer* handle, const char* key, std::size_t key_bytes,
                          const char* value, std::size_t value_bytes, char** error) {
  try {
    return report(handle->writer->Put(rocksdb::Slice(key, key_bytes),
                                      rocksdb::Slice(value, value_bytes)),
                  error);
  } catch (...) {
    *error = copy_message("C++ exception adding to a table");
  }
  return 0;
}

// Adds an erasure of `key`, in the same order as puts. 1 on success.
int ibex_table_writer_delete(ibex_table_writer* handle, const char* key, std::size_t key_bytes,
                             char** error) {
  try {
    return report(handle->writer->Delete(rocksdb::Slice(key, key_bytes)), error);
  } catch (...) {
    *error = copy_message("C++ exception adding to a table");
  }
  return 0;
}

// Writes the table's index, filter and footer and syncs the file. The
// table's size in bytes goes to `*file_bytes`. 1 on success.
int ibex_table_writer_finish(ibex_table_writer* handle, std::uint64_t* file_bytes,
                             char** error) {
  try {
    rocksdb::ExternalSstFileInfo info;
    int ok = report(handle->writer->Finish(&info), error);
    *file_bytes = info.file_size;
    return ok;
  } catch (...) {
    *error = copy_message("C++ exception finishing a table");
  }
  return 0;
}

// Frees a writer (a table not finished is left unfinished).
void ibex_table_writer_destroy(ibex_table_writer* handle) {
  try {
    delete handle;
  } catch (...) {
  }
}

// Frees a message stored in an `error` argument.
void ibex_table_writer_free_error(char* error) { std::free(error); }

}  // extern "C"
