#include "storage/row_changes.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace webhooker::storage {

namespace {

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

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

}  // namespace

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

RowWriter::RowWriter(SQLite::Database& db) : db_(db) {}

RowWriter::~RowWriter() = default;

void RowWriter::apply(std::string_view changes) {
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

const RowWriter::Table& RowWriter::tableOf(const std::string& name) {
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

SQLite::Statement& RowWriter::statement(uint8_t kind, const std::string& name,
                                        uint16_t columns) {
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

}  // namespace webhooker::storage
