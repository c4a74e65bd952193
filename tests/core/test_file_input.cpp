// Hostile files against the engine's readers and writers (issue 16's probes): safetensors
// headers, output files (special targets, full disk, stop signals), IDX headers and text
// corpora. Each case names the probe it stands for.
#include <QtTest>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/printable.h"
#include "core/common/shipped_file.h"
#include "core/common/stop_signal.h"
#include "core/config/config.h"
#include "core/data/idx_dataset.h"
#include "core/data/text_dataset.h"
#include "core/io/safetensors.h"
#include "tests/input_probes.h"

using namespace parascope;
using parascope::test::nested;
using parascope::test::userErrorOf;
using parascope::test::write;
namespace fs = std::filesystem;

namespace {

// A safetensors file with the given header text and `data` bytes after it.
void writeSafetensorsRaw(const fs::path& p, const std::string& header, std::size_t data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  write(p, bytes + header + std::string(data, '\0'));
}

std::size_t filesIn(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

class TestFileInput : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void safetensorsHeadersAreBounded();
  void outputsNeverReplaceSpecialFiles();
  void outputsLeaveNothingBehindOnFailure();
  void idxHeadersDoNotDriveAllocation();
  void textCorpusUnderProcIsAUserError();
  void shippedFilesAreFoundFromTheExecutable();
  void longTextIsPrintedByItsEnds();
  void utf8IsJudgedByRfc3629();

 private:
  fs::path dir_;
};

// A message quoting a path of thousands of characters stays one bounded line: its first and
// last halves around the size, never cut inside a UTF-8 character; controls still escaped.
void TestFileInput::longTextIsPrintedByItsEnds() {
  const std::string start = std::string(2047, 'a') + "\xc3\xa9";  // "é" across byte 2048
  const std::string end = "\xc3\xa9" + std::string(2047, 'z');
  const std::string middle(6000, 'm');
  const std::string text = start + middle + "\x1b" + end;
  QCOMPARE(printableText(text), std::string(2047, 'a') + " ... [" + std::to_string(text.size()) +
                                    " bytes] ... " + std::string(2047, 'z'));
  QCOMPARE(printableText("\x1b[2J" + std::string(5000, 'x'), 16),
           std::string("\\x1b[2Jxxxx ... [5004 bytes] ... xxxxxxxx"));
  QCOMPARE(printableText(std::string(4096, 'q')), std::string(4096, 'q'));
}

// What JSON output can carry: well-formed UTF-8 only (RFC 3629).
void TestFileInput::utf8IsJudgedByRfc3629() {
  for (const char* good :
       {"", "plain", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    QVERIFY2(isValidUtf8(good), good);
  }
  for (const char* bad : {"\xff", "\x80", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "a\xc3("}) {
    QVERIFY2(!isValidUtf8(bad), bad);
  }
}

void TestFileInput::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-file-input-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
}

void TestFileInput::cleanupTestCase() {
  fs::remove_all(dir_);
}

// Probes 3 and minor: a shape nested 100k levels, duplicate names, overlapping offsets, a shape
// whose product overflows.
void TestFileInput::safetensorsHeadersAreBounded() {
  const fs::path f = dir_ / "w.safetensors";
  writeSafetensorsRaw(
      f, R"({"a": {"dtype": "F32", "shape": )" + nested(100000) + R"(, "data_offsets": [0, 4]}})",
      4);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) +
               ": header: nested deeper than 8 levels at 'a.shape[0][0][0][0][0][0]'");
  writeSafetensorsRaw(f,
                      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                      R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                      8);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) + ": header: duplicate key 'a'");
  writeSafetensorsRaw(f,
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                      R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                      12);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) +
               ": tensors 'a' and 'b' overlap in the data section (data_offsets [0, 8) and [4, "
               "12))");
  writeSafetensorsRaw(
      f, R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})",
      4);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) + ": tensor 'a' is too large");
  bool refused = false;
  try {
    shapeNumel({std::int64_t{1} << 32, std::int64_t{1} << 32});
  } catch (const std::length_error&) {
    refused = true;
  }
  QVERIFY(refused);
}

// Probes 4 and 9: a device node, a directory, a FIFO, a symbolic link, a missing directory.
void TestFileInput::outputsNeverReplaceSpecialFiles() {
  const fs::path dir = dir_ / "special";
  fs::create_directories(dir);
  QCOMPARE(userErrorOf([] { checkOutputPath("/dev/null", "--trace"); }),
           QString("--trace '/dev/null': is a device, FIFO or socket, not a regular file; name a "
                   "regular file"));
  QCOMPARE(
      userErrorOf([&] { checkOutputPath(dir_.string(), "-o"); }),
      "-o '" + QString::fromStdString(dir_.string()) + "': is a directory; name a file inside it");
  const fs::path fifo = dir / "out.fifo";
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  QVERIFY(userErrorOf([&] {
            OutputFile f(fifo.string(), "--out");
          }).endsWith("not a regular file; name a regular file"));
  QVERIFY(fs::is_fifo(fifo));
  fs::remove(fifo);
  write(dir / "target", "x");
  fs::create_symlink(dir / "target", dir / "link");
  QVERIFY(userErrorOf([&] {
            checkOutputPath((dir / "link").string(), "save_weights");
          }).endsWith("is a symbolic link; name the file it points to"));
  fs::remove(dir / "link");
  fs::remove(dir / "target");
  QCOMPARE(userErrorOf([&] {
             checkOutputPath((dir / "missing" / "w.safetensors").string(), "save_weights");
           }),
           "save_weights '" + QString::fromStdString((dir / "missing" / "w.safetensors").string()) +
               "': directory '" + QString::fromStdString((dir / "missing").string()) +
               "' does not exist; create it first");
  QCOMPARE(filesIn(dir), std::size_t{0});
}

// Probe 6: a full disk, a target that became a directory during the run, a stop signal.
void TestFileInput::outputsLeaveNothingBehindOnFailure() {
  const fs::path dir = dir_ / "failing";
  fs::create_directories(dir);
  const fs::path out = dir / "grads.safetensors";
  {
    // RLIMIT_FSIZE makes write() fail with EFBIG as a full disk fails with ENOSPC.
    signal(SIGXFSZ, SIG_IGN);
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = 4096;
    setrlimit(RLIMIT_FSIZE, &small);
    // The system's failure, not the user's: a runtime error (exit 1), not a UserError (exit 2).
    QString message = "(no error)";
    try {
      OutputFile f(out.string(), "--out");
      const std::string block(10000, 'x');
      f.write(block.data(), block.size());
      f.commit();
    } catch (const UserError& e) {
      message = QString("UserError: ") + e.what();
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    QCOMPARE(message,
             "--out '" + QString::fromStdString(out.string()) + "': write failed: File too large");
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    OutputFile f(out.string(), "--out");
    f.write("abc", 3);
    fs::create_directory(out);  // appears while the file is written
    QCOMPARE(userErrorOf([&] { f.commit(); }), "--out '" + QString::fromStdString(out.string()) +
                                                   "': is a directory; name a file inside it");
    fs::remove(out);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    bool interrupted = false;
    try {
      OutputFile f(out.string(), "--out");
      f.write("abc", 3);
      setPendingStopSignal(SIGTERM);
      f.write("def", 3);
    } catch (const Interrupted& e) {
      interrupted = e.exitCode() == 143;
    }
    setPendingStopSignal(0);
    QVERIFY(interrupted);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    // A real SIGINT is recorded, not fatal; the next write stops.
    installStopSignalHandlers();
    ::raise(SIGINT);
    QCOMPARE(pendingStopSignal(), SIGINT);
    bool stopped = false;
    try {
      OutputFile f(out.string(), "--out");
      f.write("abc", 3);
    } catch (const Interrupted& e) {
      stopped = e.exitCode() == 130;
    }
    setPendingStopSignal(0);
    signal(SIGINT, SIG_DFL);
    QVERIFY(stopped);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  OutputFile ok(out.string(), "--out");
  ok.write("abc", 3);
  ok.commit();
  QCOMPARE(fs::file_size(out), std::uintmax_t{3});
  QCOMPARE(filesIn(dir), std::size_t{1});
  fs::remove(out);
}

// Probe 5: an IDX header claiming 2^26 images of 10 x 10 (6.7 GB) in a 1 KB file.
void TestFileInput::idxHeadersDoNotDriveAllocation() {
  const fs::path f = dir_ / "claims-idx3-ubyte";
  std::string bytes = {0, 0, 8, 3, 4, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 10};
  write(f, bytes + std::string(1000, '\1'));
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  QCOMPARE(userErrorOf([&] { readIdx(f.string(), 3); }),
           QString::fromStdString(f.string()) + ": truncated: the file ends inside the data");
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  QVERIFY2(after.ru_maxrss - before.ru_maxrss < 200 * 1024,
           qPrintable(QString::number(after.ru_maxrss - before.ru_maxrss) + " KiB"));
  fs::remove(f);
}

// Probe 7: data.path=/proc/self.
void TestFileInput::textCorpusUnderProcIsAUserError() {
  const QString message = userErrorOf([] { TextDataset("/proc/self", 16, 0.1, 1); });
  QVERIFY2(message.startsWith("data.path: '/proc/self'"), qPrintable(message));
}

// Shipped files are found from where the executable is in its tree (a build directory inside
// the source tree, or an installation's bin/ beside share/parascope/), never from a path fixed
// when it was built.
void TestFileInput::shippedFilesAreFoundFromTheExecutable() {
  const fs::path source = dir_ / "source", install = dir_ / "install";
  fs::create_directories(source / "build" / "app");
  fs::create_directories(source / "resources" / "configs");
  std::ofstream(source / "resources" / "configs" / "default.json") << "{}";
  fs::create_directories(install / "bin");
  fs::create_directories(install / "share" / "parascope" / "tests" / "tools");
  std::ofstream(install / "share" / "parascope" / "tests" / "tools" / "script.py") << "";
  QCOMPARE(shippedFileAbove(source / "build" / "app", "resources/configs/default.json"),
           (source / "build" / "app" / ".." / ".." / "resources" / "configs" / "default.json")
               .lexically_normal()
               .string());
  QCOMPARE(shippedFileAbove(install / "bin", "tests/tools/script.py"),
           (install / "share" / "parascope" / "tests" / "tools" / "script.py").string());
  try {
    shippedFileAbove(install / "bin", "resources/configs/default.json");
    QFAIL("a missing file was found");
  } catch (const UserError& e) {
    QCOMPARE(QString(e.what()), "resources/configs/default.json: not found above " +
                                    QString::fromStdString((install / "bin").string()) +
                                    " (in a source tree, or an installation's share/parascope); "
                                    "name the file explicitly");
  }
  // This test's own executable, when its build directory is inside the source tree.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const fs::path tree = fs::canonical(PARASCOPE_SOURCE_DIR);
  if (std::mismatch(tree.begin(), tree.end(), exe.begin(), exe.end()).first == tree.end()) {
    QCOMPARE(fs::canonical(shippedFile("resources/configs/default.json")),
             tree / "resources" / "configs" / "default.json");
  }
}

QTEST_GUILESS_MAIN(TestFileInput)
#include "test_file_input.moc"
