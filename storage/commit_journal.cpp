#include "storage/commit_journal.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "base/error_codes.h"
#include "base/thread_name.h"
#include "storage/commit_threads.h"
#include "storage/file_system_flush.h"
#include "storage/statement_cache.h"

namespace webhooker::storage {

namespace {

// The file: a header block, then the ring of records.
constexpr uint64_t kHeaderBytes = 4096;
constexpr std::string_view kHeaderMagic = "WHJRNL01";
// A record: this head, the file's name, its changes, zeros to a multiple
// of 8. The CRC covers everything after itself.
constexpr uint32_t kRecordMagic = 0x4345524a;  // "JREC"
struct RecordHead {
  uint32_t magic;
  uint32_t crc;
  uint64_t lsn;
  int64_t position;
  uint32_t changesBytes;
  uint16_t nameBytes;
  uint16_t zero;
};
static_assert(sizeof(RecordHead) == 32);
constexpr size_t kCrcFrom = offsetof(RecordHead, lsn);

constexpr uint64_t alignedSize(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }
uint64_t recordSize(const CommitJournal::Record& r) {
  return alignedSize(sizeof(RecordHead) + r.file.size() + r.changes.size());
}

#if defined(__x86_64__)
// The CPU's CRC-32C instruction: a round's records are checked as they
// are written, ~8 KB an event.
__attribute__((target("sse4.2"))) uint32_t crc32cByCpu(const unsigned char* data, size_t size) {
  uint64_t crc = ~uint32_t{0};
  for (; size >= 8; data += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  auto narrow = static_cast<uint32_t>(crc);
  for (; size > 0; ++data, --size) narrow = __builtin_ia32_crc32qi(narrow, *data);
  return ~narrow;
}
#endif

// CRC-32C (Castagnoli): by the CPU where it can, else a byte at a time.
uint32_t crc32c(const unsigned char* data, size_t size) {
#if defined(__x86_64__)
  static const bool byCpu = __builtin_cpu_supports("sse4.2");
  if (byCpu) return crc32cByCpu(data, size);
#endif
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82f63b78 ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = ~uint32_t{0};
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

Error journalError(const std::string& what, int err) {
  return makeError(err == ENOSPC ? error_code::kStorageUnavailable : error_code::kStorageError,
                   "commit journal: " + what + ": " + std::strerror(err));
}

Result<void> writeAll(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return journalError("write failed", errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

// The header: magic, size, the first LSN not known to be in its file,
// whether the journal was closed (nothing to replay), CRC of the rest.
struct Header {
  uint64_t bytes = 0;
  uint64_t cleanLsn = 0;
  uint32_t closed = 0;
};
constexpr size_t kHeaderCrcAt = 28;

std::string headerBlock(const Header& h) {
  std::string block(kHeaderBytes, '\0');
  std::memcpy(block.data(), kHeaderMagic.data(), kHeaderMagic.size());
  std::memcpy(block.data() + 8, &h.bytes, 8);
  std::memcpy(block.data() + 16, &h.cleanLsn, 8);
  std::memcpy(block.data() + 24, &h.closed, 4);
  const uint32_t crc = crc32c(reinterpret_cast<const unsigned char*>(block.data()), kHeaderCrcAt);
  std::memcpy(block.data() + kHeaderCrcAt, &crc, 4);
  return block;
}

std::optional<Header> parseHeader(const std::string& block) {
  Header h;
  uint32_t crc = 0;
  std::memcpy(&h.bytes, block.data() + 8, 8);
  std::memcpy(&h.cleanLsn, block.data() + 16, 8);
  std::memcpy(&h.closed, block.data() + 24, 4);
  std::memcpy(&crc, block.data() + kHeaderCrcAt, 4);
  if (block.compare(0, kHeaderMagic.size(), kHeaderMagic) != 0 ||
      crc != crc32c(reinterpret_cast<const unsigned char*>(block.data()), kHeaderCrcAt))
    return std::nullopt;
  return h;
}

// Makes the journal whole under another name, then links it in: a crash
// while filling it leaves no journal, never a short one.
Result<void> makeJournal(const std::filesystem::path& path, uint64_t bytes) {
  const std::filesystem::path making = path.string() + ".making";
  const int fd = ::open(making.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return journalError("cannot make " + making.string(), errno);
  const std::string zeros(1 << 20, '\0');
  Result<void> made = writeAll(fd, headerBlock({bytes, 1, 1}).data(), kHeaderBytes, 0);
  for (uint64_t at = kHeaderBytes; made && at < bytes; at += zeros.size())
    made = writeAll(fd, zeros.data(), std::min<uint64_t>(zeros.size(), bytes - at), at);
  if (made && ::fdatasync(fd) != 0) made = journalError("flush failed", errno);
  ::close(fd);
  if (made && ::rename(making.c_str(), path.c_str()) != 0)
    made = journalError("link failed", errno);
  if (!made) {
    ::unlink(making.c_str());
    return made;
  }
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return journalError("cannot open its folder", errno);
  const int synced = ::fsync(dir);
  const int err = errno;
  ::close(dir);
  if (synced != 0) return journalError("folder flush failed", err);
  return {};
}

struct Found {
  uint64_t lsn;
  CommitJournal::Record record;
};

// Every intact record of the ring at or past `cleanLsn`, in LSN order. A
// stretch that is no record (the tail of a torn write, a lap's leftovers
// cut by the next) is stepped over 8 bytes at a time. The pages read are
// given back as it goes: the ring is not the daemon's memory.
std::vector<Found> readRecords(unsigned char* file, uint64_t ringEnd, uint64_t cleanLsn) {
  constexpr uint64_t kGiveBack = 1 << 20;
  std::vector<Found> found;
  uint64_t at = kHeaderBytes;
  uint64_t kept = 0;  // pages from here on may still be read
  while (at + sizeof(RecordHead) <= ringEnd) {
    if (at - kept >= 2 * kGiveBack) {
      ::madvise(file + kept, kGiveBack, MADV_DONTNEED);
      kept += kGiveBack;
    }
    RecordHead head;
    std::memcpy(&head, file + at, sizeof head);
    const uint64_t size = alignedSize(sizeof head + head.nameBytes + head.changesBytes);
    if (head.magic != kRecordMagic || head.zero != 0 || size > ringEnd - at ||
        crc32c(file + at + kCrcFrom, sizeof head - kCrcFrom + head.nameBytes + head.changesBytes) !=
            head.crc) {
      at += 8;
      continue;
    }
    if (head.lsn >= cleanLsn) {
      const char* name = reinterpret_cast<const char*>(file + at + sizeof head);
      found.push_back({head.lsn,
                       {std::string(name, head.nameBytes), head.position,
                        std::string(name + head.nameBytes, head.changesBytes)}});
    }
    at += size;
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.lsn < b.lsn; });
  return found;
}

// Gives each file its records, in the order of its first one; flushes the
// folder's file system after (what replay wrote, and every WAL a crash
// left unflushed), so that none of them is needed again.
Result<void> replayRecords(const std::filesystem::path& folder, std::vector<Found> found,
                           const CommitJournal::Replay& replay) {
  if (found.empty()) return {};
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<CommitJournal::Record>> byFile;
  for (Found& f : found) {
    if (f.record.file.find('/') != std::string::npos || f.record.file.starts_with('.'))
      return makeError(error_code::kStorageError,
                       "commit journal: a record names a file outside its folder");
    auto& records = byFile[f.record.file];
    if (records.empty()) order.push_back(f.record.file);
    records.push_back(std::move(f.record));
  }
  for (const std::string& file : order)
    if (auto replayed = replay(file, byFile[file]); !replayed) return replayed.error();
  auto flush = FileSystemFlush::open(folder);
  if (!flush) return flush.error();
  return flush.value()->flush();
}

// ChangeRecorder's changes, one after another: the kind, the table's name
// (a byte of length), the number of values (2 bytes), then each value: its
// SQLite type (a byte), an integer or a real in 8 bytes, a text or a blob
// as 4 bytes of length and its bytes.
constexpr uint8_t kWriteRow = 'W';   // inserted or updated: its values now
constexpr uint8_t kDeleteRow = 'D';  // deleted: its values before

template <typename T>
void appendBytes(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void appendValue(std::string& out, sqlite3_value* value) {
  const int type = value ? sqlite3_value_type(value) : SQLITE_NULL;
  out.push_back(static_cast<char>(type));
  switch (type) {
    case SQLITE_INTEGER:
      appendBytes(out, static_cast<int64_t>(sqlite3_value_int64(value)));
      break;
    case SQLITE_FLOAT:
      appendBytes(out, sqlite3_value_double(value));
      break;
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
      const void* data = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(value))
                                             : sqlite3_value_blob(value);
      const auto size = static_cast<uint32_t>(sqlite3_value_bytes(value));
      appendBytes(out, size);
      out.append(static_cast<const char*>(data), size);
      break;
    }
    default:
      break;
  }
}

// Reads ChangeRecorder's changes back; throws on a short or unknown one.
class ChangeReader {
 public:
  explicit ChangeReader(std::string_view changes) : rest_(changes) {}
  bool done() const { return rest_.empty(); }
  uint8_t byte() { return take<uint8_t>(); }
  template <typename T>
  T take() {
    T value;
    std::memcpy(&value, bytes(sizeof value).data(), sizeof value);
    return value;
  }
  std::string_view bytes(size_t size) {
    if (size > rest_.size()) throw std::runtime_error("a journal record ends early");
    const std::string_view taken = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return taken;
  }
  // Steps over the next value.
  void skipValue() {
    const uint8_t type = byte();
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
      bytes(8);
    else if (type == SQLITE_TEXT || type == SQLITE_BLOB)
      bytes(take<uint32_t>());
  }
  // Binds the next value to `q`'s parameter `index`.
  void bindValue(SQLite::Statement& q, int index) {
    switch (byte()) {
      case SQLITE_INTEGER:
        return q.bind(index, take<int64_t>());
      case SQLITE_FLOAT:
        return q.bind(index, take<double>());
      case SQLITE_TEXT:
        return q.bind(index, std::string(bytes(take<uint32_t>())));
      case SQLITE_BLOB: {
        const std::string_view blob = bytes(take<uint32_t>());
        return q.bindNoCopy(index, static_cast<const void*>(blob.data()),
                            static_cast<int>(blob.size()));
      }
      case SQLITE_NULL:
        return q.bind(index);
      default:
        throw std::runtime_error("a journal record holds an unknown value");
    }
  }

 private:
  std::string_view rest_;
};

// Replay's writes: each recorded row written again (an upsert on the
// table's key with all its recorded values) or deleted by its key.
class RowWriter {
 public:
  explicit RowWriter(SQLite::Database& db) : db_(db) {}

  void apply(std::string_view changes) {
    ChangeReader in(changes);
    while (!in.done()) {
      const uint8_t kind = in.byte();
      const std::string table(in.bytes(in.byte()));
      const auto columns = in.take<uint16_t>();
      SQLite::Statement& q = statement(kind, table, columns);
      q.reset();
      q.clearBindings();
      if (kind == kWriteRow) {
        for (int i = 0; i < columns; ++i) in.bindValue(q, i + 1);
      } else {
        // Only the key's values are bound, in the key's order.
        const Table& t = tableOf(table);
        std::vector<int> slot(columns, 0);
        for (size_t k = 0; k < t.key.size(); ++k) slot.at(t.key[k]) = static_cast<int>(k) + 1;
        for (int i = 0; i < columns; ++i) {
          if (slot[i])
            in.bindValue(q, slot[i]);
          else
            in.skipValue();
        }
      }
      q.exec();
    }
  }

 private:
  struct Table {
    std::vector<std::string> columns;
    std::vector<size_t> key;  // column indexes, in the key's order
  };
  const Table& tableOf(const std::string& name) {
    auto [it, added] = tables_.try_emplace(name);
    if (!added) return it->second;
    SQLite::Statement info(db_, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid");
    info.bind(1, name);
    std::vector<std::pair<int, size_t>> key;
    while (info.executeStep()) {
      if (const int pk = info.getColumn(1).getInt(); pk > 0)
        key.emplace_back(pk, it->second.columns.size());
      it->second.columns.push_back(info.getColumn(0).getString());
    }
    std::sort(key.begin(), key.end());
    for (const auto& k : key) it->second.key.push_back(k.second);
    if (it->second.columns.empty() || it->second.key.empty())
      throw std::runtime_error("table " + name + " has no key to replay by");
    return it->second;
  }
  static std::string quoted(const std::string& name) { return "\"" + name + "\""; }
  SQLite::Statement& statement(uint8_t kind, const std::string& name, uint16_t columns) {
    const std::string id =
        std::string(1, static_cast<char>(kind)) + name + "/" + std::to_string(columns);
    auto& q = statements_[id];
    if (q) return *q;
    const Table& t = tableOf(name);
    if (columns > t.columns.size() || *std::max_element(t.key.begin(), t.key.end()) >= columns)
      throw std::runtime_error("a journal record does not fit table " + name);
    std::string sql;
    if (kind == kWriteRow) {
      std::string names, params, keys, sets;
      for (size_t i = 0; i < columns; ++i) {
        names += (i ? ", " : "") + quoted(t.columns[i]);
        params += i ? ", ?" : "?";
        const bool isKey = std::find(t.key.begin(), t.key.end(), i) != t.key.end();
        if (!isKey)
          sets += (sets.empty() ? "" : ", ") + quoted(t.columns[i]) + " = excluded." +
                  quoted(t.columns[i]);
      }
      for (size_t k : t.key) keys += (keys.empty() ? "" : ", ") + quoted(t.columns[k]);
      sql = "INSERT INTO " + quoted(name) + " (" + names + ") VALUES (" + params +
            ") ON CONFLICT (" + keys + ") DO " + (sets.empty() ? "NOTHING" : "UPDATE SET " + sets);
    } else if (kind == kDeleteRow) {
      std::string where;
      for (size_t k : t.key)
        where += (where.empty() ? "" : " AND ") + quoted(t.columns[k]) + " = ?";
      sql = "DELETE FROM " + quoted(name) + " WHERE " + where;
    } else {
      throw std::runtime_error("a journal record holds an unknown change");
    }
    q = std::make_unique<SQLite::Statement>(db_, sql);
    return *q;
  }

  SQLite::Database& db_;
  std::unordered_map<std::string, Table> tables_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> statements_;
};

}  // namespace

Result<std::unique_ptr<CommitJournal>> CommitJournal::open(const std::filesystem::path& path,
                                                           uint64_t bytes, const Replay& replay) {
  if (bytes < kMinBytes)
    return makeError(error_code::kInvalidArgument, "commit journal: " + std::to_string(bytes) +
                                                       " bytes is smaller than the least, " +
                                                       std::to_string(kMinBytes));
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    if (auto made = makeJournal(path, bytes); !made) return made.error();
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return journalError("cannot open " + path.string(), errno);
  const auto fail = [fd](Error e) -> Result<std::unique_ptr<CommitJournal>> {
    ::close(fd);
    return e;
  };
  std::string block(kHeaderBytes, '\0');
  if (::pread(fd, block.data(), kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes))
    return fail(journalError("cannot read " + path.string(), errno));
  const std::optional<Header> header = parseHeader(block);
  struct stat st {};
  if (!header || ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != header->bytes ||
      header->bytes < kMinBytes)
    return fail(makeError(error_code::kStorageError,
                          "commit journal: " + path.string() +
                              " is not a whole journal; move it aside to start without the "
                              "commits it may hold"));
  bytes = header->bytes;
  const uint64_t segmentBytes = (bytes - kHeaderBytes) / kSegments / 8 * 8;
  uint64_t nextLsn = header->cleanLsn;
  if (!header->closed) {
    void* mapped = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) return fail(journalError("cannot read " + path.string(), errno));
    std::vector<Found> found = readRecords(static_cast<unsigned char*>(mapped),
                                           kHeaderBytes + segmentBytes * kSegments, nextLsn);
    ::munmap(mapped, bytes);
    if (!found.empty()) nextLsn = found.back().lsn + 1;
    if (auto replayed = replayRecords(path.parent_path(), std::move(found), replay); !replayed)
      return fail(replayed.error());
  }
  std::unique_ptr<CommitJournal> journal(new CommitJournal(fd, path.parent_path(), bytes, nextLsn));
  // In use from now on: the next open replays what is written after this.
  if (auto written = journal->writeHeader(nextLsn, false); !written) return written.error();
  return journal;
}

CommitJournal::CommitJournal(int fd, std::filesystem::path folder, uint64_t bytes, uint64_t nextLsn)
    : fd_(fd),
      folder_(std::move(folder)),
      bytes_(bytes),
      segmentBytes_((bytes - kHeaderBytes) / kSegments / 8 * 8),
      head_(kHeaderBytes),
      nextLsn_(nextLsn),
      segments_(kSegments),
      cleaning_(kSegments, false),
      cleaner_([this] { cleanAhead(); }) {}

CommitJournal::~CommitJournal() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  cleaner_.join();
  ::close(fd_);
}

size_t CommitJournal::segmentOf(uint64_t offset) const {
  return std::min<size_t>((offset - kHeaderBytes) / segmentBytes_, kSegments - 1);
}

Result<void> CommitJournal::append(const std::vector<const Record*>& records) {
  if (records.empty()) return {};
  uint64_t total = 0;
  for (const Record* r : records) total += recordSize(*r);
  if (total > segmentBytes_)
    return makeError(error_code::kStorageError, "commit journal: a round of " +
                                                    std::to_string(total) +
                                                    " bytes is larger than a segment of the ring");
  std::string block(total, '\0');
  uint64_t at = 0;
  {
    MutexLock lock(mutex_);
    // Entering a segment: what it holds of the last lap must be in its
    // files first (cleaning steps out of the lock, so the head is read
    // again after); the cleaner then starts on the segments after it.
    const auto entering = [&](size_t s)
                              REQUIRES(mutex_) { return s != segmentOf(head_) || at < head_; };
    for (bool clean = false; !clean;) {
      at = head_;
      if (at + total > kHeaderBytes + segmentBytes_ * kSegments) at = kHeaderBytes;
      clean = true;
      for (size_t s = segmentOf(at); clean && s <= segmentOf(at + total - 1); ++s) {
        if (!entering(s) || (segments_[s].empty() && !cleaning_[s])) continue;
        if (!cleanSegment(s, lock))
          return makeError(error_code::kStorageError,
                           "commit journal: a file whose commits the ring holds cannot be flushed");
        clean = false;
      }
    }
    for (size_t s = segmentOf(at); s <= segmentOf(at + total - 1); ++s) {
      if (!entering(s)) continue;
      wantClean_ = (s + 1) % kSegments;
      changed_.notify_all();
    }
    uint64_t offset = 0;
    for (const Record* r : records) {
      RecordHead head{kRecordMagic,
                      0,
                      nextLsn_++,
                      r->position,
                      static_cast<uint32_t>(r->changes.size()),
                      static_cast<uint16_t>(r->file.size()),
                      0};
      segments_[segmentOf(at + offset)][r->file] = head.lsn;
      char* out = block.data() + offset;
      std::memcpy(out, &head, sizeof head);
      std::memcpy(out + sizeof head, r->file.data(), r->file.size());
      std::memcpy(out + sizeof head + r->file.size(), r->changes.data(), r->changes.size());
      head.crc = crc32c(reinterpret_cast<const unsigned char*>(out) + kCrcFrom,
                        sizeof head - kCrcFrom + r->file.size() + r->changes.size());
      std::memcpy(out + offsetof(RecordHead, crc), &head.crc, sizeof head.crc);
      offset += recordSize(*r);
    }
    head_ = at + total;
  }
  if (auto written = writeAll(fd_, block.data(), total, at); !written) return written;
  if (::fdatasync(fd_) != 0) return journalError("flush failed", errno);
  MutexLock lock(mutex_);
  ++counts_.appends;
  return {};
}

bool CommitJournal::cleanSegment(size_t segment, MutexLock& lock) {
  changed_.wait(lock, [&]() REQUIRES(mutex_) { return !cleaning_[segment]; });
  auto& files = segments_[segment];
  if (files.empty()) return true;
  // Files flushed since their last commit here need no flush again.
  std::vector<std::string> due;
  for (auto it = files.begin(); it != files.end();) {
    auto flushed = flushedAt_.find(it->first);
    if (flushed != flushedAt_.end() && flushed->second > it->second) {
      it = files.erase(it);
    } else {
      due.push_back(it->first);
      ++it;
    }
  }
  cleaning_[segment] = true;
  const uint64_t startedAt = nextLsn_;
  // Out of the lock while flushing: appends to other segments go on.
  mutex_.unlock();
  std::vector<bool> flushed(due.size());
  for (size_t i = 0; i < due.size(); ++i) flushed[i] = flushFile(due[i]).ok();
  mutex_.lock();
  for (size_t i = 0; i < due.size(); ++i) {
    if (!flushed[i]) continue;
    ++counts_.fileFlushes;
    uint64_t& at = flushedAt_[due[i]];
    at = std::max(at, startedAt);
    if (files[due[i]] < startedAt) files.erase(due[i]);
  }
  cleaning_[segment] = false;
  changed_.notify_all();
  return files.empty();
}

void CommitJournal::cleanAhead() {
  nameThisThread("wh-journal");
  MutexLock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&]() REQUIRES(mutex_) { return stopping_ || wantClean_ < kSegments; });
    if (stopping_) return;
    const size_t first = wantClean_;
    wantClean_ = kSegments;
    // The next segment, then the one after: a file is flushed as late as
    // may be, once for all its commits up to then. A failure is left for
    // the head, which tries again and reports it.
    for (size_t k = 0; k < 2 && !stopping_; ++k) cleanSegment((first + k) % kSegments, lock);
  }
}

Result<void> CommitJournal::flushFile(const std::string& file) const {
  // SQLite writes a commit to the WAL; a checkpoint flushes the file itself
  // before the WAL is emptied or removed.
  const std::filesystem::path path = folder_ / file;
  int fd = ::open((path.string() + "-wal").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Result<void>{} : journalError("cannot open " + file, errno);
  const int synced = ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (synced != 0) return journalError("flush of " + file + " failed", err);
  return {};
}

Result<void> CommitJournal::writeHeader(uint64_t cleanLsn, bool closed) const {
  if (auto written =
          writeAll(fd_, headerBlock({bytes_, cleanLsn, closed ? 1u : 0u}).data(), kHeaderBytes, 0);
      !written)
    return written;
  if (::fdatasync(fd_) != 0) return journalError("flush failed", errno);
  return {};
}

Result<void> CommitJournal::close() {
  uint64_t cleanLsn = 0;
  {
    MutexLock lock(mutex_);
    cleanLsn = nextLsn_;
  }
  auto flush = FileSystemFlush::open(folder_);
  if (!flush) return flush.error();
  if (auto flushed = flush.value()->flush(); !flushed) return flushed;
  return writeHeader(cleanLsn, true);
}

CommitJournal::Counts CommitJournal::counts() const {
  MutexLock lock(mutex_);
  return counts_;
}

int64_t CommitJournal::advancePosition(StatementCache& statements) {
  auto q = statements.get("UPDATE journal_position SET position = position + 1 RETURNING position");
  if (!q->executeStep()) throw std::runtime_error("the file has no journal position");
  return q->getColumn(0).getInt64();
}

Result<void> CommitJournal::applyJournal(SQLite::Database& db, const std::vector<Record>& records) {
  try {
    SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t before = db.execAndGet("SELECT position FROM journal_position").getInt64();
    int64_t position = before;
    RowWriter rows(db);
    for (const Record& r : records) {
      if (r.position <= position) continue;
      rows.apply(r.changes);
      position = r.position;
    }
    if (position == before) return {};
    SQLite::Statement set(db, "UPDATE journal_position SET position = ?");
    set.bind(1, position);
    set.exec();
    txn.commit();
    return {};
  } catch (const std::exception& e) {
    return makeError(error_code::kStorageError,
                     std::string("commit journal: replay failed: ") + e.what());
  }
}

ChangeRecorder::ChangeRecorder(sqlite3* db) : db_(db) {
  sqlite3_preupdate_hook(db_, onChange, this);
}

ChangeRecorder::~ChangeRecorder() { sqlite3_preupdate_hook(db_, nullptr, nullptr); }

void ChangeRecorder::onChange(void* self, sqlite3* db, int op, const char* schema,
                              const char* table, long long, long long) {
  if (std::strcmp(schema, "main") != 0 || std::strcmp(table, "journal_position") == 0) return;
  std::string& out = static_cast<ChangeRecorder*>(self)->changes_;
  const bool removed = op == SQLITE_DELETE;
  const auto columns = static_cast<uint16_t>(sqlite3_preupdate_count(db));
  const auto tableBytes = static_cast<uint8_t>(std::strlen(table));
  out.push_back(static_cast<char>(removed ? kDeleteRow : kWriteRow));
  out.push_back(static_cast<char>(tableBytes));
  out.append(table, tableBytes);
  appendBytes(out, columns);
  for (int i = 0; i < columns; ++i) {
    sqlite3_value* value = nullptr;
    if ((removed ? sqlite3_preupdate_old : sqlite3_preupdate_new)(db, i, &value) != SQLITE_OK)
      value = nullptr;
    appendValue(out, value);
  }
}

void useCommitJournal(CommitJournal* journal) { CommitThreads::shared().journalTogether(journal); }

}  // namespace webhooker::storage
