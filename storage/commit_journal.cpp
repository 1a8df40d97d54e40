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
#include "storage/row_changes.h"
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
// A segment of the ring of a journal `bytes` long; the ring ends after the
// last whole one.
constexpr uint64_t segmentBytesOf(uint64_t bytes) {
  return (bytes - kHeaderBytes) / CommitJournal::kSegments / 8 * 8;
}
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
  // Its name on disk too: once, at the first start.
  auto folder = FileSystemFlush::open(path.parent_path());
  if (!folder) return folder.error();
  return folder.value()->flush();
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
  uint64_t nextLsn = header->cleanLsn;
  if (!header->closed) {
    void* mapped = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) return fail(journalError("cannot read " + path.string(), errno));
    std::vector<Found> found =
        readRecords(static_cast<unsigned char*>(mapped),
                    kHeaderBytes + segmentBytesOf(bytes) * kSegments, nextLsn);
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
      segmentBytes_(segmentBytesOf(bytes)),
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
    if (it->second < folderFlushedAt_ ||
        (flushed != flushedAt_.end() && flushed->second > it->second)) {
      it = files.erase(it);
    } else {
      due.push_back(it->first);
      ++it;
    }
  }
  cleaning_[segment] = true;
  const uint64_t startedAt = nextLsn_;
  const bool wholeFolder = due.size() > kFlushedAlone;
  // Out of the lock while flushing: appends to other segments go on.
  mutex_.unlock();
  std::vector<bool> flushed(due.size(), wholeFolder && flushFolder().ok());
  for (size_t i = 0; !wholeFolder && i < due.size(); ++i) flushed[i] = flushFile(due[i]).ok();
  mutex_.lock();
  if (wholeFolder && flushed[0]) {
    ++counts_.folderFlushes;
    folderFlushedAt_ = std::max(folderFlushedAt_, startedAt);
  }
  for (size_t i = 0; i < due.size(); ++i) {
    if (!flushed[i]) continue;
    if (!wholeFolder) {
      ++counts_.fileFlushes;
      uint64_t& at = flushedAt_[due[i]];
      at = std::max(at, startedAt);
    }
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

Result<void> CommitJournal::flushFolder() const {
  auto flush = FileSystemFlush::open(folder_);
  if (!flush) return flush.error();
  return flush.value()->flush();
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
  if (auto flushed = flushFolder(); !flushed) return flushed;
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

void useCommitJournal(CommitJournal* journal) { CommitThreads::shared().journalTogether(journal); }

}  // namespace webhooker::storage
